package kernels

// AddScaledAt adds w·vals[k] to out[idx[k]] for every k: one column of a sparse
// matrix by columns added into a vector of row scores. The indices must be distinct
// (a column's rows are; this is not checked) and index out (an index out of range
// panics, as out[i] does). Each product is rounded to float32 before it is added, as
// `out[idx[k]] += float32(vals[k] * w)` does, so the sums are the same bit for bit
// whatever the kernel. With GOEXPERIMENT=simd on AVX-512 it takes 16 entries at a
// time: one gather of out, a multiply, an add and one scatter back; on AVX2 8 at a
// time, stored back lane by lane (AVX2 has no scatter): 0.91 against 1.47 ns an entry
// for the scalar loop and 0.83 for AVX-512 (BenchmarkAddScaledAt, 2 shared cores).
func AddScaledAt(out []float32, idx []int32, vals []float32, w float32) {
	addScaledAt(kernelPath, out, idx, vals, w)
}

// addScaledAt is AddScaledAt on kernel path p.
func addScaledAt(p KernelPath, out []float32, idx []int32, vals []float32, w float32) {
	vals = vals[:len(idx)]
	n := addScaledAtSIMD(p, out, idx, vals, w)
	addScaledAtGeneric(out, idx[n:], vals[n:], w)
}

func addScaledAtGeneric(out []float32, idx []int32, vals []float32, w float32) {
	vals = vals[:len(idx)]
	for k, i := range idx {
		out[i] += float32(vals[k] * w)
	}
}
