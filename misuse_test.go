package store_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	store "github.com/go-store/store"
)

// TestZeroValue_ErrClosed: every method of a zero Store, ScopedStore, Tx,
// ScopedTx and View — values no constructor made — returns an error
// matching ErrClosed (or, for a method without an error, a harmless
// result: a closed Watcher, a no-op unregister function) instead of
// panicking, and runs none of the functions it is given.
func TestZeroValue_ErrClosed(t *testing.T) {
	for _, v := range []any{&store.Store{}, &store.ScopedStore{}, &store.Tx{}, &store.ScopedTx{}, &store.View{}} {
		rv := reflect.ValueOf(v)
		typ := rv.Type()
		for i := range typ.NumMethod() {
			m := typ.Method(i)
			name := fmt.Sprintf("(%v).%s", typ, m.Name)
			t.Run(name, func(t *testing.T) {
				callZero(t, name, rv.Method(i))
			})
		}
	}
}

// callZero calls method with made-up arguments and checks its results.
func callZero(t *testing.T, name string, method reflect.Value) {
	mt := method.Type()
	n := mt.NumIn()
	if mt.IsVariadic() {
		n-- // Call makes the empty variadic slice
	}
	args := make([]reflect.Value, n)
	for i := range args {
		args[i] = zeroArg(t, name, mt.In(i))
	}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("%s on a zero value panicked: %v", name, p)
		}
	}()
	for _, o := range method.Call(args) {
		checkZeroResult(t, name, o)
	}
}

// zeroArg is an argument of type at for a method of a zero value: the
// zero value, except that a context is live, a *ScopedStore is a zero
// one too, and a function fails the test if it is called.
func zeroArg(t *testing.T, name string, at reflect.Type) reflect.Value {
	switch {
	case at == reflect.TypeFor[context.Context]():
		return reflect.ValueOf(context.Background())
	case at == reflect.TypeFor[*store.ScopedStore]():
		return reflect.ValueOf(&store.ScopedStore{})
	case at.Kind() == reflect.Func:
		return reflect.MakeFunc(at, func([]reflect.Value) []reflect.Value {
			t.Errorf("%s on a zero value ran the function it was given", name)
			return zeroes(at)
		})
	}
	return reflect.Zero(at)
}

func zeroes(ft reflect.Type) []reflect.Value {
	out := make([]reflect.Value, ft.NumOut())
	for i := range out {
		out[i] = reflect.Zero(ft.Out(i))
	}
	return out
}

var errType = reflect.TypeFor[error]()

// checkZeroResult checks one result of a method of a zero value.
func checkZeroResult(t *testing.T, name string, o reflect.Value) {
	switch {
	case o.Type() == errType:
		err, _ := o.Interface().(error)
		if err == nil {
			if !strings.HasSuffix(name, ".Close") { // closing nothing is done
				t.Errorf("%s on a zero value = <nil>; want ErrClosed", name)
			}
			return
		}
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s on a zero value = %v; want ErrClosed", name, err)
		}
	case o.Type() == reflect.TypeFor[*store.Watcher]():
		w := o.Interface().(*store.Watcher)
		if _, open := <-w.Ch; open {
			t.Errorf("%s on a zero value: the Watcher's channel is open", name)
		}
	case o.Kind() == reflect.Func && o.IsNil():
		// A sequence returned beside an error.
	case o.Kind() == reflect.Func && o.Type().NumIn() == 0:
		o.Call(nil) // an unregister function
	case o.Kind() == reflect.Func && o.Type().NumIn() == 1 && o.Type().In(0).Kind() == reflect.Func:
		// An iterator: it yields an error matching ErrClosed, or nothing.
		yt := o.Type().In(0)
		yield := reflect.MakeFunc(yt, func(in []reflect.Value) []reflect.Value {
			if last := in[len(in)-1]; last.Type() == errType && !last.IsNil() {
				checkZeroResult(t, name+" yield", last)
			} else {
				t.Errorf("%s on a zero value yielded a value", name)
			}
			return []reflect.Value{reflect.ValueOf(false)}
		})
		o.Call([]reflect.Value{yield})
	}
}

// TestNilFunc_ErrInvalidArgument: the calls that run a function the
// caller gives fail with ErrInvalidArgument, naming the call, when it is
// nil; NewScoped does for a nil *Store. Nothing is left open: the store
// goes on working.
func TestNilFunc_ErrInvalidArgument(t *testing.T) {
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
		{"Transaction", func() error { return s.Transaction(nil) }, "store: transaction: nil function: invalid argument"},
		{"View", func() error { return s.View(nil) }, "store: view: nil function: invalid argument"},
		{"ScopedTransaction", func() error { return ss.Transaction(nil) }, "store: transaction: nil function: invalid argument"},
		{"ScopedView", func() error { return ss.View(nil) }, "store: view: nil function: invalid argument"},
		{"Savepoint", func() error {
			return s.Transaction(func(tx *store.Tx) error { return tx.Savepoint(nil) })
		}, "store: savepoint: nil function: invalid argument"},
		{"NewScoped", func() error { _, err := store.NewScoped(nil, "acme"); return err }, "store: scope \"acme\": nil *Store: invalid argument"},
		{"NewScopedWithQuota", func() error {
			_, err := store.NewScopedWithQuota(nil, "acme", store.QuotaConfig{MaxKeys: 1})
			return err
		}, "store: scope \"acme\": nil *Store: invalid argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("%s(nil) panicked: %v", tc.name, p)
					}
				}()
				err = tc.call()
			}()
			if !errors.Is(err, store.ErrInvalidArgument) {
				t.Errorf("%s(nil) = %v; want ErrInvalidArgument", tc.name, err)
			} else if err.Error() != tc.want {
				t.Errorf("%s(nil) = %q; want %q", tc.name, err, tc.want)
			}
			// The writer and the read connections are free again.
			if err := s.Set("g", "k", tc.name); err != nil {
				t.Fatalf("Set after %s(nil) = %v", tc.name, err)
			}
			if v, err := s.Get("g", "k"); v != tc.name || err != nil {
				t.Fatalf("Get after %s(nil) = %q, %v; want %q, <nil>", tc.name, v, err, tc.name)
			}
		})
	}
}

// TestNilFunc_Ignored: the calls that take a function or a watcher to
// register or end ignore nil, as their doc comments say.
func TestNilFunc_Ignored(t *testing.T) {
	s := newTestStore(t)
	off := s.OnChange(nil)
	if err := s.Set("g", "k", "v"); err != nil {
		t.Fatalf("Set after OnChange(nil) = %v", err)
	}
	off()
	s.Unwatch(nil)
}
