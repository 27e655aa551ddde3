package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	store "github.com/go-store/store"
)

const watchUsage = "watch [--db PATH] [--json] [--after REV] [GROUP [KEY]]"

const watchHelp = `
Watch prints the changes committed to the database, by any process, in
revision order, exactly as they happened, until it is interrupted. It
reads the store's change feed (Store.Changes): nothing is merged or
dropped, and a watch that stops can resume where it stopped.

Without --after it starts from the database's current revision, which it
says on standard error once it is ready:

  watching app.db from revision 42: group "*", key "*"

then it prints one line per change on standard output, each starting with
the change's revision:

  43 set config theme dark
  44 ttl config theme 10m0s
  45 delete config theme
  46 expired session abc
  47 delete_group config

(ttl gives the time the key had left when its expiry changed, or "no
expiry"; delete and expired give the key only). With --after REV it prints
the changes after revision REV first, from the change log, then goes on
with new ones: rerun it with --after set to the revision of the last line
printed and nothing is missed or printed twice (a transaction's changes
share its revision: resume after the last revision printed whole). If the
log no longer goes back to REV (see ChangeLog in the package
documentation), watch fails, naming the oldest revision it holds.

With --json it prints each change as the store's Event marshals to JSON,
one object a line:

  {"type":"set","revision":43,"group":"config","key":"theme","value":"dark","version":2,"expires_at":null,"timestamp":"..."}

GROUP and KEY select what to watch as Store.Watch does: "*" (the default)
matches any, and a GROUP ending in "*" matches every group with that
prefix. Names and values are quoted as ls quotes them. An expired key is
reported when a process removes it (a read, a purge); watch itself
removes nothing.
`

func init() {
	subcommands["watch"] = &subcommand{usage: watchUsage, brief: "print changes as they happen, or from a revision", run: runWatch}
}

func runWatch(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "watch")
	asJSON := fs.Bool("json", false, "print changes as JSON lines")
	after := fs.Int64("after", -1, "print the changes after revision `REV` first (default: from now)")
	// --interval set how often watch polled before it followed the
	// change feed. Scripts that pass it keep working: it is checked as
	// before and otherwise has no effect, since changes arrive as they
	// commit.
	interval := fs.Duration("interval", time.Second, "no longer used: changes arrive as they commit (kept for scripts)")
	pos, err := parseArgs(env, fs, args, watchUsage, watchHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(watchUsage, pos, 0, "GROUP", "KEY"); err != nil {
		return err
	}
	if *interval <= 0 {
		return usagef("gostore "+watchUsage, "--interval must be positive")
	}
	if *after < -1 {
		return usagef("gostore "+watchUsage, "--after must be a revision (0 or more), not %d", *after)
	}
	if *db == ":memory:" {
		return usagef("gostore "+watchUsage, "watch needs a database file: nothing else can change a :memory: store")
	}
	group, key := "*", "*"
	if len(pos) > 0 {
		group = pos[0]
	}
	if len(pos) > 1 {
		key = pos[1]
	}

	st, err := env.openRead(*db)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	from := *after
	if from < 0 {
		if from, err = st.Revision(); err != nil {
			return err
		}
	}
	fmt.Fprintf(env.Stderr, "watching %s from revision %d: group %q, key %q\n", *db, from, group, key)
	// For Changes, a Group of "" means any; here, as for Store.Watch, it
	// is the group named "" (where gostore serve keeps string keys), so
	// watch selects it itself.
	emptyGroup := group == ""
	for ev, err := range st.Changes(ctx, store.ChangeOptions{Group: group, Key: key, After: from}) {
		if err == nil && emptyGroup && ev.Group != "" {
			continue
		}
		if ce := (*store.CompactedError)(nil); errors.As(err, &ce) {
			return fmt.Errorf("%s: the change log no longer holds the changes after revision %d: it starts after revision %d; read the current state (gostore ls, export) and watch --after %d",
				*db, from, ce.Compacted, ce.Compacted)
		}
		if err != nil {
			return argError(watchUsage, err)
		}
		if err := printChange(env, ev, *asJSON); err != nil {
			return err
		}
	}
	return nil
}

// printChange writes one change as watch prints it.
func printChange(env *Env, ev store.Event, asJSON bool) error {
	var line []byte
	if asJSON {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		line = append(b, '\n')
	} else {
		s := strconv.FormatInt(ev.Revision, 10) + " " + ev.Type.String() + " " + quote(ev.Group)
		switch ev.Type {
		case store.EventSet:
			s += " " + quote(ev.Key) + " " + quote(ev.Value)
		case store.EventTTL:
			d := store.NoExpiry
			if !ev.ExpiresAt.IsZero() {
				d = max(ev.ExpiresAt.Sub(ev.Timestamp), time.Millisecond)
			}
			s += " " + quote(ev.Key) + " " + formatTTL(d)
		case store.EventDeleteGroup:
		default:
			s += " " + quote(ev.Key)
		}
		line = []byte(s + "\n")
	}
	_, err := env.Stdout.Write(line)
	return err
}
