package augment

import (
	"math"
	"math/rand"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models/train"
)

// view is a subgraph presented to the scorer, with its label (1 = corrupted).
type view struct {
	sg    *subgraph
	label float32
	group int // views of the same root share a group (ranking accuracy)
	kind  string
}

// maskFacts returns a relation-missing view: min(|F| − MinFactEdges, max(1,
// round(|F|·ratio))) random fact edges removed; nil when |F| ≤ MinFactEdges.
func maskFacts(s *subgraph, cfg Config, rng *rand.Rand) *subgraph {
	var facts []int
	for i, e := range s.edges {
		if e.rel == relFact {
			facts = append(facts, i)
		}
	}
	if len(facts) <= cfg.MinFactEdges {
		return nil
	}
	k := min(len(facts)-cfg.MinFactEdges, max(1, int(math.Round(float64(len(facts))*cfg.FactMaskRatio))))
	rng.Shuffle(len(facts), func(i, j int) { facts[i], facts[j] = facts[j], facts[i] })
	drop := map[int]bool{}
	for _, i := range facts[:k] {
		drop[i] = true
	}
	out := &subgraph{root: s.root, nodes: s.nodes}
	for i, e := range s.edges {
		if !drop[i] {
			out.edges = append(out.edges, e)
		}
	}
	return out
}

// deleteEntities returns an entity-missing view: max(1, round(n·ratio)) random
// non-root entities that carry a fact edge removed with their edges; nil if none can
// be deleted or fewer than MinFactEdges fact edges would remain.
func deleteEntities(s *subgraph, cfg Config, rng *rand.Rand) *subgraph {
	hasFact := map[int32]bool{}
	for _, e := range s.edges {
		if e.rel == relFact {
			hasFact[e.u], hasFact[e.v] = true, true
		}
	}
	var cands []int32
	for i, n := range s.nodes {
		if n != s.root && hasFact[int32(i)] {
			cands = append(cands, int32(i))
		}
	}
	if len(cands) == 0 {
		return nil
	}
	k := min(len(cands), max(1, int(math.Round(float64(len(s.nodes))*cfg.EntityDeleteRatio))))
	rng.Shuffle(len(cands), func(i, j int) { cands[i], cands[j] = cands[j], cands[i] })
	del := map[int32]bool{}
	for _, c := range cands[:k] {
		del[c] = true
	}
	remap := make([]int32, len(s.nodes))
	out := &subgraph{root: s.root}
	for i, n := range s.nodes {
		if del[int32(i)] {
			remap[i] = -1
			continue
		}
		remap[i] = int32(len(out.nodes))
		out.nodes = append(out.nodes, n)
	}
	for _, e := range s.edges {
		if remap[e.u] >= 0 && remap[e.v] >= 0 {
			out.edges = append(out.edges, sedge{remap[e.u], remap[e.v], e.rel})
		}
	}
	if out.factEdges() < cfg.MinFactEdges {
		return nil
	}
	return out
}

// trainingGroup samples one root's views: a clean view (label 0) and the corrupted
// views of a separately sampled record (label 1). It returns nil when the root yields
// no clean view or no corrupted view.
func (g *minerGraph) trainingGroup(root int32, group int, cfg Config, rng *rand.Rand) []view {
	cleanWalks := cfg.CleanWalksPerRoot
	if cfg.SizeMatched {
		cleanWalks = cfg.WalksPerRoot
	}
	clean := g.sample(root, cleanWalks, cfg, rng)
	if clean == nil {
		return nil
	}
	rec := g.sample(root, cfg.WalksPerRoot, cfg, rng)
	if rec == nil {
		return nil
	}
	out := []view{{sg: clean, label: 0, group: group, kind: "clean"}}
	if m := maskFacts(rec, cfg, rng); m != nil {
		out = append(out, view{sg: m, label: 1, group: group, kind: "relation-missing"})
	}
	if !cfg.SizeMatched {
		if d := deleteEntities(rec, cfg, rng); d != nil {
			out = append(out, view{sg: d, label: 1, group: group, kind: "entity-missing"})
		}
	}
	if len(out) == 1 {
		return nil
	}
	return out
}

// sampleGroups draws training groups from roots until n groups are found or the
// attempts run out (max(20·n, 100), as in the reference).
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
	return out
}

// toGraph turns a subgraph into the scorer's input: entity embeddings as features,
// node type 0 (entity), every edge in both directions with its relation.
func toGraph(ix *graphio.Index, s *subgraph) *kernels.Graph {
	emb := ix.Embeddings[graphio.KindEntity]
	g := &kernels.Graph{NumNodes: len(s.nodes), NodeType: make([]int32, len(s.nodes)), X: make([]float32, 0, len(s.nodes)*emb.Dim)}
	for _, n := range s.nodes {
		g.X = append(g.X, emb.Row(int(n))...)
	}
	for _, e := range s.edges {
		g.Src = append(g.Src, e.u, e.v)
		g.Dst = append(g.Dst, e.v, e.u)
		g.EdgeType = append(g.EdgeType, int32(e.rel), int32(e.rel))
	}
	return g
}

// sizeBaselineAUC is the ROC-AUC of the classifier that calls smaller views corrupted
// (score = −nodes): the share of the signal a scorer could get from size alone.
func sizeBaselineAUC(views []view) float64 {
	scores := make([]float64, len(views))
	pos := make([]bool, len(views))
	for i, v := range views {
		scores[i] = -float64(len(v.sg.nodes))
		pos[i] = v.label == 1
	}
	return train.ROCAUC(scores, pos)
}
