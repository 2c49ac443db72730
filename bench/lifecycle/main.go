// Command lifecycle measures the index lifecycle against a full build (issue 45): per
// corpus size N (the base corpus replicated with renamed names, as bench/scale does) it
// indexes N passages offline, then adds 1 % more documents (`index --add`) to a copy and
// deletes 1 % of the documents (`delete --ids`) from another, each a separate process
// timed wall-clock with its peak RSS. It prints each change's time as a share of the
// full build's and its peak RSS against the full build's, and the acceptance figures
// (add ≤ 10 %, delete ≤ 5 %, peak memory ≤ the full build's).
//
// Usage:
//
//	go run ./bench/lifecycle -corpus ../shared/data/corpora/2wikimultihopqa_corpus.json \
//	    -bin bin/graphloom -sizes 6000,30000 -out out/bench/lifecycle
package main

import (
	"flag"
	"fmt"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/graphloom/graphloom/bench/internal/scalecorpus"
	"github.com/graphloom/graphloom/graphio"
)

func main() {
	corpus := flag.String("corpus", "", "base corpus: a JSON array of {title, text}")
	bin := flag.String("bin", "bin/graphloom", "graphloom binary")
	sizes := flag.String("sizes", "6000,30000", "comma-separated passage counts")
	share := flag.Float64("share", 0.01, "share of N added and deleted")
	out := flag.String("out", "out/bench/lifecycle", "output directory")
	flag.BoolVar(&keep, "keep", false, "keep the corpora and indexes in -out (for profiling)")
	flag.Parse()
	var ns []int
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 100 {
			fmt.Fprintf(os.Stderr, "bench/lifecycle: bad size %q (at least 100)\n", f)
			os.Exit(2)
		}
		ns = append(ns, n)
	}
	if *share <= 0 || *share >= 1 {
		fmt.Fprintln(os.Stderr, "bench/lifecycle: -share must lie in (0, 1)")
		os.Exit(2)
	}
	if err := run(*corpus, *bin, *out, ns, *share); err != nil {
		fmt.Fprintln(os.Stderr, "bench/lifecycle:", err)
		os.Exit(1)
	}
}

// keep leaves the corpora and indexes in the output directory.
var keep bool

// remove deletes a file unless -keep.
func remove(path string) {
	if !keep {
		os.Remove(path)
	}
}

// row is one corpus size's measurements: wall seconds and peak RSS (MiB) of each
// process.
type row struct {
	N, Changed           int
	FullSec, FullRSS     float64
	AddSec, AddRSS       float64
	DeleteSec, DeleteRSS float64
	FullMiB, AfterAddMiB float64
}

func run(corpusPath, bin, out string, ns []int, share float64) error {
	if corpusPath == "" {
		return fmt.Errorf("-corpus is required")
	}
	base, err := scalecorpus.Load(corpusPath)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	fmt.Printf("base corpus %s: %d passages; sizes %v; add and delete %.1f %% of N\n\n", filepath.Base(corpusPath), len(base), ns, 100*share)
	var rows []row
	for _, n := range ns {
		r, err := measureSize(base, bin, out, n, share)
		if err != nil {
			return fmt.Errorf("N=%d: %w", n, err)
		}
		fmt.Printf("N=%d: full build %.1fs (peak %.0f MiB); add %d: %.1fs (%.0f MiB); delete %d: %.1fs (%.0f MiB)\n",
			r.N, r.FullSec, r.FullRSS, r.Changed, r.AddSec, r.AddRSS, r.Changed, r.DeleteSec, r.DeleteRSS)
		rows = append(rows, r)
	}
	report(os.Stdout, rows)
	return nil
}

func measureSize(base []scalecorpus.Passage, bin, out string, n int, share float64) (row, error) {
	k := max(1, int(float64(n)*share+0.5))
	r := row{N: n, Changed: k}
	ps := scalecorpus.Synthesise(base, n+k)
	full, extra := filepath.Join(out, fmt.Sprintf("corpus_%d.json", n)), filepath.Join(out, fmt.Sprintf("add_%d.json", n))
	if err := scalecorpus.WriteJSON(full, ps[:n]); err != nil {
		return r, err
	}
	defer remove(full)
	if err := scalecorpus.WriteJSON(extra, ps[n:]); err != nil {
		return r, err
	}
	defer remove(extra)
	// k distinct documents of the N, drawn at random (seed 1).
	ids := filepath.Join(out, fmt.Sprintf("delete_%d.txt", n))
	seen := map[string]bool{}
	var lines []string
	rng := rand.New(rand.NewSource(1))
	for _, i := range rng.Perm(n) {
		if len(lines) == k {
			break
		}
		id := graphio.DocumentID(ps[i].Title, ps[i].Text)
		if !seen[id] {
			seen[id] = true
			lines = append(lines, id)
		}
	}
	if err := os.WriteFile(ids, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return r, err
	}
	defer remove(ids)

	ix := filepath.Join(out, fmt.Sprintf("full_%d.gl", n))
	os.Remove(ix)
	var err error
	if r.FullSec, r.FullRSS, err = scalecorpus.Measure(bin, "index", "--quiet", "--corpus", full, "--out", ix); err != nil {
		return r, fmt.Errorf("index: %w", err)
	}
	defer remove(ix)
	r.FullMiB = fileMiB(ix)
	added, deleted := filepath.Join(out, fmt.Sprintf("added_%d.gl", n)), filepath.Join(out, fmt.Sprintf("deleted_%d.gl", n))
	for _, p := range []string{added, deleted} {
		if err := copyFile(ix, p); err != nil {
			return r, err
		}
	}
	defer remove(deleted)
	defer remove(added)
	if r.AddSec, r.AddRSS, err = scalecorpus.Measure(bin, "index", "--quiet", "--add", extra, "--index", added); err != nil {
		return r, fmt.Errorf("index --add: %w", err)
	}
	r.AfterAddMiB = fileMiB(added)
	if r.DeleteSec, r.DeleteRSS, err = scalecorpus.Measure(bin, "delete", "--quiet", "--ids", ids, "--index", deleted); err != nil {
		return r, fmt.Errorf("delete: %w", err)
	}
	return r, nil
}

// report prints the table and the acceptance checks of issue 45.
func report(w io.Writer, rows []row) {
	fmt.Fprintf(w, "\n%8s %6s %9s %9s %8s %9s %7s %8s %9s %7s %8s\n", "N", "1%", "full s", "full MiB", "add s", "add MiB", "add/full", "del s", "del MiB", "del/full", "idx MiB")
	for _, r := range rows {
		fmt.Fprintf(w, "%8d %6d %9.1f %9.0f %8.2f %9.0f %6.1f%% %8.2f %9.0f %6.1f%% %8.1f\n", r.N, r.Changed, r.FullSec, r.FullRSS,
			r.AddSec, r.AddRSS, 100*r.AddSec/r.FullSec, r.DeleteSec, r.DeleteRSS, 100*r.DeleteSec/r.FullSec, r.FullMiB)
	}
	fmt.Fprintln(w, "\nacceptance (issue 45, at 30K passages): add 1 % ≤ 10 % of the full build, delete 1 % ≤ 5 %, peak RSS ≤ the full build's")
	for _, r := range rows {
		verdict := func(ok bool) string {
			if ok {
				return "met"
			}
			return "NOT met"
		}
		fmt.Fprintf(w, "  N=%d: add %.1f%% (%s), delete %.1f%% (%s), add RSS %.2f× (%s), delete RSS %.2f× (%s)\n", r.N,
			100*r.AddSec/r.FullSec, verdict(r.AddSec <= 0.10*r.FullSec), 100*r.DeleteSec/r.FullSec, verdict(r.DeleteSec <= 0.05*r.FullSec),
			r.AddRSS/r.FullRSS, verdict(r.AddRSS <= r.FullRSS), r.DeleteRSS/r.FullRSS, verdict(r.DeleteRSS <= r.FullRSS))
	}
}

func fileMiB(path string) float64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return float64(st.Size()) / (1 << 20)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	o, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(o, in); err != nil {
		o.Close()
		return err
	}
	return o.Close()
}
