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
//
// The lock file of an existing index stays beside it after Unlock, emptied: removing
// it then would gain nothing. When no index exists at Unlock (a first write that
// failed), the holder removes the lock file before releasing it, so a failed run
// leaves nothing behind. That is race-free because LockWriter, having locked a file,
// checks that it is still the file at PATH.lock and starts again if it was removed or
// replaced meanwhile: a process that locked the removed file never proceeds on it.
// (A process killed before Unlock leaves the lock file; the next writer reuses it.)
type WriterLock struct {
	fl   *flock.Flock
	path string
}

// lockMarker opens the content of every lock file graphloom writes, so that a file of
// another tool at PATH.lock (poetry.lock beside an index named poetry) is never taken
// for one and emptied or removed.
const lockMarker = "graphloom writer lock: "

// ownLockFile reports whether the content of an existing lock file is graphloom's:
// empty (released), marked, or a holder line of a graphloom before the marker
// ("pid N: …", left by a killed writer).
func ownLockFile(b []byte) bool {
	s := string(b)
	return strings.TrimSpace(s) == "" || strings.HasPrefix(s, lockMarker) ||
		(strings.HasPrefix(s, "pid ") && strings.Count(strings.TrimRight(s, "\n"), "\n") == 0)
}

// LockPath is the lock file of the index at path (of the file it links to, when path
// is a symbolic link: see ResolveLink).
func LockPath(path string) string { return ResolveLink(path) + ".lock" }

// LockWriter takes the writer lock of the index at path for holder (a description
// such as "pid 123: graphloom augment --index x.gl"). Without wait it fails at once
// with an error wrapping ErrLocked that names the current holder; with wait it calls
// onWait (if not nil) with the holder once and waits until the lock is free or ctx
// ends. Once it is held, the caller may remove the temporary files writers that
// died mid-write left (WriterLock.RemoveStaleTemps): only a lock holder writes them.
func LockWriter(ctx context.Context, path, holder string, wait bool, onWait func(holder string)) (*WriterLock, error) {
	path = ResolveLink(path)
	lp := LockPath(path)
	waited := false
	for {
		fl := flock.New(lp, flock.SetPermissions(0o644))
		ok, err := fl.TryLock()
		if err != nil {
			return nil, fmt.Errorf("graphio: lock %s: %w", lp, err)
		}
		if !ok {
			other := readHolder(lp)
			if !wait {
				_ = fl.Close()
				return nil, fmt.Errorf("graphio: %s: %w (%s; lock file %s)", path, ErrLocked, other, lp)
			}
			if onWait != nil && !waited {
				onWait(other)
			}
			waited = true
			if ok, err = fl.TryLockContext(ctx, 200*time.Millisecond); err != nil || !ok {
				_ = fl.Close()
				if err == nil {
					err = ctx.Err()
				}
				return nil, fmt.Errorf("graphio: waiting for the lock of %s: %w", path, err)
			}
		}
		if !stillAt(fl, lp) {
			// The holder before us removed the file we locked (its first write
			// failed): lock the file now at lp instead.
			_ = fl.Close()
			continue
		}
		if b, err := os.ReadFile(lp); err == nil && !ownLockFile(b) {
			_ = fl.Close() // not Unlock: that would empty or remove the file
			return nil, fmt.Errorf("graphio: %s: its lock file %s exists and is not graphloom's (another tool's?); not touching it: choose another path for the index", path, lp)
		}
		l := &WriterLock{fl: fl, path: path}
		if err := os.WriteFile(lp, []byte(lockMarker+holder+"\n"), 0o644); err != nil {
			_ = l.Unlock()
			return nil, fmt.Errorf("graphio: lock %s: %w", lp, err)
		}
		return l, nil
	}
}

// stillAt reports whether the locked file of fl is the file at lp.
func stillAt(fl *flock.Flock, lp string) bool {
	locked, err := fl.Stat()
	if err != nil {
		return false
	}
	now, err := os.Stat(lp)
	return err == nil && os.SameFile(locked, now)
}

// readHolder returns the holder named in a lock file.
func readHolder(lp string) string {
	b, err := os.ReadFile(lp)
	h := strings.TrimSpace(strings.TrimPrefix(string(b), lockMarker))
	if err != nil || h == "" {
		return "holder unknown"
	}
	return "held by " + h
}

// RemoveStaleTemps removes the temporary files AtomicWrite leaves behind for path when
// its writer is killed (.NAME.tmp-*). Call it only while holding the writer lock of
// path, so that no live writer's file is removed. It returns the files removed.
func (l *WriterLock) RemoveStaleTemps() ([]string, error) { return RemoveStaleTemps(l.path) }

// RemoveStaleTemps removes the temporary files AtomicWrite left behind for path when
// its writer was killed (.NAME.tmp-<digits>). Call it only while holding a writer lock
// that guards path (a training run's lock over its --out files), so that no live
// writer's file is removed. It returns the files removed.
func RemoveStaleTemps(path string) ([]string, error) {
	dir, prefix := filepath.Dir(path), "."+filepath.Base(path)+".tmp-"
	entries, err := os.ReadDir(dir) // not a glob: the name may hold [, * or ?
	if err != nil {
		return nil, fmt.Errorf("graphio: %s: %w", dir, err)
	}
	var removed []string
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || e.IsDir() || !allDigits(suffix) { // another index's may share the prefix
			continue
		}
		p := filepath.Join(dir, e.Name())
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("graphio: remove stale temporary file: %w", err)
		}
		removed = append(removed, p)
	}
	return removed, nil
}

// Unlock releases the lock. The lock file of an existing index stays, emptied; when
// no index exists (a failed first write) the lock file is removed first (see
// WriterLock for why that is race-free).
func (l *WriterLock) Unlock() error {
	if l == nil || l.fl == nil {
		return nil
	}
	lp := LockPath(l.path)
	if _, err := os.Lstat(l.path); errors.Is(err, os.ErrNotExist) {
		_ = os.Remove(lp)
	} else {
		_ = os.Truncate(lp, 0)
	}
	err := l.fl.Unlock()
	_ = l.fl.Close()
	l.fl = nil
	return err
}

func allDigits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}
