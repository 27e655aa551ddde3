package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-store/store/internal/server"
)

const passwdUsage = "passwd < PASSWORD"

const passwdHelp = `
Passwd reads a password from the first line of standard input and prints
its bcrypt hash, for the "password_hash" of a user in a users file (serve
--users). On a terminal it prompts for the password, which is echoed.
`

func init() {
	subcommands["passwd"] = &subcommand{usage: passwdUsage, brief: "hash a password for a users file", run: runPasswd}
}

func runPasswd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "passwd")
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	pos, err := parseArgs(env, fs, args, passwdUsage, passwdHelp)
	if err != nil {
		return err
	}
	if err := wantArgs(passwdUsage, pos, 0); err != nil {
		return err
	}
	if isTerminal(env.Stdin) {
		fmt.Fprint(env.Stderr, "Password: ")
	}
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the password: %w", err)
	}
	pass := strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	if pass == "" {
		return errors.New("empty password on standard input")
	}
	hash, err := server.HashPassword(pass)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.Stdout, hash)
	return err
}
