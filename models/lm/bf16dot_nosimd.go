//go:build !goexperiment.simd || !amd64

package lm

// hasAVX512 reports true where gomlx's Go backend runs no AVX2 kernels (a build
// without GOEXPERIMENT=simd, or another architecture): nothing to work around.
func hasAVX512() bool { return true }
