package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	store "github.com/go-store/store"
)

const exportUsage = "export [--db PATH] [-o FILE]"

const exportHelp = `
Export writes every live entry of the database as JSON lines, one object
per entry, groups and keys in byte order:

  {"group":"config","key":"theme","value":"dark","expires_at":null,"version":3}
  {"group":"session","key":"abc","value":"u1","expires_at":1767225600000,"version":1}

expires_at is the expiry in Unix milliseconds (the store's own resolution,
so it round-trips exactly), or null for never. version is informational:
import does not restore it. Without -o (or with -o -) the lines go to
standard output; with -o FILE they are written to a temporary file that
replaces FILE only when the export is complete. On a terminal, a progress
bar is drawn on standard error.

Export reads the database a page at a time without blocking writers, so if
others write meanwhile it is not a point-in-time snapshot: an entry that
exists for the whole export appears exactly once, entries written or
deleted meanwhile may or may not appear.
`

func init() {
	subcommands["export"] = &subcommand{usage: exportUsage, brief: "write every entry as JSON lines", run: runExport}
}

// record is one line of an export.
type record struct {
	Group     string `json:"group"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	ExpiresAt *int64 `json:"expires_at"` // Unix ms; null: never
	Version   int64  `json:"version"`
}

func runExport(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "export")
	outPath := fs.String("o", "-", "write to `FILE` (-: standard output)")
	pos, err := parseArgs(env, fs, args, exportUsage, exportHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(exportUsage, pos, 0); err != nil {
		return err
	}
	st, err := env.open(*db, existing)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)

	if *outPath == "-" {
		return export(ctx, env, st, env.Stdout)
	}
	f, err := os.CreateTemp(filepath.Dir(*outPath), filepath.Base(*outPath)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = export(ctx, env, st, f); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), *outPath)
}

func export(ctx context.Context, env *Env, st *store.Store, w io.Writer) error {
	var bar *progress
	if isTerminal(env.Stderr) {
		total, err := st.CountAll("")
		if err != nil {
			return err
		}
		bar = newBar(env.Stderr, "exporting", "keys", int64(total), false)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for group, err := range st.GroupsSeq("") {
		if err != nil {
			return err
		}
		for opt := (store.ListOptions{Limit: store.MaxListLimit}); ; {
			if err := ctx.Err(); err != nil {
				return err
			}
			page, err := st.List(group, opt)
			if err != nil {
				return err
			}
			for _, e := range page.Entries {
				rec := record{Group: group, Key: e.Key, Value: e.Value, ExpiresAt: unixMilli(e.ExpiresAt), Version: e.Version}
				if err := enc.Encode(rec); err != nil {
					return err
				}
			}
			bar.add(int64(len(page.Entries)), 0)
			if page.Next == "" {
				break
			}
			opt.After = page.Next
		}
	}
	bar.finish()
	return bw.Flush()
}
