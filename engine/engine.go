package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gomlx/compute"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Environment variables read by the engine.
const (
	// EnvBackend selects the backend: "go", "xla:cuda", "xla:/abs/path/plugin.so".
	EnvBackend = "GOMLX_BACKEND"
	// EnvPluginPath is the PJRT plugin search path (directories, ':'-separated).
	EnvPluginPath = "PJRT_PLUGIN_LIBRARY_PATH"
	// EnvNoAutoInstall stops GoMLX/go-xla from downloading PJRT plugins.
	EnvNoAutoInstall = "GOMLX_NO_AUTO_INSTALL"
)

// DefaultBackend is the backend used when neither Config.Backend nor $GOMLX_BACKEND
// names one.
const DefaultBackend = "go"

// GoDefaultOptions are added to the go backend's options unless they set parallelism.
//
// Unlimited worker parallelism lets independent ops of a step run concurrently, which
// matters because the backend's element-wise ops are single-threaded (≈1.4× faster
// training steps on 2 cores). It also avoids a deadlock of the bounded worker pool
// (gomlx/compute v0.1.2): when as many matrix products as the pool has workers run at
// once, each waits inside Pool.Saturate for a worker that the others hold.
const GoDefaultOptions = "parallelism=-1"

// ErrBackendNotLinked is returned when the requested backend was not compiled into the
// binary (e.g. "xla" without -tags xla).
var ErrBackendNotLinked = errors.New("engine: backend not linked into this binary")

// Config selects the compute backend.
type Config struct {
	// Backend is "<name>[:<backend config>]", e.g. "go", "xla:cuda" or
	// "xla:/abs/path/xla_cuda_plugin.so". Empty means $GOMLX_BACKEND, else "go".
	Backend string
}

// Key identifies one compiled executable: the function it computes and the shape
// bucket of its inputs.
type Key struct {
	Name   string // e.g. "rgcn/train_step"
	Bucket string // e.g. "t32x64/e8192/g128"
}

// String implements fmt.Stringer.
func (k Key) String() string { return k.Name + "@" + k.Bucket }

// GraphFn builds a computation from the model scope and the input nodes. It is called
// once per compilation.
type GraphFn func(scope *model.Scope, inputs []*graph.Node) []*graph.Node

// Stats are the engine's compilation counters.
type Stats struct {
	Executables  int   // distinct keys seen
	Compilations int64 // graphs built and compiled (one per key and distinct input shapes)
	CacheHits    int64 // calls that reused a compiled graph
	Calls        int64 // all executable calls
}

// Engine holds a compute backend and a cache of compiled executables. It is safe for
// concurrent use, but a single Executable runs one call at a time.
type Engine struct {
	backend compute.Backend
	config  string

	mu    sync.Mutex
	execs map[cacheKey]*Executable

	compilations atomic.Int64
	hits         atomic.Int64
	calls        atomic.Int64
	names        atomic.Int64 // for Unique
}

// Unique returns prefix with a suffix no other call on this engine returns: the name
// of executables that must not be shared with another owner of the same store (two
// trainers of one model with different optimizer settings would otherwise run the
// first one's update graph, Exec keeping the first function given for a key).
func (e *Engine) Unique(prefix string) string {
	return fmt.Sprintf("%s#%d", prefix, e.names.Add(1))
}

// New creates an engine on the backend selected by cfg (see Config.Backend). The
// backend is never downloaded: an "xla" backend needs its PJRT plugin on disk.
func New(cfg Config) (*Engine, error) {
	config := ResolveBackend(cfg.Backend)
	name, backendCfg, _ := strings.Cut(config, ":")
	if name == "go" && !hasOption(backendCfg, "parallelism") {
		// Any other option keeps the unlimited parallelism: the bounded pool deadlocks.
		config = "go:" + strings.Trim(GoDefaultOptions+","+backendCfg, ",")
	}
	if !slices.Contains(compute.List(), name) {
		if isXLA(name) && !xlaLinked {
			return nil, fmt.Errorf("engine: backend %q: %w (rebuild with -tags xla)", config, ErrBackendNotLinked)
		}
		return nil, fmt.Errorf("engine: backend %q: %w (linked: %s)", config, ErrBackendNotLinked,
			strings.Join(compute.List(), ", "))
	}
	if isXLA(name) {
		pluginCfg, err := preparePJRT(backendCfg)
		if err != nil {
			return nil, err
		}
		if pluginCfg != "" {
			config = name + ":" + pluginCfg
		}
	}
	backend, err := newBackend(config)
	if err != nil {
		return nil, fmt.Errorf("engine: creating backend %q: %w", config, err)
	}
	return &Engine{backend: backend, config: config, execs: make(map[cacheKey]*Executable)}, nil
}

// stdoutSwap serialises newBackend's swaps of os.Stdout, which is the process's: two
// engines made at once would otherwise leave it pointing at a closed /dev/null.
var stdoutSwap sync.Mutex

// newBackend calls compute.NewWithConfig, turning its panics into errors. The go
// backend announces a parallelism option on stdout; that line is discarded so that
// commands printing JSON keep a clean stdout (stdout is redirected only during the
// call, so do not create engines while other goroutines write to stdout).
func newBackend(config string) (b compute.Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	if strings.HasPrefix(config, "go:") && strings.Contains(config, "parallelism=") {
		stdoutSwap.Lock()
		defer stdoutSwap.Unlock()
		if devnull, derr := os.OpenFile(os.DevNull, os.O_WRONLY, 0); derr == nil {
			stdout := os.Stdout
			os.Stdout = devnull
			defer func() {
				os.Stdout = stdout
				_ = devnull.Close()
			}()
		}
	}
	return compute.NewWithConfig(config)
}

// ResolveBackend returns the backend configuration string that New would use for the
// given Config.Backend value.
func ResolveBackend(requested string) string {
	if requested != "" {
		return requested
	}
	if env := os.Getenv(EnvBackend); env != "" {
		return env
	}
	return DefaultBackend
}

// isXLA reports whether a backend name is go-xla's: "xla" or one of the aliases it
// registers the same backend under.
func isXLA(name string) bool {
	switch name {
	case "xla", "stablehlo", "hlo", "shlo":
		return true
	}
	return false
}

// hasOption reports whether a comma-separated backend option list sets key.
func hasOption(opts, key string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if k, _, _ := strings.Cut(o, "="); k == key {
			return true
		}
	}
	return false
}

// preparePJRT turns off go-xla's plugin auto-installation (graphloom never downloads)
// and checks an explicit plugin path, so that a missing file is a clear error. It
// returns the configuration with a relative plugin path made absolute: go-xla loads
// only an absolute one as a file, and looks a relative one up as a plugin name.
func preparePJRT(pluginCfg string) (string, error) {
	disableAutoInstall()
	path, rest, hasRest := strings.Cut(pluginCfg, ",")
	if strings.Contains(path, "/") {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("engine: PJRT plugin %q: %w", path, err)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", fmt.Errorf("engine: PJRT plugin %q: %w", path, err)
		}
		path = abs
	}
	if hasRest {
		return path + "," + rest, nil
	}
	return path, nil
}

// pluginPath returns the PJRT plugin file a backend config refers to, or "" if it
// names none or the file is not on PJRT_PLUGIN_LIBRARY_PATH.
func pluginPath(pluginCfg string) string {
	if pluginCfg == "" {
		return ""
	}
	name, _, _ := strings.Cut(pluginCfg, ",")
	if strings.Contains(name, "/") {
		return name
	}
	for _, dir := range strings.Split(os.Getenv(EnvPluginPath), ":") {
		if dir == "" {
			continue
		}
		candidate := dir + "/pjrt_c_api_" + name + "_plugin.so"
		if _, err := os.Stat(candidate); err == nil {
			return candidate
		}
	}
	return ""
}

// Backend returns the compute backend.
func (e *Engine) Backend() compute.Backend { return e.backend }

// BackendConfig returns the resolved backend configuration string ("go", "xla:cuda", …).
func (e *Engine) BackendConfig() string { return e.config }

// Info describes the engine's backend and build; see Info.
func (e *Engine) Info() Info { return describe(e.backend, e.config) }

// Close finalizes all executables and the backend. The engine must not be used after.
func (e *Engine) Close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, x := range e.execs {
		x.exec.Finalize()
		delete(e.execs, k)
	}
	e.backend.Finalize()
}

// Stats returns a snapshot of the compilation counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	n := len(e.execs)
	e.mu.Unlock()
	return Stats{
		Executables:  n,
		Compilations: e.compilations.Load(),
		CacheHits:    e.hits.Load(),
		Calls:        e.calls.Load(),
	}
}

// cacheKey identifies a cached executable: an executable reads and updates one store's
// variables, so two models of the same kind (two stores) never share one.
type cacheKey struct {
	Key
	store *model.Store
}

// Exec returns the executable cached under (key, store), creating it with fn on first
// use. The store provides the model variables the graph reads and updates. The
// function of an existing entry is not replaced: a key must always denote the same
// computation for a given store.
func (e *Engine) Exec(key Key, store *model.Store, fn GraphFn) (*Executable, error) {
	if key.Name == "" {
		return nil, errors.New("engine: executable key needs a name")
	}
	if store == nil {
		return nil, fmt.Errorf("engine: executable %s: nil model store", key)
	}
	ck := cacheKey{Key: key, store: store}
	e.mu.Lock()
	defer e.mu.Unlock()
	if x, ok := e.execs[ck]; ok {
		return x, nil
	}
	x := &Executable{key: key, engine: e}
	wrapped := func(scope *model.Scope, inputs []*graph.Node) []*graph.Node {
		x.builds.Add(1)
		e.compilations.Add(1)
		return fn(scope, inputs)
	}
	exec, err := model.NewExec(e.backend, store, wrapped)
	if err != nil {
		return nil, fmt.Errorf("engine: creating executable %s: %w", key, err)
	}
	x.exec = exec.WithName(key.String())
	e.execs[ck] = x
	return x, nil
}

// Forget drops the executables whose name is name (all buckets), e.g. after the model
// structure changed. It returns how many were dropped.
func (e *Engine) Forget(name string) int {
	return e.drop(func(k cacheKey) bool { return k.Name == name })
}

// Release drops the executables compiled for store (every name and bucket), when the
// model that owns the store is done with: the cache is keyed by store, so a program
// that trains one model after another (augment --stability, --planted) would otherwise
// keep every finished model's executables. It returns how many were dropped.
func (e *Engine) Release(store *model.Store) int {
	return e.drop(func(k cacheKey) bool { return k.store == store })
}

// drop finalizes and removes the cached executables whose key matches, and returns
// how many.
func (e *Engine) drop(match func(cacheKey) bool) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for k, x := range e.execs {
		if match(k) {
			x.exec.Finalize()
			delete(e.execs, k)
			n++
		}
	}
	return n
}

// Executable is one cached computation. Calls on the same Executable are serialized.
type Executable struct {
	key    Key
	engine *Engine
	exec   *model.Exec
	mu     sync.Mutex
	builds atomic.Int64
}

// Key returns the executable's cache key.
func (x *Executable) Key() Key { return x.key }

// Compilations returns how many graphs this executable has built (one per distinct
// input shapes seen).
func (x *Executable) Compilations() int64 { return x.builds.Load() }

// Finalize frees the device and host memory of tensors the caller owns (the inputs it
// built, the outputs of Call) at once rather than at garbage collection; nil entries are
// skipped. A tensor must not be used afterwards.
func Finalize(ts ...*tensors.Tensor) {
	for _, t := range ts {
		if t != nil {
			_ = t.FinalizeAll()
		}
	}
}

// Call runs the computation on the inputs, compiling it first if these input shapes
// were not seen before. Variables the graph updates are written back to the store.
// The caller owns the returned tensors.
func (x *Executable) Call(inputs ...*tensors.Tensor) ([]*tensors.Tensor, error) {
	return x.CallDonating(nil, inputs...)
}

// CallDonating is Call with the inputs i for which donate[i] is true donated: the
// executable may reuse their device buffers for its outputs (an update in place, such
// as a key/value cache written one position per step), and the caller must not use
// those tensors afterwards (they are finalized). donate may be shorter than inputs.
func (x *Executable) CallDonating(donate []bool, inputs ...*tensors.Tensor) ([]*tensors.Tensor, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	args := make([]any, len(inputs))
	for i, t := range inputs {
		if t == nil {
			return nil, fmt.Errorf("engine: %s: input #%d is nil", x.key, i)
		}
		args[i] = t
		if i < len(donate) && donate[i] {
			d, err := graph.DonateTensorBuffer(t, x.engine.backend, 0)
			if err != nil {
				return nil, fmt.Errorf("engine: %s: donating input #%d: %w", x.key, i, err)
			}
			args[i] = d
		}
	}
	before := x.builds.Load()
	x.engine.calls.Add(1)
	outs, err := x.exec.Call(args...)
	if err != nil {
		return nil, fmt.Errorf("engine: running %s: %w", x.key, err)
	}
	if x.builds.Load() == before {
		x.engine.hits.Add(1)
	}
	return outs, nil
}
