package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// INFO's Commandstats and Errorstats sections, kept as Redis keeps them.
// Per command (a subcommand apart: "config|get"): how many times it ran,
// the time it took in all (as the slow log times it), how many calls were
// refused before running (rejected_calls: wrong arity, NOAUTH, a command
// not allowed inside MULTI or while subscribed) and how many ran and
// answered an error (failed_calls). Per error code, the error's first word
// ("ERR", "WRONGTYPE"), how many error replies carried it. CONFIG
// RESETSTAT zeroes both.

// cmdStat is one command's counters, and its Observer's.
type cmdStat struct {
	calls, nanos, rejected, failed atomic.Int64
	observe                        func(time.Duration) // nil without an Observer
}

// cmdStats holds the counters of every command, and of error replies.
type cmdStats struct {
	byName map[string]*cmdStat // every command and subcommand: fixed at New, read without a lock

	errMu sync.Mutex
	errs  map[string]int64 // by error code
	total atomic.Int64     // error replies

	// obs, if set, receives the same counts (see Observer), and unknown
	// records the commands that are not in the table.
	obs     Observer
	unknown func(time.Duration)
}

// newCmdStats returns the counters of every command, which also go to
// obs if it is not nil.
func newCmdStats(obs Observer) *cmdStats {
	cs := &cmdStats{byName: map[string]*cmdStat{}, errs: map[string]int64{}, obs: obs}
	for name, spec := range commands {
		cs.byName[name] = &cmdStat{}
		for sub := range spec.subs {
			cs.byName[name+"|"+sub] = &cmdStat{}
		}
	}
	if obs != nil {
		for name, st := range cs.byName {
			st.observe = obs.Op(protoRESP, strings.ToUpper(name))
		}
		cs.unknown = obs.Op(protoRESP, "unknown")
	}
	return cs
}

// statName is the name a command's counters go under: "config|get" for a
// known subcommand, the command's name otherwise.
func statName(spec *command, args [][]byte) string {
	if spec.subs != nil && len(args) >= 2 {
		sub := strings.ToLower(string(args[1]))
		if _, ok := spec.subs[sub]; ok {
			return spec.name + "|" + sub
		}
	}
	return spec.name
}

// ran counts a command that ran for d and replied reply.
func (cs *cmdStats) ran(name string, d time.Duration, reply []byte) {
	st := cs.byName[name]
	if st == nil {
		return
	}
	st.calls.Add(1)
	st.nanos.Add(int64(d))
	if st.observe != nil {
		st.observe(d)
	}
	if len(reply) > 0 && reply[0] == '-' {
		st.failed.Add(1)
		cs.errorReply(string(reply[1:min(len(reply), 64)]))
	}
}

// rejected counts a command refused before it ran, with error msg; name
// is "" for a command that does not exist.
func (cs *cmdStats) rejected(name, msg string) {
	st := cs.byName[name]
	if st != nil {
		st.rejected.Add(1)
	}
	switch {
	case st != nil && st.observe != nil:
		st.observe(-1) // counted, not timed
	case st == nil && cs.unknown != nil:
		cs.unknown(-1)
	}
	cs.errorReply(msg)
}

// errorReply counts an error reply by its code.
func (cs *cmdStats) errorReply(msg string) {
	code, _, _ := strings.Cut(msg, " ")
	code, _, _ = strings.Cut(code, "\r")
	cs.total.Add(1)
	cs.errMu.Lock()
	cs.errs[code]++
	cs.errMu.Unlock()
	if cs.obs != nil {
		cs.obs.Error(protoRESP, errorKind(code))
	}
}

// commandLines returns INFO commandstats' lines, for the commands that
// have run or been refused.
func (cs *cmdStats) commandLines() []string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(cs.byName)) {
		st := cs.byName[name]
		calls, rejected, failed := st.calls.Load(), st.rejected.Load(), st.failed.Load()
		if calls == 0 && rejected == 0 {
			continue
		}
		usec := st.nanos.Load() / 1000
		perCall := 0.0
		if calls > 0 {
			perCall = float64(st.nanos.Load()) / 1000 / float64(calls)
		}
		lines = append(lines, fmt.Sprintf("cmdstat_%s:calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d",
			name, calls, usec, perCall, rejected, failed))
	}
	return lines
}

// errorLines returns INFO errorstats' lines.
func (cs *cmdStats) errorLines() []string {
	cs.errMu.Lock()
	defer cs.errMu.Unlock()
	var lines []string
	for _, code := range slices.Sorted(maps.Keys(cs.errs)) {
		lines = append(lines, fmt.Sprintf("errorstat_%s:count=%d", code, cs.errs[code]))
	}
	return lines
}

func (cs *cmdStats) reset() {
	for _, st := range cs.byName {
		st.calls.Store(0)
		st.nanos.Store(0)
		st.rejected.Store(0)
		st.failed.Store(0)
	}
	cs.errMu.Lock()
	clear(cs.errs)
	cs.errMu.Unlock()
	cs.total.Store(0)
}
