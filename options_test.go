package store_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	store "github.com/go-store/store"
)

// TestNew_ErrInvalidOption: New refuses a nil Option and every option
// value that has no meaning, with an error matching ErrInvalidOption that
// names the option and its value, and creates no file.
func TestNew_ErrInvalidOption(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []store.Option
		want string // the whole message
	}{
		{"NilOption", []store.Option{store.WithWatchBuffer(4), nil},
			"store: New: option 2 of 2 is nil: invalid option"},
		{"WatchBufferNegative", []store.Option{store.WithWatchBuffer(-1)},
			"store: New: WithWatchBuffer(-1): must be 0 or more: invalid option"},
		{"BusyTimeoutNegative", []store.Option{store.WithBusyTimeout(-time.Second)},
			"store: New: WithBusyTimeout(-1s): must be 0 or more: invalid option"},
		{"CacheSizeNegative", []store.Option{store.WithCacheSize(-1)},
			"store: New: WithCacheSize(-1): must be 0 or more: invalid option"},
		{"DurabilityUnknown", []store.Option{store.WithDurability(store.Durability(7))},
			"store: New: WithDurability(Durability(7)): want DurabilityNormal or DurabilityFull: invalid option"},
		{"DurabilityNegative", []store.Option{store.WithDurability(store.Durability(-1))},
			"store: New: WithDurability(Durability(-1)): want DurabilityNormal or DurabilityFull: invalid option"},
		{"FirstBadOptionNamed", []store.Option{store.WithCacheSize(-2), store.WithWatchBuffer(-3)},
			"store: New: WithCacheSize(-2): must be 0 or more: invalid option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "never.db")
			s, err := store.New(path, tc.opts...)
			if err == nil {
				s.Close()
				t.Fatalf("New(%s) = <nil>; want ErrInvalidOption", tc.name)
			}
			if !errors.Is(err, store.ErrInvalidOption) {
				t.Errorf("New(%s) = %v; want ErrInvalidOption", tc.name, err)
			}
			if err.Error() != tc.want {
				t.Errorf("New(%s) = %q; want %q", tc.name, err, tc.want)
			}
			if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("New(%s) left a file behind: %v", tc.name, err)
			}
		})
	}
}

// TestNew_OptionsWithMeaning: the option values whose doc comments give
// them a meaning (zero for a default or off, negative to lift a limit or
// disable the purger, nil for the discarding logger) are accepted.
func TestNew_OptionsWithMeaning(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  store.Option
	}{
		{"WatchBufferZero", store.WithWatchBuffer(0)},
		{"BusyTimeoutZero", store.WithBusyTimeout(0)},
		{"CacheSizeZero", store.WithCacheSize(0)},
		{"PurgeIntervalZero", store.WithPurgeInterval(0)},
		{"PurgeIntervalNegative", store.WithPurgeInterval(-1)},
		{"LimitsNegative", store.WithLimits(store.Limits{MaxKeyBytes: -1, MaxValueBytes: -1, MaxTTL: -1})},
		{"LimitsZero", store.WithLimits(store.Limits{})},
		{"ChangeLogNegative", store.WithChangeLog(store.ChangeLog{MaxEntries: -1, MaxAge: -1})},
		{"ChangeLogDisabled", store.WithChangeLog(store.ChangeLog{Disabled: true})},
		{"LoggerNil", store.WithLogger(nil)},
		{"ClockNil", store.WithClock(nil)},
		{"DurabilityFull", store.WithDurability(store.DurabilityFull)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.New(filepath.Join(t.TempDir(), "s.db"), tc.opt)
			if err != nil {
				t.Fatalf("New(%s) = %v; want <nil>", tc.name, err)
			}
			if err := s.Set("g", "k", "v"); err != nil {
				t.Errorf("Set after New(%s) = %v", tc.name, err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close = %v", err)
			}
		})
	}
}
