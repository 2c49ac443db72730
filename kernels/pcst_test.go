package kernels

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pcstObjective is the GW objective of a tree: its edge costs plus the prizes left out.
func pcstObjective(prizes []float64, edges []PCSTEdge, nodes, sel []int32) float64 {
	in := map[int32]bool{}
	for _, v := range nodes {
		in[v] = true
	}
	var obj float64
	for v, p := range prizes {
		if !in[int32(v)] {
			obj += p
		}
	}
	for _, e := range sel {
		obj += edges[e].Cost
	}
	return obj
}

// isTree checks that the selected edges join exactly the selected nodes without a cycle.
func isTree(t *testing.T, n int, edges []PCSTEdge, nodes, sel []int32) {
	t.Helper()
	if len(nodes) == 0 {
		assert.Empty(t, sel)
		return
	}
	require.Len(t, sel, len(nodes)-1, "a tree on %d nodes has %d edges", len(nodes), len(nodes)-1)
	parent := make([]int32, n)
	for i := range parent {
		parent[i] = int32(i)
	}
	var find func(int32) int32
	find = func(x int32) int32 {
		for parent[x] != x {
			x = parent[x]
		}
		return x
	}
	in := map[int32]bool{}
	for _, v := range nodes {
		in[v] = true
	}
	for _, e := range sel {
		u, v := edges[e].U, edges[e].V
		require.True(t, in[u] && in[v], "edge %d joins selected nodes", e)
		ru, rv := find(u), find(v)
		require.NotEqual(t, ru, rv, "edge %d closes a cycle", e)
		parent[ru] = rv
	}
	root := find(nodes[0])
	for _, v := range nodes {
		assert.Equal(t, root, find(v), "node %d is connected", v)
	}
}

// bruteForcePCST is the optimum over every node subset that is connected (its MST
// cost, Prim on the induced subgraph), and the empty tree.
func bruteForcePCST(prizes []float64, edges []PCSTEdge) float64 {
	n := len(prizes)
	var total float64
	for _, p := range prizes {
		total += p
	}
	best := total
	for mask := uint(1); mask < 1<<n; mask++ {
		var left float64
		for v := 0; v < n; v++ {
			if mask&(1<<v) == 0 {
				left += prizes[v]
			}
		}
		// Prim.
		start := bits.TrailingZeros(mask)
		inTree := uint(1) << start
		cost := 0.0
		for inTree != mask {
			bestE := math.Inf(1)
			next := -1
			for _, e := range edges {
				u, v := int(e.U), int(e.V)
				if mask&(1<<u) == 0 || mask&(1<<v) == 0 {
					continue
				}
				if (inTree&(1<<u) != 0) != (inTree&(1<<v) != 0) && e.Cost < bestE {
					bestE = e.Cost
					next = u
					if inTree&(1<<u) != 0 {
						next = v
					}
				}
			}
			if next < 0 {
				cost = math.Inf(1) // not connected
				break
			}
			inTree |= 1 << next
			cost += bestE
		}
		best = min(best, cost+left)
	}
	return best
}

func TestPCSTHandMadeCases(t *testing.T) {
	for _, tc := range []struct {
		name      string
		prizes    []float64
		edges     []PCSTEdge
		wantNodes []int32
		wantEdges []int32
	}{
		{
			// Two rich nodes joined through a free Steiner node; a poor leaf is not worth its edge.
			name:      "steiner path",
			prizes:    []float64{5, 0, 5, 0.1},
			edges:     []PCSTEdge{{0, 1, 1}, {1, 2, 1}, {2, 3, 3}},
			wantNodes: []int32{0, 1, 2},
			wantEdges: []int32{0, 1},
		},
		{
			// The cheap detour beats the expensive direct edge.
			name:      "cheap detour",
			prizes:    []float64{4, 0, 4},
			edges:     []PCSTEdge{{0, 2, 3}, {0, 1, 1}, {1, 2, 1}},
			wantNodes: []int32{0, 1, 2},
			wantEdges: []int32{1, 2},
		},
		{
			// An edge dearer than both prizes: the richer node alone.
			name:      "too expensive",
			prizes:    []float64{1, 2},
			edges:     []PCSTEdge{{0, 1, 10}},
			wantNodes: []int32{1},
		},
		{
			// A star: the centre pays for three leaves, the fourth leaf is too far.
			name:      "star",
			prizes:    []float64{0, 2, 2, 2, 0.5},
			edges:     []PCSTEdge{{0, 1, 1}, {0, 2, 1}, {0, 3, 1}, {0, 4, 2}},
			wantNodes: []int32{0, 1, 2, 3},
			wantEdges: []int32{0, 1, 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, sel, err := PCST(tc.prizes, tc.edges, 1, PruneGW)
			require.NoError(t, err)
			assert.Equal(t, tc.wantNodes, nodes)
			got := slices.Clone(sel)
			slices.Sort(got)
			assert.Equal(t, tc.wantEdges, nilIfEmpty(got))
			isTree(t, len(tc.prizes), tc.edges, nodes, sel)
		})
	}
}

func nilIfEmpty(x []int32) []int32 {
	if len(x) == 0 {
		return nil
	}
	return x
}

func TestPCSTWithinTwiceTheOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	worst := 0.0
	for trial := 0; trial < 300; trial++ {
		n := 2 + rng.IntN(8)
		prizes := make([]float64, n)
		for i := range prizes {
			if rng.Float64() < 0.6 {
				prizes[i] = math.Round(rng.Float64()*50) / 10
			}
		}
		var edges []PCSTEdge
		for u := 0; u < n; u++ {
			for v := u + 1; v < n; v++ {
				if rng.Float64() < 0.45 {
					edges = append(edges, PCSTEdge{int32(u), int32(v), 0.1 + math.Round(rng.Float64()*30)/10})
				}
			}
		}
		nodes, sel, err := PCST(prizes, edges, 1, PruneGW)
		require.NoError(t, err)
		isTree(t, n, edges, nodes, sel)
		got := pcstObjective(prizes, edges, nodes, sel)
		opt := bruteForcePCST(prizes, edges)
		require.LessOrEqual(t, got, 2*opt+1e-9, "trial %d: objective %.3f, optimum %.3f (prizes %v, edges %v)", trial, got, opt, prizes, edges)
		if opt > 0 {
			worst = max(worst, got/opt)
		}
	}
	t.Logf("worst ratio to the optimum over 300 random graphs: %.3f", worst)
}

func TestPCSTPruningModes(t *testing.T) {
	// Node 0 absorbs the prize-less leaf 3 at t = 0.2, long before it meets node 2
	// through the Steiner node 1 at t = 2: GW pruning cuts the leaf, simple pruning
	// (every node of the final active cluster) keeps it.
	prizes := []float64{5, 0, 5, 0}
	edges := []PCSTEdge{{0, 1, 1}, {1, 2, 3}, {0, 3, 0.2}}
	gwNodes, _, err := PCST(prizes, edges, 1, PruneGW)
	require.NoError(t, err)
	simpleNodes, simpleEdges, err := PCST(prizes, edges, 1, PruneSimple)
	require.NoError(t, err)
	assert.Equal(t, []int32{0, 1, 2}, gwNodes)
	assert.Contains(t, simpleNodes, int32(3))
	assert.Len(t, simpleEdges, 3)
}

func TestPCSTRejectsBadInput(t *testing.T) {
	_, _, err := PCST([]float64{-1}, nil, 1, PruneGW)
	assert.ErrorContains(t, err, "prize 0")
	_, _, err = PCST([]float64{1, 1}, []PCSTEdge{{0, 2, 1}}, 1, PruneGW)
	assert.ErrorContains(t, err, "out of range")
	_, _, err = PCST([]float64{1, 1}, []PCSTEdge{{0, 1, math.NaN()}}, 1, PruneGW)
	assert.ErrorContains(t, err, "cost")
	nodes, sel, err := PCST(nil, nil, 1, PruneGW)
	require.NoError(t, err)
	assert.Empty(t, nodes)
	assert.Empty(t, sel)
}
