//go:build !unix

package lm

import "os"

// mapFile reads path whole where memory maps are not available.
func mapFile(path string) (*mapped, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return &mapped{path: path, data: data}, nil
}
