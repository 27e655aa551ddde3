// Command gostore serves a go-store database over the Redis protocol and
// inspects one from the command line. Run `gostore help` for usage.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-store/store/internal/cli"
)

func main() {
	// The first SIGINT/SIGTERM cancels ctx: serve stops accepting, drains
	// and closes the store. A second one kills the process the usual way.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	os.Exit(cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
