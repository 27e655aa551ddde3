// Package cli implements the gostore command: a Redis-protocol server
// over a go-store database, and subcommands to inspect and change one.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"time"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitInterrupted is what a shell reports for a command that SIGINT
	// stopped (128 + 2): the work was not finished.
	exitInterrupted = 130
)

// Env is what a subcommand runs with: its standard streams.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer

	// now is the clock behind every expiry decision of the stores the
	// subcommands open (nil: time.Now). Tests replace it.
	now func() time.Time
}

// clock returns env's clock.
func (env *Env) clock() func() time.Time {
	if env.now == nil {
		return time.Now
	}
	return env.now
}

// subcommand is one verb of the gostore command.
type subcommand struct {
	usage string // "get [--db PATH] GROUP KEY"
	brief string
	run   func(ctx context.Context, env *Env, args []string) error
	// noDB is set for a command that opens no database (passwd): a
	// --db before its name, as an alias of gostore --db PATH puts there,
	// is dropped rather than handed to it.
	noDB bool
}

// subcommands is filled by init functions of the files that define them.
var subcommands = map[string]*subcommand{}

// usageError is a mistake in the command line: it prints a hint and exits
// with status 2.
type usageError struct {
	msg, hint string
}

func (e *usageError) Error() string { return e.msg }

func usagef(hint, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), hint: hint}
}

// Run runs the gostore command with args (without the program name) and
// returns its exit status.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, &Env{Stdin: stdin, Stdout: stdout, Stderr: stderr}, args)
}

// run is Run with a whole Env, so that tests can set its clock.
func run(ctx context.Context, env *Env, args []string) int {
	stdout, stderr := env.Stdout, env.Stderr
	if len(args) == 0 {
		_ = printUsage(stderr) // the usage error is the point; stderr failing changes nothing
		return exitUsage
	}
	if moved, err := dbFirst(args); err != nil {
		fmt.Fprintf(stderr, "gostore: %v\nTry: gostore [--db PATH] COMMAND ...\n", err)
		return exitUsage
	} else if moved != nil {
		args = moved
	}
	name := args[0]
	if isHelp(name) {
		switch {
		case len(args) == 1 || isHelp(args[1]):
			if err := printUsage(stdout); err != nil {
				fmt.Fprintf(stderr, "gostore help: %v\n", err)
				return exitError
			}
			return exitOK
		case len(args) > 2:
			fmt.Fprintf(stderr, "gostore help: unexpected argument %q\nTry: gostore help [COMMAND]\n", args[2])
			return exitUsage
		case subcommands[args[1]] == nil:
			return unknownCommand(stderr, args[1])
		}
		// gostore help CMD is gostore CMD -h.
		return run(ctx, env, []string{args[1], "-h"})
	}
	sc := subcommands[name]
	if sc == nil {
		return unknownCommand(stderr, name)
	}
	err := sc.run(ctx, env, args[1:])
	var ue *usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		fmt.Fprintf(stderr, "gostore %s: interrupted\n", name)
		return exitInterrupted
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "gostore %s: %s\n", name, ue.msg)
		hint := ue.hint
		if hint == "" {
			hint = "gostore " + sc.usage
		}
		fmt.Fprintf(stderr, "Try: %s\n", hint)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "gostore %s: %v\n", name, err)
		return exitError
	}
}

// printUsage writes the list of commands to w, and reports whether that
// write failed (gostore help > /dev/full is an error).
func printUsage(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintln(&b, "gostore: a Redis-protocol server and CLI for go-store databases")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "Usage:")
	names := make([]string, 0, len(subcommands))
	for n := range subcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	width := 0
	for _, n := range names {
		width = max(width, len(subcommands[n].usage))
	}
	for _, n := range names {
		fmt.Fprintf(&b, "  gostore %-*s  %s\n", width, subcommands[n].usage, subcommands[n].brief)
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "--db may also come first: gostore --db app.db get GROUP KEY.")
	fmt.Fprintln(&b, "Run 'gostore COMMAND -h' for a command's flags.")
	_, err := io.WriteString(w, b.String())
	return err
}

// dbFirst lets --db come before the command, as in gostore --db app.db
// get config theme, and returns the arguments with it moved behind the
// command's name, where the command's own flags read it. It returns nil
// when args do not start with --db (or -db, or either with =PATH).
func dbFirst(args []string) ([]string, error) {
	flagName, path, hasValue := strings.Cut(args[0], "=")
	if flagName != "--db" && flagName != "-db" {
		return nil, nil
	}
	rest := args[1:]
	if !hasValue {
		if len(rest) == 0 {
			return nil, fmt.Errorf("flag needs an argument: %s", flagName)
		}
		path, rest = rest[0], rest[1:]
	}
	if len(rest) == 0 {
		return nil, fmt.Errorf("no command after --db %s", path)
	}
	if sc := subcommands[rest[0]]; isHelp(rest[0]) || sc != nil && sc.noDB {
		return rest, nil // help and passwd name no database
	}
	return append([]string{rest[0], "--db", path}, rest[1:]...), nil
}

// isHelp reports whether arg asks for help in place of a command.
func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "--help" || arg == "-help"
}

// unknownCommand reports a command name gostore does not have.
func unknownCommand(stderr io.Writer, name string) int {
	fmt.Fprintf(stderr, "gostore: unknown command %q\nTry: gostore help\n", name)
	return exitUsage
}

// newFlags returns a flag set for a subcommand that reports errors as
// usage errors instead of exiting.
func newFlags(env *Env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("gostore "+name, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	return fs
}

// parse parses args, turning flag errors into usage errors. Flags may
// come before or after the positional arguments; everything after "--"
// is positional.
func parse(fs *flag.FlagSet, args []string, usage string) ([]string, error) {
	var pos, tail []string
	if i := slices.Index(args, "--"); i >= 0 {
		// Split here: fs.Parse would drop the "--" and the loop below
		// would then read what follows it as flags.
		args, tail = args[:i], args[i+1:]
	}
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			if strings.HasPrefix(err.Error(), "flag provided but not defined") {
				// Often an argument, such as a negative number, that
				// only looks like a flag.
				err = fmt.Errorf("%w (an argument that starts with '-' goes after --)", err)
			}
			return nil, usagef("gostore "+usage, "%v", err)
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return append(pos, tail...), nil
		}
		if strings.HasPrefix(rest[0], "-") && rest[0] != "-" {
			args = rest
			continue
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
