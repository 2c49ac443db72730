//go:build !(goexperiment.simd && amd64)

package kernels

func dot(a, b []float32) float32 { return dotGeneric(a, b) }

// Vectorized reports whether the AVX-512 kernels run: never in a build without
// GOEXPERIMENT=simd on amd64.
func Vectorized() bool { return false }
