package store_test

import (
	"errors"
	"testing"
	"time"

	store "github.com/go-store/store"
)

func TestSmoke(t *testing.T) {
	s, clk := newClockStore(t)
	if err := s.Set("g", "k", "v"); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Get("g", "k"); err != nil || v != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if err := s.SetWithTTL("g", "t", "x", time.Second); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	if _, err := s.Get("g", "t"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get expired = %v", err)
	}
	ent, err := s.GetEntry("g", "k")
	if err != nil || ent.Version != 1 {
		t.Fatalf("GetEntry = %+v, %v", ent, err)
	}
	s.Set("g", "k", "v2")
	ent, _ = s.GetEntry("g", "k")
	if ent.Version != 2 {
		t.Fatalf("version = %d", ent.Version)
	}
	gs, err := s.Groups("")
	if err != nil || len(gs) != 1 {
		t.Fatalf("Groups = %v %v", gs, err)
	}
	ok, err := s.CompareAndSwap("g", "k", "v2", "v3", 0)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	err = s.Transaction(func(tx *store.Tx) error {
		tx.Set("a", "b", "c")
		v, err := tx.Get("a", "b")
		if v != "c" {
			t.Errorf("tx read own write = %q %v", v, err)
		}
		return errors.New("boom")
	})
	if _, err := s.Get("a", "b"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("rolled back key visible: %v", err)
	}
	p, err := s.List("g", store.ListOptions{Limit: 1})
	if err != nil || len(p.Entries) != 1 {
		t.Fatal(p, err)
	}
}
