package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-store/store"
)

// TestErrNotFound_NamesTheKey: a lookup of a missing key fails with an
// error that matches ErrNotFound and names the operation, the group and
// the key, as go-store v0.1's did.
func TestErrNotFound_NamesTheKey(t *testing.T) {
	s := newTestStore(t)
	ss, err := store.NewScoped(s, "acme")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"Get", func() error { _, err := s.Get("cfg", "theme"); return err }, `store: get "cfg"/"theme": key not found`},
		{"GetEntry", func() error { _, err := s.GetEntry("cfg", "theme"); return err }, `store: get entry "cfg"/"theme": key not found`},
		{"TTL", func() error { _, err := s.TTL("cfg", "theme"); return err }, `store: ttl "cfg"/"theme": key not found`},
		{"DeleteIfVersion", func() error { return s.DeleteIfVersion("cfg", "theme", 3) }, `store: delete if version "cfg"/"theme": key not found`},
		{"Scoped", func() error { _, err := ss.Get("cfg", "theme"); return err }, `store: get "cfg"/"theme": key not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("%s = %v; want ErrNotFound", tc.name, err)
			}
			if err.Error() != tc.want {
				t.Errorf("%s = %q; want %q", tc.name, err, tc.want)
			}
			if strings.Contains(err.Error(), "acme") {
				t.Errorf("%s on a scoped handle names the namespace: %q", tc.name, err)
			}
		})
	}
}
