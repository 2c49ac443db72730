//go:build !(goexperiment.simd && amd64)

package kernels

// addScaledAtSIMD takes nothing without the SIMD build: AddScaledAt runs the
// portable loop.
func addScaledAtSIMD(out []float32, idx []int32, vals []float32, w float32) int { return 0 }
