package cli

import (
	"context"
	"errors"
	"fmt"

	store "github.com/go-store/store"
)

const ttlUsage = "ttl [--db PATH] GROUP KEY"

const ttlHelp = `
TTL prints how long KEY in GROUP has left to live, to the second from one
second up ("9m58s") and in milliseconds below ("250ms"), or "no expiry".
A missing or expired key is an error ("not found", exit status 1).
`

func init() {
	subcommands["ttl"] = &subcommand{usage: ttlUsage, brief: "print a key's remaining time to live", run: runTTL}
}

func runTTL(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "ttl")
	pos, err := parseArgs(env, fs, args, ttlUsage, ttlHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(ttlUsage, pos, 2, "GROUP", "KEY"); err != nil {
		return err
	}
	group, key := pos[0], pos[1]
	st, err := env.open(*db, existing)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	d, err := st.TTL(group, key)
	if errors.Is(err, store.ErrNotFound) {
		return notFound(group, key)
	}
	if err != nil {
		return argError(ttlUsage, err)
	}
	_, err = fmt.Fprintln(env.Stdout, formatTTL(d))
	return err
}
