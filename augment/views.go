package augment

import (
	"math"
	"math/rand"
	"slices"
	"sort"
)

// view is a subgraph presented to the scorer, with its label (1 = corrupted).
type view struct {
	sg    *subgraph
	mask  *walkMask // what a corrupted view's graph lacks; nil for clean views
	label float32
	group int // views of the same root share a group (ranking accuracy)
	kind  string
}

// View kinds.
const (
	kindClean    = "clean"
	kindRelation = "relation-missing"
	kindEntity   = "entity-missing"
)

// walkMask removes parts of the walk graph for one corrupted view: fact edges between
// some entity pairs (relation-missing) or some entities with all their edges
// (entity-missing).
type walkMask struct {
	dropPairs map[[2]int32]bool
	dropNodes map[int32]bool
}

func (m *walkMask) allows(u int32, nb neighbor) bool {
	if m == nil {
		return true
	}
	if m.dropNodes[nb.to] || m.dropNodes[u] {
		return false
	}
	return nb.rel != relFact || !m.dropPairs[pairKey(u, nb.to)]
}

// walkMasked is walk on the graph without what mask removes: each step picks an
// allowed neighbour with probability proportional to its effective weight.
func (g *minerGraph) walkMasked(root int32, walks, hops int, rng *rand.Rand, mask *walkMask) []int32 {
	if mask == nil {
		return g.walk(root, walks, hops, rng)
	}
	seen := map[int32]bool{root: true}
	for w := 0; w < walks; w++ {
		cur := root
		for h := 0; h < hops; h++ {
			total := 0.0
			for _, nb := range g.adj[cur] {
				if mask.allows(cur, nb) {
					total += nb.eff
				}
			}
			if total <= 0 {
				break
			}
			x := rng.Float64() * total
			next := int32(-1)
			for _, nb := range g.adj[cur] {
				if !mask.allows(cur, nb) {
					continue
				}
				next = nb.to
				if x -= nb.eff; x < 0 {
					break
				}
			}
			cur = next
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

// sampleMasked draws a subgraph around root on the graph without what mask removes
// (nil: the whole graph, exactly as sample), or nil if it is too small or has too few
// fact edges.
func (g *minerGraph) sampleMasked(root int32, cfg Config, rng *rand.Rand, mask *walkMask) *subgraph {
	if mask == nil {
		return g.sample(root, cfg.WalksPerRoot, cfg, rng)
	}
	nodes := g.walkMasked(root, cfg.WalksPerRoot, cfg.WalkLength, rng, mask)
	full := g.induce(root, nodes)
	s := &subgraph{root: root, nodes: full.nodes}
	for _, e := range full.edges {
		if e.rel == relFact && mask.dropPairs[pairKey(nodes[e.u], nodes[e.v])] {
			continue
		}
		s.edges = append(s.edges, e)
	}
	if len(s.nodes) < cfg.MinNodes || s.factEdges() < cfg.MinFactEdges {
		return nil
	}
	return s
}

// relationMissing returns a relation-missing view of root: from a record subgraph it
// removes min(|F| − MinFactEdges, max(1, round(|F|·FactMaskRatio))) random fact
// edges (anchors §D.4) — with Config.RootCentred only facts of the root, at most all
// of them — then samples the view by the same random walks from root on the graph
// without them. It returns nil when the record has too few fact edges or the
// view holds no end of a removed edge (then it misses nothing). On a tree-like graph
// a removed edge also cuts off what lies behind it, so the view often holds one end
// only: it then misses that entity's fact and the branch behind it.
//
// Deviation from the reference, which deletes the edges from the record itself: there,
// a removed bridge leaves a disconnected view, while clean views and every subgraph
// scored at inference are connected walk samples, so connectivity alone gives the
// label away. Walking after the removal yields connected views drawn exactly like the
// clean ones, whose only difference is the missing fact.
func (g *minerGraph) relationMissing(rec *subgraph, cfg Config, rng *rand.Rand) (*subgraph, *walkMask) {
	var facts [][2]int32
	r := rec.rootIndex()
	all := 0
	for _, e := range rec.edges {
		if e.rel == relFact {
			all++
			if !cfg.RootCentred || e.u == r || e.v == r {
				facts = append(facts, pairKey(rec.nodes[e.u], rec.nodes[e.v]))
			}
		}
	}
	if all <= cfg.MinFactEdges || len(facts) == 0 {
		return nil, nil
	}
	k := min(len(facts), all-cfg.MinFactEdges, max(1, int(math.Round(float64(all)*cfg.FactMaskRatio))))
	rng.Shuffle(len(facts), func(i, j int) { facts[i], facts[j] = facts[j], facts[i] })
	mask := &walkMask{dropPairs: map[[2]int32]bool{}}
	for _, p := range facts[:k] {
		mask.dropPairs[p] = true
	}
	s := g.sampleMasked(rec.root, cfg, rng, mask)
	if s == nil {
		return nil, nil
	}
	in := make(map[int32]bool, len(s.nodes))
	for _, n := range s.nodes {
		in[n] = true
	}
	for p := range mask.dropPairs {
		if in[p[0]] || in[p[1]] {
			return s, mask
		}
	}
	return nil, nil
}

// entityMissing returns an entity-missing view of root: among the record's non-root
// entities that carry a fact edge inside it, max(1, round(n·EntityDeleteRatio))
// random ones are deleted with their edges (anchors §D.4), then the view is sampled by
// the same random walks from root on the graph without them. It returns nil when no
// entity can be deleted or the view holds no fact neighbour of a deleted entity.
//
// Deviation from the reference (which deletes the entities from the record itself):
// as for relationMissing, walking after the deletion keeps the view a connected walk
// sample, so that components and size do not give the label away.
func (g *minerGraph) entityMissing(rec *subgraph, cfg Config, rng *rand.Rand) (*subgraph, *walkMask) {
	hasFact := map[int32]bool{}
	for _, e := range rec.edges {
		if e.rel == relFact {
			hasFact[e.u], hasFact[e.v] = true, true
		}
	}
	var cands []int32
	near := nearRoot(rec)
	for i, n := range rec.nodes {
		if n != rec.root && hasFact[int32(i)] && (!cfg.RootCentred || near[int32(i)]) {
			cands = append(cands, n)
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	k := min(len(cands), max(1, int(math.Round(float64(len(rec.nodes))*cfg.EntityDeleteRatio))))
	rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	mask := &walkMask{dropNodes: map[int32]bool{}}
	for _, c := range cands[:k] {
		mask.dropNodes[c] = true
	}
	s := g.sampleMasked(rec.root, cfg, rng, mask)
	if s == nil {
		return nil, nil
	}
	for _, n := range s.nodes {
		for _, nb := range g.adj[n] {
			if nb.rel == relFact && mask.dropNodes[nb.to] {
				return s, mask
			}
		}
	}
	return nil, nil
}

// rootIndex returns the root's local index in s.
func (s *subgraph) rootIndex() int32 {
	r, _ := slices.BinarySearch(s.nodes, s.root)
	return int32(r)
}

// nearRoot returns the local indices of the root and its neighbours in s.
func nearRoot(s *subgraph) map[int32]bool {
	r := s.rootIndex()
	out := map[int32]bool{r: true}
	for _, e := range s.edges {
		if e.u == r {
			out[e.v] = true
		}
		if e.v == r {
			out[e.u] = true
		}
	}
	return out
}

// cleanPerGroup is how many clean views a training group draws, so that the balancing
// finds a clean partner of the same shape for most corrupted views.
const cleanPerGroup = 2

// trainingGroup samples one root's views: clean views (label 0, sampled exactly as
// subgraphs are sampled for scoring) and the relation-missing and entity-missing views
// of a separately sampled record (label 1). It returns nil when the root yields no
// clean view or no corrupted view.
func (g *minerGraph) trainingGroup(root int32, group int, cfg Config, rng *rand.Rand) []view {
	var out []view
	for range cleanPerGroup {
		if c := g.sample(root, cfg.WalksPerRoot, cfg, rng); c != nil {
			out = append(out, view{sg: c, label: 0, group: group, kind: kindClean})
		}
	}
	if len(out) == 0 {
		return nil
	}
	rec := g.sample(root, cfg.WalksPerRoot, cfg, rng)
	if rec == nil {
		return nil
	}
	n := len(out)
	if m, mask := g.relationMissing(rec, cfg, rng); m != nil {
		out = append(out, view{sg: m, mask: mask, label: 1, group: group, kind: kindRelation})
	}
	if d, mask := g.entityMissing(rec, cfg, rng); d != nil {
		out = append(out, view{sg: d, mask: mask, label: 1, group: group, kind: kindEntity})
	}
	if len(out) == n {
		return nil
	}
	return out
}

// sampleGroups draws training groups from roots until n groups are found or the
// attempts run out (max(20·n, 100), as in the reference), then balances them (see
// balanceViews).
func (g *minerGraph) sampleGroups(roots []int32, n int, cfg Config, rng *rand.Rand) []view {
	var out []view
	groups := 0
	for attempt := 0; groups < n && attempt < max(20*n, 100) && len(roots) > 0; attempt++ {
		root := roots[rng.Intn(len(roots))]
		if vs := g.trainingGroup(root, groups, cfg, rng); vs != nil {
			out = append(out, vs...)
			groups++
		}
	}
	return balanceViews(out, rng)
}

// shapeKey is what a shortcut classifier could read off a view without looking at
// its entities: node count, edge count and connected components.
type shapeKey struct{ nodes, edges, components int }

func keyOf(s *subgraph) shapeKey {
	return shapeKey{len(s.nodes), len(s.edges), components(s)}
}

// components counts the connected components of a subgraph.
func components(s *subgraph) int {
	parent := make([]int32, len(s.nodes))
	for i := range parent {
		parent[i] = int32(i)
	}
	var find func(int32) int32
	find = func(x int32) int32 {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	n := len(s.nodes)
	for _, e := range s.edges {
		if a, b := find(e.u), find(e.v); a != b {
			parent[a] = b
			n--
		}
	}
	return n
}

// balanceViews keeps, for every shape (node count, edge count, components), as many
// clean as corrupted views — the smaller of the two counts, chosen at random — so
// that the shape has the same distribution in both classes and carries no label
// information. Before that it balances the classes within each root's group as
// well (twice, alternating with the shape): a root rich enough in facts yields two
// corrupted views where a poor one yields none or one, so without it what an entity's
// text and degree say about the root — not what its view misses — would predict the
// label. The shapes are balanced exactly (last), the roots nearly. Views keep their input
// order.
func balanceViews(views []view, rng *rand.Rand) []view {
	views = balanceBy(views, rng, func(v view) any { return v.group })
	return balanceBy(views, rng, func(v view) any { return keyOf(v.sg) })
}

// balanceBy keeps, for every key, as many clean as corrupted views (the smaller count,
// chosen at random), in input order.
func balanceBy(views []view, rng *rand.Rand, key func(view) any) []view {
	type bin struct{ clean, corrupt []int }
	bins := map[any]*bin{}
	var keys []any
	for i, v := range views {
		k := key(v)
		b := bins[k]
		if b == nil {
			b = &bin{}
			bins[k] = b
			keys = append(keys, k)
		}
		if v.label == 1 {
			b.corrupt = append(b.corrupt, i)
		} else {
			b.clean = append(b.clean, i)
		}
	}
	keep := make([]bool, len(views))
	for _, k := range keys { // first-seen order: deterministic for a seed
		b := bins[k]
		m := min(len(b.clean), len(b.corrupt))
		for _, idx := range [][]int{b.clean, b.corrupt} {
			rng.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
			for _, i := range idx[:m] {
				keep[i] = true
			}
		}
	}
	var out []view
	for i, v := range views {
		if keep[i] {
			out = append(out, v)
		}
	}
	return out
}

// Splits of the root partition.
const (
	splitTrain = iota
	splitVal
	splitTest
)

// partition assigns every entity of the walk graph to the train, validation or test
// split so that no sampled subgraph crosses splits: regions grown breadth-first from
// shuffled seeds up to regionSize entities (max(16, entities/40)) are dealt, in random
// order, each to the split furthest below its share (testFrac, valFrac, the rest for
// training; the test share is at least minTest entities, at most a third of them);
// fragments under half a region go to training.
// Subgraphs of a split are then sampled on the walk graph restricted to it
// (restrict), so the test subgraphs share no entity with training subgraphs.
func (g *minerGraph) partition(valFrac, testFrac float64, minTest int, seed int64) []int8 {
	return g.partitionAround(nil, valFrac, testFrac, minTest, seed)
}

// partitionAround is partition with the test region given: the entities test assigns
// to splitTest stay there (nil: none), and the others are dealt into train and
// validation regions as partition deals them, the shares counted over all entities.
// newMember draws the test region with partition and deals the training and
// validation regions around it with this, under the same seed (the split graphloom's
// first ensemble gave member 0, kept so that the measured split stays the same); the
// other members share member 0's split.
func (g *minerGraph) partitionAround(test []int8, valFrac, testFrac float64, minTest int, seed int64) []int8 {
	n := len(g.adj)
	fixed := func(u int32) bool { return test != nil && test[u] == splitTest }
	rng := rand.New(rand.NewSource(seed))
	region := make([]int32, n)
	for i := range region {
		region[i] = -1
	}
	var active []int32
	fixedN := 0
	for u := range g.adj {
		switch {
		case len(g.adj[u]) == 0:
		case fixed(int32(u)):
			fixedN++
		default:
			active = append(active, int32(u))
		}
	}
	regionSize := max(16, len(active)/40)
	seeds := slices.Clone(active)
	rng.Shuffle(len(seeds), func(i, j int) { seeds[i], seeds[j] = seeds[j], seeds[i] })
	var sizes []int
	for _, s := range seeds {
		if region[s] >= 0 {
			continue
		}
		id := int32(len(sizes))
		claimed := 1
		region[s] = id
		queue := []int32{s}
		for len(queue) > 0 && claimed < regionSize {
			u := queue[0]
			queue = queue[1:]
			for _, nb := range g.adj[u] {
				if claimed >= regionSize {
					break
				}
				if region[nb.to] < 0 && !fixed(nb.to) {
					region[nb.to] = id
					claimed++
					queue = append(queue, nb.to)
				}
			}
		}
		sizes = append(sizes, claimed)
	}
	// Whole regions go, in random order, to the split furthest below its share;
	// fragments (under half a region) to training.
	order := rng.Perm(len(sizes))
	split := make([]int8, len(sizes))
	total := float64(len(active) + fixedN)
	testN := max(testFrac*total, min(float64(minTest), total/3))
	target := [3]float64{total - valFrac*total - testN, valFrac * total, testN}
	var have [3]float64
	have[splitTest] = float64(fixedN)
	for _, r := range order {
		if sizes[r] < regionSize/2 {
			split[r] = splitTrain
			have[splitTrain] += float64(sizes[r])
		}
	}
	for _, r := range order {
		if sizes[r] < regionSize/2 {
			continue
		}
		best, others := splitTest, []int{splitVal, splitTrain}
		if test != nil {
			best, others = splitVal, []int{splitTrain}
		}
		for _, sp := range others {
			if target[sp]-have[sp] > target[best]-have[best] {
				best = sp
			}
		}
		split[r] = int8(best)
		have[best] += float64(sizes[r])
	}
	part := make([]int8, n)
	for u := range part {
		switch {
		case fixed(int32(u)):
			part[u] = splitTest
		case region[u] >= 0:
			part[u] = split[region[u]]
		}
	}
	return part
}

// restrict returns the walk graph with only the edges inside one split.
func (g *minerGraph) restrict(part []int8, split int8) *minerGraph {
	r := &minerGraph{ix: g.ix, adj: make([][]neighbor, len(g.adj)), cum: make([][]float64, len(g.adj)), fact: g.fact}
	for u, ns := range g.adj {
		if part[u] != split {
			continue
		}
		acc := 0.0
		for _, nb := range ns {
			if part[nb.to] == split {
				r.adj[u] = append(r.adj[u], nb)
				acc += nb.eff
				r.cum[u] = append(r.cum[u], acc)
			}
		}
	}
	return r
}

// rootsIn returns the candidates of a split that still have a walk neighbour in it.
func (g *minerGraph) rootsIn(cands []int32) []int32 {
	var out []int32
	for _, c := range cands {
		if len(g.adj[c]) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// shapeFeatures are the statistics a shortcut classifier can read off a view's
// structure alone: nodes, edges, components, mean, maximum and standard deviation of
// the degree, leaves, and the root's degree.
func shapeFeatures(s *subgraph) []float64 {
	deg := make([]float64, len(s.nodes))
	for _, e := range s.edges {
		deg[e.u]++
		deg[e.v]++
	}
	n := float64(len(s.nodes))
	var sum, mx, leaves, rootDeg float64
	for i, d := range deg {
		sum += d
		mx = max(mx, d)
		if d == 1 {
			leaves++
		}
		if s.nodes[i] == s.root {
			rootDeg = d
		}
	}
	mean := sum / max(n, 1)
	var vr float64
	for _, d := range deg {
		vr += (d - mean) * (d - mean)
	}
	return []float64{n, float64(len(s.edges)), float64(components(s)), mean, mx, math.Sqrt(vr / max(n, 1)), leaves, rootDeg}
}

// shapeFeatureNames name shapeFeatures' columns.
var shapeFeatureNames = []string{"node_count", "edge_count", "components", "mean_degree", "max_degree", "degree_std", "leaves", "root_degree"}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Node types of the scorer's input, as the reference's vocabulary (entity 0, chunk 1,
// other 2): the root of a subgraph is marked "other" so that the scorer knows where
// its walks started (not in the paper, whose subgraphs carry entity types only).
const (
	nodeTypeRoot = 2
	numNodeTypes = 3
)
