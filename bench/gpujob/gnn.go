package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/train"
)

// The GNN steps use bench/rgcn's and bench/gt's default sizes: the CrossAug scorer
// (384 → 256, 2 layers, 3 relations) on 4 batches of 64 subgraphs of 20–40 nodes, and
// G-Retriever's Graph Transformer (4 layers, 1024 wide, 4 heads) on 4 batches of 8
// subgraphs of 10–20 nodes and 15–25 edges.
const (
	rgcnGraphs, rgcnMinNodes, rgcnMaxNodes, rgcnFeat, rgcnHidden, rgcnRelations = 64, 20, 40, 384, 256, 3
	gtGraphs, gtNodes, gtEdges, gtDim, gtLayers, gtHeads                        = 8, 15, 20, 1024, 4, 4
	numBatches                                                                  = 4
)

// graphJSON is a subgraph's structure as bench/gpu_pyg.py reads it.
type graphJSON struct {
	N        int     `json:"n"`
	Src      []int32 `json:"src"`
	Dst      []int32 `json:"dst"`
	EdgeType []int32 `json:"etype,omitempty"`
	NodeType []int32 `json:"ntype,omitempty"`
	Label    float32 `json:"label"`
}

// rgcnBatches draws bench/rgcn's batches (seed 1; each edge added in both directions).
func rgcnBatches() ([][]*kernels.Graph, [][]float32) {
	rng := rand.New(rand.NewPCG(1, 7))
	var gs [][]*kernels.Graph
	var labels [][]float32
	for range numBatches {
		var batch []*kernels.Graph
		var ls []float32
		for range rgcnGraphs {
			n := rgcnMinNodes + rng.IntN(rgcnMaxNodes-rgcnMinNodes+1)
			g := &kernels.Graph{NumNodes: n, NodeType: make([]int32, n), X: make([]float32, n*rgcnFeat)}
			for i := range g.NodeType {
				g.NodeType[i] = int32(rng.IntN(3))
			}
			for i := range g.X {
				g.X[i] = float32(rng.NormFloat64())
			}
			for range n {
				s, d, r := int32(rng.IntN(n)), int32(rng.IntN(n)), int32(rng.IntN(rgcnRelations))
				g.Src, g.Dst, g.EdgeType = append(g.Src, s, d), append(g.Dst, d, s), append(g.EdgeType, r, r)
			}
			batch = append(batch, g)
			ls = append(ls, float32(rng.IntN(2)))
		}
		gs, labels = append(gs, batch), append(labels, ls)
	}
	return gs, labels
}

// gtBatches draws bench/gt's batches (seed 1).
func gtBatches() [][]*kernels.Graph {
	rng := rand.New(rand.NewPCG(1, 11))
	var out [][]*kernels.Graph
	for range numBatches {
		var gs []*kernels.Graph
		for range gtGraphs {
			n, m := gtNodes-5+rng.IntN(11), gtEdges-5+rng.IntN(11)
			g := &kernels.Graph{NumNodes: n, X: make([]float32, n*gtDim), EdgeAttr: make([]float32, m*gtDim)}
			for range m {
				g.Src, g.Dst = append(g.Src, int32(rng.IntN(n))), append(g.Dst, int32(rng.IntN(n)))
			}
			for i := range g.X {
				g.X[i] = float32(rng.NormFloat64())
			}
			for i := range g.EdgeAttr {
				g.EdgeAttr[i] = float32(rng.NormFloat64())
			}
			gs = append(gs, g)
		}
		out = append(out, gs)
	}
	return out
}

// structures returns the batches' structure for the PyTorch side.
func structures(batches [][]*kernels.Graph, labels [][]float32) [][]graphJSON {
	out := make([][]graphJSON, len(batches))
	for bi, gs := range batches {
		for gi, g := range gs {
			j := graphJSON{N: g.NumNodes, Src: g.Src, Dst: g.Dst, EdgeType: g.EdgeType, NodeType: g.NodeType}
			if labels != nil {
				j.Label = labels[bi][gi]
			}
			out[bi] = append(out[bi], j)
		}
	}
	return out
}

// rgcnBucketer returns bench/rgcn's buckets for a layout (tile 0: gather/scatter).
func rgcnBucketer(tile, slots int) (*kernels.Bucketer, error) {
	spec := kernels.Spec{FeatDim: rgcnFeat, NumRelations: rgcnRelations, NumNodeTypes: 3}
	maxEdges := 2 * rgcnMaxNodes * rgcnGraphs
	if tile > 0 {
		layout := kernels.Layout{TileSize: tile, GraphsPerTile: slots}
		top := kernels.Bucket{Nodes: rgcnGraphs * rgcnMaxNodes * 11 / 10, Edges: maxEdges * 11 / 10}
		buckets, err := kernels.Ladder(top, 1.05, 16, layout)
		if err != nil {
			return nil, err
		}
		return kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Layout: layout, Buckets: buckets})
	}
	top := kernels.Bucket{Nodes: rgcnGraphs * rgcnMaxNodes, Edges: maxEdges, Graphs: rgcnGraphs}
	buckets, err := kernels.Ladder(top, 1.06, 16, kernels.Layout{})
	if err != nil {
		return nil, err
	}
	for i := range buckets {
		buckets[i].Graphs = rgcnGraphs
	}
	return kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Buckets: buckets})
}

// runRGCN times one training step (forward, backward, Adam) of the CrossAug scorer.
func runRGCN(args []string) (map[string]any, error) {
	fs := newFlags("rgcn")
	tile := fs.Int("tile", 64, "tile size (0 = gather/scatter layout)")
	slots := fs.Int("slots", 4, "graph slots per tile")
	steps := fs.Int("steps", 20, "timed steps")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	graphs, labels := rgcnBatches()
	bk, err := rgcnBucketer(*tile, *slots)
	if err != nil {
		return nil, err
	}
	exs := make([]train.Example, len(graphs))
	for i, gs := range graphs {
		b, err := bk.Batch(gs)
		if err != nil {
			return nil, err
		}
		exs[i] = train.Example{Batch: b, Labels: labels[i]}
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	cfg := models.DefaultRGCNConfig(rgcnFeat)
	cfg.Hidden, cfg.HeadHidden, cfg.NumRelations = rgcnHidden, rgcnHidden, rgcnRelations
	m, err := models.NewRGCNClassifier(model.NewStore(), cfg)
	if err != nil {
		return nil, err
	}
	tr, err := train.New(eng, m, train.DefaultConfig())
	if err != nil {
		return nil, err
	}
	loss := 0.0
	tm, compile, err := timeSteps(len(exs)+3, *steps, func(i int) error {
		st, err := tr.Step(exs[i%len(exs)])
		loss = st.Loss
		return err
	})
	if err != nil {
		return nil, err
	}
	layout := "gather/scatter"
	if *tile > 0 {
		layout = fmt.Sprintf("tiled T=%d S=%d", *tile, *slots)
	}
	return map[string]any{"backend": eng.BackendConfig(), "layout": layout, "ms_per_step": tm.median, "ms_min": tm.min,
		"compile_secs": compile, "final_loss": loss, "compilations": eng.Stats().Compilations}, nil
}

// runGT times forward + backward of the Graph Transformer (loss: mean squared readout).
func runGT(args []string) (map[string]any, error) {
	fs := newFlags("gt")
	steps := fs.Int("steps", 10, "timed steps")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	spec := kernels.Spec{FeatDim: gtDim, EdgeDim: gtDim, NumRelations: 1, NumNodeTypes: 1}
	bk, err := kernels.NewBucketer(kernels.BucketerConfig{Spec: spec,
		Buckets: []kernels.Bucket{{Nodes: gtGraphs * (gtNodes + 5), Edges: gtGraphs * (gtEdges + 5), Graphs: gtGraphs}}})
	if err != nil {
		return nil, err
	}
	var batches []*kernels.Batch
	for _, gs := range gtBatches() {
		b, err := bk.Batch(gs)
		if err != nil {
			return nil, err
		}
		batches = append(batches, b)
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	store := model.NewStore()
	cfg := models.DefaultGTConfig()
	cfg.InputDim, cfg.Hidden, cfg.Out, cfg.EdgeDim, cfg.Layers, cfg.Heads = gtDim, gtDim, gtDim, gtDim, gtLayers, gtHeads
	m, err := models.NewGraphTransformer(store, cfg)
	if err != nil {
		return nil, err
	}
	nb := kernels.NumInputs(spec, kernels.Layout{})
	fwdBwd := func(scope *model.Scope, in []*graph.Node) []*graph.Node {
		bn, err := kernels.NewBatchNodes(spec, kernels.Layout{}, in[:nb])
		if err != nil {
			panic(err)
		}
		out := m.Readout(bn, true)
		loss := graph.ReduceAllMean(graph.Mul(graph.Square(out), graph.InsertAxes(bn.GraphMask, -1)))
		return []*graph.Node{loss, train.GlobalNorm(scope.BuildTrainableVariablesGradientsGraph(loss))}
	}
	tm, compile, err := timeSteps(3, *steps, func(i int) error {
		b := batches[i%len(batches)]
		x, err := eng.Exec(engine.Key{Name: "gpujob/gt", Bucket: b.ShapeKey()}, store, fwdBwd)
		if err != nil {
			return err
		}
		in := b.Tensors()
		outs, err := x.Call(in...)
		if err == nil {
			_ = tensors.MustCopyFlatData[float32](outs[0]) // waits for the device
		}
		engine.Finalize(append(in, outs...)...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"backend": eng.BackendConfig(), "ms_per_step": tm.median, "ms_min": tm.min,
		"compile_secs": compile, "compilations": eng.Stats().Compilations}, nil
}
