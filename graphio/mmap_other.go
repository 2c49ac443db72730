//go:build !unix

package graphio

import (
	"errors"
	"os"
)

// mapFile is not supported here: ReadFileWith reads the file instead.
func mapFile(*os.File) ([]byte, error) { return nil, errors.New("memory mapping not supported") }

func unmapFile([]byte) error { return nil }

func releasePages([]byte) {}
