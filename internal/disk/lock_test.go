package disk

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestLockWaitsForACopyOfItsOwnDescriptor: a data directory this process
// locked and released can still be locked for a moment by a copy of the
// descriptor (a child between fork and exec); taking it again waits for
// that copy instead of failing at once, while a lock that stays held is
// still refused with ErrLocked.
func TestLockWaitsForACopyOfItsOwnDescriptor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// The copy a forked child would hold: the same open file description.
	copyFD, err := syscall.Dup(int(first.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	first.Close() // released by the earlier DB; the copy still holds it

	waited := 0
	again, err := lockDirWaiting(dir, func(time.Duration) {
		if waited++; waited == 1 {
			syscall.Close(copyFD) // the child reached exec
		}
	})
	if err != nil {
		t.Fatalf("locking again after the copy went: %v (waited %d times)", err, waited)
	}
	if waited == 0 {
		t.Fatal("the lock was taken while a copy of the descriptor held it")
	}
	again.Close()

	// Held for good (by an open DB of this process): refused after the waits.
	held, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if _, err := lockDirWaiting(dir, func(time.Duration) {}); !errors.Is(err, ErrLocked) {
		t.Fatalf("a lock that stays held: %v, want ErrLocked", err)
	}
	// Another process's lock is not waited for.
	if err := os.WriteFile(filepath.Join(dir, LockName), []byte("1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	calls := 0
	if _, err := lockDirWaiting(dir, func(time.Duration) { calls++ }); !errors.Is(err, ErrLocked) || calls != 0 {
		t.Fatalf("another process's lock: %v after %d waits, want ErrLocked at once", err, calls)
	}
}
