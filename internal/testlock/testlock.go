//go:build unix

// Package testlock gives tests another process that holds a database
// file locked the way a SQLite connection in exclusive locking mode (or
// in the middle of a write to a rollback-journal database) does, so that
// what the store and the CLI do when they cannot get at the file is
// tested against real file locks. POSIX locks never conflict within one
// process, so the holder must be another one: the test binary itself,
// re-executed.
package testlock

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// envPath, when set in a re-executed test binary, makes Child hold that
// file locked.
const envPath = "GOSTORE_TESTLOCK_PATH"

// The byte range SQLite's unix VFS locks for readers (SHARED_FIRST,
// SHARED_SIZE): a write lock on it is what a connection holding the
// database exclusively has.
const (
	sharedFirst = 1<<30 + 2
	sharedSize  = 510
)

// Child makes the test that calls it first the lock holder, when the
// binary was started by Hold: it write-locks the file, prints "locked" and
// keeps the lock until its standard input closes, then exits. Otherwise it
// does nothing.
func Child() {
	path := os.Getenv(envPath)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		os.Stderr.WriteString("testlock: " + err.Error() + "\n")
		os.Exit(2)
	}
	lk := syscall.Flock_t{Type: syscall.F_WRLCK, Whence: io.SeekStart, Start: sharedFirst, Len: sharedSize}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		os.Stderr.WriteString("testlock: locking: " + err.Error() + "\n")
		os.Exit(2)
	}
	os.Stdout.WriteString("locked\n")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}

// Hold starts the test binary again, running only the test named
// testName (which must call Child first), to hold path locked, and
// returns once it does. Calling release, or the end of the test, ends the
// holder.
func Hold(t *testing.T, testName, path string) (release func()) {
	t.Helper()
	_, stdout, release := Start(t, testName, envPath+"="+path)
	if line, err := stdout.ReadString('\n'); line != "locked\n" {
		release()
		t.Fatalf("testlock: the holder said %q, %v", line, err)
	}
	return release
}

// Start starts the test binary again, running only the test named
// testName with env (KEY=value) added to its environment, for a test
// that needs another process: what is written to stdin is the child's
// standard input, and stdout reads its standard output. Calling stop, or
// the end of the test, closes its input and waits for it to exit.
func Start(t *testing.T, testName string, env ...string) (stdin io.WriteCloser, stdout *bufio.Reader, stop func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+testName+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := false
	stop = func() {
		if done {
			return
		}
		done = true
		stdin.Close()
		cmd.Wait()
	}
	t.Cleanup(stop)
	return stdin, bufio.NewReader(out), stop
}
