package cli

import (
	"context"
	"errors"
	"fmt"

	store "github.com/go-store/store"
)

const delUsage = "del [--db PATH] [-v] GROUP [KEY]"

const delHelp = `
Del deletes KEY from GROUP, or, without KEY, every key of GROUP. Deleting
a missing key or an empty group is not an error. Del prints nothing unless
-v is given; then it prints how many live keys it deleted (0, 1, or the
size of the group).
`

func init() {
	subcommands["del"] = &subcommand{usage: delUsage, brief: "delete a key, or a whole group", run: runDel}
}

func runDel(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "del")
	verbose := fs.Bool("v", false, "print how many keys were deleted")
	pos, err := parseArgs(env, fs, args, delUsage, delHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(delUsage, pos, 1, "GROUP", "KEY"); err != nil {
		return err
	}
	if len(pos) == 2 && pos[1] == "" {
		// Said here, or the store would name the lookup that finds it.
		return usagef("gostore "+delUsage, "key is empty (a whole group: leave KEY out)")
	}
	st, err := env.open(*db)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	// Count and delete in one transaction, so that the count is what
	// this command deleted.
	n := 0
	err = st.Transaction(func(tx *store.Tx) error {
		group := pos[0]
		if len(pos) == 1 {
			c, err := tx.Count(group)
			if err != nil {
				return err
			}
			n = c
			return tx.DeleteGroup(group)
		}
		key := pos[1]
		switch _, err := tx.GetEntry(group, key); {
		case errors.Is(err, store.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
		n = 1
		return tx.Delete(group, key)
	})
	if err != nil {
		return argError(delUsage, err)
	}
	if *verbose {
		_, err = fmt.Fprintln(env.Stdout, n)
	}
	return err
}
