package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
)

// failingReads is a handle whose reads of the groups fail selects fail,
// as a read does when the disk does.
type failingReads struct {
	kvReader
	fail func(group string) bool
}

var errDisk = errors.New("disk I/O error")

func (f failingReads) Get(group, key string) (string, error) {
	if f.fail(group) {
		return "", errDisk
	}
	return f.kvReader.Get(group, key)
}

func (f failingReads) GetEntry(group, key string) (store.Entry, error) {
	if f.fail(group) {
		return store.Entry{}, errDisk
	}
	return f.kvReader.GetEntry(group, key)
}

func (f failingReads) GetAll(group string) (map[string]string, error) {
	if f.fail(group) {
		return nil, errDisk
	}
	return f.kvReader.GetAll(group)
}

func (f failingReads) Count(group string) (int, error) {
	if f.fail(group) {
		return 0, errDisk
	}
	return f.kvReader.Count(group)
}

func (f failingReads) Groups(prefix string) ([]string, error) {
	if f.fail(prefix) {
		return nil, errDisk
	}
	return f.kvReader.Groups(prefix)
}

func (f failingReads) List(group string, opt store.ListOptions) (store.Page, error) {
	if f.fail(group) {
		return store.Page{}, errDisk
	}
	return f.kvReader.List(group, opt)
}

func (f failingReads) TTL(group, key string) (time.Duration, error) {
	if f.fail(group) {
		return 0, errDisk
	}
	return f.kvReader.TTL(group, key)
}

// TestReadsReportStoreErrors: a read whose store lookup fails answers an
// error naming the cause, never a reply that passes the failure off as a
// missing key or field (-2, nil, 0) or an empty hash. The hash commands
// are run with only their field reads failing: the string lookup each
// makes first succeeds.
func TestReadsReportStoreErrors(t *testing.T) {
	st, s := newInternalServer(t)
	if err := st.Set("h", "f", "v"); err != nil {
		t.Fatal(err)
	}
	all := func(string) bool { return true }
	fields := func(group string) bool { return group != strGroup }
	for _, tc := range []struct {
		line string
		fail func(string) bool
	}{
		{"GET k", all}, {"MGET a b", all}, {"EXISTS a b", all}, {"STRLEN k", all}, {"TYPE k", all},
		{"TTL k", all}, {"PTTL k", all}, {"EXPIRETIME k", all}, {"GETRANGE k 0 1", all},
		{"KEYS *", all}, {"SCAN 0", all}, {"DBSIZE", all}, {"RANDOMKEY", all},
		{"OBJECT ENCODING k", all}, {"MEMORY USAGE k", all},
	} {
		checkReadFails(t, s, st, tc.line, tc.fail)
	}
	// OBJECT ENCODING and MEMORY USAGE look a string key up twice: its
	// type, then its value. The second lookup fails.
	for _, line := range []string{"OBJECT ENCODING k", "MEMORY USAGE k"} {
		if err := st.Set(strGroup, "k", "v"); err != nil {
			t.Fatal(err)
		}
		calls := 0
		second := func(string) bool { calls++; return calls > 1 }
		checkReadFails(t, s, st, line, second)
	}
	for _, line := range []string{
		"HGET h f", "HMGET h f g", "HEXISTS h f", "HSTRLEN h f", "HGETALL h", "HKEYS h", "HVALS h", "HLEN h",
		"HTTL h FIELDS 2 f g", "HPTTL h FIELDS 1 f", "HRANDFIELD h", "HSCAN h 0",
	} {
		checkReadFails(t, s, st, line, fields)
	}
}

// checkReadFails runs one command line on s with the reads fail selects
// failing, and checks that it answers the error.
func checkReadFails(t *testing.T, s *Server, st *store.Store, line string, fail func(string) bool) {
	t.Helper()
	args := strings.Fields(line)
	spec := commands[strings.ToLower(args[0])]
	if spec == nil {
		t.Errorf("%s: no such command", args[0])
		return
	}
	x := &exec{c: newClient(s, nil), db: s.dbs[0], kv: failingReads{st, fail}, r: &reply{proto: 2}, name: spec.name}
	for _, a := range args {
		x.args = append(x.args, []byte(a))
	}
	spec.fn(x)
	if got := string(x.r.b); !strings.HasPrefix(got, "-ERR ") || !strings.Contains(got, "disk I/O error") {
		t.Errorf("%s with failing reads replied %q, want an error naming the cause", line, got)
	}
}

// TestMultiGetsAnswerNilForUnstorableNames: MGET and HMGET answer nil for
// a name the store cannot hold (invalid UTF-8, too long), as Redis does
// for any key that does not exist, and still answer the other names.
func TestMultiGetsAnswerNilForUnstorableNames(t *testing.T) {
	st, s := newInternalServer(t)
	if err := st.Set(strGroup, "a", "1"); err != nil {
		t.Fatal(err)
	}
	if err := st.Set("h", "f", "2"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("k", store.DefaultMaxKeyBytes+1)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"MGET", "a", "\xff", long}, "*3\r\n$1\r\n1\r\n$-1\r\n$-1\r\n"},
		{[]string{"HMGET", "h", "f", "\xff", long}, "*3\r\n$1\r\n2\r\n$-1\r\n$-1\r\n"},
	} {
		spec := commands[strings.ToLower(tc.args[0])]
		x := &exec{c: newClient(s, nil), db: s.dbs[0], kv: st, r: &reply{proto: 2}, name: spec.name}
		for _, a := range tc.args {
			x.args = append(x.args, []byte(a))
		}
		spec.fn(x)
		if got := string(x.r.b); got != tc.want {
			t.Errorf("%q replied %q, want %q", tc.args[:2], got, tc.want)
		}
	}
}
