//go:build unix

package cli

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// `gostore serve` in another process, for the tests that kill it with
// SIGKILL: the test binary runs again with only the calling test selected
// and serveChildDB (and serveChildAddr) in its environment, which make
// that test call runServeChild first thing and serve until killed.

// Environment of a server child.
const (
	serveChildDB   = "GOSTORE_SERVE_CHILD_DB"   // the database to serve; set only in a child
	serveChildAddr = "GOSTORE_SERVE_CHILD_ADDR" // where to listen ("": 127.0.0.1:0)
)

// serveChildStart bounds the wait for a child to say where it listens.
const serveChildStart = 30 * time.Second

// runServeChild makes the process a server child if serveChildDB is set:
// it runs `gostore serve` until it is killed and exits with its status.
// Otherwise it returns at once. A test that starts server children calls
// it first.
func runServeChild() {
	db := os.Getenv(serveChildDB)
	if db == "" {
		return
	}
	addr := cmp.Or(os.Getenv(serveChildAddr), "127.0.0.1:0")
	os.Exit(Run(context.Background(), []string{"serve", "--addr", addr, "--db", db}, strings.NewReader(""), io.Discard, os.Stderr))
}

// serveChild is `gostore serve` running in another process.
type serveChild struct {
	cmd  *exec.Cmd
	addr string // where it listens, HOST:PORT
	done bool   // killed and waited for

	mu     sync.Mutex // guards stderr
	stderr []string   // its standard error after the first line, the first lines of it
}

// serveChildLines bounds what a serveChild keeps of its standard error.
const serveChildLines = 100

// startServeChild runs testName again as `gostore serve --db db --addr
// addr` (addr "" picks a free port) and returns once it listens. An error
// says why it did not: what it printed instead, its exit, or that it said
// nothing within serveChildStart. The end of the test kills it if it
// still runs.
func startServeChild(t *testing.T, testName, db, addr string) (*serveChild, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+testName+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), serveChildDB+"="+db, serveChildAddr+"="+addr)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &serveChild{cmd: cmd}
	t.Cleanup(func() { c.kill() })
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		if !sc.Scan() {
			close(first)
			io.Copy(io.Discard, stderr)
			return
		}
		first <- sc.Text()
		for sc.Scan() {
			c.mu.Lock()
			if len(c.stderr) < serveChildLines {
				c.stderr = append(c.stderr, sc.Text())
			}
			c.mu.Unlock()
		}
		io.Copy(io.Discard, stderr)
	}()
	timer := time.NewTimer(serveChildStart)
	defer timer.Stop()
	select {
	case line, ok := <-first:
		if a, found := strings.CutPrefix(line, "listening on "); found {
			c.addr = a
			return c, nil
		}
		err := c.kill()
		if !ok {
			return nil, fmt.Errorf("the server printed nothing and exited: %v", err)
		}
		return nil, fmt.Errorf("the server printed %q instead of listening", line)
	case <-timer.C:
		c.kill()
		return nil, fmt.Errorf("the server did not listen within %v", serveChildStart)
	}
}

// kill sends the child SIGKILL and waits for it to end. It returns an
// error unless that signal is what ended it. Calling it again does
// nothing.
func (c *serveChild) kill() error {
	if c.done {
		return nil
	}
	c.done = true
	c.cmd.Process.Kill()
	err := c.cmd.Wait()
	if err == nil || !strings.Contains(err.Error(), "killed") {
		return fmt.Errorf("the server was not killed: exit %v", err)
	}
	return nil
}

// pid returns the child's process id.
func (c *serveChild) pid() int { return c.cmd.Process.Pid }

// output returns the lines the child wrote on standard error after the
// first (at most serveChildLines).
func (c *serveChild) output() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr[:len(c.stderr):len(c.stderr)]
}
