package main

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/gomlx/compute/dtypes"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
)

// pprGraph is the PPR step's input: an undirected weighted graph (a ring, so no node
// is isolated, plus random edges without self-loops) and sparse reset vectors
// (HippoRAG 2-like: a few seeds with scores). bench/gpu_ppr.py reads the same file.
type pprGraph struct {
	N       int       `json:"n"`
	Damping float64   `json:"damping"`
	Tol     float64   `json:"tol"`
	U       []int32   `json:"u"`
	V       []int32   `json:"v"`
	W       []float32 `json:"w"`
	Resets  []struct {
		Idx []int32   `json:"idx"`
		Val []float32 `json:"val"`
	} `json:"resets"`
}

// makePPRGraph draws n nodes, n ring edges + m random edges, batch resets (seed 1).
func makePPRGraph(n, m, batch int) *pprGraph {
	rng := rand.New(rand.NewPCG(1, 0x9e3779b97f4a7c15))
	g := &pprGraph{N: n, Damping: 0.5, Tol: kernels.PPRGoMLXMinTolFloat32}
	add := func(u, v int) {
		g.U, g.V = append(g.U, int32(u)), append(g.V, int32(v))
		g.W = append(g.W, float32(0.1+1.9*rng.Float64()))
	}
	for u := range n {
		add(u, (u+1)%n)
	}
	for range m {
		u, v := rng.IntN(n), rng.IntN(n-1)
		if v >= u {
			v++
		}
		add(u, v)
	}
	g.Resets = make([]struct {
		Idx []int32   `json:"idx"`
		Val []float32 `json:"val"`
	}, batch)
	for q := range g.Resets {
		r := &g.Resets[q]
		for k := range 55 {
			w := 0.05 * rng.Float64()
			if k < 5 {
				w = 0.5 + rng.Float64()
			}
			r.Idx, r.Val = append(r.Idx, int32(rng.IntN(n))), append(r.Val, float32(w))
		}
	}
	return g
}

func writePPRGraph(path string, g *pprGraph) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	if err := json.NewEncoder(zw).Encode(g); err != nil {
		_ = f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func readPPRGraph(path string) (*pprGraph, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var g pprGraph
	if err := json.NewDecoder(zr).Decode(&g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(g.U) != len(g.V) || len(g.U) != len(g.W) || g.N < 1 || len(g.Resets) == 0 {
		return nil, fmt.Errorf("%s: inconsistent graph (n %d, %d/%d/%d edge arrays, %d resets)", path, g.N, len(g.U), len(g.V), len(g.W), len(g.Resets))
	}
	return &g, nil
}

// csr builds the symmetric CSR and the dense reset vectors.
func (g *pprGraph) csr() (*kernels.CSR, [][]float64, error) {
	edges := make([]kernels.Edge, len(g.U))
	for i := range edges {
		edges[i] = kernels.Edge{U: g.U[i], V: g.V[i], Weight: g.W[i]}
	}
	csr, err := kernels.NewSymmetricCSR(g.N, edges)
	if err != nil {
		return nil, nil, err
	}
	resets := make([][]float64, len(g.Resets))
	for q, r := range g.Resets {
		resets[q] = make([]float64, g.N)
		for k, i := range r.Idx {
			if int(i) < 0 || int(i) >= g.N {
				return nil, nil, fmt.Errorf("reset %d: node %d out of range", q, i)
			}
			resets[q][i] += float64(r.Val[k])
		}
	}
	return csr, resets, nil
}

// runPPR times the batched PPR of kernels.PPRGoMLX (power iteration, float32) and
// writes the scores, float32 little-endian [batch][n], to -out.
func runPPR(args []string) (map[string]any, error) {
	fs := newFlags("ppr")
	path := fs.String("graph", "", "graph file (gpujob inputs: ppr_graph.json.gz)")
	out := fs.String("out", "", "write the scores here")
	reps := fs.Int("reps", 5, "timed batches")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *path == "" {
		return nil, errors.New("need -graph FILE")
	}
	g, err := readPPRGraph(*path)
	if err != nil {
		return nil, err
	}
	csr, resets, err := g.csr()
	if err != nil {
		return nil, err
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	p, err := kernels.NewPPRGoMLX(eng.Backend(), csr, kernels.PPRConfig{Damping: g.Damping, Tol: g.Tol, Method: kernels.PPRPower}, dtypes.Float32)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	var scores [][]float64
	var st kernels.PPRStats
	tm, compile, err := timeSteps(1, *reps, func(int) error {
		scores, st, err = p.SolveBatch(resets)
		return err
	})
	if err != nil {
		return nil, err
	}
	// Check against the plain-Go solver (float64), the CPU reference.
	want, _, err := kernels.PPRBatch(csr, resets, kernels.PPRConfig{Damping: g.Damping, Tol: 1e-10})
	if err != nil {
		return nil, err
	}
	maxDiff := 0.0
	for q := range want {
		for i := range want[q] {
			maxDiff = math.Max(maxDiff, math.Abs(want[q][i]-scores[q][i]))
		}
	}
	if *out != "" {
		if err := writeScores(*out, scores); err != nil {
			return nil, err
		}
	}
	return map[string]any{"backend": eng.BackendConfig(), "n": g.N, "edges": len(g.U), "batch": len(resets),
		"ms_per_batch": tm.median, "ms_per_query": tm.median / float64(len(resets)), "ms_min": tm.min,
		"compile_secs": compile, "iterations": st.Iterations, "max_abs_diff_vs_cpu": maxDiff}, nil
}

func writeScores(path string, scores [][]float64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	buf := make([]byte, 4)
	for _, row := range scores {
		for _, v := range row {
			binary.LittleEndian.PutUint32(buf, math.Float32bits(float32(v)))
			_, _ = w.Write(buf)
		}
	}
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
