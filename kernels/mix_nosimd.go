//go:build !(goexperiment.simd && amd64)

package kernels

// mixSIMD has no vector path in this build.
func (m UnitMix) mixSIMD(KernelPath, []float64, []float32, []float32, []float64) int { return 0 }
