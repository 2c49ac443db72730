//go:build !(goexperiment.simd && amd64)

package kernels

// addScaledAtSIMD takes nothing without the SIMD build: AddScaledAt runs the
// portable loop.
func addScaledAtSIMD(KernelPath, []float32, []int32, []float32, float32) int { return 0 }
