// Command scale measures how graphloom's offline costs grow with the corpus (issue 16):
// it synthesises corpora of N passages by replicating a base corpus with every name
// renamed per replica — so the graph grows instead of merging — and, per N, measures
// offline indexing (passages/s, peak RSS of the indexing process, index size), a cold
// CLI load (`graphloom stats`: wall time and peak RSS), in-process query latency
// (p50/p99 per question for bm25, dense, ppr, hyperppr) and `augment --plan` (scorer
// training, sampling and scoring, with its peak RSS). It prints a table, the fitted
// growth exponent of each cost (least-squares slope of log cost on log N), and writes a
// log–log PNG.
//
// Usage (GOEXPERIMENT=simd, as make sets it: the query latencies are timed in this
// process, with its own build of the kernels):
//
//	GOEXPERIMENT=simd go run ./bench/scale -corpus ../shared/data/corpora/2wikimultihopqa_corpus.json \
//	    -bin bin/graphloom -sizes 6000,30000,120000 -out out/bench/scale
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/graphloom/graphloom/bench/internal/scalecorpus"
	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/retrieve"
)

func main() {
	corpus := flag.String("corpus", "", "base corpus: a JSON array of {title, text}")
	bin := flag.String("bin", "bin/graphloom", "graphloom binary")
	sizes := flag.String("sizes", "6000,30000", "comma-separated passage counts")
	queries := flag.Int("queries", 100, "questions timed per retriever")
	noAugment := flag.Bool("no-augment", false, "skip augment --plan")
	keep := flag.Bool("keep-corpora", false, "keep the synthesised corpora (corpus_N.json) beside the indices")
	out := flag.String("out", "out/bench/scale", "output directory")
	reuse := flag.Bool("reuse", false, "time queries on an index already at OUT/scale_N.gl (same corpus and code) instead of indexing again; the index, load and augment columns are then not measured")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the first size's timed ppr questions to this file")
	flag.Parse()
	var ns []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench/scale: bad size %q\n", f)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	o := options{augment: !*noAugment, keepCorpora: *keep, reuse: *reuse, cpuProfile: *cpuProfile}
	if err := run(*corpus, *bin, *out, ns, *queries, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/scale:", err)
		os.Exit(1)
	}
}

type passage = scalecorpus.Passage

// row is one corpus size's measurements.
type row struct {
	N                      int
	IndexSec, IndexRSS     float64 // wall seconds, peak MiB of the indexing process
	IndexMiB               float64 // index file size
	LoadSec, LoadRSS       float64 // cold `graphloom stats`
	P50, P99               map[string]float64
	AugmentSec, AugmentRSS float64
}

// options are run's switches.
type options struct {
	augment, keepCorpora bool
	reuse                bool      // time queries on the index already built (no index, load or augment run)
	cpuProfile           string    // CPU profile of the first size's timed ppr questions, or ""
	profile              io.Writer // where that profile goes until it is written
}

func run(corpusPath, bin, out string, ns []int, nq int, o options) error {
	augment := o.augment && !o.reuse
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		o.profile = f
	}
	if corpusPath == "" {
		return errors.New("-corpus is required")
	}
	base, err := scalecorpus.Load(corpusPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	retrievers := []string{"bm25", "dense", "ppr", "hyperppr"}
	fmt.Printf("base corpus %s: %d passages; sizes %v\n", filepath.Base(corpusPath), len(base), ns)
	// The query latencies are timed in this process: its kernels, not the binary's.
	if err := kernels.KernelsError(); err != nil {
		return err
	}
	fmt.Printf("query kernels: %s (offered %v; $%s chooses)\n\n", kernels.Kernels(), kernels.CPUKernels(), kernels.KernelsEnv)
	var rows []row
	for _, n := range ns {
		r := row{N: n, P50: map[string]float64{}, P99: map[string]float64{}}
		corpus := filepath.Join(out, fmt.Sprintf("corpus_%d.json", n))
		ps := scalecorpus.Synthesise(base, n)
		if err := scalecorpus.WriteJSON(corpus, ps); err != nil {
			return err
		}
		ix := filepath.Join(out, fmt.Sprintf("scale_%d.gl", n))
		if !o.reuse {
			os.Remove(ix)
			if r.IndexSec, r.IndexRSS, err = scalecorpus.Measure(bin, "index", "--quiet", "--corpus", corpus, "--out", ix); err != nil {
				return fmt.Errorf("index N=%d: %w", n, err)
			}
		}
		st, err := os.Stat(ix)
		if err != nil {
			return err
		}
		r.IndexMiB = float64(st.Size()) / (1 << 20)
		if !o.reuse {
			if r.LoadSec, r.LoadRSS, err = scalecorpus.Measure(bin, "stats", "--index", ix); err != nil {
				return fmt.Errorf("stats N=%d: %w", n, err)
			}
		}
		if err := queryLatency(ix, ps, nq, retrievers, &r, &o); err != nil {
			return fmt.Errorf("query N=%d: %w", n, err)
		}
		if augment {
			if r.AugmentSec, r.AugmentRSS, err = scalecorpus.Measure(bin, "augment", "--index", ix, "--plan", "--no-checkpoint", "--completer", "extractive", "--quiet"); err != nil {
				return fmt.Errorf("augment N=%d: %w", n, err)
			}
		}
		if o.reuse {
			fmt.Printf("N=%d: reused %s (%.1f MiB); ppr p50 %.1f ms\n", n, ix, r.IndexMiB, r.P50["ppr"])
		} else {
			fmt.Printf("N=%d: indexed in %.1fs (%.0f passages/s, peak %.0f MiB, %.1f MiB on disk); cold load %.2fs (%.0f MiB); ppr p50 %.1f ms\n",
				n, r.IndexSec, float64(n)/r.IndexSec, r.IndexRSS, r.IndexMiB, r.LoadSec, r.LoadRSS, r.P50["ppr"])
		}
		rows = append(rows, r)
		if !o.keepCorpora {
			os.Remove(corpus)
		}
	}
	report(rows, retrievers, augment)
	return plotCosts(filepath.Join(out, "scale.png"), rows)
}

// queryLatency loads the index once and times nq questions one at a time per
// retriever, after Searcher.Warm. The questions are the first twelve words of passages drawn at random
// (seed 1) from the whole synthetic corpus.
func queryLatency(path string, ps []passage, nq int, retrievers []string, r *row, o *options) error {
	ix, err := graphio.ReadFile(path)
	if err != nil {
		return err
	}
	emb, err := embed.ForIndex(ix, nil)
	if err != nil {
		return err
	}
	s, err := retrieve.Open(ix, emb, retrieve.DefaultConfig(), nil)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewSource(1))
	qs := make([]string, nq)
	for i := range qs {
		words := strings.Fields(ps[rng.Intn(len(ps))].Text)
		qs[i] = strings.Join(words[:min(12, len(words))], " ")
	}
	ctx := context.Background()
	for _, name := range retrievers {
		ret, err := s.Retriever(name)
		if err != nil {
			return err
		}
		// Warm up as serve does: the lazy structures and the matrices' query-time
		// forms (columns) are built before timing, so every timed question is a
		// steady-state one (with a single warm-up question the first 16 timed ones
		// were scored row by row, a server's first requests only).
		if err := s.Warm(ctx, name); err != nil {
			return err
		}
		ms := make([]float64, len(qs))
		if name == "ppr" && o.profile != nil {
			if err := pprof.StartCPUProfile(o.profile); err != nil {
				return err
			}
		}
		for i, q := range qs {
			t0 := time.Now()
			if _, err := ret.Retrieve(ctx, q, 5); err != nil {
				return err
			}
			ms[i] = float64(time.Since(t0).Microseconds()) / 1000
		}
		if name == "ppr" && o.profile != nil {
			pprof.StopCPUProfile()
			o.profile = nil // one profile a run: the first size's
		}
		slices.Sort(ms)
		r.P50[name], r.P99[name] = ms[len(ms)/2], ms[min(len(ms)-1, int(math.Ceil(0.99*float64(len(ms))))-1)]
	}
	return nil
}

func report(rows []row, retrievers []string, augment bool) {
	fmt.Println()
	head := "| N | index s | passages/s | index peak MiB | index MiB | load s | load MiB |"
	sep := "|--:|--:|--:|--:|--:|--:|--:|"
	for _, name := range retrievers {
		head += fmt.Sprintf(" %s p50/p99 ms |", name)
		sep += "--:|"
	}
	if augment {
		head += " augment --plan s | augment MiB |"
		sep += "--:|--:|"
	}
	fmt.Println(head)
	fmt.Println(sep)
	for _, r := range rows {
		line := fmt.Sprintf("| %d | %.1f | %.0f | %.0f | %.1f | %.2f | %.0f |", r.N, r.IndexSec, float64(r.N)/r.IndexSec, r.IndexRSS, r.IndexMiB, r.LoadSec, r.LoadRSS)
		if r.IndexSec == 0 { // -reuse: not measured
			line = fmt.Sprintf("| %d | – | – | – | %.1f | – | – |", r.N, r.IndexMiB)
		}
		for _, name := range retrievers {
			line += fmt.Sprintf(" %.2f / %.2f |", r.P50[name], r.P99[name])
		}
		if augment {
			line += fmt.Sprintf(" %.1f | %.0f |", r.AugmentSec, r.AugmentRSS)
		}
		fmt.Println(line)
	}
	if len(rows) < 2 {
		fmt.Println("\n(one size: no growth exponent)")
		return
	}
	fmt.Println("\ngrowth exponent b in cost ∝ N^b (least squares on log–log):")
	for _, c := range costs(rows) {
		fmt.Printf("  %-22s %.2f\n", c.name, slope(rows, c.get))
	}
}

type cost struct {
	name string
	get  func(row) float64
}

func costs(rows []row) []cost {
	return []cost{
		{"index time", func(r row) float64 { return r.IndexSec }},
		{"index peak RSS", func(r row) float64 { return r.IndexRSS }},
		{"index size", func(r row) float64 { return r.IndexMiB }},
		{"cold load time", func(r row) float64 { return r.LoadSec }},
		{"ppr p50", func(r row) float64 { return r.P50["ppr"] }},
		{"bm25 p50", func(r row) float64 { return r.P50["bm25"] }},
	}
}

// slope is the least-squares slope of log y on log N.
func slope(rows []row, y func(row) float64) float64 {
	var sx, sy, sxx, sxy, n float64
	for _, r := range rows {
		v := y(r)
		if !(v > 0) {
			continue
		}
		x, l := math.Log(float64(r.N)), math.Log(v)
		sx, sy, sxx, sxy, n = sx+x, sy+l, sxx+x*x, sxy+x*l, n+1
	}
	if n < 2 {
		return math.NaN()
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

func plotCosts(path string, rows []row) error {
	p := plot.New()
	p.Title.Text = "graphloom cost vs corpus size (log–log)"
	p.X.Label.Text = "passages"
	p.Y.Label.Text = "cost (s, MiB, ms)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	var xt []plot.Tick
	for _, r := range rows {
		xt = append(xt, plot.Tick{Value: float64(r.N), Label: strconv.Itoa(r.N)})
	}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.ConstantTicks(xt), plot.LogTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	var args []any
	for _, c := range costs(rows) {
		var pts plotter.XYs
		for _, r := range rows {
			if v := c.get(r); v > 0 {
				pts = append(pts, plotter.XY{X: float64(r.N), Y: v})
			}
		}
		if len(pts) > 0 {
			args = append(args, fmt.Sprintf("%s (b=%.2f)", c.name, slope(rows, c.get)), pts)
		}
	}
	if err := plotutil.AddLinePoints(p, args...); err != nil {
		return err
	}
	return p.Save(7*vg.Inch, 5*vg.Inch, path)
}
