//go:build !goexperiment.simd

package engine

// simdBuild reports whether this binary was compiled with GOEXPERIMENT=simd.
const simdBuild = false

// x86SIMD has no runtime reading without GOEXPERIMENT=simd: ok is false.
func x86SIMD() (avx512, avx2fma, ok bool) { return false, false, false }
