//go:build !goexperiment.simd

package engine

// simdBuild reports whether this binary was compiled with GOEXPERIMENT=simd.
const simdBuild = false
