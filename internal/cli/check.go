package cli

import (
	"context"
	"errors"
	"fmt"

	store "github.com/go-store/store"
)

const checkUsage = "check [--db PATH]"

const checkHelp = `
Check verifies the database with Store.Check: SQLite's integrity check of
every page and index, then the store's own invariants (the schema
version, versions that are positive integers, expiries, the expiry index,
and the namespace and group counters that quotas read). It prints "ok"
and exits 0 for a sound database; otherwise it prints each problem found,
one a line (at most 100), and exits 1. It reads the whole database, so it
takes time in proportion to its size, but it does not block writers.
`

func init() {
	subcommands["check"] = &subcommand{usage: checkUsage, brief: "verify the database and the store's invariants", run: runCheck}
}

// errDamaged is check's failure once it has printed the problems.
var errDamaged = errors.New("the database is damaged")

func runCheck(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "check")
	pos, err := parseArgs(env, fs, args, checkUsage, checkHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(checkUsage, pos, 0); err != nil {
		return err
	}
	st, err := env.openRead(*db)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	err = st.Check(ctx)
	var ce *store.CheckError
	if !errors.As(err, &ce) {
		if err == nil {
			_, err = fmt.Fprintln(env.Stdout, "ok")
		}
		return err
	}
	for _, p := range ce.Problems {
		if _, err := fmt.Fprintln(env.Stdout, p); err != nil {
			return err
		}
	}
	problems := "problems"
	if len(ce.Problems) == 1 {
		problems = "problem"
	}
	return fmt.Errorf("%s: %w (%d %s)", *db, errDamaged, len(ce.Problems), problems)
}
