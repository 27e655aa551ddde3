package store_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	store "github.com/go-store/store"
)

// FuzzRoundTrip checks that every valid group, key and value round-trips
// exactly through Set and Get, and that every invalid one is refused with
// the right sentinel without writing anything.
func FuzzRoundTrip(f *testing.F) {
	for _, seed := range [][3]string{
		{"g", "k", "v"},
		{"", "k", ""},
		{"g", "", "v"},
		{"g", "k", "nul\x00inside"},
		{"\x00", "\x00", "\x00"},
		{"日本", "キー", "値 🎉"},
		{"a%b", "_*", "%"},
		{"g\xff", "k", "v"},
		{"g", "k\xc3", "v"},
		{"g", "k", "v\xed\xa0\x80"},
		{"g", "k", "\U0010FFFF\uFFFD"},
		{strings.Repeat("g", store.DefaultMaxKeyBytes), strings.Repeat("k", store.DefaultMaxKeyBytes), "v"},
		{strings.Repeat("g", store.DefaultMaxKeyBytes+1), "k", "v"},
		{"g", strings.Repeat("€", 342), "v"},
		{"g", "k", strings.Repeat("v", store.DefaultMaxValueBytes)},
		{"g", "k", strings.Repeat("v", store.DefaultMaxValueBytes+1)},
		{"g", "", "\xff"},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	s, err := store.New(":memory:", store.WithPurgeInterval(-1))
	if err != nil {
		f.Fatalf("New(%q) = %v", ":memory:", err)
	}
	f.Cleanup(func() { s.Close() })

	f.Fuzz(func(t *testing.T, group, key, value string) {
		// Each way the input can be invalid, and the sentinel for it.
		// With several, any of their sentinels will do.
		var want []error
		if len(group) > store.DefaultMaxKeyBytes || len(key) > store.DefaultMaxKeyBytes {
			want = append(want, store.ErrKeyTooLong)
		}
		if key == "" {
			want = append(want, store.ErrKeyEmpty)
		}
		if !utf8.ValidString(group) || !utf8.ValidString(key) || !utf8.ValidString(value) {
			want = append(want, store.ErrInvalidUTF8)
		}
		if len(value) > store.DefaultMaxValueBytes {
			want = append(want, store.ErrValueTooLong)
		}

		err := s.Set(group, key, value)
		if len(want) > 0 {
			if !matchesAny(err, want) {
				t.Fatalf("Set(%q, %q, %q) = %v; want one of %v", group, key, value, err, want)
			}
			if n, err := s.CountAll(""); err != nil || n != 0 {
				t.Fatalf("after rejected Set(%q, %q, %q): CountAll(\"\") = %d, %v; want 0, <nil> (nothing written)", group, key, value, n, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Set(%q, %q, %q) = %v; want <nil>", group, key, value, err)
		}
		if got, err := s.Get(group, key); err != nil || got != value {
			t.Fatalf("Get(%q, %q) = %q, %v; want %q, <nil>", group, key, got, err, value)
		}
		all, err := s.GetAll(group)
		if err != nil || len(all) != 1 || all[key] != value {
			t.Fatalf("GetAll(%q) = %q, %v; want map[%q:%q]", group, all, err, key, value)
		}
		groups, err := s.Groups("")
		if err != nil || len(groups) != 1 || groups[0] != group {
			t.Fatalf("Groups(\"\") = %q, %v; want [%q]", groups, err, group)
		}
		if err := s.Delete(group, key); err != nil {
			t.Fatalf("Delete(%q, %q) = %v; want <nil>", group, key, err)
		}
		if n, err := s.CountAll(""); err != nil || n != 0 {
			t.Fatalf("after Delete(%q, %q): CountAll(\"\") = %d, %v; want 0, <nil>", group, key, n, err)
		}
	})
}

func matchesAny(err error, targets []error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// FuzzParseTTL checks that ParseTTL never panics, accepts only positive
// TTLs, agrees with time.ParseDuration and whole seconds where those
// apply, and explains every refusal with the input quoted.
func FuzzParseTTL(f *testing.F) {
	for _, s := range []string{
		"90s", "10m", "1h30m", "600", "1", "0", "-1", "-5s", "0s", "", " ", "  10m  ",
		"1.5h", "300ms", "1us", "1µs", "1ns", "+5", "+5s", "007", "1e3", "10 m", "abc",
		"9223372036", "9223372037", "9223372036854775807", "-9223372036854775808",
		"2562047h47m16.854775807s", "2562047h47m16.854775808s", "\xff", "1\x00s", "٣",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := store.ParseTTL(s)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidTTL) {
				t.Fatalf("ParseTTL(%q) = %v, %v; want an error matching ErrInvalidTTL", s, d, err)
			}
			if q := fmt.Sprintf("%q", s); !strings.Contains(err.Error(), q) {
				t.Fatalf("ParseTTL(%q) error %q does not quote the input as %s", s, err, q)
			}
			if d != 0 {
				t.Fatalf("ParseTTL(%q) = %v, %v; want 0 with the error", s, d, err)
			}
		} else if d <= 0 {
			t.Fatalf("ParseTTL(%q) = %v, <nil>; want a positive TTL or an error", s, d)
		}

		// Where the contract says what the answer is, check it.
		trimmed := strings.TrimSpace(s)
		if n, perr := strconv.ParseInt(trimmed, 10, 64); perr == nil {
			// A plain integer is a number of seconds.
			if n > 0 && n <= int64(time.Duration(1<<63-1)/time.Second) {
				if err != nil || d != time.Duration(n)*time.Second {
					t.Fatalf("ParseTTL(%q) = %v, %v; want %v, <nil>", s, d, err, time.Duration(n)*time.Second)
				}
			} else if err == nil {
				t.Fatalf("ParseTTL(%q) = %v, <nil>; want an error (%d seconds is out of range)", s, d, n)
			}
		} else if pd, perr := time.ParseDuration(s); perr == nil {
			// A Go duration is itself.
			if pd > 0 && (err != nil || d != pd) {
				t.Fatalf("ParseTTL(%q) = %v, %v; want %v, <nil>", s, d, err, pd)
			}
			if pd <= 0 && err == nil {
				t.Fatalf("ParseTTL(%q) = %v, <nil>; want an error for a TTL that is not positive", s, d)
			}
		}
	})
}
