package engine

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResolveBackend(t *testing.T) {
	for _, tc := range []struct {
		name, requested, env, want string
	}{
		{"explicit wins", "go", "xla:cuda", "go"},
		{"env when not requested", "", "xla:cuda", "xla:cuda"},
		{"default", "", "", DefaultBackend},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvBackend, tc.env)
			assert.Equal(t, tc.want, ResolveBackend(tc.requested))
		})
	}
}

func TestNewUnknownBackend(t *testing.T) {
	for _, tc := range []struct{ name, backend string }{
		{"unknown name", "nosuchbackend"},
		{"xla without tag or plugin", "xla:/nonexistent/dir/xla_cuda_plugin.so"},
		{"an alias of xla", "hlo:/nonexistent/dir/xla_cuda_plugin.so"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{Backend: tc.backend})
			require.Error(t, err)
			if !xlaLinked || tc.backend == "nosuchbackend" {
				assert.True(t, errors.Is(err, ErrBackendNotLinked), "got %v", err)
			}
		})
	}
}

// TestGoOptions: the go backend keeps unlimited parallelism (its bounded pool
// deadlocks) whatever other option is given, unless parallelism itself is.
func TestGoOptions(t *testing.T) {
	for _, tc := range []struct{ backend, want string }{
		{"go", "go:" + GoDefaultOptions},
		{"go:ops_parallel", "go:" + GoDefaultOptions + ",ops_parallel"},
		{"go:parallelism=2", "go:parallelism=2"},
		{"go:ops_sequential,parallelism=3", "go:ops_sequential,parallelism=3"},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			e, err := New(Config{Backend: tc.backend})
			require.NoError(t, err)
			defer e.Close()
			assert.Equal(t, tc.want, e.BackendConfig())
		})
	}
}

// TestPluginPath: an explicit plugin path must exist, and a relative one is made
// absolute (go-xla looks a relative one up as a plugin name).
func TestPluginPath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.MkdirAll("plugins", 0o755))
	require.NoError(t, os.WriteFile("plugins/xla_cuda_plugin.so", nil, 0o644))
	got, err := preparePJRT("./plugins/xla_cuda_plugin.so,preallocate=false")
	require.NoError(t, err)
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(wd, "plugins", "xla_cuda_plugin.so")+",preallocate=false", got)
	got, err = preparePJRT("cuda")
	require.NoError(t, err)
	assert.Equal(t, "cuda", got, "a plugin name is left to go-xla's search")
	_, err = preparePJRT("./plugins/missing.so")
	assert.ErrorContains(t, err, "missing.so")
}

func TestDescribe(t *testing.T) {
	e, err := New(Config{Backend: "go"})
	require.NoError(t, err)
	defer e.Close()
	info := e.Info()
	assert.Equal(t, "go", info.Backend)
	assert.Equal(t, "go:"+GoDefaultOptions, info.BackendConfig)
	assert.NotEmpty(t, info.Description)
	assert.Equal(t, 1, info.NumDevices)
	assert.Contains(t, []string{"avx512", "avx2", "neon", "none"}, info.CPUSIMD)
	assert.Equal(t, simdBuild, info.SIMDBuild)
	assert.Equal(t, xlaLinked, info.XLALinked)
	assert.Contains(t, info.Linked, "go")
	assert.Contains(t, info.String(), "backend:")

	d := Describe(Config{Backend: "xla:/abs/plugin.so"})
	assert.Equal(t, "xla", d.Backend)
	assert.Equal(t, "/abs/plugin.so", d.PluginPath)
	assert.Equal(t, "/abs/plugin.so", Describe(Config{Backend: "hlo:/abs/plugin.so"}).PluginPath, "an alias of xla")
}

func TestExecutableCacheCounters(t *testing.T) {
	e, err := New(Config{Backend: "go"})
	require.NoError(t, err)
	defer e.Close()
	store := model.NewStore()
	double := func(_ *model.Scope, in []*graph.Node) []*graph.Node {
		return []*graph.Node{graph.MulScalar(in[0], 2)}
	}
	key := Key{Name: "double", Bucket: "b4"}
	x, err := e.Exec(key, store, double)
	require.NoError(t, err)

	in4 := tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4}, 4)
	for range 3 {
		out, err := x.Call(in4)
		require.NoError(t, err)
		assert.Equal(t, []float32{2, 4, 6, 8}, tensors.MustCopyFlatData[float32](out[0]))
	}
	assert.Equal(t, Stats{Executables: 1, Compilations: 1, CacheHits: 2, Calls: 3}, e.Stats())

	// Same key returns the same executable.
	again, err := e.Exec(key, store, double)
	require.NoError(t, err)
	assert.Same(t, x, again)

	// A new shape under the same key is a compilation, not a hit.
	_, err = x.Call(tensors.FromShape(shapes.Make(dtypes.Float32, 8)))
	require.NoError(t, err)
	assert.Equal(t, int64(2), e.Stats().Compilations)
	assert.Equal(t, int64(2), x.Compilations())

	// Another store is another executable, even under the same key.
	other, err := e.Exec(key, model.NewStore(), double)
	require.NoError(t, err)
	assert.NotSame(t, x, other)
	require.Equal(t, 2, e.Stats().Executables)
	require.Equal(t, 2, e.Forget("double"))
	x, err = e.Exec(key, store, double)
	require.NoError(t, err)
	_, err = x.Call(in4)
	require.NoError(t, err)

	// A new bucket is a new executable.
	y, err := e.Exec(Key{Name: "double", Bucket: "b8"}, store, double)
	require.NoError(t, err)
	_, err = y.Call(tensors.FromShape(shapes.Make(dtypes.Float32, 8)))
	require.NoError(t, err)
	st := e.Stats()
	assert.Equal(t, 2, st.Executables)
	assert.Equal(t, int64(4), st.Compilations)
	assert.Equal(t, 2, e.Forget("double"))
	assert.Equal(t, 0, e.Stats().Executables)

	// Release drops one store's executables, every name and bucket, and no other's.
	mine, theirs := model.NewStore(), model.NewStore()
	for _, k := range []Key{{Name: "double", Bucket: "b4"}, {Name: "double", Bucket: "b8"}, {Name: "triple"}} {
		_, err := e.Exec(k, mine, double)
		require.NoError(t, err)
	}
	kept, err := e.Exec(key, theirs, double)
	require.NoError(t, err)
	require.Equal(t, 4, e.Stats().Executables)
	assert.Equal(t, 3, e.Release(mine))
	assert.Equal(t, 1, e.Stats().Executables)
	out, err := kept.Call(in4)
	require.NoError(t, err)
	assert.Equal(t, []float32{2, 4, 6, 8}, tensors.MustCopyFlatData[float32](out[0]))
	assert.Zero(t, e.Release(mine))
}

func TestExecutableErrors(t *testing.T) {
	e, err := New(Config{Backend: "go"})
	require.NoError(t, err)
	defer e.Close()
	store := model.NewStore()
	_, err = e.Exec(Key{}, store, nil)
	assert.Error(t, err)
	_, err = e.Exec(Key{Name: "x"}, nil, nil)
	assert.Error(t, err)

	// A graph function that panics (shape mismatch) surfaces as an error.
	bad, err := e.Exec(Key{Name: "bad"}, store, func(_ *model.Scope, in []*graph.Node) []*graph.Node {
		return []*graph.Node{graph.Add(in[0], in[1])}
	})
	require.NoError(t, err)
	_, err = bad.Call(tensors.FromShape(shapes.Make(dtypes.Float32, 2)), tensors.FromShape(shapes.Make(dtypes.Float32, 3)))
	assert.Error(t, err)
	_, err = bad.Call(nil)
	assert.Error(t, err)
}

// Finalize frees host tensors and the outputs of a call, and skips nil entries.
func TestFinalize(t *testing.T) {
	e, err := New(Config{Backend: "go"})
	require.NoError(t, err)
	defer e.Close()
	x, err := e.Exec(Key{Name: "double"}, model.NewStore(), func(_ *model.Scope, in []*graph.Node) []*graph.Node {
		return []*graph.Node{graph.MulScalar(in[0], 2), graph.AddScalar(in[0], 1)}
	})
	require.NoError(t, err)
	in := tensors.FromFlatDataAndDimensions([]float32{1, 2}, 2)
	outs, err := x.Call(in)
	require.NoError(t, err)
	require.Len(t, outs, 2)
	for _, tt := range append([]*tensors.Tensor{in}, outs...) {
		require.True(t, tt.Ok())
	}

	Finalize(in, nil, outs[0])
	assert.False(t, in.Ok(), "input freed")
	assert.False(t, outs[0].Ok(), "output freed")
	assert.True(t, outs[1].Ok(), "a tensor not passed stays")
	Finalize()
	Finalize(nil)
	Finalize(outs[1:]...)
	assert.False(t, outs[1].Ok())
}

// TestEnginesMadeAtOnceRestoreStdout: engines made concurrently each swap os.Stdout
// for the backend's announcement; afterwards it is the process's stdout again, not a
// closed /dev/null another call swapped in.
func TestEnginesMadeAtOnceRestoreStdout(t *testing.T) {
	stdout := os.Stdout
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, err := New(Config{Backend: "go"})
			if err == nil {
				e.Close()
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	assert.Same(t, stdout, os.Stdout)
}

// TestCPUSIMDFollowsGODEBUG: GODEBUG=cpu.avx512f=off turns AVX-512 off for the Go
// runtime's SIMD code, and `env` says so (avx2 or less), as the kernels then run; the
// test binary is run again as a child with that setting.
func TestCPUSIMDFollowsGODEBUG(t *testing.T) {
	if os.Getenv("GRAPHLOOM_TEST_SIMD_CHILD") == "1" {
		os.Stdout.WriteString("cpu_simd=" + cpuSIMD() + "\n")
		return
	}
	if !simdBuild || runtime.GOARCH != "amd64" {
		t.Skip("reads the runtime's CPU features only in a GOEXPERIMENT=simd amd64 build")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCPUSIMDFollowsGODEBUG$")
	cmd.Env = append(os.Environ(), "GRAPHLOOM_TEST_SIMD_CHILD=1", "GODEBUG=cpu.avx512f=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	_, got, ok := strings.Cut(string(out), "cpu_simd=")
	require.True(t, ok, string(out))
	got, _, _ = strings.Cut(got, "\n")
	assert.Contains(t, []string{"avx2", "none"}, got)
}
