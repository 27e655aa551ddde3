package cli

import (
	"context"

	store "github.com/go-store/store"
)

const ttlUsage = "ttl [--db PATH] GROUP KEY"

const ttlHelp = `
TTL prints how long KEY in GROUP has left to live, to the second from one
second up ("9m58s") and in milliseconds below ("250ms"), or "no expiry".
A missing or expired key is an error ("not found", exit status 1).
`

func init() {
	subcommands["ttl"] = &subcommand{usage: ttlUsage, brief: "print a key's remaining time to live", run: runTTL}
}

func runTTL(ctx context.Context, env *Env, args []string) error {
	return printKey(env, "ttl", ttlUsage, ttlHelp, args, func(st *store.Store, group, key string) (string, error) {
		d, err := st.TTL(group, key)
		return formatTTL(d), err
	})
}
