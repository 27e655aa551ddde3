package cli

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	store "github.com/go-store/store"
)

const lsUsage = "ls [--db PATH] [--limit N] [PREFIX | -g GROUP [--prefix P] [-l]]"

const lsHelp = `
Without -g, ls lists the groups whose name starts with PREFIX (all groups
without one), one per line, in byte order. With -g GROUP it lists the keys
of GROUP instead, optionally only those starting with --prefix; with -l,
each line is the key, its version, its expiry (RFC 3339, UTC, or "never")
and its value. --limit stops after N lines. Keys are read a page at a time,
so a large group is never held in memory.

A name or value that is empty, holds spaces or control characters, or
starts with a double quote is printed Go-quoted ("" is the empty group),
so every entry stays on one line; use export for exact bytes.
`

func init() {
	subcommands["ls"] = &subcommand{usage: "ls [--db PATH] [PREFIX | -g GROUP [-l]]", brief: "list groups by prefix, or the keys of a group", run: runLs}
}

func runLs(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "ls")
	group := fs.String("g", "", "list the keys of `GROUP` instead of groups")
	prefix := fs.String("prefix", "", "only keys (with -g) or groups starting with `P`")
	limit := fs.Int("limit", 0, "print at most `N` lines (0: all)")
	long := fs.Bool("l", false, "with -g: print key, version, expiry and value")
	pos, err := parseArgs(env, fs, args, lsUsage, lsHelp)
	if err != nil {
		return err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	hint := "gostore " + lsUsage
	switch {
	case *limit < 0:
		return usagef(hint, "--limit must not be negative")
	case given["g"] && len(pos) > 0:
		return usagef(hint, "unexpected argument %q (select keys with --prefix)", pos[0])
	case !given["g"] && *long:
		return usagef(hint, "-l lists keys: it needs -g GROUP")
	case !given["g"] && len(pos) > 1:
		return usagef(hint, "unexpected argument %q", pos[1])
	case !given["g"] && len(pos) == 1 && given["prefix"]:
		return usagef(hint, "give the group prefix once, as PREFIX or --prefix")
	}
	st, err := env.openRead(*db)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	out := bufio.NewWriter(env.Stdout)
	if given["g"] {
		err = listKeys(ctx, out, st, *group, *prefix, *limit, *long)
	} else {
		p := *prefix
		if len(pos) == 1 {
			p = pos[0]
		}
		err = listGroups(ctx, out, st, p, *limit)
	}
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	return argError(lsUsage, err)
}

func listGroups(ctx context.Context, w io.Writer, st *store.Store, prefix string, limit int) error {
	n := 0
	for g, err := range st.GroupsSeq(prefix) {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := fmt.Fprintln(w, quote(g)); err != nil {
			return err
		}
		if n++; n == limit {
			break
		}
	}
	return nil
}

func listKeys(ctx context.Context, w io.Writer, st *store.Store, group, prefix string, limit int, long bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	n := 0
	for opt := (store.ListOptions{Prefix: prefix, Limit: store.MaxListLimit}); ; {
		if err := ctx.Err(); err != nil {
			return err
		}
		if limit > 0 {
			opt.Limit = min(store.MaxListLimit, limit-n)
		}
		page, err := st.List(group, opt)
		if err != nil {
			return err
		}
		for _, e := range page.Entries {
			if long {
				_, err = fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", quote(e.Key), e.Version, formatExpiry(e.ExpiresAt), quote(e.Value))
			} else {
				_, err = fmt.Fprintln(tw, quote(e.Key))
			}
			if err != nil {
				return err
			}
		}
		n += len(page.Entries)
		// Align each page on its own, so that a large group streams.
		if err := tw.Flush(); err != nil {
			return err
		}
		if page.Next == "" || (limit > 0 && n >= limit) {
			return nil
		}
		opt.After = page.Next
	}
}
