package server

import (
	"context"
	"testing"
)

// TestFunctionVMPrunes: a VM keeps the libraries it loaded only while
// they exist, so libraries loaded, replaced and deleted over time do not
// accumulate in the pool's VMs.
func TestFunctionVMPrunes(t *testing.T) {
	_, s := newInternalServer(t)
	sc := s.scripts
	c := &client{s: s}
	vm := newLuaVM(s)
	ctx := context.Background()
	load := func(code string) *luaFunc {
		t.Helper()
		if _, msg := sc.load(c, code, true); msg != "" {
			t.Fatalf("load: %s", msg)
		}
		return sc.function(c, "f")
	}
	for i, code := range []string{
		"#!lua name=a\nredis.register_function('f', function() return 1 end)",
		"#!lua name=a\nredis.register_function('f', function() return 2 end)", // replaces a
	} {
		f := load(code)
		if _, msg := vm.function(ctx, f); msg != "" {
			t.Fatalf("function: %s", msg)
		}
		if n := len(vm.libs.loaded); n != 1 {
			t.Fatalf("step %d: the VM holds %d libraries, want 1", i, n)
		}
	}
	// RESTORE FLUSH of nothing: a is deleted.
	if msg := sc.install(owner(c), nil, "flush", ""); msg != "" {
		t.Fatal(msg)
	}
	f := load("#!lua name=b\nredis.register_function('f', function() return 3 end)")
	if _, msg := vm.function(ctx, f); msg != "" {
		t.Fatalf("function: %s", msg)
	}
	if _, ok := vm.libs.loaded["\x00b"]; !ok || len(vm.libs.loaded) != 1 {
		t.Errorf("after a's deletion the VM holds %v, want b only", vm.libs.loaded)
	}
}
