package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/internal/server"
	"github.com/go-store/store/internal/storetest"
	"golang.org/x/crypto/bcrypt"
)

// result is what one run of the command printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

// gostore runs the command through Run with stdin and captured output.
func gostore(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// gostoreAt is gostore with the stores' clock set to clock.
func gostoreAt(t testing.TB, clock func() time.Time, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb, now: clock}
	code := run(context.Background(), env, args)
	return result{code, out.String(), errb.String()}
}

// ok fails the test unless r is a success.
func (r result) ok(t *testing.T) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit status %d, want 0; stderr:\n%s", r.code, r.stderr)
	}
	return r
}

// wantStdout fails the test unless r succeeded and printed want.
func (r result) wantStdout(t *testing.T, want string) {
	t.Helper()
	r.ok(t)
	if r.stdout != want {
		t.Fatalf("stdout = %q, want %q", r.stdout, want)
	}
}

// wantError fails the test unless r exited with code and stderr holds
// every one of texts.
func (r result) wantError(t *testing.T, code int, texts ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit status %d, want %d; stdout %q, stderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range texts {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr does not contain %q:\n%s", s, r.stderr)
		}
	}
}

// tempDB returns the path of a database file, not yet created, in a
// temporary directory (storetest.TempPath).
func tempDB(t *testing.T) string {
	t.Helper()
	return storetest.TempPath(t)
}

// openStore opens the database at path as another program would, with
// clock (nil: time.Now) and no purger, closed at the end of the test.
func openStore(t *testing.T, path string, clock func() time.Time) *store.Store {
	t.Helper()
	return storetest.Open(t, path, store.WithPurgeInterval(-1), store.WithClock(clock))
}

// newFakeClock returns the shared test clock (storetest.Clock) at the
// time these tests' expected outputs are written for: 2030-01-02
// 03:04:05 UTC.
func newFakeClock() *storetest.Clock {
	return storetest.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
}

// syncBuffer is a bytes.Buffer that a command may write from another
// goroutine while the test waits for what it writes.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{} // receives after a write
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{}, 1)} }

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	n, err := s.b.Write(p)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	return n, err
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until the buffer contains want, failing the test after
// a deadline, and returns the contents.
func (s *syncBuffer) waitFor(t testing.TB, want string) string {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		if got := s.String(); strings.Contains(got, want) {
			return got
		}
		select {
		case <-s.changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %q; have:\n%s", want, s.String())
		}
	}
}

// failingWriter is an output that cannot be written, as /dev/full.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// tenant is a user of a users file written by usersFile.
type tenant struct {
	name, password, namespace string
	quota                     store.QuotaConfig
}

// usersFile writes a users file (server.LoadUsers's format, with bcrypt
// hashes of the lowest cost) of tenants in a temporary directory and
// returns its path.
func usersFile(t testing.TB, tenants ...tenant) string {
	t.Helper()
	users := make([]server.User, len(tenants))
	for i, tn := range tenants {
		hash, err := bcrypt.GenerateFromPassword([]byte(tn.password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		users[i] = server.User{Name: tn.name, Hash: string(hash), Namespace: tn.namespace, Quota: tn.quota}
	}
	b, err := json.Marshal(users)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "users.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
