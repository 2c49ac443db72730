package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// igraphReport is what bench/ppr_igraph.py writes to DIR/igraph.json.
type igraphReport struct {
	Version        string    `json:"version"`
	BuildMS        float64   `json:"build_ms"`
	PerQueryMS     []float64 `json:"per_query_ms"`
	MedianMS       float64   `json:"median_ms"`
	MinMS          float64   `json:"min_ms"`
	LoopPerQueryMS float64   `json:"loop_per_query_ms"`
	MaxAbsDiff     float64   `json:"max_abs_diff"`
	MaxL1Diff      float64   `json:"max_l1_diff"`
	MaxSumErr      float64   `json:"max_sum_err"`
	Skipped        string    `json:"skipped"`
}

// printTable prints the comparison from dirs[0]/go.json and, if present,
// dirs[0]/igraph.json; each further directory holds the go.json of a run on another
// kernel path (GRAPHLOOM_KERNELS) on the same graph, whose rows join the timing and
// floor tables under their path.
func printTable(w io.Writer, dirs []string) error {
	reps := make([]goReport, len(dirs))
	for i, dir := range dirs {
		if err := readJSON(filepath.Join(dir, "go.json"), &reps[i]); err != nil {
			return err
		}
		if r := reps[i]; i > 0 && (r.N != reps[0].N || r.NNZ != reps[0].NNZ || r.Damping != reps[0].Damping) {
			return fmt.Errorf("%s: another graph or damping than %s's", dir, dirs[0])
		}
	}
	rep := reps[0]
	var ig igraphReport
	err := readJSON(filepath.Join(dirs[0], "igraph.json"), &ig)
	haveIG := err == nil && ig.Skipped == "" && ig.MedianMS > 0
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("Personalized PageRank, %d nodes, %d edges (nnz %d, %d isolated nodes, self-loops and parallel edges), damping %g\n",
		rep.N, rep.M, rep.NNZ, rep.Isolated, rep.Damping)
	for _, r := range reps {
		p("GOMAXPROCS %d; %s; load average before %s, after %s; solver setup (validate, symmetry, strengths) %.1f ms once per graph\n",
			r.GOMAXPROCS, r.SIMD, r.LoadBefore, r.LoadAfter, r.SetupMS)
	}
	p("Accuracy: graphloom CPU stops at L1 Jacobi residual < %g (L1 error <= %.2g); igraph PRPACK solves to 1e-10.\n",
		rep.Tol, 2*rep.Tol/(1-rep.Damping))
	if haveIG {
		p("igraph %s vs graphloom CPU batch: max |x_igraph - x_graphloom| = %.2e, max L1 = %.2e (over %d queries)\n",
			ig.Version, ig.MaxAbsDiff, ig.MaxL1Diff, len(ig.PerQueryMS))
	} else {
		msg := ig.Skipped
		if msg == "" {
			msg = "no igraph.json"
		}
		p("igraph: skipped (%s)\n", msg)
	}
	p("\nTimes are medians and minima over repeated runs; on a shared machine the minima are the steadier comparison.\n")
	p("\n| kernel | path | ms/query (median) | min | passes | speed-up vs igraph (median / min) | max abs diff vs CPU batch |\n")
	p("|---|---|---:|---:|---:|---:|---:|\n")
	if haveIG {
		p("| python-igraph PRPACK, one query per call | – | %.2f | %.2f | – | 1.0× / 1.0× | %.1e |\n", ig.MedianMS, ig.MinMS, ig.MaxAbsDiff)
		p("| python-igraph PRPACK, %d queries looped, per query | – | %.2f | – | – | %.1f× | |\n",
			len(ig.PerQueryMS), ig.LoopPerQueryMS, ig.MedianMS/ig.LoopPerQueryMS)
	}
	for i, r := range reps {
		for _, t := range r.Timings {
			if i > 0 && t.BytesPass == 0 {
				continue // the one-shot and GoMLX rows: once, from the first run
			}
			speed := "–"
			if haveIG {
				speed = fmt.Sprintf("%.1f× / %.1f×", ig.MedianMS/t.MedianMS, ig.MinMS/t.MinMS)
			}
			name := t.Name
			if t.Note != "" {
				name += " (" + t.Note + ")"
			}
			if t.Tol > 0 {
				name += fmt.Sprintf(" [tol %g]", t.Tol)
			}
			p("| %s | %s | %.2f | %.2f | %.1f | %s | %.1e |\n", name, r.Kernels, t.MedianMS, t.MinMS, t.Iterations, speed, t.MaxAbsDiff)
		}
	}

	var dram, wsSingle, wsTile float64
	p("\nBandwidth (STREAM-like, %d goroutines, best of runs; copy counts read + write):\n", rep.GOMAXPROCS)
	for _, b := range rep.Bandwidth {
		p("  %-40s %8.1f MB  %6.1f GB/s\n", b.Name, float64(b.Bytes)/1e6, b.GBps)
		switch {
		case strings.Contains(b.Name, "DRAM"):
			dram = math.Max(dram, b.GBps)
		case strings.Contains(b.Name, "single-query"):
			wsSingle = math.Max(wsSingle, b.GBps)
		case strings.Contains(b.Name, "tile"):
			wsTile = math.Max(wsTile, b.GBps)
		}
	}
	p("\nMemory-bandwidth floor = bytes per pass × passes ÷ bandwidth. Bytes per pass, per query:\n")
	p("  compulsory, single query: RowPtr 4(N+1) + Col 4·nnz + Val 4·nnz + 48 B per node ([strength, 1/strength] 16,\n")
	p("    reset 8, y_k 8, y_{k-1} read 8, y_{k+1} write 8) = %.2f MB: every byte once, neighbour reads y_k[u] free (cached).\n", float64(rep.WorkingSetSingle)/1e6)
	p("  compulsory, tile of 8 queries: RowPtr + Col + Val + 16 B/node + 4 arrays of 8 lanes × 8 B/node = %.2f MB = %.2f MB/query.\n",
		float64(rep.WorkingSetTile)/1e6, float64(rep.WorkingSetTile)/8e6)
	p("  gathers: each of the nnz entries reads its neighbour's y_k: 8 B per entry per query (a 64-byte line per entry per\n")
	p("    tile) = %.2f MB/query; random, so they come from L2/L3/DRAM, not from the stream.\n", float64(8*rep.NNZ)/1e6)
	p("  The first floor uses the bandwidth measured on an array of the working set's size (%s); the second adds\n", lastLevelCache())
	p("  the gathers at DRAM bandwidth. Every path's floor is the first run's bandwidth.\n\n")
	p("| kernel | path | passes | compulsory MB/pass | floor @ in-cache BW (ms) | + gathers @ DRAM BW (ms) | measured (ms) | measured / floor | measured / floor incl. gathers |\n")
	p("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range reps {
		for _, t := range r.Timings {
			if t.BytesPass == 0 {
				continue
			}
			bw := wsSingle
			if strings.Contains(t.Name, "batch") {
				bw = wsTile
			}
			fc := t.BytesPass * t.Iterations / bw / 1e6
			fg := (t.BytesPass + float64(8*rep.NNZ)) * t.Iterations / dram / 1e6
			p("| %s | %s | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", t.Name, r.Kernels, t.Iterations, t.BytesPass/1e6, fc, fg, t.MedianMS, t.MedianMS/fc, t.MedianMS/fg)
		}
	}
	p("\n")
	for _, r := range reps {
		p("%s: %s", r.Kernels, batchVsSingle(r))
		if haveIG {
			goal := func(prefix string, want float64) string {
				med, mn := fastest(r, prefix)
				return fmt.Sprintf("%.1f× by medians, %.1f× by minima (%s)", ig.MedianMS/med, ig.MinMS/mn,
					yes(ig.MedianMS/med >= want && ig.MinMS/mn >= want))
			}
			p("; goals: single query >= 10× igraph: %s; batch >= 40× per query: %s", goal("graphloom single", 10), goal("graphloom batch", 40))
		}
		p("\n")
	}
	return nil
}

// fastest returns the least median and the least minimum of r's rows whose name
// starts with prefix (+Inf without one).
func fastest(r goReport, prefix string) (med, mn float64) {
	med, mn = math.Inf(1), math.Inf(1)
	for _, t := range r.Timings {
		if strings.HasPrefix(t.Name, prefix) {
			med, mn = math.Min(med, t.MedianMS), math.Min(mn, t.MinMS)
		}
	}
	return med, mn
}

// batchVsSingle compares the default batch (SOR, float32 start) per query with the
// faster of the SOR single-query rows (every core, the default, or one goroutine), by
// medians and by minima: a batched query should never cost more.
func batchVsSingle(r goReport) string {
	var batch *timing
	single, singleMin, name := math.Inf(1), math.Inf(1), ""
	for i, t := range r.Timings {
		n := strings.ToLower(t.Name)
		switch {
		case strings.HasPrefix(n, "graphloom single (sor"):
			if t.MedianMS < single {
				single, name = t.MedianMS, t.Name
			}
			singleMin = math.Min(singleMin, t.MinMS)
		case strings.HasPrefix(n, "graphloom batch-") && strings.HasSuffix(n, "(sor), per query"):
			batch = &r.Timings[i]
		}
	}
	if batch == nil || name == "" {
		return "no SOR single and batch rows to compare"
	}
	verdict := "a batched query is not slower than a single one"
	if batch.MedianMS > single || batch.MinMS > singleMin {
		verdict = "a batched query is SLOWER than a single one"
	}
	return fmt.Sprintf("batch %.2f / %.2f ms a query against the fastest single %.2f (%s) / %.2f (median / min): %s",
		batch.MedianMS, batch.MinMS, single, name, singleMin, verdict)
}

func yes(b bool) string {
	if b {
		return "met"
	}
	return "NOT met"
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// lastLevelCache describes this machine's last-level cache from sysfs (Linux), e.g.
// "last-level cache 480 MiB, shared with other tenants on a VM", or says it is unknown.
func lastLevelCache() string {
	for i := 9; i >= 0; i-- {
		b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu0/cache/index%d/size", i))
		if err != nil {
			continue
		}
		size := strings.TrimSpace(string(b))
		if kb, err := strconv.Atoi(strings.TrimSuffix(size, "K")); err == nil && strings.HasSuffix(size, "K") {
			size = fmt.Sprintf("%d MiB", kb>>10)
		}
		return "last-level cache " + size + ", shared with other tenants on a VM"
	}
	return "last-level cache size unknown"
}
