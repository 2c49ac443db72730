package kernels

// Dot returns the inner product of two equal-length float32 vectors, accumulated in
// float32 lanes (SIMD where the CPU and build allow it).
func Dot(a, b []float32) float32 {
	if len(a) != len(b) {
		panic("kernels: Dot of vectors of different lengths")
	}
	return dot(a, b)
}

// dotGeneric is the portable version: four independent accumulators let the CPU
// overlap the additions.
func dotGeneric(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	n := len(a) &^ 3
	b = b[:len(a)]
	for i := 0; i < n; i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for i := n; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
