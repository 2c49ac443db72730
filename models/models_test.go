package models

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/engine/enginetest"
	"github.com/graphloom/graphloom/kernels"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func randomGraphs(rng *rand.Rand, spec kernels.Spec, count int) []*kernels.Graph {
	var gs []*kernels.Graph
	for range count {
		n := 1 + rng.IntN(12)
		g := &kernels.Graph{NumNodes: n, NodeType: make([]int32, n), X: make([]float32, n*spec.FeatDim)}
		for i := range g.NodeType {
			g.NodeType[i] = int32(rng.IntN(spec.NumNodeTypes))
		}
		for i := range g.X {
			g.X[i] = float32(rng.NormFloat64())
		}
		for range 2 * n {
			g.Src = append(g.Src, int32(rng.IntN(n)))
			g.Dst = append(g.Dst, int32(rng.IntN(n)))
			g.EdgeType = append(g.EdgeType, int32(rng.IntN(spec.NumRelations)))
			for range spec.EdgeDim {
				g.EdgeAttr = append(g.EdgeAttr, float32(rng.NormFloat64()))
			}
		}
		gs = append(gs, g)
	}
	return gs
}

// forward runs fn(batch nodes) on b in a fresh executable.
func forward(t *testing.T, e *engine.Engine, store *model.Store, name string, b *kernels.Batch,
	fn func(bn *kernels.BatchNodes) *graph.Node) []float32 {
	t.Helper()
	x, err := e.Exec(engine.Key{Name: name, Bucket: b.ShapeKey()}, store, func(_ *model.Scope, in []*graph.Node) []*graph.Node {
		bn, err := kernels.NewBatchNodes(b.Spec, b.Layout, in)
		require.NoError(t, err)
		return []*graph.Node{fn(bn)}
	})
	require.NoError(t, err)
	outs, err := x.Call(b.Tensors()...)
	require.NoError(t, err)
	return tensors.MustCopyFlatData[float32](outs[0])
}

func values(t *testing.T, v *model.Variable) []float64 {
	t.Helper()
	f := tensors.MustCopyFlatData[float32](v.MustValue())
	out := make([]float64, len(f))
	for i, x := range f {
		out[i] = float64(x)
	}
	return out
}

func matrix(flat []float64, rows, cols int) [][]float64 {
	m := make([][]float64, rows)
	for i := range m {
		m[i] = flat[i*cols : (i+1)*cols]
	}
	return m
}

// rgcnReference recomputes RGCNClassifier's logit for one graph in float64 from the
// kernel references and the model's weights (evaluation mode).
func rgcnReference(t *testing.T, m *RGCNClassifier, g *kernels.Graph) float64 {
	cfg := m.Config()
	h := make([][]float64, g.NumNodes)
	win, bin := values(t, m.inProj.W), values(t, m.inProj.B)
	emb := values(t, m.types.Table)
	for i := range h {
		h[i] = make([]float64, cfg.Hidden)
		for o := range cfg.Hidden {
			s := bin[o] + emb[int(g.NodeType[i])*cfg.Hidden+o]
			for f := range cfg.InputDim {
				s += float64(g.X[i*cfg.InputDim+f]) * win[f*cfg.Hidden+o]
			}
			h[i][o] = s
		}
	}
	for l, conv := range m.convs {
		rel := values(t, conv.Rel)
		w := kernels.RGCNRef{Root: matrix(values(t, conv.Root), cfg.Hidden, cfg.Hidden), Bias: values(t, conv.Bias)}
		for r := range cfg.NumRelations {
			w.Rel = append(w.Rel, matrix(rel[r*cfg.Hidden*cfg.Hidden:(r+1)*cfg.Hidden*cfg.Hidden], cfg.Hidden, cfg.Hidden))
		}
		h = kernels.RGCNConvRef(g, h, w, cfg.NumRelations)
		for i := range h {
			for o := range h[i] {
				h[i][o] = kernels.GELURef(h[i][o])
			}
		}
		h = kernels.LayerNormRef(h, values(t, m.norms[l].Gamma), values(t, m.norms[l].Beta), 1e-5)
	}
	seg := make([]int, g.NumNodes)
	pooled := append(kernels.SegmentMeanRef(h, seg, nil, 1)[0], kernels.SegmentMaxRef(h, seg, nil, 1)[0]...)
	w1, b1 := values(t, m.head1.W), values(t, m.head1.B)
	w2, b2 := values(t, m.head2.W), values(t, m.head2.B)
	logit := b2[0]
	for o := range cfg.HeadHidden {
		z := b1[o]
		for i, p := range pooled {
			z += p * w1[i*cfg.HeadHidden+o]
		}
		logit += kernels.GELURef(z) * w2[o]
	}
	return logit
}

func TestRGCNClassifierMatchesReference(t *testing.T) {
	e := enginetest.New(t)
	spec := kernels.Spec{FeatDim: 6, NumRelations: 3, NumNodeTypes: 3}
	cfg := RGCNConfig{InputDim: 6, Hidden: 8, Layers: 2, NumRelations: 3, NumNodeTypes: 3, Dropout: 0.1, HeadHidden: 5, Seed: 9}
	store := model.NewStore()
	m, err := NewRGCNClassifier(store, cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, 2))
	graphs := randomGraphs(rng, spec, 7)
	for _, layout := range []kernels.Layout{{}, {TileSize: 16, GraphsPerTile: 3}} {
		bucket := kernels.Bucket{Nodes: 160, Edges: 256, Graphs: 8}
		if layout.Tiled() {
			bucket.Graphs = 0
		}
		bk, err := kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Layout: layout, Buckets: []kernels.Bucket{bucket}})
		require.NoError(t, err)
		b, err := bk.Batch(graphs)
		require.NoError(t, err)
		slots := forward(t, e, store, "rgcn", b, func(bn *kernels.BatchNodes) *graph.Node { return m.Logits(bn, false) })
		got, err := b.PerGraph(slots, 1)
		require.NoError(t, err)
		for gi, g := range graphs {
			want := rgcnReference(t, m, g)
			assert.InDelta(t, want, got[gi], 1e-4*math.Max(1, math.Abs(want)), "layout %+v graph %d", layout, gi)
		}
	}
}

func TestParamsDeterministic(t *testing.T) {
	cfg := DefaultRGCNConfig(12)
	cfg.Hidden, cfg.HeadHidden = 8, 8
	a, err := NewRGCNClassifier(model.NewStore(), cfg)
	require.NoError(t, err)
	b, err := NewRGCNClassifier(model.NewStore(), cfg)
	require.NoError(t, err)
	cfg.Seed++
	c, err := NewRGCNClassifier(model.NewStore(), cfg)
	require.NoError(t, err)
	require.Equal(t, len(a.Variables()), len(b.Variables()))
	differs := false
	for i, v := range a.Variables() {
		assert.Equal(t, v.Path(), b.Variables()[i].Path())
		assert.Equal(t, values(t, v), values(t, b.Variables()[i]), v.Path())
		if !assert.ObjectsAreEqual(values(t, v), values(t, c.Variables()[i])) {
			differs = true
		}
	}
	assert.True(t, differs, "another seed gives other weights")
}

func TestConfigErrors(t *testing.T) {
	store := model.NewStore()
	_, err := NewRGCNClassifier(store, RGCNConfig{})
	assert.Error(t, err)
	good := DefaultRGCNConfig(4)
	_, err = NewRGCNClassifier(store, good)
	require.NoError(t, err)
	_, err = NewRGCNClassifier(store, good)
	assert.Error(t, err, "a second model in the same store")
	bad := DefaultGTConfig()
	bad.Hidden = 1023
	_, err = NewGraphTransformer(model.NewStore(), bad)
	assert.Error(t, err, "hidden not divisible by heads")
}

// TestGraphTransformer checks that evaluation-mode readouts of a graph do not depend on
// the other graphs of the batch, that a training pass updates the BatchNorm running
// statistics, and that a checkpoint round trip restores identical readouts.
func TestGraphTransformer(t *testing.T) {
	e := enginetest.New(t)
	spec := kernels.Spec{FeatDim: 8, EdgeDim: 8, NumRelations: 1, NumNodeTypes: 1}
	cfg := GTConfig{InputDim: 8, Hidden: 8, Out: 4, Layers: 3, Heads: 2, EdgeDim: 8, Dropout: 0.1, Seed: 5}
	store := model.NewStore()
	m, err := NewGraphTransformer(store, cfg)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(3, 4))
	graphs := randomGraphs(rng, spec, 5)
	bk, err := kernels.NewBucketer(kernels.BucketerConfig{Spec: spec,
		Buckets: []kernels.Bucket{{Nodes: 16, Edges: 32, Graphs: 1}, {Nodes: 96, Edges: 160, Graphs: 6}}})
	require.NoError(t, err)
	batch, err := bk.Batch(graphs)
	require.NoError(t, err)
	readout := func(name string, s *model.Store, mm *GraphTransformer, b *kernels.Batch) []float32 {
		slots := forward(t, e, s, name, b, func(bn *kernels.BatchNodes) *graph.Node { return mm.Readout(bn, false) })
		out, err := b.PerGraph(slots, cfg.Out)
		require.NoError(t, err)
		return out
	}
	all := readout("gt_eval", store, m, batch)
	alone, err := bk.Batch(graphs[2:3])
	require.NoError(t, err)
	single := readout("gt_eval", store, m, alone)
	for o := range cfg.Out {
		assert.InDelta(t, all[2*cfg.Out+o], single[o], 1e-5)
	}

	before := values(t, m.norms[0].Mean)
	forward(t, e, store, "gt_train", batch, func(bn *kernels.BatchNodes) *graph.Node { return m.Readout(bn, true) })
	assert.NotEqual(t, before, values(t, m.norms[0].Mean), "training updates running statistics")

	// A checkpoint round trip reads out the same; the checkpoint's path is returned.
	roundTrip := func(name string, s *model.Store, mm *GraphTransformer) string {
		path := filepath.Join(t.TempDir(), name+".ckpt")
		require.NoError(t, Save(path, mm, nil))
		s2 := model.NewStore()
		m2, _, err := LoadGraphTransformer(path, s2)
		require.NoError(t, err)
		assert.Equal(t, readout(name+"_eval", s, mm, batch), readout(name+"_reloaded", s2, m2, batch))
		return path
	}
	path := roundTrip("gt", store, m)
	_, _, err = LoadRGCNClassifier(path, model.NewStore())
	assert.Error(t, err, "kind mismatch")

	// One layer: every variable lies under /gt/conv0/, which the checkpoint's names
	// leave out.
	one := cfg
	one.Layers = 1
	store1 := model.NewStore()
	m1, err := NewGraphTransformer(store1, one)
	require.NoError(t, err)
	roundTrip("gt1", store1, m1)
}

// TestRGCNFewerBatchRelations checks that a batch declaring fewer relations than the
// model (its edges use only the first ones) gives the full model's logits, and that a
// batch declaring more is rejected.
func TestRGCNFewerBatchRelations(t *testing.T) {
	e := enginetest.New(t)
	cfg := RGCNConfig{InputDim: 6, Hidden: 8, Layers: 2, NumRelations: 3, NumNodeTypes: 3, HeadHidden: 5, Seed: 4}
	store := model.NewStore()
	m, err := NewRGCNClassifier(store, cfg)
	require.NoError(t, err)
	two := kernels.Spec{FeatDim: 6, NumRelations: 2, NumNodeTypes: 3}
	graphs := randomGraphs(rand.New(rand.NewPCG(7, 8)), two, 6)
	logits := func(spec kernels.Spec, layout kernels.Layout) []float32 {
		bucket := kernels.Bucket{Nodes: 96, Edges: 256, Graphs: 8}
		if layout.Tiled() {
			bucket.Graphs = 0
		}
		bk, err := kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Layout: layout, Buckets: []kernels.Bucket{bucket}})
		require.NoError(t, err)
		b, err := bk.Batch(graphs)
		require.NoError(t, err)
		require.NoError(t, m.CheckBatch(spec))
		slots := forward(t, e, store, "rgcn-rel", b, func(bn *kernels.BatchNodes) *graph.Node { return m.Logits(bn, false) })
		out, err := b.PerGraph(slots, 1)
		require.NoError(t, err)
		return out
	}
	three := two
	three.NumRelations = 3
	for _, layout := range []kernels.Layout{{}, {TileSize: 16, GraphsPerTile: 4}} {
		want, got := logits(three, layout), logits(two, layout)
		for i := range want {
			assert.InDelta(t, want[i], got[i], 1e-5, "layout %+v graph %d", layout, i)
		}
	}
	four := two
	four.NumRelations = 4
	assert.Error(t, m.CheckBatch(four))
}

// TestGraphTransformerSeed004MatchesReference checks seed 004's encoder profile
// (8 heads, residual connections, LayerNorm after every layer, ReLU between layers)
// against a float64 reference built from PyG's TransformerConv in evaluation mode.
func TestGraphTransformerSeed004MatchesReference(t *testing.T) {
	e := enginetest.New(t)
	cfg, err := GTProfile(GTProfileSeed004, 16)
	require.NoError(t, err)
	cfg.Layers, cfg.Seed = 3, 11
	require.Equal(t, 8, cfg.Heads)
	store := model.NewStore()
	m, err := NewGraphTransformer(store, cfg)
	require.NoError(t, err)
	spec := kernels.Spec{FeatDim: 16, EdgeDim: 16, NumRelations: 1, NumNodeTypes: 1}
	rng := rand.New(rand.NewPCG(5, 6))
	graphs := randomGraphs(rng, spec, 4)
	for _, g := range graphs {
		g.EdgeAttr = make([]float32, len(g.Src)*16)
		for i := range g.EdgeAttr {
			g.EdgeAttr[i] = float32(rng.NormFloat64())
		}
	}
	bk, err := kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Buckets: []kernels.Bucket{{Nodes: 64, Edges: 128, Graphs: 4}}})
	require.NoError(t, err)
	b, err := bk.Batch(graphs)
	require.NoError(t, err)
	slots := forward(t, e, store, "gt_seed004", b, func(bn *kernels.BatchNodes) *graph.Node { return m.Readout(bn, false) })
	got, err := b.PerGraph(slots, cfg.Out)
	require.NoError(t, err)
	lin := func(l *Linear, in, out int) ([][]float64, []float64) {
		if l == nil {
			return nil, nil
		}
		var bias []float64
		if l.B != nil {
			bias = values(t, l.B)
		}
		return matrix(values(t, l.W), in, out), bias
	}
	for gi, g := range graphs {
		h := make([][]float64, g.NumNodes)
		for i := range h {
			h[i] = make([]float64, 16)
			for j := range h[i] {
				h[i][j] = float64(g.X[i*16+j])
			}
		}
		for l, conv := range m.convs {
			var w kernels.TransformerRef
			w.Query, w.QueryBias = lin(conv.Query, 16, 16)
			w.Key, w.KeyBias = lin(conv.Key, 16, 16)
			w.Value, w.ValueBias = lin(conv.Value, 16, 16)
			w.Edge, _ = lin(conv.Edge, 16, 16)
			w.Skip, w.SkipBias = lin(conv.Skip, 16, 16)
			y := kernels.TransformerConvRef(g, h, w, cfg.Heads, true, 16)
			for i := range y {
				for j := range y[i] {
					y[i][j] += h[i][j] // residual
				}
			}
			h = kernels.LayerNormRef(y, values(t, m.lns[l].Gamma), values(t, m.lns[l].Beta), 1e-5)
			if l < len(m.convs)-1 {
				for i := range h {
					for j := range h[i] {
						h[i][j] = max(h[i][j], 0)
					}
				}
			}
		}
		for o := range cfg.Out {
			mean := 0.0
			for i := range h {
				mean += h[i][o] / float64(len(h))
			}
			assert.InDelta(t, mean, got[gi*cfg.Out+o], 1e-4, "graph %d output %d", gi, o)
		}
	}
	_, err = GTProfile("gat", 16)
	require.ErrorContains(t, err, `encoder profile "gat"`)
}
