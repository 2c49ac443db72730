package kernels

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCSRCheckSymmetric(t *testing.T) {
	sym, err := NewSymmetricCSR(4, []Edge{{0, 1, 1}, {1, 2, 0.5}, {2, 2, 3}, {0, 1, 0.25}})
	assert.NoError(t, err)
	for _, tc := range []struct {
		name string
		csr  *CSR
		want string // "" = symmetric
	}{
		{"built by NewSymmetricCSR", sym, ""},
		{"empty", &CSR{N: 0, RowPtr: []int32{0}}, ""},
		{"weights within tolerance", &CSR{N: 2, RowPtr: []int32{0, 1, 2}, Col: []int32{1, 0}, Val: []float32{1, 1 + 1e-7}}, ""},
		{"missing mirror", &CSR{N: 2, RowPtr: []int32{0, 1, 1}, Col: []int32{1}, Val: []float32{1}}, "more in-entries"},
		{"directed cycle", &CSR{N: 3, RowPtr: []int32{0, 1, 2, 3}, Col: []int32{1, 2, 0}, Val: []float32{1, 1, 1}}, "entry (0,1) has no mirror"},
		{"different weights", &CSR{N: 2, RowPtr: []int32{0, 1, 2}, Col: []int32{1, 0}, Val: []float32{1, 1.5}}, "weight 1 but (1,0) has 1.5"},
		{"duplicate column", &CSR{N: 2, RowPtr: []int32{0, 2, 4}, Col: []int32{1, 1, 0, 0}, Val: []float32{1, 1, 1, 1}}, "strictly increasing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.csr.CheckSymmetric(1e-6)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// TestSymmetricCSRIndexLimits: a node count past int32 indices is an error, before
// anything is allocated, not a panic.
func TestSymmetricCSRIndexLimits(t *testing.T) {
	for _, n := range []int{-1, 1 << 31, 1 << 40} {
		_, err := NewSymmetricCSR(n, nil)
		assert.ErrorContains(t, err, "int32 indices", "n = %d", n)
	}
}
