// Command ppr benchmarks graphloom's personalized PageRank kernels against python-igraph
// (bench/ppr_igraph.py) on one identical random graph.
//
//	ppr -out DIR     generate the graph, time the Go kernels, write DIR/graph.bin (edge
//	                 list + reset vectors for the Python side), DIR/graphloom.bin (the
//	                 batch results) and DIR/go.json (timings)
//	ppr -table DIR   print the comparison table from DIR/go.json and DIR/igraph.json
//	ppr -table DIR,DIR2,…  the same with the rows of runs on other kernel paths
//
// bench/ppr.sh runs both steps and the Python script in between.
//
// Besides timings it measures this machine's memory bandwidth (a STREAM-like parallel
// sum and copy, over arrays far larger than the caches and over arrays the size of the
// kernel's working set) and turns the kernel's compulsory traffic per pass over the
// matrix into a floor: bytes per pass × passes ÷ bandwidth.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	_ "github.com/gomlx/compute/gobackend"
	"github.com/graphloom/graphloom/kernels"
)

// graphMagic starts DIR/graph.bin; see writeGraph for the layout.
const graphMagic = "GLPPR001"

type options struct {
	n, m, batch, reps, singles int
	seed                       uint64
	damping, tol               float64
	gomlx                      bool
	out                        string
}

// timing summarises repeated measurements of one kernel, in ms per query.
type timing struct {
	Name       string  `json:"name"`
	MedianMS   float64 `json:"median_ms"`
	MinMS      float64 `json:"min_ms"`
	Iterations float64 `json:"iterations"`     // mean passes over the matrix per query
	Float32    float64 `json:"float32_passes"` // of them, mean passes in float32 (SolveBatch's start)
	MaxAbsDiff float64 `json:"max_abs_diff"`   // vs the CPU batch result
	BytesPass  float64 `json:"bytes_per_pass"` // per query, compulsory traffic (0: not modelled)
	Tol        float64 `json:"tol"`
	Note       string  `json:"note,omitempty"`
}

// bandwidth is one STREAM-like measurement.
type bandwidth struct {
	Name  string  `json:"name"`
	Bytes int64   `json:"bytes"`
	GBps  float64 `json:"gbps"`
}

type goReport struct {
	N, M, NNZ, Batch, Isolated int
	Damping, Tol               float64
	GOMAXPROCS                 int
	SIMD                       string
	Kernels                    string // the kernel path timed: avx512, avx2 or portable
	LoadBefore, LoadAfter      string
	SetupMS                    float64
	Timings                    []timing
	Bandwidth                  []bandwidth
	WorkingSetSingle           int64 // bytes touched per pass, single query
	WorkingSetTile             int64 // bytes touched per pass, one tile of 8 queries
}

func main() {
	var o options
	table := flag.String("table", "", "print the table from `DIR`/go.json and DIR/igraph.json and exit; DIR,DIR2,… adds the go.json of runs on other kernel paths (same graph)")
	flag.IntVar(&o.n, "n", 100_000, "nodes")
	flag.IntVar(&o.m, "m", 300_000, "undirected edges (including ~1% self-loops and ~1% parallel edges)")
	flag.IntVar(&o.batch, "batch", 32, "queries in the batch")
	flag.IntVar(&o.singles, "singles", 8, "queries timed one at a time")
	flag.IntVar(&o.reps, "reps", 5, "repetitions of each measurement")
	flag.Uint64Var(&o.seed, "seed", 1, "graph and reset seed")
	flag.Float64Var(&o.damping, "damping", 0.5, "damping (HippoRAG 2: 0.5)")
	flag.Float64Var(&o.tol, "tol", kernels.DefaultPPRTol, "L1 tolerance of the CPU kernels (igraph's PRPACK uses 1e-10)")
	flag.BoolVar(&o.gomlx, "gomlx", true, "also time the GoMLX kernel on the pure-Go backend")
	flag.StringVar(&o.out, "out", "", "output `DIR`")
	flag.Parse()
	var err error
	switch {
	case *table != "":
		err = printTable(os.Stdout, strings.Split(*table, ","))
	case o.out != "":
		err = run(o)
	default:
		err = errors.New("need -out DIR or -table DIR")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "ppr:", err)
		os.Exit(1)
	}
}

// generate returns a seeded random weighted multigraph: uniform endpoints, ~1%
// self-loops, ~1% parallel edges (a repeat of an earlier edge, reversed), weights in
// [0.1, 2] stored as float32 so both sides see the same values. Isolated nodes occur
// naturally (about N·e^(−2M/N)).
func generate(o options) ([]kernels.Edge, [][]float64) {
	rng := rand.New(rand.NewPCG(o.seed, 0x9e3779b97f4a7c15))
	edges := make([]kernels.Edge, 0, o.m)
	for len(edges) < o.m {
		u, v := int32(rng.IntN(o.n)), int32(rng.IntN(o.n))
		switch r := rng.Float64(); {
		case r < 0.01:
			v = u
		case r < 0.02 && len(edges) > 0:
			p := edges[rng.IntN(len(edges))]
			u, v = p.V, p.U
		}
		edges = append(edges, kernels.Edge{U: u, V: v, Weight: float32(0.1 + 1.9*rng.Float64())})
	}
	// HippoRAG 2-like resets: 5 entity seeds with fact scores, plus 0.05 × a dense
	// passage score on every 4th node.
	resets := make([][]float64, o.batch)
	for q := range resets {
		r := make([]float64, o.n)
		for range 5 {
			r[rng.IntN(o.n)] += 0.5 + rng.Float64()
		}
		for v := 0; v < o.n; v += 4 {
			r[v] += 0.05 * rng.Float64()
		}
		resets[q] = r
	}
	return edges, resets
}

func run(o options) error {
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	rep := goReport{N: o.n, M: o.m, Batch: o.batch, Damping: o.damping, Tol: o.tol,
		GOMAXPROCS: runtime.GOMAXPROCS(0), LoadBefore: loadavg()}
	edges, resets := generate(o)
	if err := writeGraph(filepath.Join(o.out, "graph.bin"), o.n, edges, resets); err != nil {
		return err
	}
	csr, err := kernels.NewSymmetricCSR(o.n, edges)
	if err != nil {
		return err
	}
	rep.NNZ = csr.NNZ()
	for _, s := range csr.Strength() {
		if s == 0 {
			rep.Isolated++
		}
	}
	cfg := kernels.PPRConfig{Damping: o.damping, Tol: o.tol}
	t0 := time.Now()
	solver, err := kernels.NewPPRSolver(csr, cfg)
	if err != nil {
		return err
	}
	rep.SetupMS = ms(time.Since(t0))
	rep.Kernels = solver.Kernels().String()
	rep.SIMD = fmt.Sprintf("kernels %s (offered %v; $%s chooses)", rep.Kernels, kernels.CPUKernels(), kernels.KernelsEnv)
	fmt.Fprintf(os.Stderr, "graph: %d nodes, %d edges, nnz %d, %d isolated; solver setup %.1f ms\n",
		o.n, o.m, rep.NNZ, rep.Isolated, rep.SetupMS)

	// Reference result: the CPU batch, written for the Python side.
	want, _, err := solver.SolveBatch(resets)
	if err != nil {
		return err
	}
	if err := writeFloats(filepath.Join(o.out, "graphloom.bin"), want); err != nil {
		return err
	}

	n, nnz := int64(o.n), int64(rep.NNZ)
	// Compulsory bytes per pass over the matrix (see README in the table output):
	// RowPtr 4(N+1) + Col 4·nnz + Val 4·nnz + per node [strength, 1/strength] 16 +
	// reset 8 + y_k 8 + y_{k-1} read 8 + y_{k+1} write 8; SOR updates y in place (no
	// y_{k-1}: 8 bytes per node and lane less).
	matrix := 4*(n+1) + 8*nnz
	rep.WorkingSetSingle = matrix + 48*n
	rep.WorkingSetTile = matrix + 16*n + 8*8*n*4
	bytesPass := func(m kernels.PPRMethod, batch bool) float64 {
		if batch {
			if m == kernels.PPRSOR {
				return float64(matrix+16*n+8*8*n*3) / 8
			}
			return float64(rep.WorkingSetTile) / 8
		}
		if m == kernels.PPRSOR {
			return float64(matrix + 40*n)
		}
		return float64(rep.WorkingSetSingle)
	}

	for _, v := range []struct {
		method  kernels.PPRMethod
		workers int
	}{{kernels.PPRSOR, 0}, {kernels.PPRSOR, 1}, {kernels.PPRChebyshev, 0}, {kernels.PPRChebyshev, 1}, {kernels.PPRPower, 0}} {
		c := cfg
		c.Method, c.Workers = v.method, v.workers
		s, err := kernels.NewPPRSolver(csr, c)
		if err != nil {
			return err
		}
		tm := timeSingles(o, resets, want, s.Solve)
		tm.Name = "graphloom single (" + v.method.String() + ")"
		if v.workers == 1 {
			tm.Name = "graphloom single (" + v.method.String() + ", 1 goroutine)"
		}
		tm.BytesPass = bytesPass(v.method, false)
		rep.Timings = append(rep.Timings, tm)
		fmt.Fprintf(os.Stderr, "%s: %.2f ms/query, %.1f passes\n", tm.Name, tm.MedianMS, tm.Iterations)
	}
	for _, v := range []struct {
		method  kernels.PPRMethod
		float64 bool
	}{{kernels.PPRSOR, false}, {kernels.PPRSOR, true}, {kernels.PPRChebyshev, false}, {kernels.PPRPower, false}} {
		c := cfg
		c.Method, c.Float64Batch = v.method, v.float64
		s, err := kernels.NewPPRSolver(csr, c)
		if err != nil {
			return err
		}
		tm := timeBatch(o, resets, want, func(r [][]float64) ([][]float64, []kernels.PPRStats, error) { return s.SolveBatch(r) })
		tm.Name = fmt.Sprintf("graphloom batch-%d (%s), per query", o.batch, v.method)
		tm.BytesPass = bytesPass(v.method, true)
		if v.float64 {
			tm.Name = fmt.Sprintf("graphloom batch-%d (%s, float64 only), per query", o.batch, v.method)
		} else if tm.Float32 > 0 {
			tm.Note = fmt.Sprintf("%.1f of the passes in float32, 16 queries a line", tm.Float32)
			// A float32 pass streams the matrix, float32 strengths and 64-byte lines
			// of the iterate and reset for 16 queries instead of 8.
			b32 := float64(matrix+8*n+8*8*n*3) / 16
			tm.BytesPass += tm.Float32 / tm.Iterations * (b32 - tm.BytesPass)
		}
		rep.Timings = append(rep.Timings, tm)
		fmt.Fprintf(os.Stderr, "%s: %.2f ms/query, %.1f passes (%.1f float32)\n", tm.Name, tm.MedianMS, tm.Iterations, tm.Float32)
	}
	// One-shot PPR(): includes the O(nnz) validation and strength computation.
	oneShot := timeSingles(options{singles: min(o.singles, 4), reps: 2}, resets, want,
		func(r []float64) ([]float64, kernels.PPRStats, error) { return kernels.PPR(csr, r, cfg) })
	oneShot.Name = "graphloom PPR() one-shot incl. setup"
	rep.Timings = append(rep.Timings, oneShot)

	if o.gomlx {
		tms, err := timeGoMLX(o, csr, cfg, resets, want)
		if err != nil {
			return err
		}
		rep.Timings = append(rep.Timings, tms...)
	}

	rep.Bandwidth = measureBandwidth(o.reps, rep.WorkingSetSingle, rep.WorkingSetTile)
	rep.LoadAfter = loadavg()
	buf, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "go.json"), buf, 0o644)
}

// timeSingles times o.singles queries one at a time, o.reps times each.
func timeSingles(o options, resets, want [][]float64, solve func([]float64) ([]float64, kernels.PPRStats, error)) timing {
	var times []float64
	var iters, diff float64
	q := min(o.singles, len(resets))
	for rep := 0; rep < o.reps; rep++ {
		for i := 0; i < q; i++ {
			t0 := time.Now()
			x, st, err := solve(resets[i])
			times = append(times, ms(time.Since(t0)))
			if err != nil {
				panic(err)
			}
			iters += float64(st.Iterations)
			diff = math.Max(diff, maxAbs(x, want[i]))
		}
	}
	return timing{MedianMS: median(times), MinMS: slices.Min(times), Iterations: iters / float64(len(times)), MaxAbsDiff: diff}
}

// timeBatch times the whole batch o.reps times; times are per query.
func timeBatch(o options, resets, want [][]float64, solve func([][]float64) ([][]float64, []kernels.PPRStats, error)) timing {
	var times []float64
	var iters, f32, diff float64
	for rep := 0; rep < o.reps; rep++ {
		t0 := time.Now()
		xs, stats, err := solve(resets)
		times = append(times, ms(time.Since(t0))/float64(len(resets)))
		if err != nil {
			panic(err)
		}
		for i, x := range xs {
			iters += float64(stats[i].Iterations) / float64(len(xs)*o.reps)
			f32 += float64(stats[i].Float32) / float64(len(xs)*o.reps)
			diff = math.Max(diff, maxAbs(x, want[i]))
		}
	}
	return timing{MedianMS: median(times), MinMS: slices.Min(times), Iterations: iters, Float32: f32, MaxAbsDiff: diff}
}

// timeGoMLX times the GoMLX kernel on the pure-Go backend (float32, single and batch).
func timeGoMLX(o options, csr *kernels.CSR, cfg kernels.PPRConfig, resets, want [][]float64) ([]timing, error) {
	backend, err := compute.NewWithConfig("go")
	if err != nil {
		return nil, fmt.Errorf("gomlx backend: %w", err)
	}
	defer backend.Finalize()
	g, err := kernels.NewPPRGoMLX(backend, csr, cfg, dtypes.Float32)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	var out []timing
	for _, b := range []int{1, o.batch} {
		qs := resets[:b]
		t0 := time.Now()
		if _, _, err := g.SolveBatch(qs); err != nil { // compile + first run
			return nil, err
		}
		first := ms(time.Since(t0))
		reps := max(1, min(o.reps, 2))
		tm := timeBatch(options{reps: reps}, qs, want, func(r [][]float64) ([][]float64, []kernels.PPRStats, error) {
			xs, st, err := g.SolveBatch(r)
			stats := make([]kernels.PPRStats, len(xs))
			for i := range stats {
				stats[i] = st
			}
			return xs, stats, err
		})
		tm.Name = fmt.Sprintf("GoMLX go backend, batch %d, float32, per query", b)
		tm.Tol = math.Max(cfg.Tol, kernels.PPRGoMLXMinTolFloat32)
		tm.Note = fmt.Sprintf("first call, compile + run: %.0f ms", first)
		out = append(out, tm)
		fmt.Fprintf(os.Stderr, "%s: %.2f ms/query, %.1f passes (%s)\n", tm.Name, tm.MedianMS, tm.Iterations, tm.Note)
	}
	return out, nil
}

// measureBandwidth runs a STREAM-like parallel sum (read) and copy (read + write,
// counted as 2 bytes per byte copied, as STREAM does) over 512 MB (DRAM) and over
// arrays the size of the kernel working sets; best of reps.
func measureBandwidth(reps int, wsSingle, wsTile int64) []bandwidth {
	workers := runtime.GOMAXPROCS(0)
	var out []bandwidth
	for _, c := range []struct {
		name  string
		bytes int64
	}{
		{"DRAM (512 MB)", 512 << 20},
		{"single-query working set", wsSingle},
		{"8-query tile working set", wsTile},
	} {
		n := int(c.bytes / 8)
		a := make([]float64, n)
		b := make([]float64, n/2)
		for i := range a {
			a[i] = float64(i & 1023)
		}
		inner := max(1, int((2<<30)/c.bytes)) // ~2 GB of traffic per timing
		best := func(f func()) float64 {
			f()
			t := math.Inf(1)
			for r := 0; r < reps; r++ {
				t0 := time.Now()
				for i := 0; i < inner; i++ {
					f()
				}
				t = math.Min(t, time.Since(t0).Seconds()/float64(inner))
			}
			return t
		}
		var sink float64
		tSum := best(func() { sink += parallelSum(a, workers) })
		tCopy := best(func() { parallelCopy(b, a[:len(b)], workers) })
		_ = sink
		out = append(out,
			bandwidth{Name: "sum, " + c.name, Bytes: c.bytes, GBps: float64(c.bytes) / tSum / 1e9},
			bandwidth{Name: "copy, " + c.name, Bytes: c.bytes, GBps: float64(c.bytes) / tCopy / 1e9})
	}
	return out
}

func parallelSum(a []float64, workers int) float64 {
	parts := make([]float64, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := len(a)*w/workers, len(a)*(w+1)/workers
			x := a[lo:hi]
			var s0, s1, s2, s3, s4, s5, s6, s7 float64
			for len(x) >= 8 {
				s0 += x[0]
				s1 += x[1]
				s2 += x[2]
				s3 += x[3]
				s4 += x[4]
				s5 += x[5]
				s6 += x[6]
				s7 += x[7]
				x = x[8:]
			}
			for _, v := range x {
				s0 += v
			}
			parts[w] = s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7
		}()
	}
	wg.Wait()
	var s float64
	for _, p := range parts {
		s += p
	}
	return s
}

func parallelCopy(dst, src []float64, workers int) {
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := len(src)*w/workers, len(src)*(w+1)/workers
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// writeGraph writes DIR/graph.bin, little-endian: magic "GLPPR001", int64 n, m, batch;
// int32 u[m]; int32 v[m]; float64 w[m]; float64 reset[batch][n].
func writeGraph(path string, n int, edges []kernels.Edge, resets [][]float64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := &errWriter{w: f}
	w.write([]byte(graphMagic))
	w.write([]int64{int64(n), int64(len(edges)), int64(len(resets))})
	u := make([]int32, len(edges))
	v := make([]int32, len(edges))
	wt := make([]float64, len(edges))
	for i, e := range edges {
		u[i], v[i], wt[i] = e.U, e.V, float64(e.Weight)
	}
	w.write(u)
	w.write(v)
	w.write(wt)
	for _, r := range resets {
		w.write(r)
	}
	if err := f.Close(); w.err == nil {
		w.err = err
	}
	if w.err != nil {
		return fmt.Errorf("writing %s: %w", path, w.err)
	}
	return nil
}

// writeFloats writes rows of float64, little-endian, back to back.
func writeFloats(path string, rows [][]float64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := &errWriter{w: f}
	for _, r := range rows {
		w.write(r)
	}
	if err := f.Close(); w.err == nil {
		w.err = err
	}
	if w.err != nil {
		return fmt.Errorf("writing %s: %w", path, w.err)
	}
	return nil
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) write(v any) {
	if e.err == nil {
		e.err = binary.Write(e.w, binary.LittleEndian, v)
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}

func maxAbs(a, b []float64) float64 {
	var m float64
	for i := range a {
		m = math.Max(m, math.Abs(a[i]-b[i]))
	}
	return m
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}
