package retrieve

import (
	"context"
	"encoding/csv"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// Textualisations of a PCST subgraph ([Config.PCSTText]).
const (
	// PCSTTextCSV is G-Retriever's: the nodes as CSV "node_id,node_attr", a blank
	// line, the edges as CSV "src,edge_attr,dst" (original node ids).
	PCSTTextCSV = "csv"
	// PCSTTextVerbal is SelfGraphRAG's (seed 001, Eq. 3): one "v_i [r] v_j" line per
	// edge, in edge-insertion order.
	PCSTTextVerbal = "verbal"
)

// pcstRetriever is G-Retriever's retrieval (seed 004; anchors §C.1): prizes on the
// question's most similar nodes and edges, a prize-collecting Steiner tree over the
// knowledge graph, returned textualised ("PCST as plain text") with the chunks its
// facts come from.
type pcstRetriever struct{ s *Searcher }

func (r pcstRetriever) Name() string { return "pcst" }

// pcstGraph is the question's candidate subgraph: entities (local → entity index) and
// facts between them.
type pcstGraph struct {
	ents  []int32
	local map[int32]int32
	facts []int32
}

// candidates restricts the knowledge graph to what PCST can reach from the question:
// the entities within PCSTHops fact edges of the PCSTSeeds entities most similar to the
// question, at most PCSTMaxNodes of them, in breadth-first order, and the facts between
// them. G-Retriever runs PCST over each question's own graph (WebQSP: about 1,300
// nodes); over a corpus-wide graph the restriction keeps a query in milliseconds.
func (s *Searcher) pcstCandidates(entScores []float64) pcstGraph {
	adj := s.factAdjacency()
	g := pcstGraph{local: map[int32]int32{}}
	add := func(e int32) bool {
		if _, ok := g.local[e]; ok || len(g.ents) >= s.cfg.PCSTMaxNodes {
			return false
		}
		g.local[e] = int32(len(g.ents))
		g.ents = append(g.ents, e)
		return true
	}
	var frontier []int32
	for _, nb := range kernels.TopK(toF32(nil, entScores), s.cfg.PCSTSeeds) {
		if add(nb.Index) {
			frontier = append(frontier, nb.Index)
		}
	}
	for hop := 0; hop < s.cfg.PCSTHops && len(frontier) > 0; hop++ {
		var next []int32
		for _, e := range frontier {
			for _, f := range adj[e] {
				x := &s.ix.Facts[f]
				for _, o := range []int32{x.Subject, x.Object} {
					if add(o) {
						next = append(next, o)
					}
				}
			}
		}
		frontier = next
	}
	for f := range s.ix.Facts {
		x := &s.ix.Facts[f]
		_, a := g.local[x.Subject]
		_, b := g.local[x.Object]
		if a && b && x.Subject != x.Object {
			g.facts = append(g.facts, int32(f))
		}
	}
	return g
}

// factAdjacency lists, per entity, the facts it is subject or object of.
func (s *Searcher) factAdjacency() [][]int32 {
	s.factAdjOnce.Do(func() {
		s.factAdj = make([][]int32, len(s.ix.Entities))
		for f := range s.ix.Facts {
			x := &s.ix.Facts[f]
			s.factAdj[x.Subject] = append(s.factAdj[x.Subject], int32(f))
			if x.Object != x.Subject {
				s.factAdj[x.Object] = append(s.factAdj[x.Object], int32(f))
			}
		}
	})
	return s.factAdj
}

// PCSTPrizes is G-Retriever's prize construction (retrieval_via_pcst): with topk
// clamped to the node count, the topk nodes by similarity get prizes topk, topk−1, …,
// 1; with topkE clamped to the number of distinct edge similarities, the edges holding
// one of the topkE largest distinct values get, for the k-th value shared by count_k
// edges, min((topkE − k)/count_k, last) with last shrinking by 1% after each value;
// the edge cost is then min(costE, max edge prize × 0.995).
func PCSTPrizes(nodeSim, edgeSim []float64, topk, topkE int, costE float64) (nodePrize, edgePrize []float64, cost float64) {
	nodePrize = make([]float64, len(nodeSim))
	topk = max(0, min(topk, len(nodeSim))) // retrieval.py: topk = min(topk, graph.num_nodes); none when ≤ 0
	for i, nb := range kernels.TopK(toF32(nil, nodeSim), topk) {
		nodePrize[nb.Index] = float64(topk - i)
	}
	edgePrize = make([]float64, len(edgeSim))
	if topkE <= 0 {
		return nodePrize, edgePrize, costE // retrieval.py lowers cost_e only inside its `if topk_e > 0`
	}
	const c = 0.01
	uniq := slices.Clone(edgeSim)
	slices.Sort(uniq)
	uniq = slices.Compact(uniq)
	slices.Reverse(uniq)
	topkE = min(topkE, len(uniq)) // retrieval.py: topk_e = min(topk_e, e_prizes.unique().size(0))
	uniq = uniq[:topkE]
	last := float64(topkE)
	for k, v := range uniq {
		count := 0
		for _, x := range edgeSim {
			if x == v {
				count++
			}
		}
		value := min(float64(topkE-k)/float64(count), last)
		for i, x := range edgeSim {
			if x == v {
				edgePrize[i] = value
			}
		}
		last = value * (1 - c)
	}
	maxPrize := 0.0
	for _, p := range edgePrize {
		maxPrize = max(maxPrize, p)
	}
	return nodePrize, edgePrize, min(costE, maxPrize*(1-c/2))
}

// PCST prize profiles (PCSTProfiles): topk, topk_e and cost_e as each source calls
// retrieval_via_pcst.
const (
	// PCSTProfileGRetriever is G-Retriever's WebQSP call: topk 3, topk_e 5, cost_e 0.5.
	PCSTProfileGRetriever = "g-retriever"
	// PCSTProfileSeed004 is seed 004's: top-k nodes 15, edges 20, cost_e 0.5.
	PCSTProfileSeed004 = "seed004"
)

// PCSTProfile is one prize setting.
type PCSTProfile struct {
	TopK, TopKEdges int
	EdgeCost        float64
}

// PCSTProfiles are the named prize settings.
var PCSTProfiles = map[string]PCSTProfile{
	PCSTProfileGRetriever: {TopK: 3, TopKEdges: 5, EdgeCost: 0.5},
	PCSTProfileSeed004:    {TopK: 15, TopKEdges: 20, EdgeCost: 0.5},
}

// PCSTSubgraph is a question's PCST subgraph: the kept entities and facts (index
// ids, ascending: facts in edge-insertion order) and the subgraph textualised as
// Config.PCSTText asks.
type PCSTSubgraph struct {
	Entities, Facts []int32
	Text            string
	factScores      []float64 // every fact's similarity to the question
}

// PCST retrieves the question's subgraph the way the pcst retriever does (G-Retriever's
// retrieval_via_pcst over the candidates of pcstCandidates), edge prizes from the
// similarity of the question to each fact (its full triple's embedding, fused with
// BM25 as the retriever's lexical setting says).
func (s *Searcher) PCST(ctx context.Context, q string) (PCSTSubgraph, error) {
	return s.pcst(ctx, q, false)
}

// PCSTByRelation is PCST with G-Retriever's edge prizes: the cosine similarity of the
// question to the embedding of each fact's relation text alone (its edge_attr,
// RelationVectors), the text its encoder's edge features are made from.
func (s *Searcher) PCSTByRelation(ctx context.Context, q string) (PCSTSubgraph, error) {
	return s.pcst(ctx, q, true)
}

func (s *Searcher) pcst(ctx context.Context, q string, byRelation bool) (PCSTSubgraph, error) {
	if len(s.ix.Facts) == 0 || s.ix.Embeddings[graphio.KindEntity] == nil || s.ix.Embeddings[graphio.KindFact] == nil {
		return PCSTSubgraph{}, fmt.Errorf("retrieve: pcst needs facts and entity and fact embeddings; the index has none")
	}
	qv, err := s.embedQuery(ctx, s.cfg.QueryToFact, q)
	if err != nil {
		return PCSTSubgraph{}, err
	}
	// The subgraph keeps the fact scores: fresh vectors (a nil scratch).
	entFusion, _ := s.kindFusion(nil, graphio.KindEntity, q, s.scores(nil, graphio.KindEntity, qv))
	entScores := entFusion.all(nil)
	factFusion, _ := s.factFusion(nil, q, s.scores(nil, graphio.KindFact, qv))
	factScores := factFusion.all(nil)
	g := s.pcstCandidates(entScores)
	nodeSim := make([]float64, len(g.ents))
	for i, e := range g.ents {
		nodeSim[i] = entScores[e]
	}
	edgeSim := make([]float64, len(g.facts))
	if byRelation {
		preds := make([]string, len(g.facts))
		for i, f := range g.facts {
			preds[i] = s.ix.Facts[f].Predicate
		}
		vecs, err := s.RelationVectors(ctx, preds)
		if err != nil {
			return PCSTSubgraph{}, err
		}
		for i, v := range vecs {
			edgeSim[i] = Cosine(qv, v)
		}
	} else {
		for i, f := range g.facts {
			edgeSim[i] = factScores[f]
		}
	}
	if len(g.facts) == 0 {
		// G-Retriever: an empty edge table returns the whole graph.
		ents := slices.Sorted(slices.Values(g.ents))
		return PCSTSubgraph{Entities: ents, Text: s.Textualise(ents, nil, s.cfg.PCSTText), factScores: factScores}, nil
	}
	nodePrize, edgePrize, cost := PCSTPrizes(nodeSim, edgeSim, s.cfg.PCSTTopK, s.cfg.PCSTTopKEdges, s.cfg.PCSTEdgeCost)
	// Edges worth more than their cost become virtual nodes with two free edges.
	prizes := slices.Clone(nodePrize)
	var edges []kernels.PCSTEdge
	var edgeFact []int32 // PCST edge → fact (virtual halves too)
	for i, f := range g.facts {
		x := &s.ix.Facts[f]
		u, v := g.local[x.Subject], g.local[x.Object]
		if edgePrize[i] <= cost {
			edges = append(edges, kernels.PCSTEdge{U: u, V: v, Cost: cost - edgePrize[i]})
			edgeFact = append(edgeFact, f)
			continue
		}
		virt := int32(len(prizes))
		prizes = append(prizes, edgePrize[i]-cost)
		edges = append(edges, kernels.PCSTEdge{U: u, V: virt}, kernels.PCSTEdge{U: virt, V: v})
		edgeFact = append(edgeFact, f, f)
	}
	nodes, sel, err := kernels.PCST(prizes, edges, 1, kernels.PruneGW)
	if err != nil {
		return PCSTSubgraph{}, fmt.Errorf("retrieve: %w", err)
	}
	keepEnt := map[int32]bool{}
	for _, v := range nodes {
		if int(v) < len(g.ents) {
			keepEnt[g.ents[v]] = true
		}
	}
	keepFact := map[int32]bool{}
	for _, e := range sel {
		f := edgeFact[e]
		keepFact[f] = true
		keepEnt[s.ix.Facts[f].Subject], keepEnt[s.ix.Facts[f].Object] = true, true
	}
	// A selected virtual node keeps its fact even when PCST pruned both halves' edges.
	for _, v := range nodes {
		if int(v) >= len(g.ents) {
			for e, f := range edgeFact {
				if edges[e].V == v || edges[e].U == v {
					keepFact[f] = true
					keepEnt[s.ix.Facts[f].Subject], keepEnt[s.ix.Facts[f].Object] = true, true
				}
			}
		}
	}
	facts := slices.Sorted(mapKeys(keepFact)) // edge-insertion order
	ents := slices.Sorted(mapKeys(keepEnt))
	return PCSTSubgraph{Entities: ents, Facts: facts, Text: s.Textualise(ents, facts, s.cfg.PCSTText), factScores: factScores}, nil
}

func (r pcstRetriever) Retrieve(ctx context.Context, q string, k int) (Result, error) {
	sg, err := r.s.PCST(ctx, q)
	if err != nil {
		return Result{}, err
	}
	return r.s.PCSTResult(sg, k), nil
}

// PCSTResult is the pcst retriever's result for a subgraph from PCST: its text, its
// facts, and the top k chunks stating them.
func (s *Searcher) PCSTResult(sg PCSTSubgraph, k int) Result {
	facts, factScores := sg.Facts, sg.factScores
	res := Result{Subgraph: sg.Text}
	// Passages: the chunks stating the kept facts, by the summed similarity of their facts.
	chunkScore := map[int32]float64{}
	for _, f := range facts {
		res.Facts = append(res.Facts, s.factTriple(f))
		for _, c := range s.ix.Facts[f].Chunks {
			chunkScore[c] += math.Max(factScores[f], 1e-9)
		}
	}
	chunks := slices.Collect(func(yield func(int32) bool) {
		for c := range chunkScore {
			if !yield(c) {
				return
			}
		}
	})
	slices.SortFunc(chunks, func(a, b int32) int {
		if d := chunkScore[b] - chunkScore[a]; d != 0 {
			if d > 0 {
				return 1
			}
			return -1
		}
		return int(a - b)
	})
	for _, c := range chunks[:min(k, len(chunks))] {
		res.Passages = append(res.Passages, s.passage(c, chunkScore[c]))
	}
	return res
}

func mapKeys(m map[int32]bool) func(yield func(int32) bool) {
	return func(yield func(int32) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// PCSTTextForm is the textualisation PCST writes into PCSTSubgraph.Text.
func (s *Searcher) PCSTTextForm() string {
	if s.cfg.PCSTText == PCSTTextVerbal {
		return PCSTTextVerbal
	}
	return PCSTTextCSV
}

// Textualise writes the subgraph of the given entities and facts (index ids) in the
// form PCSTTextCSV or PCSTTextVerbal.
func (s *Searcher) Textualise(ents, facts []int32, form string) string {
	var b strings.Builder
	if form == PCSTTextVerbal {
		for _, f := range facts {
			x := &s.ix.Facts[f]
			fmt.Fprintf(&b, "%s [%s] %s\n", s.ix.Entities[x.Subject].Name, x.Predicate, s.ix.Entities[x.Object].Name)
		}
		return b.String()
	}
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"node_id", "node_attr"})
	for _, e := range ents {
		_ = w.Write([]string{strconv.Itoa(int(e)), s.ix.Entities[e].Name})
	}
	w.Flush()
	b.WriteString("\n")
	w = csv.NewWriter(&b)
	_ = w.Write([]string{"src", "edge_attr", "dst"})
	for _, f := range facts {
		x := &s.ix.Facts[f]
		_ = w.Write([]string{strconv.Itoa(int(x.Subject)), x.Predicate, strconv.Itoa(int(x.Object))})
	}
	w.Flush()
	return b.String()
}
