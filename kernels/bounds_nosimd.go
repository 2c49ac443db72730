//go:build !(goexperiment.simd && amd64)

package kernels

// boundsSIMD has no vector path in this build.
func boundsSIMD(KernelPath, []float64) (lo, hi float64, ok bool) { return 0, 0, false }

// bounds32SIMD has no vector path in this build.
func bounds32SIMD(KernelPath, []float32) (lo, hi float64, ok bool) { return 0, 0, false }
