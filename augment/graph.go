package augment

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/graphloom/graphloom/graphio"
)

// Relation types of the scorer's graph (anchors §D.2): the walk graph holds only fact
// and synonym edges, so entity–chunk edges never occur in sampled subgraphs.
const (
	relFact    = 0
	relSynonym = 1
	numRel     = 3 // FACT, SYNONYM, ENTITY_CHUNK, as the reference's R-GCN is built
)

// neighbor is one typed edge out of an entity in the walk graph.
type neighbor struct {
	to     int32
	rel    int8
	weight float64 // raw merged weight
	eff    float64 // effective walk weight min(w, c)·α
}

// minerGraph is the entity–entity graph CrossAug walks on.
type minerGraph struct {
	ix   *graphio.Index
	adj  [][]neighbor
	cum  [][]float64 // cumulative effective weights per node
	fact map[[2]int32]bool
}

// newMinerGraph builds the walk graph from fact and synonym edges. Weights are
// HippoRAG 2's igraph weights, where each pair is stored in both directions and the
// reference merges them by summing: a fact pair supported n times weighs 2n and a
// synonym pair 2·cosine.
func newMinerGraph(ix *graphio.Index, cfg Config) *minerGraph {
	g := &minerGraph{ix: ix, adj: make([][]neighbor, len(ix.Entities)), fact: map[[2]int32]bool{}}
	for _, e := range ix.TypedEdgesOf(graphio.EntityGraph) {
		rel, scale := int8(relFact), cfg.FactWalkScale
		if e.Type == graphio.EdgeSynonym {
			rel, scale = relSynonym, cfg.SynonymWalkScale
		} else {
			g.fact[pairKey(e.U, e.V)] = true
		}
		w := 2 * float64(e.Weight)
		eff := min(w, cfg.WeightClip) * scale
		if eff <= 0 {
			continue
		}
		g.adj[e.U] = append(g.adj[e.U], neighbor{e.V, rel, w, eff})
		g.adj[e.V] = append(g.adj[e.V], neighbor{e.U, rel, w, eff})
	}
	g.cum = make([][]float64, len(g.adj))
	for u, ns := range g.adj {
		c := make([]float64, len(ns))
		acc := 0.0
		for i, n := range ns {
			acc += n.eff
			c[i] = acc
		}
		g.cum[u] = c
	}
	return g
}

func pairKey(u, v int32) [2]int32 {
	if u > v {
		u, v = v, u
	}
	return [2]int32{u, v}
}

// rootCandidates lists the entities a walk may start from: with a walk neighbour, and a
// name that is not all digits, not a 4-digit year 1000–2099, and longer than one
// character (anchors §D.2).
func (g *minerGraph) rootCandidates() []int32 {
	var out []int32
	for i, e := range g.ix.Entities {
		if len(g.adj[i]) > 0 && informative(e.Name) {
			out = append(out, int32(i))
		}
	}
	return out
}

// informative rejects one-character names and names made of digits only (which
// covers the reference's separate 4-digit-year rule).
func informative(name string) bool {
	name = strings.TrimSpace(name)
	if len([]rune(name)) <= 1 {
		return false
	}
	for _, r := range name {
		if !unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// subgraph is a sampled entity subgraph.
type subgraph struct {
	root  int32
	nodes []int32 // sorted entity indices, root included
	edges []sedge // edges with both ends inside, local indices
}

type sedge struct {
	u, v int32 // local node indices, u < v
	rel  int8
}

func (s *subgraph) factEdges() int {
	n := 0
	for _, e := range s.edges {
		if e.rel == relFact {
			n++
		}
	}
	return n
}

// walk samples walks random walks of length hops from root and returns the sorted
// union of visited nodes. Each step picks a neighbour with probability proportional to
// its effective weight; a dead end stops the walk.
func (g *minerGraph) walk(root int32, walks, hops int, rng *rand.Rand) []int32 {
	seen := map[int32]bool{root: true}
	for w := 0; w < walks; w++ {
		cur := root
		for h := 0; h < hops; h++ {
			c := g.cum[cur]
			if len(c) == 0 {
				break
			}
			x := rng.Float64() * c[len(c)-1]
			i := sort.SearchFloat64s(c, x)
			if i >= len(c) {
				i = len(c) - 1
			}
			cur = g.adj[cur][i].to
			seen[cur] = true
		}
	}
	nodes := make([]int32, 0, len(seen))
	for n := range seen {
		nodes = append(nodes, n)
	}
	slices.Sort(nodes)
	return nodes
}

// induce returns the subgraph of nodes with every walk-graph edge inside it (one per
// node pair and relation).
func (g *minerGraph) induce(root int32, nodes []int32) *subgraph {
	local := make(map[int32]int32, len(nodes))
	for i, n := range nodes {
		local[n] = int32(i)
	}
	s := &subgraph{root: root, nodes: nodes}
	seen := map[[3]int32]bool{}
	for i, u := range nodes {
		for _, nb := range g.adj[u] {
			j, ok := local[nb.to]
			if !ok || j <= int32(i) {
				continue
			}
			k := [3]int32{int32(i), j, int32(nb.rel)}
			if !seen[k] {
				seen[k] = true
				s.edges = append(s.edges, sedge{int32(i), j, nb.rel})
			}
		}
	}
	return s
}

// sample draws a subgraph around root, or nil if it is too small or has too few fact
// edges.
func (g *minerGraph) sample(root int32, walks int, cfg Config, rng *rand.Rand) *subgraph {
	s := g.induce(root, g.walk(root, walks, cfg.WalkLength, rng))
	if len(s.nodes) < cfg.MinNodes || s.factEdges() < cfg.MinFactEdges {
		return nil
	}
	return s
}

// hopsFrom returns the entities at exactly d hops from root in the walk graph, in
// ascending order.
func (g *minerGraph) hopsFrom(root int32, d int) map[int32]bool {
	dist := map[int32]int{root: 0}
	frontier := []int32{root}
	for level := 1; level <= d && len(frontier) > 0; level++ {
		var next []int32
		for _, u := range frontier {
			for _, nb := range g.adj[u] {
				if _, ok := dist[nb.to]; !ok {
					dist[nb.to] = level
					next = append(next, nb.to)
				}
			}
		}
		frontier = next
	}
	out := map[int32]bool{}
	for n, l := range dist {
		if l == d {
			out[n] = true
		}
	}
	return out
}

// chainRoots orders up to budget inference roots as the reference does, walking the
// candidates in one order and repeatedly taking the first remaining candidate
// exactly WalkLength hops from the current root, or the first remaining candidate
// when none is. The reference shuffles the candidates with its one seed; here the
// order is rootOrder's, a hash of each entity's name, so which candidates a run
// examines is a function of the graph and of no seed (see Config.SplitSeed).
func (g *minerGraph) chainRoots(cands []int32, budget int, cfg Config) []int32 {
	order := g.rootOrder(cands)
	used := make(map[int32]bool, budget)
	var out []int32
	next := 0 // first possibly unused position in order
	firstUnused := func() int32 {
		for next < len(order) && used[order[next]] {
			next++
		}
		if next == len(order) {
			return -1
		}
		return order[next]
	}
	cur := firstUnused()
	for cur >= 0 && len(out) < budget {
		used[cur] = true
		out = append(out, cur)
		ring := g.hopsFrom(cur, cfg.WalkLength)
		cand := int32(-1)
		for _, c := range order[next:] {
			if !used[c] && ring[c] {
				cand = c
				break
			}
		}
		if cand < 0 {
			cand = firstUnused()
		}
		cur = cand
	}
	return out
}

// rootKey is an entity's place in the inference order and the seed of the walks that
// sample its subgraph: the first 8 bytes of SHA-256 of its normalised name. A hash
// rather than a seeded shuffle (the reference's), so that what inference examines
// does not move with any seed: two runs that train on other data samples score the
// same subgraphs, and a root's subgraph does not depend on which roots were sampled
// before it. An entity added to or deleted from the index leaves the others' keys as
// they were (a root's walks change only where its neighbourhood did), though the
// chain of examined roots can change from where it first meets the change. The walks'
// source keeps the key modulo 2³¹ − 1 (math/rand's seeding), enough to tell roots'
// walks apart.
func rootKey(name string) uint64 {
	sum := sha256.Sum256([]byte(name))
	return binary.BigEndian.Uint64(sum[:8])
}

// rootOrder returns cands sorted by rootKey (equal keys by index).
func (g *minerGraph) rootOrder(cands []int32) []int32 {
	keys := make(map[int32]uint64, len(cands))
	for _, c := range cands {
		keys[c] = rootKey(g.ix.Entities[c].Name)
	}
	order := slices.Clone(cands)
	slices.SortFunc(order, func(a, b int32) int {
		if c := cmp.Compare(keys[a], keys[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return order
}

// sampleRoots samples one inference subgraph per root, each from walks seeded by its
// root's key, leaving out a root whose walks find too small a one (see sample).
func (g *minerGraph) sampleRoots(roots []int32, cfg Config) []*subgraph {
	rng := rand.New(rand.NewSource(0))
	var out []*subgraph
	for _, r := range roots {
		rng.Seed(int64(rootKey(g.ix.Entities[r].Name)))
		if s := g.sample(r, cfg.WalksPerRoot, cfg, rng); s != nil {
			out = append(out, s)
		}
	}
	return out
}

// jaccard is the Jaccard similarity of two sorted sets without repeats (node lists,
// root names); 0 when both are empty.
func jaccard[T cmp.Ordered](a, b []T) float64 {
	i, j, inter := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}
