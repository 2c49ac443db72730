//go:build !(goexperiment.simd && amd64)

package kernels

// nextAboveSIMD has no vector path in this build: nextAbove scans every entry.
func nextAboveSIMD(KernelPath, []float32, float32) int { return 0 }
