package kernels

import (
	"fmt"
	"os"
	"strings"
)

// A KernelPath names one set of the package's CPU kernels: the AVX-512 kernels, the
// AVX2 (256-bit, with FMA) kernels, or the portable Go loops. The AVX2 and AVX-512
// kernels return the same bits (PPR, sparse column scoring, bounds, fusion, top k),
// except Dot, whose float32 accumulators are 8 or 16 lanes wide; they return the
// portable loops' bits except where a kernel's doc says it fuses multiply-adds (the
// PPR passes, Dot), and then agree with them to rounding.
type KernelPath uint8

// The kernel paths, from the portable loops up.
const (
	KernelsPortable KernelPath = iota
	KernelsAVX2
	KernelsAVX512
)

// KernelsEnv is the environment variable that overrides the kernel path, read once
// when the program starts: "avx512", "avx2" or "portable". Unset or empty, the best
// path the CPU (and build) offers runs.
const KernelsEnv = "GRAPHLOOM_KERNELS"

// String returns the path's name as KernelsEnv spells it.
func (p KernelPath) String() string {
	switch p {
	case KernelsAVX512:
		return "avx512"
	case KernelsAVX2:
		return "avx2"
	}
	return "portable"
}

// chooseKernels returns the path env names, or the best of offered (best last) when
// env is empty, and an error when env names no path or one the CPU lacks.
func chooseKernels(env string, offered []KernelPath) (KernelPath, error) {
	best := offered[len(offered)-1]
	env = strings.ToLower(strings.TrimSpace(env))
	if env == "" {
		return best, nil
	}
	names := make([]string, len(offered))
	for i, p := range offered {
		names[i] = p.String()
		if p.String() == env {
			return p, nil
		}
	}
	for _, p := range []KernelPath{KernelsPortable, KernelsAVX2, KernelsAVX512} {
		if p.String() == env {
			return best, fmt.Errorf("kernels: %s=%s: this CPU (or a build without GOEXPERIMENT=simd on amd64) has no %s kernels; it offers %s",
				KernelsEnv, env, env, strings.Join(names, ", "))
		}
	}
	return best, fmt.Errorf("kernels: %s=%q: not a kernel path (avx512, avx2 or portable)", KernelsEnv, env)
}

// The path in use, chosen once at start from the CPU and KernelsEnv, and read-only
// after: an override the CPU cannot run leaves the best path chosen and the error in
// kernelsErr, which KernelsError and NewPPRSolver report.
var kernelPath, kernelsErr = chooseKernels(os.Getenv(KernelsEnv), cpuKernels())

// Kernels returns the kernel path in use.
func Kernels() KernelPath { return kernelPath }

// KernelsError reports an override in KernelsEnv that this CPU cannot run (or that
// names no path); the best offered path runs meanwhile. Commands refuse to start on it.
func KernelsError() error { return kernelsErr }

// CPUKernels returns the kernel paths this CPU and build offer, from the portable
// loops up: tests and benchmarks run every one of them.
func CPUKernels() []KernelPath { return cpuKernels() }

// Vectorized reports whether vector kernels (AVX2 or AVX-512) run. Benchmarks print
// Kernels, since the portable kernels they otherwise time are several times slower.
func Vectorized() bool { return kernelPath != KernelsPortable }
