package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	store "github.com/go-store/store"
	"zombiezen.com/go/sqlite"
)

const watchUsage = "watch [--db PATH] [--json] [--interval D] [GROUP [KEY]]"

const watchHelp = `
Watch prints the changes made to the database, by any process, until it
is interrupted. Once it has read the current state it says so on standard
error; then it prints one line per change on standard output,

  set config theme dark
  ttl config theme 10m0s
  delete config theme
  expired session abc

or, with --json, one object per change:

  {"type":"set","group":"config","key":"theme","value":"dark","version":2,"expires_at":null,"time":"..."}

where expires_at is in Unix milliseconds (null: never), time (RFC 3339,
UTC, to the millisecond) is when the change was seen, and delete and
expired carry the last value seen. GROUP and KEY select what to watch as
Store.Watch does: "*" (the default) matches any, and a GROUP ending in "*"
matches every group with that prefix. Names and values are quoted as ls
quotes them.

The store's events exist only in the process that makes a change, so watch
polls instead: every --interval it asks SQLite whether any connection has
committed (PRAGMA data_version), and if one has, it reads every watched
entry again and compares with what it read before. It is meant for
inspection, not as a change feed: each change costs a full read of the
watched groups (read again if something commits during the read, so that
a poll sees one state of the database), changes between two polls are
merged (a key set twice shows
once; set then deleted shows nothing), the changes found by one poll are
printed in key order, not commit order, a group deleted at once shows as
one delete per key, "ttl" means that only the expiry changed, and an entry
whose expiry passes is reported as expired when the clock passes it,
whether or not anything removed it yet.
`

func init() {
	subcommands["watch"] = &subcommand{usage: "watch [--db PATH] [--json] [GROUP [KEY]]", brief: "print changes as they happen (by polling)", run: runWatch}
}

func runWatch(ctx context.Context, env *Env, args []string) (err error) {
	fs, db := command(env, "watch")
	asJSON := fs.Bool("json", false, "print changes as JSON lines")
	interval := fs.Duration("interval", 250*time.Millisecond, "poll every `D`")
	pos, err := parseArgs(env, fs, args, watchUsage, watchHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(watchUsage, pos, 0, "GROUP", "KEY"); err != nil {
		return err
	}
	if *interval <= 0 {
		return usagef("gostore "+watchUsage, "--interval must be positive, not %v", *interval)
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

	st, err := env.open(*db)
	if err != nil {
		return err
	}
	defer closeStore(st, &err)
	// data_version changes when another connection commits; it takes a
	// connection of its own, which never writes.
	dv, err := sqlite.OpenConn(*db, sqlite.OpenReadOnly)
	if err != nil {
		return fmt.Errorf("open %s: %w", *db, err)
	}
	defer dv.Close()
	dv.SetBusyTimeout(store.DefaultBusyTimeout)

	p := &poller{st: st, dv: dv, now: env.clock(), w: env.Stdout, json: *asJSON}
	p.group, p.prefix = strings.CutSuffix(group, "*")
	if key != "*" {
		p.key = key
	}
	ready := func() {
		fmt.Fprintf(env.Stderr, "watching %s: group %q, key %q, polling every %v\n", *db, group, key, *interval)
	}
	return argError(watchUsage, p.run(ctx, *interval, ready))
}

// jsonTime is the layout of watch --json's time: RFC 3339 in UTC with
// exactly three decimals, so that every line has the same width there.
const jsonTime = "2006-01-02T15:04:05.000Z07:00"

type entryKey struct{ group, key string }

// change is one difference between two reads of the database.
type change struct {
	typ string // set, delete, expired, ttl
	e   store.Entry
}

// poller implements watch: it keeps the watched entries as last read and
// reports how they change.
type poller struct {
	st     *store.Store
	dv     *sqlite.Conn
	now    func() time.Time
	group  string // the group, or the group prefix if prefix
	prefix bool
	key    string // "" for any key
	w      io.Writer
	json   bool

	snap    map[entryKey]store.Entry
	nextExp int64 // earliest expiry in snap (Unix ms), or 0
}

// run reads the watched entries, calls ready, and then reports their
// changes every interval until ctx is done.
func (p *poller) run(ctx context.Context, interval time.Duration, ready func()) error {
	ver, err := p.dataVersion()
	if err != nil {
		return err
	}
	if p.snap, ver, err = p.stableScan(ctx, ver); err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting
		}
		return err
	}
	p.nextExp = earliest(p.snap)
	ready()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		v, err := p.dataVersion()
		if err != nil {
			return err
		}
		var changes []change
		var now int64
		if v != ver {
			var cur map[entryKey]store.Entry
			cur, ver, err = p.stableScan(ctx, v)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return err
			}
			// Read the clock after the scan: whatever the scan left out
			// as expired has expired by now.
			now = p.now().UnixMilli()
			changes = diff(p.snap, cur, now)
			p.snap = cur
			p.nextExp = earliest(cur)
		} else {
			now = p.now().UnixMilli()
		}
		if p.nextExp != 0 && p.nextExp <= now {
			for k, e := range p.snap {
				if exp := e.ExpiresAt; !exp.IsZero() && exp.UnixMilli() <= now {
					changes = append(changes, change{"expired", e})
					delete(p.snap, k)
				}
			}
			p.nextExp = earliest(p.snap)
		}
		// Stable: a key set and expired within one poll shows in that order.
		slices.SortStableFunc(changes, func(a, b change) int {
			return cmp.Or(strings.Compare(a.e.Group, b.e.Group), strings.Compare(a.e.Key, b.e.Key))
		})
		for _, c := range changes {
			if err := p.print(c, now); err != nil {
				return err
			}
		}
	}
}

func (p *poller) dataVersion() (int64, error) {
	stmt := p.dv.Prep("PRAGMA data_version")
	defer stmt.Reset()
	if ok, err := stmt.Step(); err != nil || !ok {
		return 0, fmt.Errorf("reading data_version: %v", cmp.Or(err, errors.New("no row")))
	}
	return stmt.ColumnInt64(0), nil
}

// stableScan scans, and scans again if something committed meanwhile
// (the data_version ver, read before the scan, changed), so that what it
// returns is one state of the database rather than a mix of several: a
// scan reads the groups and their pages one after another. If the writes
// never pause it gives up after a few tries and returns the last scan; the
// next poll sees the new data_version and scans again. It returns the
// data_version read before the scan it returns.
func (p *poller) stableScan(ctx context.Context, ver int64) (map[entryKey]store.Entry, int64, error) {
	for try := 1; ; try++ {
		snap, err := p.scan(ctx)
		if err != nil {
			return nil, 0, err
		}
		after, err := p.dataVersion()
		if err != nil {
			return nil, 0, err
		}
		if after == ver || try == 3 {
			return snap, ver, nil
		}
		ver = after
	}
}

// scan reads every watched entry.
func (p *poller) scan(ctx context.Context) (map[entryKey]store.Entry, error) {
	snap := map[entryKey]store.Entry{}
	readGroup := func(g string) error {
		opt := store.ListOptions{Limit: store.MaxListLimit}
		if p.key != "" {
			// The key itself, if present, is the first with it as prefix.
			opt.Prefix, opt.Limit = p.key, 1
		}
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			page, err := p.st.List(g, opt)
			if err != nil {
				return err
			}
			for _, e := range page.Entries {
				if p.key == "" || e.Key == p.key {
					e.Group = g
					snap[entryKey{g, e.Key}] = e
				}
			}
			if p.key != "" || page.Next == "" {
				return nil
			}
			opt.After = page.Next
		}
	}
	if !p.prefix {
		return snap, readGroup(p.group)
	}
	for g, err := range p.st.GroupsSeq(p.group) {
		if err != nil {
			return nil, err
		}
		if err := readGroup(g); err != nil {
			return nil, err
		}
	}
	return snap, nil
}

// diff returns the changes from old to cur; an entry missing from cur
// expired if its expiry is at or before now, else it was deleted.
func diff(old, cur map[entryKey]store.Entry, now int64) []change {
	var changes []change
	for k, o := range old {
		if _, ok := cur[k]; ok {
			continue
		}
		if !o.ExpiresAt.IsZero() && o.ExpiresAt.UnixMilli() <= now {
			changes = append(changes, change{"expired", o})
		} else {
			changes = append(changes, change{"delete", o})
		}
	}
	for k, c := range cur {
		o, ok := old[k]
		switch {
		case !ok:
			changes = append(changes, change{"set", c})
		case o.Value == c.Value && !o.ExpiresAt.Equal(c.ExpiresAt):
			changes = append(changes, change{"ttl", c})
		case o.Value != c.Value || o.Version != c.Version:
			changes = append(changes, change{"set", c})
		}
	}
	return changes
}

// earliest returns the earliest expiry in snap in Unix ms, or 0.
func earliest(snap map[entryKey]store.Entry) int64 {
	var first int64
	for _, e := range snap {
		if !e.ExpiresAt.IsZero() {
			if ms := e.ExpiresAt.UnixMilli(); first == 0 || ms < first {
				first = ms
			}
		}
	}
	return first
}

// watchEvent is a change as watch --json prints it.
type watchEvent struct {
	Type      string `json:"type"`
	Group     string `json:"group"`
	Key       string `json:"key"`
	Value     string `json:"value"`
	Version   int64  `json:"version"`
	ExpiresAt *int64 `json:"expires_at"`
	Time      string `json:"time"`
}

func (p *poller) print(c change, now int64) error {
	var line []byte
	if p.json {
		// Strings as export writes them: <, > and & as they are.
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		err := enc.Encode(watchEvent{
			Type: c.typ, Group: c.e.Group, Key: c.e.Key, Value: c.e.Value, Version: c.e.Version,
			ExpiresAt: unixMilli(c.e.ExpiresAt), Time: time.UnixMilli(now).UTC().Format(jsonTime),
		})
		if err != nil {
			return err
		}
		line = b.Bytes()
	} else {
		s := c.typ + " " + quote(c.e.Group) + " " + quote(c.e.Key)
		switch c.typ {
		case "set":
			s += " " + quote(c.e.Value)
		case "ttl":
			d := store.NoExpiry
			if !c.e.ExpiresAt.IsZero() {
				d = time.Duration(max(c.e.ExpiresAt.UnixMilli()-now, 0)) * time.Millisecond
			}
			s += " " + formatTTL(d)
		}
		line = []byte(s + "\n")
	}
	_, err := p.w.Write(line)
	return err
}
