//go:build goexperiment.simd

package engine

import "simd/archsimd"

// simdBuild reports whether this binary was compiled with GOEXPERIMENT=simd.
const simdBuild = true

// x86SIMD reads the CPU as the Go runtime does for SIMD code (internal/cpu, through
// archsimd): GODEBUG=cpu.avx512f=off hides AVX-512 here as it does from the kernels.
// ok is false in a build without GOEXPERIMENT=simd.
func x86SIMD() (avx512, avx2fma, ok bool) {
	return archsimd.X86.AVX512(), archsimd.X86.AVX2() && archsimd.X86.FMA(), true
}
