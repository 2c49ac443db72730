//go:build !(goexperiment.simd && amd64)

package kernels

func dot(a, b []float32) float32 { return dotGeneric(a, b) }
