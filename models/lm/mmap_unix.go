//go:build unix

package lm

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps path read-only; the pages are the page cache's, not the process's.
func mapFile(path string) (*mapped, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.Size() == 0 {
		return &mapped{path: path}, nil
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	return &mapped{path: path, data: data, unmap: func() error { return unix.Munmap(data) }}, nil
}
