//go:build unix

package graphio

import (
	"errors"
	"os"
	"syscall"
)

// mapFile maps f privately (copy on write) into memory.
func mapFile(f *os.File) ([]byte, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() || size <= 0 || size != int64(int(size)) {
		return nil, errors.New("not a mappable file")
	}
	return syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE)
}

// unmapFile releases a mapping of mapFile.
func unmapFile(b []byte) error { return syscall.Munmap(b) }

// releasePages hands whole mapped pages back (MADV_DONTNEED); errors are ignored (the
// pages then stay resident, which only costs memory).
func releasePages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_DONTNEED) }
