package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHelpListsEverySubcommand(t *testing.T) {
	t.Parallel()
	r := gostore(t, "", "help")
	r.ok(t)
	for _, name := range []string{"serve", "get", "set", "del", "ls", "ttl", "watch", "purge", "export", "import", "stats", "passwd", "check"} {
		if !strings.Contains(r.stdout, "\n  gostore "+name+" ") {
			t.Errorf("help does not list %s:\n%s", name, r.stdout)
		}
		if subcommands[name] == nil {
			t.Errorf("no subcommand %s", name)
		}
	}
	if len(subcommands) != 13 {
		t.Errorf("%d subcommands, the test knows 13: add the new one to it", len(subcommands))
	}
}

func TestNoArgumentsIsAUsageError(t *testing.T) {
	t.Parallel()
	r := gostore(t, "")
	r.wantError(t, 2, "Usage:")
}

func TestUnknownCommand(t *testing.T) {
	t.Parallel()
	gostore(t, "", "frobnicate").wantError(t, 2, `unknown command "frobnicate"`, "Try: gostore help")
	// Help on a command gostore does not have is the same error, not
	// the list of commands and success.
	gostore(t, "", "help", "frobnicate").wantError(t, 2, `unknown command "frobnicate"`, "Try: gostore help")
	gostore(t, "", "help", "get", "set").wantError(t, 2, `unexpected argument "set"`)
	gostore(t, "", "help", "help").ok(t)
	// Help on help, however asked for, is the list of commands.
	for _, h := range []string{"-h", "--help", "-help"} {
		if r := gostore(t, "", "help", h); r.code != 0 || !strings.Contains(r.stdout, "Usage:") {
			t.Errorf("gostore help %s: exit %d, stdout %q; want the list of commands", h, r.code, r.stdout)
		}
	}
}

// TestInvalidTTLMessage: an invalid --ttl is reported in ParseTTL's words,
// as README.md quotes them, without the flag package's own preamble.
func TestInvalidTTLMessage(t *testing.T) {
	t.Parallel()
	r := gostore(t, "", "set", "--db", tempDB(t), "--ttl", "10minutes", "g", "k", "v")
	want := "gostore set: store: invalid TTL \"10minutes\": want a duration such as 90s, 10m or 1h30m, or whole seconds\n"
	if r.code != 2 || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("exit %d, stderr:\n%s\nwant exit 2 and a first line of\n%s", r.code, r.stderr, want)
	}
}

// TestHelpReportsAFailedWrite: gostore help whose output cannot be
// written exits 1, as every other command does.
func TestHelpReportsAFailedWrite(t *testing.T) {
	t.Parallel()
	var errb strings.Builder
	if code := Run(context.Background(), []string{"help"}, strings.NewReader(""), failingWriter{}, &errb); code != 1 {
		t.Errorf("help to a failing stdout: exit %d, stderr %q; want 1", code, errb.String())
	}
}

func TestSubcommandHelp(t *testing.T) {
	t.Parallel()
	for name := range subcommands {
		if name == "serve" {
			continue // serve keeps the flag package's own -h
		}
		t.Run(name, func(t *testing.T) {
			r := gostore(t, "", name, "-h")
			r.ok(t)
			if !strings.HasPrefix(r.stdout, "Usage: gostore "+name) || !strings.Contains(r.stdout, "Flags:") {
				t.Errorf("%s -h printed:\n%s", name, r.stdout)
			}
		})
	}
}

// TestUsageErrors checks that every mistake in a command line exits with
// status 2, says what is wrong and hints at the right usage.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "", "set", "--db", db, "g", "k", "v").ok(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"get"}, "missing GROUP and KEY"},
		{[]string{"get", "g"}, "missing KEY"},
		{[]string{"get", "g", "k", "extra"}, `unexpected argument "extra"`},
		{[]string{"get", "--nope", "g", "k"}, "flag provided but not defined: -nope"},
		{[]string{"get", "g", "k", "--nope"}, "flag provided but not defined: -nope"},
		{[]string{"get", "g", ""}, "key is empty"},
		{[]string{"set", "g", "k"}, "missing VALUE"},
		{[]string{"set", "--ttl", "10minutes", "g", "k", "v"}, `invalid TTL "10minutes": want a duration`},
		{[]string{"set", "g", "k", "v", "--ttl", "0"}, `invalid TTL "0": must be positive`},
		{[]string{"set", "--ttl", "-5s", "g", "k", "v"}, `invalid TTL "-5s"`},
		{[]string{"set", "--ttl", "10000h", "g", "k", "v"}, "invalid TTL"}, // above MaxTTL
		{[]string{"set", "g", "", "v"}, "key is empty"},
		{[]string{"set", "--nope", "g", "k", "v"}, "-nope"},
		{[]string{"set", "g", "k", "-5"}, "an argument that starts with '-' goes after --"},
		{[]string{"del"}, "missing GROUP"},
		{[]string{"del", "g", "k", "x"}, `unexpected argument "x"`},
		{[]string{"del", "-x", "g"}, "-x"},
		{[]string{"ls", "a", "b"}, `unexpected argument "b"`},
		{[]string{"ls", "-l"}, "-l lists keys: it needs -g GROUP"},
		{[]string{"ls", "-g", "g", "k"}, `unexpected argument "k"`},
		{[]string{"ls", "--limit", "-1"}, "--limit must not be negative"},
		{[]string{"ls", "--prefix", "a", "b"}, "give the group prefix once"},
		{[]string{"ls", "--limit", "x"}, `invalid value "x" for flag -limit`},
		{[]string{"ttl", "g"}, "missing KEY"},
		{[]string{"ttl", "--nope", "g", "k"}, "-nope"},
		{[]string{"watch", "a", "b", "c"}, `unexpected argument "c"`},
		{[]string{"watch", "--interval", "0s"}, "--interval must be positive"},
		{[]string{"watch", "--json=maybe"}, "invalid boolean value"},
		{[]string{"purge", "x"}, `unexpected argument "x"`},
		{[]string{"stats", "x"}, `unexpected argument "x"`},
		{[]string{"stats", "--nope"}, "-nope"},
		{[]string{"export", "x"}, `unexpected argument "x"`},
		{[]string{"export", "-o"}, "flag needs an argument: -o"},
		{[]string{"import", "x"}, `unexpected argument "x"`},
		{[]string{"import", "--nope"}, "-nope"},
		{[]string{"passwd", "x"}, `unexpected argument "x"`},
		{[]string{"passwd", "--nope"}, "-nope"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string{tc.args[0], "--db", db}, tc.args[1:]...)
			if tc.args[0] == "passwd" {
				args = tc.args
			}
			r := gostore(t, "", args...)
			r.wantError(t, 2, "gostore "+tc.args[0]+": ", tc.want, "\nTry: gostore "+tc.args[0]+" ")
			if strings.Count(r.stderr, tc.want) != 1 {
				t.Errorf("the error is printed more than once:\n%s", r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
	// None of them changed the database.
	gostore(t, "", "export", "--db", db).wantStdout(t, `{"group":"g","key":"k","value":"v","expires_at":null,"version":1}`+"\n")
}

func TestWatchRefusesMemory(t *testing.T) {
	t.Parallel()
	gostore(t, "", "watch", "--db", ":memory:").wantError(t, 2, "watch needs a database file", "Try:")
}

// TestReadCommandsDoNotCreateDatabases checks that a mistyped --db is an
// error, not a new empty database.
func TestReadCommandsDoNotCreateDatabases(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	for _, args := range [][]string{
		{"get", "g", "k"}, {"ttl", "g", "k"}, {"del", "g"}, {"ls"}, {"purge"},
		{"stats"}, {"export"}, {"watch"},
	} {
		r := gostore(t, "", append(args, "--db", db)...)
		r.wantError(t, 1, "no such database")
		if _, err := os.Stat(db); !os.IsNotExist(err) {
			t.Fatalf("%s created %s (stat: %v)", args[0], db, err)
		}
	}
}

// TestReadCommandsLeaveEmptyFilesAlone: an empty file (touch app.db) is
// not yet a database. The commands that only read or delete refuse it,
// as they refuse a missing one, and leave it empty with nothing beside
// it; set makes it a go-store database.
func TestReadCommandsLeaveEmptyFilesAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "app.db")
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"get", "g", "k"}, {"ttl", "g", "k"}, {"del", "g"}, {"ls"}, {"purge"},
		{"stats"}, {"export"}, {"watch"},
	} {
		gostore(t, "", append(args, "--db", db)...).wantError(t, 1, "empty file, not a go-store database yet")
		fi, err := os.Stat(db)
		if err != nil || fi.Size() != 0 {
			t.Fatalf("after %s: %s is %v (%v); want it empty", args[0], db, fi.Size(), err)
		}
		if names, _ := os.ReadDir(dir); len(names) != 1 {
			t.Fatalf("after %s the directory holds %d files; want only %s", args[0], len(names), db)
		}
	}
	gostore(t, "", "set", "--db", db, "g", "k", "v").wantStdout(t, "")
	gostore(t, "", "get", "--db", db, "g", "k").wantStdout(t, "v\n")
}

// TestDBBeforeCommand: --db may come before the command's name, in each
// of the flag package's spellings, and means what it means after it.
func TestDBBeforeCommand(t *testing.T) {
	t.Parallel()
	db := tempDB(t)
	gostore(t, "", "--db", db, "set", "config", "theme", "dark").ok(t)
	for _, args := range [][]string{
		{"--db", db, "get", "config", "theme"},
		{"-db", db, "get", "config", "theme"},
		{"--db=" + db, "get", "config", "theme"},
		{"get", "--db", db, "config", "theme"},
	} {
		r := gostore(t, "", args...)
		r.ok(t)
		if r.stdout != "dark\n" {
			t.Errorf("gostore %q printed %q, want dark", args, r.stdout)
		}
	}
	gostore(t, "", "--db").wantError(t, 2, "flag needs an argument: --db")
	gostore(t, "", "--db", db).wantError(t, 2, "no command after --db")
	gostore(t, "", "--db", db, "frobnicate").wantError(t, 2, `unknown command "frobnicate"`)
	// Help needs no database; it comes as it would without --db.
	for _, args := range [][]string{{"help"}, {"-h"}, {"help", "get"}} {
		want := gostore(t, "", args...)
		got := gostore(t, "", append([]string{"--db", db}, args...)...)
		if got.code != 0 || got.stdout != want.stdout || got.stdout == "" {
			t.Errorf("gostore --db PATH %q: exit %d, stdout %q; want exit 0 and the help of gostore %q", args, got.code, got.stdout, args)
		}
	}
}
