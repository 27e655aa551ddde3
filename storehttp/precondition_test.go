package storehttp_test

import (
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	store "github.com/go-store/store"
	"github.com/go-store/store/storehttp"
)

// TestIfMatchPreconditions checks If-Match on HTTP's terms (RFC 9110): a
// missing key fails the precondition (412, not 404), a weak tag or a
// version no entry has never matches, and * asks that the entry exist.
// Each refusal changes nothing.
func TestIfMatchPreconditions(t *testing.T) {
	st, srv := newServer(t, storehttp.Options{})
	missing := keyURL(srv, "g", "missing")
	do(t, "PUT", missing, "x", "If-Match", `"1"`).want(t, "PUT If-Match on a missing key", 412, "precondition_failed")
	do(t, "DELETE", missing, "", "If-Match", `"1"`).want(t, "DELETE If-Match on a missing key", 412, "precondition_failed")
	do(t, "PUT", missing, "x", "If-Match", "*").want(t, "PUT If-Match * on a missing key", 412, "precondition_failed")
	do(t, "DELETE", missing, "", "If-Match", "*").want(t, "DELETE If-Match * on a missing key", 412, "precondition_failed")
	if _, err := st.Get("g", "missing"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after refused PUTs on a missing key, Get: %v; want ErrNotFound", err)
	}

	u := keyURL(srv, "g", "k")
	do(t, "PUT", u, "v1").want(t, "PUT", 200, "")
	do(t, "PUT", u, "x", "If-Match", `W/"1"`).want(t, "PUT weak If-Match", 412, "precondition_failed")
	do(t, "DELETE", u, "", "If-Match", `W/"1"`).want(t, "DELETE weak If-Match", 412, "precondition_failed")
	do(t, "PUT", u, "x", "If-Match", `"0"`).want(t, "PUT If-Match 0", 412, "precondition_failed")
	do(t, "DELETE", u, "", "If-Match", `"0"`).want(t, "DELETE If-Match 0", 412, "precondition_failed")
	// Strong comparison is of the tags' characters: "01" and "+1" are not
	// the ETag "1", and a tag no entry has is a mismatch, not a bad request.
	for _, tag := range []string{`"01"`, `"+1"`, `"abc"`, `"99999999999999999999"`, `"-1"`, `""`} {
		do(t, "PUT", u, "x", "If-Match", tag).want(t, "PUT If-Match "+tag, 412, "precondition_failed")
		do(t, "DELETE", u, "", "If-Match", tag).want(t, "DELETE If-Match "+tag, 412, "precondition_failed")
	}
	for _, bad := range []string{`1`, `"1`, `"a"b"`, `"1 "`} {
		do(t, "PUT", u, "x", "If-Match", bad).want(t, "PUT If-Match "+bad, 400, "invalid_if_match")
	}
	if e, _ := st.GetEntry("g", "k"); e.Value != "v1" || e.Version != 1 {
		t.Fatalf("after refused writes the entry is %q version %d; want v1 version 1", e.Value, e.Version)
	}

	r := do(t, "PUT", u, "v2", "If-Match", "*")
	r.want(t, "PUT If-Match * on an entry", 200, "")
	var e entry
	r.decode(t, &e)
	if e.Value != "v2" || e.Version != 2 || r.header.Get("ETag") != `"2"` {
		t.Fatalf("PUT If-Match *: %+v, ETag %s; want v2 at version 2", e, r.header.Get("ETag"))
	}
	do(t, "DELETE", u, "", "If-Match", "*").want(t, "DELETE If-Match * on an entry", 204, "")
	do(t, "DELETE", u, "").want(t, "DELETE after", 404, "not_found")
	do(t, "PUT", u, "x", "If-Match", `"1", "2"`).want(t, "PUT with a list of tags", 400, "invalid_if_match")
}

// TestPutShortTTL checks that a PUT whose entry expires before the
// handler reads it back (here the store's clock moves a second at each
// reading) still answers 200 with the entry as written, and that the
// write is kept, not rolled back.
func TestPutShortTTL(t *testing.T) {
	var ms atomic.Int64
	ms.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	clock := func() time.Time { return time.UnixMilli(ms.Add(1000)) }
	st, err := store.New(":memory:", store.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(storehttp.NewHandler(st, storehttp.Options{}))
	t.Cleanup(func() {
		srv.Close()
		st.Close()
	})
	if err := st.Set("g", "k", "old"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what    string
		hdr     []string
		version int64
	}{
		{"PUT ?ttl=1ms over a live entry", nil, 2},
		{"PUT ?ttl=1ms of an expired entry", nil, 1},
		{"PUT ?ttl=1ms If-None-Match: *", []string{"If-None-Match", "*"}, 1},
	} {
		r := do(t, "PUT", keyURL(srv, "g", "k")+"?ttl=1ms", "new", c.hdr...)
		r.want(t, c.what, 200, "")
		var e entry
		r.decode(t, &e)
		if e.Value != "new" || e.Version != c.version || e.ExpiresAt == nil || e.ModRevision == 0 {
			t.Fatalf("%s: answered %+v; want the value new at version %d, with an expiry and its revision", c.what, e, c.version)
		}
	}
	rev, err := st.Revision()
	if err != nil {
		t.Fatal(err)
	}
	if rev != 4 {
		t.Fatalf("revision %d after a Set and three PUTs; want 4 (each PUT committed)", rev)
	}
}

// TestMalformedQuery checks that a query string that does not decode is
// refused (400) rather than read without the pairs it could not decode.
func TestMalformedQuery(t *testing.T) {
	_, srv := newServer(t, storehttp.Options{})
	for _, u := range []string{
		srv.URL + "/v1/groups?limit=%ZZ",
		srv.URL + "/v1/groups/g/keys?prefix=a&limit=%ZZ",
		keyURL(srv, "g", "k") + "?ttl=%ZZ",
		srv.URL + "/v1/events?after=%ZZ",
	} {
		method := "GET"
		if strings.Contains(u, "ttl=") {
			method = "PUT"
		}
		do(t, method, u, "v").want(t, method+" "+u, 400, "invalid_query")
	}
}
