package store

import (
	"errors"
	"fmt"
	"strings"
)

// These errors are returned by lookups and conditional operations.
var (
	// ErrNotFound is returned when a key does not exist or has expired.
	// An expired key is indistinguishable from one that was never written.
	ErrNotFound = errors.New("store: key not found")

	// ErrConflict is returned by the version-checked operations when the
	// stored version differs from the expected one. Nothing is changed.
	ErrConflict = errors.New("store: version conflict")

	// ErrQuotaExceeded is returned when a write through a scoped handle
	// would exceed its namespace's quota. Nothing is written.
	ErrQuotaExceeded = errors.New("store: quota exceeded")

	// ErrVersionOverflow is returned by a write that would take a key's
	// version past [MaxVersion], and by one to a key whose stored version
	// cannot grow because it is not an integer (what an older go-store
	// left after overflowing, or a hand edit; [Store.Check] reports
	// both). Nothing is changed: the key can still be read, and deleted,
	// after which it is written anew at version 1.
	ErrVersionOverflow = errors.New("store: version overflow")
)

// These errors are returned before storage is touched when an argument is
// invalid. The returned error wraps one of them and names the operation and
// the limit; test for them with [errors.Is].
var (
	// ErrKeyEmpty is returned when a key is the empty string.
	ErrKeyEmpty = errors.New("store: key is empty")

	// ErrKeyTooLong is returned when a group, key or namespace is longer
	// than [Limits.MaxKeyBytes].
	ErrKeyTooLong = errors.New("store: key too long")

	// ErrValueTooLong is returned when a value is longer than
	// [Limits.MaxValueBytes].
	ErrValueTooLong = errors.New("store: value too long")

	// ErrInvalidTTL is returned when a TTL is out of range: not positive
	// where one is required, negative, or longer than [Limits.MaxTTL].
	ErrInvalidTTL = errors.New("store: invalid TTL")

	// ErrInvalidUTF8 is returned when a group, key or value is not valid
	// UTF-8.
	ErrInvalidUTF8 = errors.New("store: invalid UTF-8")

	// ErrInvalidNamespace is returned by [NewScoped] and
	// [NewScopedWithQuota] when a namespace does not match
	// ^[a-zA-Z0-9-]+$.
	ErrInvalidNamespace = errors.New("store: invalid namespace")

	// ErrInvalidCondition is returned by [Store.Expire] and
	// [Store.ExpireAt] for an unknown condition or an incompatible
	// combination (NX with XX, GT or LT; GT with LT), as Redis refuses
	// them.
	ErrInvalidCondition = errors.New("store: invalid expire condition")

	// ErrInvalidVersion is returned by [Store.Restore] for a version
	// below 0 or above [MaxVersion]. (A negative version also matches
	// [ErrConflict], as it did before ErrInvalidVersion existed.)
	ErrInvalidVersion = errors.New("store: invalid version")

	// ErrInvalidPageToken is returned by [Store.List] and
	// [Store.ListGroups] when ListOptions.After is not in the form of a
	// token that the same method returns. A token is not signed: one in
	// that form that names a key no page ended at (even one the store
	// would refuse to write, which a go-store v0.1 database may hold)
	// resumes the listing after that key.
	ErrInvalidPageToken = errors.New("store: invalid page token")

	// ErrInvalidArgument is returned for an argument no call can use,
	// which is a bug in the caller rather than bad input: a nil function
	// passed to [Store.Transaction], [Store.View], [Tx.Savepoint] or their
	// [ScopedStore] twins, or a nil *Store passed to [NewScoped]. Nothing
	// is run.
	ErrInvalidArgument = errors.New("store: invalid argument")
)

// These errors concern the store's lifecycle and its database file.
var (
	// ErrClosed is returned by every method called after [Store.Close],
	// and by a scoped handle's methods after [ScopedStore.Close]. The
	// methods of a zero Store, ScopedStore, Tx or View, which no
	// constructor made, return an error matching it too.
	ErrClosed = errors.New("store: closed")

	// ErrInvalidOption is returned by [New] for a nil [Option] or an
	// option whose value is out of range; the message names the option,
	// as in "store: New: WithWatchBuffer(-1): must be 0 or more". No file
	// is opened.
	ErrInvalidOption = errors.New("store: invalid option")

	// ErrTxDone is returned by every method of a [Tx] used after the
	// function passed to [Store.Transaction] has returned.
	ErrTxDone = errors.New("store: transaction has already been committed or rolled back")

	// ErrNotDatabase is returned by [New] when the file exists but is not
	// a SQLite database, or is corrupt. The file is left untouched.
	ErrNotDatabase = errors.New("store: file is not a database or is corrupt")

	// ErrSchemaTooNew is returned by [New] when the database was written by
	// a newer version of this package. The file is left untouched.
	ErrSchemaTooNew = errors.New("store: database schema is newer than this version of go-store supports")

	// ErrBusy is returned when the store's single writer could not be
	// acquired in time, for example because a [Store] write method was
	// called from inside [Store.Transaction] on the same goroutine (use the
	// [Tx] instead), and by [New] when another process has held the file
	// locked for the busy timeout (see [WithBusyTimeout]).
	ErrBusy = errors.New("store: timed out waiting for the writer")

	// ErrReadOnly is returned by every write to a store opened
	// [WithReadOnly], before anything is written (arguments are checked
	// first, as on any store); by New with WithReadOnly for a file it
	// could open only by writing to it: an empty file, or one whose
	// schema needs migrating; and by New without it when the file, or
	// the directory that must hold its -wal and -shm files, cannot be
	// written: such a file can still be opened WithReadOnly.
	ErrReadOnly = errors.New("store: read-only")
)

// QuotaError reports a write refused by a namespace's quota. It matches
// [ErrQuotaExceeded] with [errors.Is].
type QuotaError struct {
	Namespace string
	// Limit names the QuotaConfig field: "MaxKeys", "MaxGroups" or
	// "MaxBytes".
	Limit string
	// Max is the limit's value; Used is the namespace's usage before the
	// refused write.
	Max, Used int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("store: namespace %q: %s is %d, %d in use: %v", e.Namespace, e.Limit, e.Max, e.Used, unprefixed{ErrQuotaExceeded})
}

// Unwrap returns ErrQuotaExceeded.
func (e *QuotaError) Unwrap() error { return ErrQuotaExceeded }

// prefix begins the message of every error the package returns.
const prefix = "store: "

// errorf is [fmt.Errorf] for the package's messages, which say "store: "
// once: an error among args whose message starts with the prefix too (a
// sentinel, or an error made here) is quoted without it. The errors stay
// in the chain, for [errors.Is] and [errors.As].
func errorf(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok && strings.HasPrefix(err.Error(), prefix) {
			args[i] = unprefixed{err}
		}
	}
	return fmt.Errorf(format, args...)
}

// unprefixed is an error quoted inside another message of the package:
// its text without the prefix, and the error itself behind Unwrap.
type unprefixed struct{ err error }

func (u unprefixed) Error() string { return strings.TrimPrefix(u.err.Error(), prefix) }

func (u unprefixed) Unwrap() error { return u.err }

// saidError is a message that already says what its sentinel means, as
// `store: invalid TTL "0": must be positive` does for ErrInvalidTTL: it
// matches the sentinel without repeating its text.
type saidError struct {
	msg string
	is  error
}

// said returns a saidError of is with the message format makes of args.
func said(is error, format string, args ...any) error {
	return &saidError{msg: fmt.Sprintf(format, args...), is: is}
}

func (e *saidError) Error() string { return e.msg }

func (e *saidError) Unwrap() error { return e.is }

// fail wraps an error from storage with the operation and its subject, once,
// at the public boundary. ErrNotFound becomes a notFoundError naming the
// key. An error of SQLite's is told in the store's words (sqliteErr): its
// busy codes become ErrBusy, and its codes for a damaged database
// ErrCorrupt.
func fail(op, group, key string, err error) error {
	if err == nil {
		return nil
	}
	if err == ErrNotFound {
		return notFound(op, group, key)
	}
	if isCorrupt(err) {
		err = corrupt(err)
	} else {
		err = sqliteErr(err, 0)
	}
	switch {
	case key != "":
		return errorf("store: %s %q/%q: %w", op, group, key, err)
	case group != "":
		return errorf("store: %s %q: %w", op, group, err)
	}
	return errorf("store: %s: %w", op, err)
}

// notFoundError is ErrNotFound naming the operation and the key, as
// go-store v0.1's errors did. It is built only when a message is asked
// for, since a lookup of a missing key is an everyday outcome.
type notFoundError struct{ op, group, key string }

// notFound returns the error of operation op finding no live (group, key).
func notFound(op, group, key string) error { return &notFoundError{op, group, key} }

func (e *notFoundError) Error() string {
	return fmt.Sprintf("store: %s %q/%q: key not found", e.op, e.group, e.key)
}

// Unwrap returns ErrNotFound.
func (e *notFoundError) Unwrap() error { return ErrNotFound }

// isNotFound reports whether err is ErrNotFound, wrapped or not.
func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }
