//go:build goexperiment.simd && amd64

package lm

import "simd/archsimd"

// hasAVX512 reports whether the CPU's AVX-512 is usable (as gomlx's kernels see it).
func hasAVX512() bool { return archsimd.X86.AVX512() }
