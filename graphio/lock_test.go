package graphio

import (
	"context"
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
	assert.Equal(t, "b\n", string(holder), "b holds the file now at the lock path")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = LockWriter(ctx, path, "c", false, nil)
	assert.ErrorIs(t, err, ErrLocked, "c is excluded while b holds the lock")
	require.NoError(t, b.Unlock())
	assert.NoFileExists(t, LockPath(path))
}
