package cli

import (
	"context"
	"time"

	store "github.com/go-store/store"
)

const setUsage = "set [--db PATH] [--ttl TTL] GROUP KEY VALUE"

const setHelp = `
Set stores VALUE at KEY in GROUP, replacing any value and expiry the key
had. A VALUE of "-" reads the value from standard input, byte for byte (a
trailing newline is kept). With --ttl the key expires after TTL: a Go
duration such as 90s, 10m or 1h30m, or a whole number of seconds, at most
365 days. Set creates the database file if it does not exist (and leaves
none behind if it fails).

An invalid TTL, an empty key, or a group, key or value the store refuses
(not UTF-8, too long) is a usage error (exit status 2).
`

func init() {
	subcommands["set"] = &subcommand{usage: setUsage, brief: "store a value, optionally with a TTL", run: runSet}
}

func runSet(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "set")
	var ttlFlag ttlArg
	fs.Var(&ttlFlag, "ttl", "expire after `TTL` (90s, 10m, 1h30m, or seconds)")
	pos, err := parseArgs(env, fs, args, setUsage, setHelp)
	if err != nil {
		return err
	}
	var ttl time.Duration
	if ttlFlag.set {
		if ttl, err = store.ParseTTL(ttlFlag.s); err != nil {
			return usagef("gostore "+setUsage, "%v", err)
		}
		// The store would refuse it too, naming its own internals.
		if ttl > store.DefaultMaxTTL {
			return usagef("gostore "+setUsage, "invalid TTL %q: longer than the limit of %d days", ttlFlag.s, store.DefaultMaxTTL/(24*time.Hour))
		}
	}
	if err := wantArgs(setUsage, pos, 3, "GROUP", "KEY", "VALUE"); err != nil {
		return err
	}
	group, key, value := pos[0], pos[1], pos[2]
	if value == "-" {
		if value, err = readAll(env.Stdin, "the value from standard input"); err != nil {
			return err
		}
		// Ctrl-C stops the program writing the value too, which ends the
		// input early: what was read is not the whole value.
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	st, done, err := env.create(*db)
	if err != nil {
		return err
	}
	defer done(&err)
	if ttl > 0 {
		err = st.SetWithTTL(group, key, value, ttl)
	} else {
		err = st.Set(group, key, value)
	}
	return argError(setUsage, err)
}

// ttlArg is --ttl as given, parsed once the flags are, so that an invalid
// TTL is reported in ParseTTL's words alone: the flag package would put
// its own "invalid value … for flag -ttl" in front.
type ttlArg struct {
	s   string
	set bool
}

func (a *ttlArg) String() string { return a.s }

func (a *ttlArg) Set(s string) error {
	a.s, a.set = s, true
	return nil
}
