//go:build ignore

// gen writes the go-store v0.1 database fixtures that migrate_test.go
// opens: with_expiry.db (the v0.1 table with its expires_at column) and
// no_expiry.db (the older v0.1 table without it). It writes them the way
// v0.1 did, through database/sql and the modernc.org/sqlite driver, then
// folds the WAL into the main file so each fixture is a single file.
//
// Run it from the repository root:
//
//	go run testdata/v01/gen.go
//
// The fixtures are committed; regenerate them only if this program changes,
// and keep migrate_test.go's expectations in step with the rows below.
package main

import (
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite"
)

const dir = "testdata/v01"

// The expiries written to with_expiry.db, in Unix milliseconds.
var (
	farFuture = time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()   // 4102444800000
	longAgo   = time.Date(2001, 9, 9, 1, 46, 40, 0, time.UTC).UnixMilli() // 1000000000000
)

type row struct {
	grp, key, value string
	expiresAt       any // nil (NULL) or int64 Unix ms; ignored by no_expiry.db
}

// liveRows are the rows both fixtures hold; every one is live.
var liveRows = []row{
	{"config", "theme", "dark", nil},
	{"config", "language", "en-GB", nil},
	{"config", "empty", "", nil},
	{"config", "multiline", "line one\nline two\r\n\ttabbed line three\n", nil},
	{"config", "json", `{"a":1,"b":[true,null],"c":"x\"y"}`, nil},
	{"session", "user", "alice", nil},
	{"session", "token", "abc123", nil},
	{"tenant-a:prefs", "colour", "blue", nil},
	{"tenant-a:prefs", "font size", "12pt", nil},
	{"100%_done", "50%_off", "literal % and _ in a group and a key", nil},
	{"100-done", "decoy", "a group LIKE '100%_done' would also match", nil},
	{"café ☕ 日本語", "ключ", "значение — 値 — 🎉", nil},
	{"café ☕ 日本語", "emoji 🎉", "zero\u200bwidth and combining e\u0301", nil},
}

func main() {
	writeDB("with_expiry.db", `CREATE TABLE IF NOT EXISTS kv (grp TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER, PRIMARY KEY (grp, key))`, true)
	writeDB("no_expiry.db", `CREATE TABLE IF NOT EXISTS kv (grp TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (grp, key))`, false)
}

func writeDB(name, createTable string, withExpiry bool) {
	path := filepath.Join(dir, name)
	for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			log.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // so every PRAGMA applies to the one connection

	exec(db, "PRAGMA journal_mode=WAL")
	exec(db, createTable)

	rows := append([]row(nil), liveRows...)
	if withExpiry {
		rows = append(rows,
			row{"session", "remember-me", "until 2100", farFuture},
			row{"stale", "gone", "expired in 2001", longAgo},
		)
	}
	tx, err := db.Begin()
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows {
		if withExpiry {
			_, err = tx.Exec(`INSERT INTO kv (grp, key, value, expires_at) VALUES (?, ?, ?, ?)`, r.grp, r.key, r.value, r.expiresAt)
		} else {
			_, err = tx.Exec(`INSERT INTO kv (grp, key, value) VALUES (?, ?, ?)`, r.grp, r.key, r.value)
		}
		if err != nil {
			log.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	// Fold the WAL into the main file and leave WAL mode, so the fixture
	// is one self-contained file with no -wal or -shm beside it.
	exec(db, "PRAGMA wal_checkpoint(TRUNCATE)")
	exec(db, "PRAGMA journal_mode=DELETE")

	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil {
		log.Fatal(err)
	}
	if v != 0 {
		log.Fatalf("%s: user_version = %d, want 0", path, v)
	}
	fmt.Printf("wrote %s (%d rows)\n", path, len(rows))
}

func exec(db *sql.DB, query string) {
	if _, err := db.Exec(query); err != nil {
		log.Fatalf("%s: %v", query, err)
	}
}
