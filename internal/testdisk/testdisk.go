//go:build linux

// Package testdisk gives tests a small real file system to fill, so that
// the store's and the server's handling of a full disk is tested against
// the kernel's ENOSPC rather than a simulation, and a directory they
// cannot write to, as on read-only media.
package testdisk

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Small mounts a tmpfs of size bytes for the test and returns its
// directory. It skips the test under -short and where mounting is not
// allowed (not root, or a container without the capability). Cleanup
// unmounts it, so close whatever is open on it in a cleanup registered
// after calling Small.
func Small(t *testing.T, size int) string {
	t.Helper()
	if testing.Short() {
		t.Skip("mounts a file system")
	}
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v); the full-disk tests need root, or CAP_SYS_ADMIN, to run", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// Ballast fills n bytes of dir with a file and returns a function that
// removes it, standing in for whatever else fills a disk and is later
// cleaned up.
func Ballast(t *testing.T, dir string, n int) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "ballast")
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
	return func() {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
}

// ReadOnly returns a directory that fill has filled and that this process
// can then no longer write to. As root, whom permissions do not stop, it
// is a tmpfs remounted read-only, as read-only media are (skipping the
// test where mounting is not allowed); otherwise a temporary directory
// whose write permission is taken away, restored at cleanup. Cleanup
// unmounts the tmpfs, so close whatever is open on it in a cleanup
// registered after calling ReadOnly.
func ReadOnly(t *testing.T, fill func(dir string)) string {
	t.Helper()
	if os.Geteuid() != 0 {
		dir := filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		fill(dir)
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return dir
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64m"); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v); as root, the read-only media tests need CAP_SYS_ADMIN to run", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
			syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	fill(dir)
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remounting %s read-only: %v", dir, err)
	}
	return dir
}
