package graphio

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// ErrLocked is returned (wrapped) by LockWriter when another process holds the
// writer lock of an index.
var ErrLocked = errors.New("the index is being written by another process")

// WriterLock is the exclusive writer lock of an index file: an advisory lock
// (flock(2), LockFileEx on Windows) on PATH.lock, whose content names the holder. Every
// graphloom command that rewrites an index holds it from reading to writing, so two
// writers never silently overwrite each other's work. Readers take no lock: writes are
// atomic renames, so they always see a whole index. The lock is released when the
// process ends, however it ends.
type WriterLock struct {
	fl   *flock.Flock
	path string
}

// LockPath is the lock file of the index at path.
func LockPath(path string) string { return path + ".lock" }

// LockWriter takes the writer lock of the index at path for holder (a description
// such as "pid 123: graphloom augment --index x.gl"). Without wait it fails at once
// with an error wrapping ErrLocked that names the current holder; with wait it calls
// onWait (if not nil) with the holder once and waits until the lock is free or ctx
// ends. Once the lock is held, temporary files left by writers that died mid-write
// (.NAME.tmp-*) are removed: only a lock holder writes them.
func LockWriter(ctx context.Context, path, holder string, wait bool, onWait func(holder string)) (*WriterLock, error) {
	lp := LockPath(path)
	fl := flock.New(lp, flock.SetPermissions(0o644))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("graphio: lock %s: %w", lp, err)
	}
	if !ok {
		other := readHolder(lp)
		if !wait {
			return nil, fmt.Errorf("graphio: %s: %w (%s; lock file %s)", path, ErrLocked, other, lp)
		}
		if onWait != nil {
			onWait(other)
		}
		if ok, err = fl.TryLockContext(ctx, 200*time.Millisecond); err != nil || !ok {
			if err == nil {
				err = ctx.Err()
			}
			return nil, fmt.Errorf("graphio: waiting for the lock of %s: %w", path, err)
		}
	}
	l := &WriterLock{fl: fl, path: path}
	if err := os.WriteFile(lp, []byte(holder+"\n"), 0o644); err != nil {
		_ = l.Unlock()
		return nil, fmt.Errorf("graphio: lock %s: %w", lp, err)
	}
	return l, nil
}

// readHolder returns the holder named in a lock file.
func readHolder(lp string) string {
	b, err := os.ReadFile(lp)
	if err != nil || strings.TrimSpace(string(b)) == "" {
		return "holder unknown"
	}
	return "held by " + strings.TrimSpace(string(b))
}

// RemoveStaleTemps removes the temporary files AtomicWrite leaves behind for path when
// its writer is killed (.NAME.tmp-*). Call it only while holding the writer lock of
// path, so that no live writer's file is removed. It returns the files removed.
func (l *WriterLock) RemoveStaleTemps() ([]string, error) {
	pattern := filepath.Join(filepath.Dir(l.path), "."+filepath.Base(l.path)+".tmp-*")
	stale, err := filepath.Glob(pattern)
	if err != nil {
		return nil, fmt.Errorf("graphio: %s: %w", pattern, err)
	}
	var removed []string
	for _, p := range stale {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("graphio: remove stale temporary file: %w", err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// Unlock releases the lock; the lock file stays (removing it would race with a
// process about to lock it) but no longer names a holder.
func (l *WriterLock) Unlock() error {
	if l == nil || l.fl == nil {
		return nil
	}
	_ = os.Truncate(LockPath(l.path), 0)
	err := l.fl.Unlock()
	l.fl = nil
	return err
}
