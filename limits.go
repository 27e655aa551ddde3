package store

import (
	"math"
	"time"
	"unicode/utf8"
)

// Default limits, used for each zero field of [Limits].
const (
	DefaultMaxKeyBytes   = 1024
	DefaultMaxValueBytes = 65536
	DefaultMaxTTL        = 365 * 24 * time.Hour
)

// MaxVersion is the highest version an entry can have. A write that
// would take a key past it fails with [ErrVersionOverflow], and
// [Store.Restore] refuses a version above it with [ErrInvalidVersion].
//
// It is 2⁵³−1, not the largest int64, because versions leave the store
// as JSON numbers (gostore export, watch --json, the change feed's
// events), and JavaScript and many other JSON decoders read a number
// as a float64, which above 2⁵³ no longer tells two neighbouring
// integers apart: a client comparing versions would see a stale one as
// current. Nothing real comes near it: one key written a million times
// a second reaches it in 285 years.
const MaxVersion int64 = 1<<53 - 1

// Limits bounds what a write may store. A zero field takes its default
// (DefaultMaxKeyBytes, DefaultMaxValueBytes, DefaultMaxTTL); a negative field
// lifts that limit altogether (SQLite's own limit of about 1 GB per value
// still applies).
type Limits struct {
	// MaxKeyBytes bounds the length in bytes of each group and key.
	MaxKeyBytes int
	// MaxValueBytes bounds the length in bytes of each value.
	MaxValueBytes int
	// MaxTTL bounds every TTL and every expiry time relative to now.
	MaxTTL time.Duration
}

// withDefaults returns l with each zero field set to its default.
func (l Limits) withDefaults() Limits {
	if l.MaxKeyBytes == 0 {
		l.MaxKeyBytes = DefaultMaxKeyBytes
	}
	if l.MaxValueBytes == 0 {
		l.MaxValueBytes = DefaultMaxValueBytes
	}
	if l.MaxTTL == 0 {
		l.MaxTTL = DefaultMaxTTL
	}
	return l
}

// checks are a handle's argument checks: the store's Limits, preceded by
// the handle's own state, so that a call on a closed Store or ScopedStore
// or a finished Tx reports ErrClosed or ErrTxDone whatever its arguments
// (DESIGN: after Close every method returns ErrClosed). Each operation's
// first check is checkGroup, checkKey or checkWrite, which look at the
// state; the checks after it in the same call do not look again.
type checks struct {
	h *reader
	l *Limits
}

func (h *reader) check() checks {
	if h.e == nil {
		return checks{h, &Limits{}} // a zero handle: checkOpen refuses it first
	}
	return checks{h, &h.e.cfg.limits}
}

func (c checks) checkGroup(op, group string) error {
	if err := c.h.checkOpen(); err != nil {
		return fail(op, group, "", err)
	}
	return c.l.checkGroup(op, group)
}

func (c checks) checkKey(op, group, key string) error {
	if err := c.h.checkOpen(); err != nil {
		return fail(op, group, key, err)
	}
	return c.l.checkKey(op, group, key)
}

func (c checks) checkWrite(op, group, key, value string) error {
	if err := c.h.checkOpen(); err != nil {
		return fail(op, group, key, err)
	}
	return c.l.checkWrite(op, group, key, value)
}

func (c checks) checkTTL(op, group, key string, ttl time.Duration, optional bool) error {
	return c.l.checkTTL(op, group, key, ttl, optional)
}

func (c checks) checkExpiry(op, group, key string, exp, now int64) error {
	return c.l.checkExpiry(op, group, key, exp, now)
}

// checkGroup validates a group name (or a group prefix) for operation op.
func (l *Limits) checkGroup(op, group string) error {
	if l.MaxKeyBytes > 0 && len(group) > l.MaxKeyBytes {
		return errorf("store: %s: group is %d bytes, limit %d: %w", op, len(group), l.MaxKeyBytes, ErrKeyTooLong)
	}
	if !utf8.ValidString(group) {
		return errorf("store: %s: group %q: %w", op, group, ErrInvalidUTF8)
	}
	return nil
}

// checkKey validates a group and key for operation op.
func (l *Limits) checkKey(op, group, key string) error {
	if err := l.checkGroup(op, group); err != nil {
		return err
	}
	if key == "" {
		return errorf("store: %s %q: %w", op, group, ErrKeyEmpty)
	}
	if l.MaxKeyBytes > 0 && len(key) > l.MaxKeyBytes {
		return errorf("store: %s %q: key is %d bytes, limit %d: %w", op, group, len(key), l.MaxKeyBytes, ErrKeyTooLong)
	}
	if !utf8.ValidString(key) {
		return errorf("store: %s %q/%q: key: %w", op, group, key, ErrInvalidUTF8)
	}
	return nil
}

// checkValue validates a value for operation op on group/key.
func (l *Limits) checkValue(op, group, key, value string) error {
	if l.MaxValueBytes > 0 && len(value) > l.MaxValueBytes {
		return errorf("store: %s %q/%q: value is %d bytes, limit %d: %w", op, group, key, len(value), l.MaxValueBytes, ErrValueTooLong)
	}
	if !utf8.ValidString(value) {
		return errorf("store: %s %q/%q: value: %w", op, group, key, ErrInvalidUTF8)
	}
	return nil
}

// checkWrite validates everything a plain write stores.
func (l *Limits) checkWrite(op, group, key, value string) error {
	if err := l.checkKey(op, group, key); err != nil {
		return err
	}
	return l.checkValue(op, group, key, value)
}

// checkVersion validates a version for [handle.Restore] to store: 0 (the
// entry is numbered as a Set would number it) or 1 to MaxVersion.
func checkVersion(op, group, key string, v int64) error {
	switch {
	case v < 0:
		// Matches ErrConflict too, as it did before ErrInvalidVersion.
		return errorf("store: %s %q/%q: negative version %d: %w (%w)", op, group, key, v, ErrInvalidVersion, ErrConflict)
	case v > MaxVersion:
		return errorf("store: %s %q/%q: version %d exceeds MaxVersion %d: %w", op, group, key, v, MaxVersion, ErrInvalidVersion)
	}
	return nil
}

// checkTTL validates a TTL. If optional, zero means "no expiry" and is
// accepted; otherwise a TTL must be positive. Every TTL must be at most
// MaxTTL.
func (l *Limits) checkTTL(op, group, key string, ttl time.Duration, optional bool) error {
	switch {
	case ttl == NoExpiry:
		// Printed as a Duration it is "-1ns", which says nothing to a
		// caller who took it for "no expiry".
		hint := "a ttl of 0 means no expiry"
		if !optional {
			hint = "use Set for no expiry"
		}
		return errorf("store: %s %q/%q: TTL is NoExpiry, which TTL returns but no write takes (%s): %w", op, group, key, hint, ErrInvalidTTL)
	case ttl < 0 || (ttl == 0 && !optional):
		return errorf("store: %s %q/%q: TTL %v is not positive: %w", op, group, key, ttl, ErrInvalidTTL)
	case l.MaxTTL > 0 && ttl > l.MaxTTL:
		return errorf("store: %s %q/%q: TTL %v exceeds limit %v: %w", op, group, key, ttl, l.MaxTTL, ErrInvalidTTL)
	}
	return nil
}

// unixMsUp returns t in Unix milliseconds, rounding a sub-millisecond
// part up, as TTLs are rounded.
func unixMsUp(t time.Time) int64 {
	ms := t.UnixMilli()
	if t.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// checkExpiry validates an absolute expiry exp (Unix ms) against MaxTTL
// at now (Unix ms).
func (l *Limits) checkExpiry(op, group, key string, exp, now int64) error {
	if l.MaxTTL <= 0 {
		return nil
	}
	// Sub saturates where the millisecond difference, as a Duration,
	// would wrap around and let a time centuries away pass.
	if d := time.UnixMilli(exp).Sub(time.UnixMilli(now)); d > l.MaxTTL {
		far := d.String()
		if d == math.MaxInt64 {
			far = "more than 292 years" // Sub saturated: do not quote its cap as the time
		}
		return errorf("store: %s %q/%q: %s from now exceeds limit %v: %w", op, group, key, far, l.MaxTTL, ErrInvalidTTL)
	}
	return nil
}

// expiryAt converts a TTL relative to now into an absolute expiry in Unix
// milliseconds. The TTL is rounded up to whole milliseconds, and so is the
// deadline now+ttl, so that an entry lives at least its TTL, and at least
// 1 ms: it expires when the clock reaches the stored millisecond (see
// live). ttl 0 means never (0).
func expiryAt(now time.Time, ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	if r := ttl % time.Millisecond; r != 0 {
		if ttl > math.MaxInt64-time.Millisecond {
			return math.MaxInt64
		}
		ttl += time.Millisecond - r
	}
	ms := unixMsUp(now.Add(ttl))
	if ms <= now.UnixMilli() {
		return math.MaxInt64 // far beyond any real clock: saturate rather than wrap into the past
	}
	return ms
}
