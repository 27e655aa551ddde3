package server

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Redis's tuning parameters that mean nothing to gostore: the encodings'
// size thresholds (a hash here is a group of rows, whatever its size),
// the event loop's frequency,
// defragmentation, lazy freeing, RDB and AOF settings (every write is in
// SQLite's write-ahead log before its reply). CONFIG SET accepts them,
// checked as Redis checks them and with Redis's error texts, keeps their
// values and CONFIG GET reports them, so that clients and test harnesses
// that set them before they start (Redis's own test suite,
// redis-benchmark's setups, ORMs tuning encodings) run unchanged. Setting
// them changes nothing else. The parameters CONFIG SET changes with an
// effect are in configSetters (admin.go).

// tunable is one parameter: its names (the first canonical, the rest
// Redis's aliases, which share its value), Redis 7.0's default, and the
// check of a new value, which returns the value as CONFIG GET shows it or
// Redis's reason for refusing it.
type tunable struct {
	names []string
	def   string
	check func(v string) (string, string)
}

// tunables are the parameters, as Redis 7.0 names, checks and defaults
// them (the defaults are those of `redis-server` with no configuration
// file, except save, which is "" because gostore makes no RDB snapshots).
var tunables = []tunable{
	{[]string{"hash-max-listpack-entries", "hash-max-ziplist-entries"}, "512", intRange(0, math.MaxInt64)},
	{[]string{"hash-max-listpack-value", "hash-max-ziplist-value"}, "64", intRange(0, math.MaxInt64)},
	{[]string{"zset-max-listpack-entries", "zset-max-ziplist-entries"}, "128", intRange(0, math.MaxInt64)},
	{[]string{"zset-max-listpack-value", "zset-max-ziplist-value"}, "64", intRange(0, math.MaxInt64)},
	{[]string{"list-max-listpack-size", "list-max-ziplist-size"}, "-2", intRange(math.MinInt32, math.MaxInt32)},
	{[]string{"list-compress-depth"}, "0", intRange(0, math.MaxInt32)},
	{[]string{"set-max-intset-entries"}, "512", intRange(0, math.MaxInt64)},
	{[]string{"stream-node-max-bytes"}, "4096", memory(0, math.MaxInt64)},
	{[]string{"stream-node-max-entries"}, "100", intRange(0, math.MaxInt64)},
	{[]string{"hz"}, "10", clamped(0, math.MaxInt32, 1, 500)},
	{[]string{"dynamic-hz"}, "yes", yesNo},
	{[]string{"active-expire-effort"}, "1", intRange(1, 10)},
	{[]string{"activedefrag"}, "no", yesNo},
	{[]string{"active-defrag-cycle-min"}, "1", intRange(1, 99)},
	{[]string{"active-defrag-cycle-max"}, "25", intRange(1, 99)},
	{[]string{"active-defrag-ignore-bytes"}, "104857600", memory(1, math.MaxInt64)},
	{[]string{"active-defrag-threshold-lower"}, "10", intRange(0, 1000)},
	{[]string{"active-defrag-threshold-upper"}, "100", intRange(0, 1000)},
	{[]string{"active-defrag-max-scan-fields"}, "1000", intRange(1, math.MaxInt64)},
	{[]string{"lazyfree-lazy-eviction"}, "no", yesNo},
	{[]string{"lazyfree-lazy-expire"}, "no", yesNo},
	{[]string{"lazyfree-lazy-server-del"}, "no", yesNo},
	{[]string{"lazyfree-lazy-user-del"}, "no", yesNo},
	{[]string{"lazyfree-lazy-user-flush"}, "no", yesNo},
	{[]string{"latency-monitor-threshold"}, "0", intRange(0, math.MaxInt64)},
	{[]string{"latency-tracking"}, "yes", yesNo},
	{[]string{"latency-tracking-info-percentiles"}, "50 99 99.9", percentiles},
	{[]string{"appendonly"}, "no", yesNo},
	{[]string{"appendfsync"}, "everysec", oneOf("everysec", "always", "no")},
	{[]string{"aof-use-rdb-preamble"}, "yes", yesNo},
	{[]string{"auto-aof-rewrite-percentage"}, "100", intRange(0, math.MaxInt32)},
	{[]string{"no-appendfsync-on-rewrite"}, "no", yesNo},
	{[]string{"save"}, "", saveParams},
	{[]string{"rdbcompression"}, "yes", yesNo},
	{[]string{"rdbchecksum"}, "yes", yesNo},
	{[]string{"rdb-key-save-delay"}, "0", intRange(math.MinInt32, math.MaxInt32)},
	{[]string{"key-load-delay"}, "0", intRange(math.MinInt32, math.MaxInt32)},
	{[]string{"loglevel"}, "notice", oneOf("debug", "verbose", "notice", "warning")},
	{[]string{"oom-score-adj"}, "no", oneOf("no", "yes", "relative", "absolute")},
	{[]string{"oom-score-adj-values"}, "0 200 800", oomValues},
	{[]string{"jemalloc-bg-thread"}, "yes", yesNo},
}

// tunableByName maps every name and alias to its parameter.
var tunableByName = map[string]*tunable{}

func init() {
	for i := range tunables {
		t := &tunables[i]
		for _, n := range t.names {
			tunableByName[n] = t
		}
		canon := t.names[0]
		for _, n := range t.names {
			configSetters[n] = func(s *Server, v string) (func(), string) {
				shown, reason := t.check(v)
				if reason != "" {
					return nil, reason
				}
				return func() { s.config.setTuning(canon, shown) }, ""
			}
		}
	}
}

// setTuning stores a tunable's value under its canonical name.
func (lc *liveConfig) setTuning(name, v string) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.tuning == nil {
		lc.tuning = map[string]string{}
	}
	lc.tuning[name] = v
}

// tuningParams returns every tunable's names (aliases included) and
// values, for CONFIG GET.
func (lc *liveConfig) tuningParams() map[string]string {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	m := make(map[string]string, len(tunableByName))
	for _, t := range tunables {
		v, ok := lc.tuning[t.names[0]]
		if !ok {
			v = t.def
		}
		for _, n := range t.names {
			m[n] = v
		}
	}
	return m
}

// intRange checks an integer in [lo, hi], with Redis's texts.
func intRange(lo, hi int64) func(string) (string, string) {
	return func(v string) (string, string) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return "", "argument couldn't be parsed into an integer"
		}
		if n < lo || n > hi {
			return "", fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi)
		}
		return strconv.FormatInt(n, 10), ""
	}
}

// clamped checks an integer in [lo, hi] as intRange does and keeps it
// within [min, max], as Redis keeps hz.
func clamped(lo, hi, minV, maxV int64) func(string) (string, string) {
	check := intRange(lo, hi)
	return func(v string) (string, string) {
		shown, reason := check(v)
		if reason != "" {
			return "", reason
		}
		n, _ := strconv.ParseInt(shown, 10, 64)
		return strconv.FormatInt(min(max(n, minV), maxV), 10), ""
	}
}

// memory checks a memory value ("4096", "4kb", "1gb": Redis's memtoull)
// in [lo, hi]; CONFIG GET shows it in bytes.
func memory(lo, hi int64) func(string) (string, string) {
	return func(v string) (string, string) {
		n, ok := parseMemory(v)
		if !ok {
			return "", "argument must be a memory value"
		}
		if n < lo || n > hi {
			return "", fmt.Sprintf("argument must be between %d and %d inclusive", lo, hi)
		}
		return strconv.FormatInt(n, 10), ""
	}
}

// parseMemory parses Redis's memory values: a number of bytes, or one
// followed by b, k, kb, m, mb, g or gb (k is 1000, kb 1024), in any case.
func parseMemory(v string) (int64, bool) {
	l := strings.ToLower(v)
	mul := int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}, {"g", 1e9}, {"m", 1e6}, {"k", 1e3}, {"b", 1}} {
		if strings.HasSuffix(l, u.suffix) {
			l, mul = strings.TrimSuffix(l, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(l, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mul {
		return 0, false
	}
	return n * mul, true
}

func yesNo(v string) (string, string) {
	switch strings.ToLower(v) {
	case "yes":
		return "yes", ""
	case "no":
		return "no", ""
	}
	return "", "argument must be 'yes' or 'no'"
}

// oneOf checks an enumerated value, case-insensitively.
func oneOf(values ...string) func(string) (string, string) {
	return func(v string) (string, string) {
		for _, w := range values {
			if strings.EqualFold(v, w) {
				return w, ""
			}
		}
		return "", "argument(s) must be one of the following: " + strings.Join(values, ", ")
	}
}

// saveParams checks RDB save points: pairs of non-negative integers
// (seconds, changes), or "" for none.
func saveParams(v string) (string, string) {
	f := strings.Fields(v)
	if len(f)%2 != 0 {
		return "", "Invalid save parameters"
	}
	for _, w := range f {
		if n, err := strconv.ParseInt(w, 10, 64); err != nil || n < 0 {
			return "", "Invalid save parameters"
		}
	}
	return strings.Join(f, " "), ""
}

// oomValues checks the three oom-score-adj values.
func oomValues(v string) (string, string) {
	f := strings.Fields(v)
	if len(f) != 3 {
		return "", "wrong number of arguments"
	}
	for _, w := range f {
		if n, err := strconv.ParseInt(w, 10, 64); err != nil || n < -2000 || n > 2000 {
			return "", "Invalid oom-score-adj-values, elements must be between -2000 and 2000."
		}
	}
	return strings.Join(f, " "), ""
}

// percentiles checks latency-tracking-info-percentiles: numbers from 0
// to 100.
func percentiles(v string) (string, string) {
	f := strings.Fields(v)
	for _, w := range f {
		p, err := strconv.ParseFloat(w, 64)
		if err != nil || p < 0 || p > 100 {
			return "", "Invalid latency-tracking-info-percentiles parameters"
		}
	}
	return strings.Join(f, " "), ""
}
