//go:build unix

package graphio

import (
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAtomicWriteFollowsTheUmask: under umask 077 a new file is 0600 (it was forced to
// 0644 whatever the umask), and under 002 it is 0664; a dangling link is written
// through, creating the file it names.
func TestAtomicWriteFollowsTheUmask(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		umask int
		want  os.FileMode
	}{{0o077, 0o600}, {0o002, 0o664}} {
		old := syscall.Umask(tc.umask)
		path := filepath.Join(dir, "new.gl")
		_ = os.Remove(path)
		err := AtomicWrite(path, func(w io.Writer) error { _, err := io.WriteString(w, "x"); return err })
		syscall.Umask(old)
		require.NoError(t, err)
		st, err := os.Stat(path)
		require.NoError(t, err)
		assert.Equal(t, tc.want, st.Mode().Perm(), "umask %03o", tc.umask)
	}
	link := filepath.Join(dir, "next.gl")
	require.NoError(t, os.Symlink("v9.gl", link))
	require.NoError(t, AtomicWrite(link, func(w io.Writer) error { _, err := io.WriteString(w, "v9"); return err }))
	b, err := os.ReadFile(filepath.Join(dir, "v9.gl"))
	require.NoError(t, err)
	assert.Equal(t, "v9", string(b))
	lst, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, lst.Mode()&os.ModeSymlink, "the dangling link now names the file")
}
