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

const passwdUsage = "passwd [--argon2id] < PASSWORD"

const passwdHelp = `
Passwd reads a password from the first line of standard input and prints
its bcrypt hash, for the "password_hash" of a user in a users file (serve
--users). On a terminal it prompts for the password, which is echoed.

With --argon2id it prints an argon2id hash instead, in the PHC string
format ($argon2id$v=19$m=65536,t=3,p=4$salt$hash: RFC 9106's second
recommended parameters). A users file may also hold argon2id hashes made
by other tools, with other parameters (up to 1 GiB and 64 passes).
`

func init() {
	subcommands["passwd"] = &subcommand{usage: passwdUsage, brief: "hash a password for a users file", run: runPasswd, noDB: true}
}

func runPasswd(ctx context.Context, env *Env, args []string) error {
	fs := newFlags(env, "passwd")
	argon := fs.Bool("argon2id", false, "print an argon2id hash instead of bcrypt")
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
	hashPassword := server.HashPassword
	if *argon {
		hashPassword = server.HashPasswordArgon2id
	}
	hash, err := hashPassword(pass)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(env.Stdout, hash)
	return err
}
