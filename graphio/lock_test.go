package graphio

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLockFileLitter: a failed first write (no index at Unlock) leaves no lock file;
// the lock file of an existing index stays, emptied (issue 49 row 15).
func TestLockFileLitter(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.gl")
	l, err := LockWriter(context.Background(), path, "first", false, nil)
	require.NoError(t, err)
	require.NoError(t, l.Unlock())
	assert.NoFileExists(t, LockPath(path), "a failed first write leaves no lock file")

	require.NoError(t, os.WriteFile(path, []byte(Magic), 0o644))
	l, err = LockWriter(context.Background(), path, "second", false, nil)
	require.NoError(t, err)
	require.NoError(t, l.Unlock())
	b, err := os.ReadFile(LockPath(path))
	require.NoError(t, err, "the lock file of an existing index stays")
	assert.Empty(t, b)
}

// TestLockSurvivesRemoval: a writer waiting on a lock file that its holder removes
// (a failed first write) locks the new lock file, so a third writer is still excluded.
func TestLockSurvivesRemoval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.gl")
	a, err := LockWriter(context.Background(), path, "a", false, nil)
	require.NoError(t, err)
	waiting := make(chan struct{})
	got := make(chan *WriterLock)
	go func() {
		b, err := LockWriter(context.Background(), path, "b", true, func(string) { close(waiting) })
		assert.NoError(t, err)
		got <- b
	}()
	<-waiting
	require.NoError(t, a.Unlock()) // no index: removes the lock file
	b := <-got
	require.NotNil(t, b)
	holder, err := os.ReadFile(LockPath(path))
	require.NoError(t, err)
	assert.Equal(t, lockMarker+"b\n", string(holder), "b holds the file now at the lock path")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = LockWriter(ctx, path, "c", false, nil)
	assert.ErrorIs(t, err, ErrLocked, "c is excluded while b holds the lock")
	require.NoError(t, b.Unlock())
	assert.NoFileExists(t, LockPath(path))
}

// TestAtomicWriteKeepsModeAndLinks: a replaced file keeps its permissions, a new one
// gets what os.Create would (0666 less the umask), and a symbolic link is written
// through and locked as the file it names.
func TestAtomicWriteKeepsModeAndLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(path, s string) {
		t.Helper()
		require.NoError(t, AtomicWrite(path, func(w io.Writer) error { _, err := io.WriteString(w, s); return err }))
	}
	private := filepath.Join(dir, "private.gl")
	require.NoError(t, os.WriteFile(private, []byte("a"), 0o600))
	require.NoError(t, os.Chmod(private, 0o600))
	write(private, "b")
	st, err := os.Stat(private)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a replaced file keeps its mode")

	ref := filepath.Join(dir, "ref")
	f, err := os.Create(ref) // what the umask gives a new file
	require.NoError(t, err)
	require.NoError(t, f.Close())
	want, err := os.Stat(ref)
	require.NoError(t, err)
	fresh := filepath.Join(dir, "fresh.gl")
	write(fresh, "x")
	st, err = os.Stat(fresh)
	require.NoError(t, err)
	assert.Equal(t, want.Mode().Perm(), st.Mode().Perm(), "a new file gets 0666 less the umask")

	target := filepath.Join(dir, "v7.gl")
	require.NoError(t, os.WriteFile(target, []byte("old"), 0o644))
	link := filepath.Join(dir, "current.gl")
	require.NoError(t, os.Symlink("v7.gl", link))
	assert.Equal(t, LockPath(target), LockPath(link), "both names share one lock")
	l, err := LockWriter(context.Background(), link, "via link", false, nil)
	require.NoError(t, err)
	_, err = LockWriter(context.Background(), target, "direct", false, nil)
	assert.ErrorIs(t, err, ErrLocked, "the target is locked through its link")
	write(link, "new")
	require.NoError(t, l.Unlock())
	lst, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, lst.Mode()&os.ModeSymlink, "the link stays a link")
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	assert.Equal(t, "new", string(b), "the file it names is replaced")
}

// TestRemoveStaleTempsMatchesOnlyItsOwn: a name holding glob characters removes its
// own temporary files and no other index's.
func TestRemoveStaleTempsMatchesOnlyItsOwn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "runs[12].gl")
	own := filepath.Join(dir, ".runs[12].gl.tmp-123")
	others := []string{
		filepath.Join(dir, ".runs1.gl.tmp-456"),           // what the glob runs[12] matched
		filepath.Join(dir, ".runs[12].gl.tmp-x.gl.tmp-7"), // another index's, same prefix
	}
	for _, p := range append([]string{own}, others...) {
		require.NoError(t, os.WriteFile(p, nil, 0o644))
	}
	l, err := LockWriter(context.Background(), path, "t", false, nil)
	require.NoError(t, err)
	defer l.Unlock()
	removed, err := l.RemoveStaleTemps()
	require.NoError(t, err)
	assert.Equal(t, []string{own}, removed)
	for _, p := range others {
		assert.FileExists(t, p)
	}
}

// TestResolveLinkThroughLinkedDirectories: a relative target is resolved from its
// link's real directory, as the kernel does (through a linked directory, ".." is the
// real parent), for an existing target and for one not written yet.
func TestResolveLinkThroughLinkedDirectories(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	real := filepath.Join(root, "data", "p")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "idx"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(real, "shared"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "home"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(real, "idx"), filepath.Join(root, "home", "idx")))
	existing := filepath.Join(root, "home", "idx", "link.gl")
	require.NoError(t, os.Symlink("../shared/i.gl", existing))
	require.NoError(t, os.WriteFile(filepath.Join(real, "shared", "i.gl"), nil, 0o644))
	assert.Equal(t, filepath.Join(real, "shared", "i.gl"), ResolveLink(existing))
	dangling := filepath.Join(root, "home", "idx", "next.gl")
	require.NoError(t, os.Symlink("../shared/next.gl", dangling))
	assert.Equal(t, filepath.Join(real, "shared", "next.gl"), ResolveLink(dangling))
	loop := filepath.Join(root, "loop.gl")
	require.NoError(t, os.Symlink("loop.gl", loop))
	assert.Equal(t, loop, ResolveLink(loop), "a loop resolves to itself")
}

// TestLockLeavesOtherFilesAlone: a file of another tool at the lock path (poetry.lock
// beside an index named "poetry") is refused, untouched, even when the index write
// would fail; a holder line a killed graphloom left (with or without the marker) is
// taken over.
func TestLockLeavesOtherFilesAlone(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "poetry")
	poetry := "# This file is automatically @generated by Poetry\n[[package]]\nname = \"x\"\n"
	require.NoError(t, os.WriteFile(path+".lock", []byte(poetry), 0o644))
	_, err := LockWriter(context.Background(), path, "t", false, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exists and is not graphloom's")
	b, err := os.ReadFile(path + ".lock")
	require.NoError(t, err)
	assert.Equal(t, poetry, string(b))

	for _, stale := range []string{"pid 12: graphloom index x.gl (since 2026-01-01T00:00:00Z)\n", lockMarker + "pid 13: graphloom augment\n", ""} {
		require.NoError(t, os.WriteFile(path+".lock", []byte(stale), 0o644))
		l, err := LockWriter(context.Background(), path, "t", false, nil)
		require.NoError(t, err, "%q", stale)
		require.NoError(t, l.Unlock())
	}
}
