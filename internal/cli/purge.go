package cli

import (
	"context"
	"fmt"
)

const purgeUsage = "purge [--db PATH]"

const purgeHelp = `
Purge removes every expired entry from the database now and prints how
many it removed. Expired entries are never returned by any read, so this
only reclaims space; a running server's purger does it on its own.
`

func init() {
	subcommands["purge"] = &subcommand{usage: purgeUsage, brief: "remove expired entries and print how many", run: runPurge}
}

func runPurge(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "purge")
	pos, err := parseArgs(env, fs, args, purgeUsage, purgeHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(purgeUsage, pos, 0); err != nil {
		return err
	}
	st, err := env.open(*db)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	n, err := st.PurgeExpired()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.Stdout, n)
	return err
}
