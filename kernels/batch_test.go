package kernels

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var testSpec = Spec{FeatDim: 3, EdgeDim: 2, NumRelations: 3, NumNodeTypes: 2}

func TestSpecAndLayoutValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   Spec
		layout Layout
		ok     bool
	}{
		{"ok sequential", testSpec, Layout{}, true},
		{"ok tiled", testSpec, Layout{TileSize: 8, GraphsPerTile: 2}, true},
		{"no features", Spec{FeatDim: 0, NumRelations: 1, NumNodeTypes: 1}, Layout{}, false},
		{"no relations", Spec{FeatDim: 1, NumNodeTypes: 1}, Layout{}, false},
		{"slots without tiles", testSpec, Layout{GraphsPerTile: 2}, false},
		{"too many slots", testSpec, Layout{TileSize: 4, GraphsPerTile: 5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewBucketer(BucketerConfig{Spec: tc.spec, Layout: tc.layout, Buckets: []Bucket{{Nodes: 16, Edges: 16, Graphs: 4}}})
			if tc.layout.Tiled() && tc.ok {
				// Tiled buckets derive Graphs; 16/8×2 = 4 matches.
				require.NoError(t, err)
				return
			}
			assert.Equal(t, tc.ok, err == nil, "err=%v", err)
		})
	}
}

func TestGraphValidate(t *testing.T) {
	base := func() *Graph {
		return &Graph{NumNodes: 2, Src: []int32{0}, Dst: []int32{1}, EdgeType: []int32{2}, NodeType: []int32{0, 1},
			X: make([]float32, 6), EdgeAttr: make([]float32, 2)}
	}
	for _, tc := range []struct {
		name   string
		mutate func(g *Graph)
	}{
		{"edge out of range", func(g *Graph) { g.Dst[0] = 2 }},
		{"negative source", func(g *Graph) { g.Src[0] = -1 }},
		{"relation out of range", func(g *Graph) { g.EdgeType[0] = 3 }},
		{"node type out of range", func(g *Graph) { g.NodeType[1] = 2 }},
		{"short features", func(g *Graph) { g.X = g.X[:5] }},
		{"mismatched edges", func(g *Graph) { g.Dst = append(g.Dst, 0) }},
		{"missing edge attrs", func(g *Graph) { g.EdgeAttr = nil }},
		{"NaN feature", func(g *Graph) { g.X[0] = float32(nan()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := base()
			require.NoError(t, g.Validate(testSpec))
			tc.mutate(g)
			assert.Error(t, g.Validate(testSpec))
		})
	}
}

func nan() float64 { var z float64; return z / z }

func TestBatchLayouts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	graphs := []*Graph{
		randomGraph(rng, testSpec, 7, 9), randomGraph(rng, testSpec, 3, 2), randomGraph(rng, testSpec, 8, 12),
		{NumNodes: 0}, randomGraph(rng, testSpec, 1, 0), randomGraph(rng, testSpec, 5, 6),
	}
	for _, tc := range []struct {
		name   string
		layout Layout
		bucket Bucket
	}{
		{"sequential", Layout{}, Bucket{Nodes: 40, Edges: 64, Graphs: 8}},
		{"tiled", Layout{TileSize: 8, GraphsPerTile: 3}, Bucket{Nodes: 64, Edges: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			big := Bucket{Nodes: 8 * 40, Edges: 256}
			if !tc.layout.Tiled() {
				big.Graphs = 64
			}
			bk, err := NewBucketer(BucketerConfig{Spec: testSpec, Layout: tc.layout, Buckets: []Bucket{big, tc.bucket}})
			require.NoError(t, err)
			b, err := bk.Batch(graphs)
			require.NoError(t, err)
			assert.Equal(t, tc.bucket.Nodes, b.Bucket.Nodes, "smallest bucket is chosen")
			totalE := 0
			for gi, g := range graphs {
				totalE += g.NumEdges()
				off, slot := int(b.NodeOffset[gi]), b.GraphSlot[gi]
				assert.Equal(t, float32(1), b.GraphMask[slot])
				assert.Equal(t, float32(g.NumNodes), b.GraphNodes[slot])
				if tc.layout.Tiled() && g.NumNodes > 0 {
					ts := tc.layout.TileSize
					assert.Equal(t, off/ts, (off+g.NumNodes-1)/ts, "graph %d straddles a tile", gi)
					assert.Equal(t, int(slot)/tc.layout.GraphsPerTile, off/ts, "slot in the graph's tile")
				}
				for i := range g.NumNodes {
					assert.Equal(t, slot, b.NodeSlot[off+i])
					assert.Equal(t, float32(1), b.NodeMask[off+i])
					assert.Equal(t, g.X[i*3:i*3+3], b.X[(off+i)*3:(off+i)*3+3])
				}
			}
			assert.Equal(t, totalE, b.NumEdges)
			// Slots are distinct; padding rows point at the dummy slot.
			seen := map[int32]bool{}
			for _, s := range b.GraphSlot {
				assert.False(t, seen[s])
				seen[s] = true
			}
			realRows := 0
			for i, m := range b.NodeMask {
				if m == 0 {
					assert.Equal(t, int32(b.Bucket.Graphs), b.NodeSlot[i])
				} else {
					realRows++
				}
			}
			assert.Equal(t, b.NumNodes, realRows)
			// Edges: sorted by (dst, type); padding edges masked with weight 0; norms sum to 1
			// per (dst, relation).
			sums := map[[2]int32]float32{}
			for k := range b.Bucket.Edges {
				if k > 0 {
					assert.LessOrEqual(t, b.Dst[k-1]*3+b.EdgeType[k-1], b.Dst[k]*3+b.EdgeType[k])
				}
				if b.EdgeMask[k] == 0 {
					assert.Zero(t, b.EdgeNorm[k])
					continue
				}
				sums[[2]int32{b.Dst[k], b.EdgeType[k]}] += b.EdgeNorm[k]
			}
			for key, s := range sums {
				assert.InDelta(t, 1, s, 1e-6, "norms into %v", key)
			}
			// Per-graph unpermutation helpers.
			vals := make([]float32, len(graphs))
			for i := range vals {
				vals[i] = float32(i + 1)
			}
			slotVals, err := b.GraphValues(vals)
			require.NoError(t, err)
			back, err := b.PerGraph(slotVals, 1)
			require.NoError(t, err)
			assert.Equal(t, vals, back)
			_, err = b.GraphValues(vals[:2])
			assert.Error(t, err)
			assert.Len(t, b.Tensors(), NumInputs(testSpec, tc.layout))
		})
	}
}

func TestBatchErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	seq, err := NewBucketer(BucketerConfig{Spec: testSpec, Buckets: []Bucket{{Nodes: 10, Edges: 10, Graphs: 2}}})
	require.NoError(t, err)
	tiled, err := NewBucketer(BucketerConfig{Spec: testSpec, Layout: Layout{TileSize: 4, GraphsPerTile: 2},
		Buckets: []Bucket{{Nodes: 8, Edges: 32}}})
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		bk     *Bucketer
		graphs []*Graph
	}{
		{"no graphs", seq, nil},
		{"too many nodes", seq, []*Graph{randomGraph(rng, testSpec, 11, 2)}},
		{"too many graphs", seq, []*Graph{{NumNodes: 0}, {NumNodes: 0}, {NumNodes: 0}}},
		{"invalid graph", seq, []*Graph{{NumNodes: 1, X: []float32{1}}}},
		{"nil graph", seq, []*Graph{nil}},
		{"graph larger than a tile", tiled, []*Graph{randomGraph(rng, testSpec, 5, 2)}},
		{"too many tiles", tiled, []*Graph{randomGraph(rng, testSpec, 4, 1), randomGraph(rng, testSpec, 4, 1), randomGraph(rng, testSpec, 4, 1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.bk.Batch(tc.graphs)
			assert.Error(t, err)
		})
	}
}

func TestLadder(t *testing.T) {
	got, err := Ladder(Bucket{Nodes: 2048, Edges: 6144, Graphs: 64}, 2, 3, Layout{})
	require.NoError(t, err)
	assert.Equal(t, []Bucket{{Nodes: 512, Edges: 1536, Graphs: 16}, {Nodes: 1024, Edges: 3072, Graphs: 32}, {Nodes: 2048, Edges: 6144, Graphs: 64}}, got)
	tiled, err := Ladder(Bucket{Nodes: 2000, Edges: 100}, 1.5, 2, Layout{TileSize: 64, GraphsPerTile: 4})
	require.NoError(t, err)
	for _, b := range tiled {
		assert.Zero(t, b.Nodes%64)
	}
	_, err = Ladder(Bucket{Nodes: 8, Edges: 8, Graphs: 1}, 0.5, 2, Layout{})
	assert.Error(t, err)
}

func TestSuggestBuckets(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	var samples [][]*Graph
	for range 6 {
		var gs []*Graph
		for range 10 + rng.IntN(6) {
			gs = append(gs, randomGraph(rng, testSpec, 3+rng.IntN(10), 2+rng.IntN(12)))
		}
		samples = append(samples, gs)
	}
	for _, layout := range []Layout{{}, {TileSize: 16, GraphsPerTile: 4}} {
		buckets, err := SuggestBuckets(testSpec, layout, samples, 4)
		require.NoError(t, err)
		require.Len(t, buckets, 4)
		bk, err := NewBucketer(BucketerConfig{Spec: testSpec, Layout: layout, Buckets: buckets})
		require.NoError(t, err)
		for _, gs := range samples {
			b, err := bk.Batch(gs)
			require.NoError(t, err, "every sample batch fits")
			assert.LessOrEqual(t, b.NumNodes, b.Bucket.Nodes)
		}
	}
	_, err := SuggestBuckets(testSpec, Layout{}, nil, 3)
	assert.Error(t, err)
}
