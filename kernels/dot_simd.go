//go:build goexperiment.simd && amd64

package kernels

import "simd/archsimd"

// cpuKernels returns the paths the CPU offers: AVX2 needs FMA as well, for the PPR
// passes' fused multiply-adds.
func cpuKernels() []KernelPath {
	p := []KernelPath{KernelsPortable}
	if archsimd.X86.AVX2() && archsimd.X86.FMA() {
		p = append(p, KernelsAVX2)
	}
	if archsimd.X86.AVX512() {
		p = append(p, KernelsAVX512)
	}
	return p
}

func dot(a, b []float32) float32 { return dotOn(kernelPath, a, b) }

// dotOn is dot on kernel path p.
func dotOn(p KernelPath, a, b []float32) float32 {
	switch {
	case p == KernelsAVX512 && len(a) >= 32:
		return dot16(a, b)
	case p >= KernelsAVX2 && len(a) >= 16:
		return dot8(a, b)
	}
	return dotGeneric(a, b)
}

func dot16(a, b []float32) float32 {
	var acc0, acc1 archsimd.Float32x16
	n := len(a) &^ 31
	b = b[:len(a)]
	for i := 0; i < n; i += 32 {
		acc0 = archsimd.LoadFloat32x16Slice(a[i:]).MulAdd(archsimd.LoadFloat32x16Slice(b[i:]), acc0)
		acc1 = archsimd.LoadFloat32x16Slice(a[i+16:]).MulAdd(archsimd.LoadFloat32x16Slice(b[i+16:]), acc1)
	}
	var lanes [16]float32
	acc0.Add(acc1).StoreSlice(lanes[:])
	var s float32
	for _, v := range lanes {
		s += v
	}
	for i := n; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}

func dot8(a, b []float32) float32 {
	var acc0, acc1 archsimd.Float32x8
	n := len(a) &^ 15
	b = b[:len(a)]
	for i := 0; i < n; i += 16 {
		acc0 = archsimd.LoadFloat32x8Slice(a[i:]).MulAdd(archsimd.LoadFloat32x8Slice(b[i:]), acc0)
		acc1 = archsimd.LoadFloat32x8Slice(a[i+8:]).MulAdd(archsimd.LoadFloat32x8Slice(b[i+8:]), acc1)
	}
	var lanes [8]float32
	acc0.Add(acc1).StoreSlice(lanes[:])
	var s float32
	for _, v := range lanes {
		s += v
	}
	for i := n; i < len(a); i++ {
		s += a[i] * b[i]
	}
	return s
}
