package kernels

import (
	"fmt"
	"math"
)

// PCSTPruning chooses how the Goemans–Williamson forest is pruned (pcst_fast's
// "none", "simple" and "gw").
type PCSTPruning int

// Pruning methods.
const (
	// PruneGW is Goemans–Williamson pruning, G-Retriever's setting: walking the
	// forest's edges in reverse order of addition, a subtree hanging off an inactive
	// cluster that no later edge needed is cut.
	PruneGW PCSTPruning = iota
	// PruneSimple keeps the edges whose endpoints both lie in a cluster still active
	// when growth stopped.
	PruneSimple
	// PruneNone keeps every edge the growth phase added.
	PruneNone
)

// PCSTEdge is an undirected edge of a PCST instance.
type PCSTEdge struct {
	U, V int32
	Cost float64
}

// PCST solves the unrooted prize-collecting Steiner tree problem with the
// Goemans–Williamson primal–dual growth that pcst_fast (Hegde, Indyk and Schmidt,
// 2015) implements, as G-Retriever calls it: pcst_fast(edges, prizes, costs,
// root=-1, num_clusters, pruning). Every node starts as an active cluster whose moat
// grows at rate 1; an edge becomes tight when the moats on its two endpoints sum to its
// cost, and its clusters merge (an active cluster absorbing an inactive one stays
// active); a cluster whose moats reach its prize sum deactivates. Growth stops when at
// most clusters clusters are active; the nodes of those clusters are kept and the
// forest is pruned.
//
// It returns the selected nodes (ascending) and the indices of the selected edges
// (in order of addition). Prizes and costs must be finite and non-negative.
//
// Events are found by scanning the edges (O(n·m) in the worst case) rather than with
// pcst_fast's pairing heaps: graphloom runs it on question-sized subgraphs of a few
// hundred to a few thousand nodes. Ties between an edge and a cluster event resolve as
// in pcst_fast (the cluster deactivates first); ties between edges go to the lowest
// edge index, where pcst_fast's order depends on its heaps.
func PCST(prizes []float64, edges []PCSTEdge, clusters int, pruning PCSTPruning) (nodes, selected []int32, err error) {
	n := len(prizes)
	for i, p := range prizes {
		if p < 0 || math.IsNaN(p) || math.IsInf(p, 0) {
			return nil, nil, fmt.Errorf("kernels: pcst: prize %d is %v: want a finite value ≥ 0", i, p)
		}
	}
	for i, e := range edges {
		if e.U < 0 || e.V < 0 || int(e.U) >= n || int(e.V) >= n {
			return nil, nil, fmt.Errorf("kernels: pcst: edge %d (%d, %d) out of range for %d nodes", i, e.U, e.V, n)
		}
		if e.Cost < 0 || math.IsNaN(e.Cost) || math.IsInf(e.Cost, 0) {
			return nil, nil, fmt.Errorf("kernels: pcst: edge %d cost %v: want a finite value ≥ 0", i, e.Cost)
		}
	}
	if clusters < 1 {
		clusters = 1
	}
	g := newGW(prizes, edges)
	g.grow(clusters)
	good := make([]bool, n)
	for c := range g.cl {
		if g.cl[c].active && g.cl[c].parent < 0 {
			for _, v := range g.cl[c].members {
				good[v] = true
			}
		}
	}
	if pruning == PruneNone {
		seen := make([]bool, n)
		for _, e := range g.added {
			seen[edges[e].U], seen[edges[e].V] = true, true
		}
		for v := range good {
			if seen[v] || good[v] {
				nodes = append(nodes, int32(v))
			}
		}
		return nodes, g.added, nil
	}
	var phase2 []int32
	for _, e := range g.added {
		if good[edges[e].U] && good[edges[e].V] {
			phase2 = append(phase2, e)
		}
	}
	deleted := make([]bool, n)
	if pruning == PruneGW {
		phase2 = g.prune(phase2, deleted)
	}
	for v := range good {
		if good[v] && !deleted[v] {
			nodes = append(nodes, int32(v))
		}
	}
	return nodes, phase2, nil
}

type gwCluster struct {
	active       bool
	start, moat  float64 // activation time; moat once inactive or merged
	prize, inner float64 // prize sum; moats of the clusters merged into it
	parent       int     // the cluster it merged into, -1 while top-level
	members      []int32
	necessary    bool
}

type gwMerge struct {
	activeNode, inactiveNode int32
	inactiveCluster          int
}

type gw struct {
	edges   []PCSTEdge
	cl      []gwCluster
	top     []int     // top-level cluster of each node
	base    []float64 // moats of each node's finished clusters
	t       float64
	added   []int32           // edges in order of addition
	merges  map[int32]gwMerge // active–inactive merges, by edge
	nActive int
}

func newGW(prizes []float64, edges []PCSTEdge) *gw {
	n := len(prizes)
	g := &gw{edges: edges, cl: make([]gwCluster, n), top: make([]int, n), base: make([]float64, n), merges: map[int32]gwMerge{}}
	for v := range n {
		g.cl[v] = gwCluster{active: true, prize: prizes[v], parent: -1, members: []int32{int32(v)}}
		g.top[v] = v
	}
	g.nActive = n
	return g
}

// d is the moat sum on node v now.
func (g *gw) d(v int32) float64 {
	c := &g.cl[g.top[v]]
	if c.active {
		return g.base[v] + g.t - c.start
	}
	return g.base[v] + c.moat
}

func (g *gw) grow(target int) {
	for g.nActive > target {
		// Next cluster event: the earliest deactivation.
		ct, cIdx := math.Inf(1), -1
		for i := range g.cl {
			c := &g.cl[i]
			if c.active && c.parent < 0 {
				if at := c.start + c.prize - c.inner; at < ct {
					ct, cIdx = at, i
				}
			}
		}
		// Next edge event: the earliest edge between two clusters to become tight.
		et, eIdx := math.Inf(1), -1
		for i, e := range g.edges {
			cu, cv := g.top[e.U], g.top[e.V]
			if cu == cv {
				continue
			}
			rate := 0.0
			if g.cl[cu].active {
				rate++
			}
			if g.cl[cv].active {
				rate++
			}
			if rate == 0 {
				continue
			}
			slack := e.Cost - g.d(e.U) - g.d(e.V)
			if at := g.t + max(0, slack)/rate; at < et {
				et, eIdx = at, i
			}
		}
		if cIdx < 0 && eIdx < 0 {
			return
		}
		if eIdx >= 0 && et < ct {
			g.t = et
			g.merge(int32(eIdx))
			continue
		}
		g.t = ct
		c := &g.cl[cIdx]
		c.active = false
		c.moat = g.t - c.start
		g.nActive--
	}
}

// merge joins the clusters of edge e's endpoints into a new active cluster.
func (g *gw) merge(e int32) {
	u, v := g.edges[e].U, g.edges[e].V
	cu, cv := g.top[u], g.top[v]
	if !g.cl[cu].active { // the active side first
		u, v, cu, cv = v, u, cv, cu
	}
	g.added = append(g.added, e)
	if !g.cl[cv].active {
		g.merges[e] = gwMerge{activeNode: u, inactiveNode: v, inactiveCluster: cv}
	}
	w := len(g.cl)
	nc := gwCluster{active: true, start: g.t, parent: -1}
	for _, ci := range []int{cu, cv} {
		c := &g.cl[ci]
		if c.active {
			c.active = false
			c.moat = g.t - c.start
			g.nActive--
		}
		c.parent = w
		nc.prize += c.prize
		nc.inner += c.inner + c.moat
		for _, x := range c.members {
			g.base[x] += c.moat
			g.top[x] = w
		}
		nc.members = append(nc.members, c.members...)
		c.members = nil
	}
	g.cl = append(g.cl, nc)
	g.nActive++
}

// markNecessary marks node v's cluster and every cluster above it as necessary, up
// to the first one already marked.
func (g *gw) markNecessary(v int32) {
	for c := int(v); c >= 0 && !g.cl[c].necessary; c = g.cl[c].parent {
		g.cl[c].necessary = true
	}
}

// prune is pcst_fast's GW pruning of the forest phase2 (edges in order of addition);
// it marks deleted nodes and returns the kept edges.
func (g *gw) prune(phase2 []int32, deleted []bool) []int32 {
	adj := map[int32][]int32{}
	for _, e := range phase2 {
		u, v := g.edges[e].U, g.edges[e].V
		adj[u] = append(adj[u], v)
		adj[v] = append(adj[v], u)
	}
	var kept []int32
	for i := len(phase2) - 1; i >= 0; i-- {
		e := phase2[i]
		u, v := g.edges[e].U, g.edges[e].V
		if deleted[u] && deleted[v] {
			continue
		}
		m, inactive := g.merges[e]
		if !inactive || g.cl[m.inactiveCluster].necessary {
			g.markNecessary(u)
			g.markNecessary(v)
			kept = append(kept, e)
			continue
		}
		// Cut the subtree on the inactive side.
		deleted[m.inactiveNode] = true
		queue := []int32{m.inactiveNode}
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			for _, y := range adj[x] {
				if y == m.activeNode || deleted[y] {
					continue
				}
				deleted[y] = true
				queue = append(queue, y)
			}
		}
	}
	// Back to order of addition.
	for i, j := 0, len(kept)-1; i < j; i, j = i+1, j-1 {
		kept[i], kept[j] = kept[j], kept[i]
	}
	return kept
}
