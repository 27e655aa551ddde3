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

func runGet(ctx context.Context, env *Env, args []string) error {
	return printKey(env, "get", getUsage, getHelp, args, func(st *store.Store, group, key string) (string, error) {
		return st.Get(group, key)
	})
}

// printKey runs a subcommand that takes GROUP KEY and prints one line
// that read computes from the key: get and ttl.
func printKey(env *Env, name, usage, help string, args []string, read func(st *store.Store, group, key string) (string, error)) (err error) {
	fs, db := command(env, name)
	pos, err := parseArgs(env, fs, args, usage, help)
	if err != nil {
		return err
	}
	if err := wantArgs(usage, pos, 2, "GROUP", "KEY"); err != nil {
		return err
	}
	group, key := pos[0], pos[1]
	st, err := env.openRead(*db)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	line, err := read(st, group, key)
	if errors.Is(err, store.ErrNotFound) {
		return notFound(group, key)
	}
	if err != nil {
		return argError(usage, err)
	}
	_, err = fmt.Fprintln(env.Stdout, line)
	return err
}
