// Package engine owns graphloom's tensor engine: the GoMLX compute backend and a
// cache of compiled executables.
//
// # Backends
//
// graphloom runs its neural parts on GoMLX (github.com/gomlx/gomlx v0.28.2). Two
// compute backends can be linked in:
//
//   - "go": GoMLX's pure-Go backend (github.com/gomlx/compute/gobackend). It is always
//     linked and is the default. Its matrix multiplications use AVX2/AVX-512 kernels
//     when the binary is built with GOEXPERIMENT=simd (Go 1.26); without it they fall
//     back to portable loops about 5× slower. Everything else (gathers, scatters,
//     element-wise ops) is plain Go.
//   - "xla": XLA through a PJRT plugin (github.com/gomlx/go-xla, cgo). It is linked only
//     when building with `-tags xla`. The plugin is never downloaded: it is taken from
//     GOMLX_BACKEND=xla:/abs/path/to/xla_cuda_plugin.so, or, for GOMLX_BACKEND=xla:<name>,
//     from a file pjrt_c_api_<name>_plugin.so in a directory listed in
//     PJRT_PLUGIN_LIBRARY_PATH.
//
// The backend is chosen by [Config.Backend], else $GOMLX_BACKEND, else "go". See
// [New] and [Describe].
//
// # Compiled executables
//
// GoMLX compiles one computation per distinct set of input shapes. An [Engine] keeps
// executables in a cache keyed by [Key] (function name and shape bucket) and counts
// compilations and cache hits ([Stats]), so that training loops can assert that after
// warm-up of each bucket nothing recompiles.
package engine
