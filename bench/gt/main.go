// Command gt benchmarks forward + backward of the G-Retriever-sized Graph Transformer
// encoder (4 TransformerConv layers, hidden 1024, 4 heads, 1024-d edge features,
// BatchNorm + ReLU between layers, mean readout) on batches of 8 subgraphs of about 15
// nodes and 20 edges. The PyTorch twin is bench/gt_torch.py; run both via bench/rgcn.sh.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
)

func main() {
	graphs := flag.Int("graphs", 8, "subgraphs per batch")
	nodes := flag.Int("nodes", 15, "mean nodes per subgraph (uniform in ±5)")
	edges := flag.Int("edges", 20, "mean directed edges per subgraph (uniform in ±5)")
	dim := flag.Int("dim", 1024, "node/edge feature width and hidden width")
	layers := flag.Int("layers", 4, "TransformerConv layers")
	heads := flag.Int("heads", 4, "attention heads")
	batches := flag.Int("batches", 4, "distinct batches cycled through")
	warmup := flag.Int("warmup", 2, "untimed steps after compiling")
	steps := flag.Int("steps", 10, "timed steps")
	seed := flag.Uint64("seed", 1, "random seed")
	dump := flag.String("dump", "", "write the batches' graph structure as JSON to this file")
	backend := flag.String("backend", "", "backend (default $GOMLX_BACKEND or go)")
	jsonOut := flag.String("json", "", "write the result as JSON to this file")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the timed steps to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}
	err := run(*graphs, *nodes, *edges, *dim, *layers, *heads, *batches, *warmup, *steps, *seed, *dump, *backend, *jsonOut)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gt:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

type graphJSON struct {
	N   int     `json:"n"`
	Src []int32 `json:"src"`
	Dst []int32 `json:"dst"`
}

func run(numGraphs, nodes, edges, dim, layers, heads, numBatches, warmup, steps int, seed uint64, dump, backend, jsonOut string) error {
	rng := rand.New(rand.NewPCG(seed, 11))
	spec := kernels.Spec{FeatDim: dim, EdgeDim: dim, NumRelations: 1, NumNodeTypes: 1}
	maxN, maxE := nodes+5, edges+5
	bk, err := kernels.NewBucketer(kernels.BucketerConfig{Spec: spec,
		Buckets: []kernels.Bucket{{Nodes: numGraphs * maxN, Edges: numGraphs * maxE, Graphs: numGraphs}}})
	if err != nil {
		return err
	}
	var batches []*kernels.Batch
	var structure [][]graphJSON
	realNodes, realEdges := 0.0, 0.0
	for range numBatches {
		var gs []*kernels.Graph
		var sj []graphJSON
		for range numGraphs {
			n := nodes - 5 + rng.IntN(11)
			m := edges - 5 + rng.IntN(11)
			g := &kernels.Graph{NumNodes: n, X: make([]float32, n*dim), EdgeAttr: make([]float32, m*dim)}
			for range m {
				g.Src = append(g.Src, int32(rng.IntN(n)))
				g.Dst = append(g.Dst, int32(rng.IntN(n)))
			}
			for i := range g.X {
				g.X[i] = float32(rng.NormFloat64())
			}
			for i := range g.EdgeAttr {
				g.EdgeAttr[i] = float32(rng.NormFloat64())
			}
			gs = append(gs, g)
			sj = append(sj, graphJSON{N: n, Src: g.Src, Dst: g.Dst})
		}
		b, err := bk.Batch(gs)
		if err != nil {
			return err
		}
		realNodes += float64(b.NumNodes) / float64(numBatches)
		realEdges += float64(b.NumEdges) / float64(numBatches)
		batches = append(batches, b)
		structure = append(structure, sj)
	}
	if dump != "" {
		data, err := json.Marshal(map[string]any{"dim": dim, "layers": layers, "heads": heads, "batches": structure})
		if err != nil {
			return err
		}
		if err := os.WriteFile(dump, data, 0o644); err != nil {
			return err
		}
	}

	eng, err := engine.New(engine.Config{Backend: backend})
	if err != nil {
		return err
	}
	defer eng.Close()
	store := model.NewStore()
	cfg := models.DefaultGTConfig()
	cfg.InputDim, cfg.Hidden, cfg.Out, cfg.EdgeDim, cfg.Layers, cfg.Heads = dim, dim, dim, dim, layers, heads
	m, err := models.NewGraphTransformer(store, cfg)
	if err != nil {
		return err
	}
	params := 0
	for _, v := range m.Variables() {
		if v.Trainable {
			params += v.Shape().Size()
		}
	}
	// Forward + backward: loss = mean squared readout; outputs the loss and the global
	// gradient norm so that every gradient is computed.
	nb := kernels.NumInputs(spec, kernels.Layout{})
	fwdBwd := func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		bn, err := kernels.NewBatchNodes(spec, kernels.Layout{}, in[:nb])
		if err != nil {
			panic(err)
		}
		out := m.Readout(bn, true)
		loss := graph.ReduceAllMean(graph.Mul(graph.Square(out), graph.InsertAxes(bn.GraphMask, -1)))
		grads := scope.BuildTrainableVariablesGradientsGraph(loss)
		return []*graph.Node{loss, train.GlobalNorm(grads)}
	}
	step := func(i int) error {
		b := batches[i%len(batches)]
		x, err := eng.Exec(engine.Key{Name: "gt/fwd_bwd", Bucket: b.ShapeKey()}, store, fwdBwd)
		if err != nil {
			return err
		}
		in := b.Tensors()
		outs, err := x.Call(in...)
		if err == nil {
			// Reading the loss waits for the computation (asynchronous on accelerators).
			_ = tensors.MustCopyFlatData[float32](outs[0])
		}
		for _, t := range append(in, outs...) {
			_ = t.FinalizeAll()
		}
		return err
	}
	t0 := time.Now()
	for i := range warmup + 1 {
		if err := step(i); err != nil {
			return err
		}
	}
	compile := time.Since(t0).Seconds()
	times := make([]float64, steps)
	for i := range steps {
		t := time.Now()
		if err := step(i); err != nil {
			return err
		}
		times[i] = float64(time.Since(t).Microseconds()) / 1000
	}
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	res := map[string]any{
		"backend": eng.BackendConfig(), "ms_per_step": sorted[len(sorted)/2], "ms_min": sorted[0],
		"real_nodes": realNodes, "real_edges": realEdges, "params": params, "compile_secs": compile,
		"compilations": eng.Stats().Compilations,
	}
	fmt.Printf("graphloom %-10s GT fwd+bwd %8.1f ms/step (min %.1f)  nodes %.0f, edges %.0f, params %d\n",
		eng.BackendConfig(), sorted[len(sorted)/2], sorted[0], realNodes, realEdges, params)
	if jsonOut != "" {
		data, err := json.Marshal(res)
		if err != nil {
			return err
		}
		return os.WriteFile(jsonOut, data, 0o644)
	}
	return nil
}
