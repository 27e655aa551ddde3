package cli

import (
	"context"
	"errors"
	"fmt"

	store "github.com/go-store/store"
)

const getUsage = "get [--db PATH] GROUP KEY"

const getHelp = `
Get prints the value of KEY in GROUP, exactly as stored, followed by a
newline. A missing or expired key is an error ("not found", exit status 1).
`

func init() {
	subcommands["get"] = &subcommand{usage: getUsage, brief: "print a key's value", run: runGet}
}

func runGet(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "get")
	pos, err := parseArgs(env, fs, args, getUsage, getHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(getUsage, pos, 2, "GROUP", "KEY"); err != nil {
		return err
	}
	group, key := pos[0], pos[1]
	st, err := env.open(*db, existing)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	v, err := st.Get(group, key)
	if errors.Is(err, store.ErrNotFound) {
		return notFound(group, key)
	}
	if err != nil {
		return argError(getUsage, err)
	}
	_, err = fmt.Fprintln(env.Stdout, v)
	return err
}
