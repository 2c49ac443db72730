//go:build !(goexperiment.simd && amd64)

package kernels

func dot(a, b []float32) float32 { return dotGeneric(a, b) }

// dotOn runs the portable loop on every path in this build.
func dotOn(_ KernelPath, a, b []float32) float32 { return dotGeneric(a, b) }

// cpuKernels returns the paths a build without GOEXPERIMENT=simd on amd64 offers.
func cpuKernels() []KernelPath { return []KernelPath{KernelsPortable} }
