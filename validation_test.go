package store_test

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	store "github.com/go-store/store"
)

// valOp is one store method that takes a group and key (and, for writes, a
// value), with the operation name its errors must carry.
type valOp struct {
	name  string // method, for test names
	op    string // the operation as named in the error message
	write bool   // whether it stores value
	call  func(s *store.Store, group, key, value string) error
}

// The fixture every validation case runs against: one live key, which any
// write that slipped past validation with key "k" in group "g" would
// change.
const (
	valGroup = "g"
	valKey   = "k"
	valOld   = "old"
)

var valOps = []valOp{
	// Writes.
	{"Set", "set", true, func(s *store.Store, g, k, v string) error {
		return s.Set(g, k, v)
	}},
	{"SetWithTTL", "set with TTL", true, func(s *store.Store, g, k, v string) error {
		return s.SetWithTTL(g, k, v, time.Minute)
	}},
	{"InsertIfNotExists", "insert if not exists", true, func(s *store.Store, g, k, v string) error {
		_, err := s.InsertIfNotExists(g, k, v, 0)
		return err
	}},
	{"CompareAndSwap", "compare and swap", true, func(s *store.Store, g, k, v string) error {
		_, err := s.CompareAndSwap(g, k, valOld, v, 0)
		return err
	}},
	{"SetIfVersion", "set if version", true, func(s *store.Store, g, k, v string) error {
		_, err := s.SetIfVersion(g, k, v, 1, 0)
		return err
	}},
	// Key-taking reads and deletes.
	{"Get", "get", false, func(s *store.Store, g, k, _ string) error {
		_, err := s.Get(g, k)
		return err
	}},
	{"GetEntry", "get entry", false, func(s *store.Store, g, k, _ string) error {
		_, err := s.GetEntry(g, k)
		return err
	}},
	{"GetSplit", "get split", false, func(s *store.Store, g, k, _ string) error {
		_, err := s.GetSplit(g, k, ",")
		return err
	}},
	{"GetFields", "get fields", false, func(s *store.Store, g, k, _ string) error {
		_, err := s.GetFields(g, k)
		return err
	}},
	{"TTL", "ttl", false, func(s *store.Store, g, k, _ string) error {
		_, err := s.TTL(g, k)
		return err
	}},
	{"Delete", "delete", false, func(s *store.Store, g, k, _ string) error {
		return s.Delete(g, k)
	}},
	{"CompareAndDelete", "compare and delete", false, func(s *store.Store, g, k, _ string) error {
		_, err := s.CompareAndDelete(g, k, valOld)
		return err
	}},
	{"DeleteIfVersion", "delete if version", false, func(s *store.Store, g, k, _ string) error {
		return s.DeleteIfVersion(g, k, 1)
	}},
	{"Persist", "persist", false, func(s *store.Store, g, k, _ string) error {
		_, err := s.Persist(g, k)
		return err
	}},
}

// valFixture opens a store holding only g/k = "old" (version 1, with an
// expiry an hour away so that Persist would change it too).
func valFixture(t *testing.T, opts ...store.Option) *store.Store {
	t.Helper()
	s, _ := kvMemStore(t, opts...)
	kvSetTTL(t, s, valGroup, valKey, valOld, time.Hour)
	return s
}

// valUnchanged checks that the store still holds exactly the fixture.
func valUnchanged(t *testing.T, s *store.Store, what string) {
	t.Helper()
	ent, err := s.GetEntry(valGroup, valKey)
	if err != nil || ent.Value != valOld || ent.Version != 1 || ent.ExpiresAt.IsZero() {
		t.Fatalf("after %s: GetEntry(%q, %q) = %+v, %v; want value %q, version 1, with expiry (nothing written)",
			what, valGroup, valKey, ent, err, valOld)
	}
	if n, err := s.CountAll(""); err != nil || n != 1 {
		t.Fatalf("after %s: CountAll(\"\") = %d, %v; want 1, <nil> (nothing written)", what, n, err)
	}
}

// valWantErr checks that err matches want and that its message names the
// operation and, if given, the limit.
func valWantErr(t *testing.T, call string, err, want error, op, limit string) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s = %v; want an error matching %v", call, err, want)
	}
	if msg := err.Error(); !strings.Contains(msg, "store: "+op) {
		t.Errorf("%s error %q does not name the operation %q", call, msg, op)
	}
	if limit != "" && !strings.Contains(err.Error(), limit) {
		t.Errorf("%s error %q does not name the limit %s", call, err.Error(), limit)
	}
}

func TestValidation_Args(t *testing.T) {
	long := strings.Repeat("x", store.DefaultMaxKeyBytes+1)
	// 342 three-byte runes: 342 characters, but 1026 bytes.
	longRunes := strings.Repeat("€", 342)
	maxKey := strconv.Itoa(store.DefaultMaxKeyBytes)
	tests := []struct {
		name              string
		group, key, value string
		writeOnly         bool // only for methods that store a value
		want              error
		limit             string // must appear in the message
	}{
		{name: "EmptyKey", group: valGroup, key: "", value: "v", want: store.ErrKeyEmpty},
		{name: "EmptyKeyEmptyGroup", group: "", key: "", value: "v", want: store.ErrKeyEmpty},
		{name: "KeyTooLong", group: valGroup, key: long, value: "v", want: store.ErrKeyTooLong, limit: maxKey},
		{name: "KeyTooLongInBytes", group: valGroup, key: longRunes, value: "v", want: store.ErrKeyTooLong, limit: maxKey},
		{name: "GroupTooLong", group: long, key: valKey, value: "v", want: store.ErrKeyTooLong, limit: maxKey},
		{name: "InvalidUTF8Group", group: "g\xff", key: valKey, value: "v", want: store.ErrInvalidUTF8},
		{name: "InvalidUTF8Key", group: valGroup, key: "k\xc3", value: "v", want: store.ErrInvalidUTF8},
		{name: "SurrogateKey", group: valGroup, key: "\xed\xa0\x80", value: "v", want: store.ErrInvalidUTF8},
		{name: "OverlongKey", group: valGroup, key: "\xc0\xaf", value: "v", want: store.ErrInvalidUTF8},
		{name: "ValueTooLong", group: valGroup, key: valKey, value: strings.Repeat("v", store.DefaultMaxValueBytes+1),
			writeOnly: true, want: store.ErrValueTooLong, limit: strconv.Itoa(store.DefaultMaxValueBytes)},
		{name: "InvalidUTF8Value", group: valGroup, key: valKey, value: "v\xff", writeOnly: true, want: store.ErrInvalidUTF8},
		{name: "TruncatedUTF8Value", group: valGroup, key: valKey, value: "caf\xc3", writeOnly: true, want: store.ErrInvalidUTF8},
	}
	for _, op := range valOps {
		t.Run(op.name, func(t *testing.T) {
			s := valFixture(t)
			for _, tc := range tests {
				if tc.writeOnly && !op.write {
					continue
				}
				t.Run(tc.name, func(t *testing.T) {
					err := op.call(s, tc.group, tc.key, tc.value)
					call := op.name + "(" + strconv.Quote(trunc(tc.group)) + ", " + strconv.Quote(trunc(tc.key)) + ", …)"
					valWantErr(t, call, err, tc.want, op.op, tc.limit)
					valUnchanged(t, s, call)
				})
			}
		})
	}
}

// trunc shortens s for failure messages.
func trunc(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

func TestValidation_TTL(t *testing.T) {
	tooLong := []time.Duration{store.DefaultMaxTTL + time.Nanosecond, store.DefaultMaxTTL + time.Millisecond, math.MaxInt64}
	t.Run("SetWithTTL", func(t *testing.T) {
		s := valFixture(t)
		bad := append([]time.Duration{0, -time.Nanosecond, -time.Hour, math.MinInt64}, tooLong...)
		for _, ttl := range bad {
			err := s.SetWithTTL(valGroup, valKey, "new", ttl)
			call := "SetWithTTL(g, k, \"new\", " + ttl.String() + ")"
			limit := ""
			if ttl > 0 {
				limit = store.DefaultMaxTTL.String()
			}
			valWantErr(t, call, err, store.ErrInvalidTTL, "set with TTL", limit)
			valUnchanged(t, s, call)
		}
		// The limit itself is accepted.
		if err := s.SetWithTTL(valGroup, "max", "v", store.DefaultMaxTTL); err != nil {
			t.Fatalf("SetWithTTL(%q, %q, %q, %v) = %v; want <nil>", valGroup, "max", "v", store.DefaultMaxTTL, err)
		}
	})
	atomicOps := []struct {
		name, op string
		call     func(s *store.Store, ttl time.Duration) error
	}{
		{"InsertIfNotExists", "insert if not exists", func(s *store.Store, ttl time.Duration) error {
			_, err := s.InsertIfNotExists(valGroup, "fresh", "new", ttl)
			return err
		}},
		{"CompareAndSwap", "compare and swap", func(s *store.Store, ttl time.Duration) error {
			_, err := s.CompareAndSwap(valGroup, valKey, valOld, "new", ttl)
			return err
		}},
		{"SetIfVersion", "set if version", func(s *store.Store, ttl time.Duration) error {
			_, err := s.SetIfVersion(valGroup, valKey, "new", 1, ttl)
			return err
		}},
	}
	for _, op := range atomicOps {
		t.Run(op.name, func(t *testing.T) {
			s := valFixture(t)
			bad := append([]time.Duration{-time.Nanosecond, -time.Hour, math.MinInt64}, tooLong...)
			for _, ttl := range bad {
				err := op.call(s, ttl)
				call := op.name + "(…, " + ttl.String() + ")"
				limit := ""
				if ttl > 0 {
					limit = store.DefaultMaxTTL.String()
				}
				valWantErr(t, call, err, store.ErrInvalidTTL, op.op, limit)
				valUnchanged(t, s, call)
			}
			// ttl 0 means no expiry, and is accepted.
			if err := op.call(s, 0); err != nil {
				t.Fatalf("%s(…, 0) = %v; want <nil>", op.name, err)
			}
		})
	}
}

func TestValidation_ExactLimits(t *testing.T) {
	s, _ := kvMemStore(t)
	key1024 := strings.Repeat("k", store.DefaultMaxKeyBytes)
	// 341 three-byte runes plus one byte: exactly 1024 bytes.
	runes1024 := strings.Repeat("€", 341) + "a"
	value65536 := strings.Repeat("v", store.DefaultMaxValueBytes)
	for _, tc := range []struct {
		name, group, key, value string
	}{
		{"Key", "g", key1024, "v"},
		{"KeyRunes", "g", runes1024, "v"},
		{"Group", key1024, "k", "v"},
		{"Value", "g", "k", value65536},
		{"All", key1024, runes1024, value65536},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.Set(tc.group, tc.key, tc.value); err != nil {
				t.Fatalf("Set at exactly the limit = %v; want <nil>", err)
			}
			if got, err := s.Get(tc.group, tc.key); err != nil || got != tc.value {
				t.Fatalf("Get at exactly the limit = %d bytes, %v; want %d bytes, <nil>", len(got), err, len(tc.value))
			}
		})
	}
	t.Run("OneOver", func(t *testing.T) {
		before, _ := s.CountAll("")
		if err := s.Set("g", key1024+"k", "v"); !errors.Is(err, store.ErrKeyTooLong) {
			t.Errorf("Set with a 1025-byte key = %v; want ErrKeyTooLong", err)
		}
		if err := s.Set(key1024+"g", "k", "v"); !errors.Is(err, store.ErrKeyTooLong) {
			t.Errorf("Set with a 1025-byte group = %v; want ErrKeyTooLong", err)
		}
		if err := s.Set("g", "k", value65536+"v"); !errors.Is(err, store.ErrValueTooLong) {
			t.Errorf("Set with a 65537-byte value = %v; want ErrValueTooLong", err)
		}
		if got, err := s.Get("g", "k"); err != nil || got != value65536 {
			t.Errorf("Get(%q, %q) after rejected writes = %d bytes, %v; want the old %d bytes", "g", "k", len(got), err, len(value65536))
		}
		kvWantCountAll(t, s, "", before)
	})
}

func TestValidation_WithLimits(t *testing.T) {
	t.Run("Smaller", func(t *testing.T) {
		s, _ := kvMemStore(t, store.WithLimits(store.Limits{MaxKeyBytes: 8, MaxValueBytes: 16, MaxTTL: time.Minute}))
		ok := []struct {
			name string
			call func() error
		}{
			{"Key8", func() error { return s.Set("g", "12345678", "v") }},
			{"Group8", func() error { return s.Set("12345678", "k", "v") }},
			{"Value16", func() error { return s.Set("g", "k", strings.Repeat("v", 16)) }},
			{"TTL1m", func() error { return s.SetWithTTL("g", "t", "v", time.Minute) }},
			{"InsertTTL1m", func() error { _, err := s.InsertIfNotExists("g", "i", "v", time.Minute); return err }},
		}
		for _, tc := range ok {
			if err := tc.call(); err != nil {
				t.Errorf("%s within custom limits = %v; want <nil>", tc.name, err)
			}
		}
		before, _ := s.CountAll("")
		bad := []struct {
			name  string
			want  error
			limit string
			call  func() error
		}{
			{"Key9", store.ErrKeyTooLong, "8", func() error { return s.Set("g", "123456789", "v") }},
			{"Group9", store.ErrKeyTooLong, "8", func() error { return s.Set("123456789", "k", "v") }},
			{"GetKey9", store.ErrKeyTooLong, "8", func() error { _, err := s.Get("g", "123456789"); return err }},
			{"Value17", store.ErrValueTooLong, "16", func() error { return s.Set("g", "k", strings.Repeat("v", 17)) }},
			{"CASValue17", store.ErrValueTooLong, "16", func() error {
				_, err := s.CompareAndSwap("g", "k", strings.Repeat("v", 16), strings.Repeat("w", 17), 0)
				return err
			}},
			{"TTLOver", store.ErrInvalidTTL, "1m0s", func() error { return s.SetWithTTL("g", "t2", "v", time.Minute+time.Millisecond) }},
			{"InsertTTLOver", store.ErrInvalidTTL, "1m0s", func() error {
				_, err := s.InsertIfNotExists("g", "i2", "v", time.Minute+time.Millisecond)
				return err
			}},
		}
		for _, tc := range bad {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Errorf("%s beyond custom limits = %v; want %v", tc.name, err, tc.want)
				continue
			}
			if !strings.Contains(err.Error(), tc.limit) {
				t.Errorf("%s error %q does not name the custom limit %s", tc.name, err, tc.limit)
			}
		}
		kvWantCountAll(t, s, "", before)
		kvWantGet(t, s, "g", "k", strings.Repeat("v", 16))
	})
	t.Run("ZeroFieldsKeepDefaults", func(t *testing.T) {
		s, _ := kvMemStore(t, store.WithLimits(store.Limits{MaxValueBytes: 10}))
		if err := s.Set("g", strings.Repeat("k", store.DefaultMaxKeyBytes), "v"); err != nil {
			t.Errorf("Set with a %d-byte key = %v; want <nil>", store.DefaultMaxKeyBytes, err)
		}
		if err := s.Set("g", strings.Repeat("k", store.DefaultMaxKeyBytes+1), "v"); !errors.Is(err, store.ErrKeyTooLong) {
			t.Errorf("Set with a %d-byte key = %v; want ErrKeyTooLong", store.DefaultMaxKeyBytes+1, err)
		}
		if err := s.SetWithTTL("g", "t", "v", store.DefaultMaxTTL+time.Millisecond); !errors.Is(err, store.ErrInvalidTTL) {
			t.Errorf("SetWithTTL beyond the default MaxTTL = %v; want ErrInvalidTTL", err)
		}
		if err := s.Set("g", "k", strings.Repeat("v", 11)); !errors.Is(err, store.ErrValueTooLong) {
			t.Errorf("Set with an 11-byte value under MaxValueBytes 10 = %v; want ErrValueTooLong", err)
		}
	})
	t.Run("NegativeLifts", func(t *testing.T) {
		s, clk := kvMemStore(t, store.WithLimits(store.Limits{MaxKeyBytes: -1, MaxValueBytes: -1, MaxTTL: -1}))
		big := strings.Repeat("0123456789", 10_000) // 100 KB
		if err := s.Set("g", "big", big); err != nil {
			t.Fatalf("Set of a 100 KB value with MaxValueBytes -1 = %v; want <nil>", err)
		}
		if got, err := s.Get("g", "big"); err != nil || got != big {
			t.Fatalf("Get of a 100 KB value = %d bytes, %v; want %d bytes, <nil>", len(got), err, len(big))
		}
		longKey, longGroup := strings.Repeat("k", 5000), strings.Repeat("g", 5000)
		if err := s.Set(longGroup, longKey, "v"); err != nil {
			t.Fatalf("Set with a 5000-byte group and key with MaxKeyBytes -1 = %v; want <nil>", err)
		}
		kvWantGet(t, s, longGroup, longKey, "v")
		const years200 = 200 * 365 * 24 * time.Hour
		if err := s.SetWithTTL("g", "long-ttl", "v", years200); err != nil {
			t.Fatalf("SetWithTTL(…, 200 years) with MaxTTL -1 = %v; want <nil>", err)
		}
		clk.Advance(2 * 365 * 24 * time.Hour)
		kvWantGet(t, s, "g", "long-ttl", "v")
		// Lifting a limit does not lift the other checks.
		if err := s.Set("g", "", "v"); !errors.Is(err, store.ErrKeyEmpty) {
			t.Errorf("Set with an empty key, limits lifted = %v; want ErrKeyEmpty", err)
		}
		if err := s.Set("g", "k", "\xff"); !errors.Is(err, store.ErrInvalidUTF8) {
			t.Errorf("Set with invalid UTF-8, limits lifted = %v; want ErrInvalidUTF8", err)
		}
		if err := s.SetWithTTL("g", "k", "v", 0); !errors.Is(err, store.ErrInvalidTTL) {
			t.Errorf("SetWithTTL(…, 0), limits lifted = %v; want ErrInvalidTTL", err)
		}
	})
	t.Run("NegativeMaxTTLLongestDuration", func(t *testing.T) {
		// With MaxTTL lifted, the longest Duration (about 292 years) is a
		// valid TTL and must give a live key, not one that has already
		// expired.
		s, _ := kvMemStore(t, store.WithLimits(store.Limits{MaxTTL: -1}))
		if err := s.SetWithTTL("g", "k", "v", math.MaxInt64); err != nil {
			t.Fatalf("SetWithTTL(…, MaxInt64) with MaxTTL -1 = %v; want <nil>", err)
		}
		kvWantGet(t, s, "g", "k", "v")
		// Rounded up to whole milliseconds, the deadline is a little more
		// than a Duration can hold from now: TTL reports the longest
		// Duration rather than wrapping around to a negative one.
		if ttl, err := s.TTL("g", "k"); err != nil || ttl != math.MaxInt64 {
			t.Errorf("TTL = %v, %v; want %v, <nil>", ttl, err, time.Duration(math.MaxInt64))
		}
	})
}
