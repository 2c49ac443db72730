package augment

import (
	"math/rand"
	"slices"
	"sort"

	"github.com/graphloom/graphloom/graphio"
)

// candidate is a scored inference subgraph.
type candidate struct {
	sg    *subgraph
	score float64 // the ensemble's probability, against Threshold
	logit float64 // its log-odds, the ranking (keeps its order where score rounds to 1)
}

// Selected is a subgraph chosen for completion, with its evidence.
type Selected struct {
	Root     string     `json:"root"`
	Score    float64    `json:"score"`
	Entities []string   `json:"entities"`
	Known    [][]string `json:"known_triples"`
	Chunks   []string   `json:"evidence_chunks"` // chunk ids
	sg       *subgraph
	chunkIx  []int32
}

// selectSubgraphs keeps subgraphs by descending score with score ≥ Threshold, skips
// any whose node-Jaccard with an already selected one exceeds MaxJaccard or that has
// no evidence chunk, and stops at the budget (anchors §D.6). With RandomSelector the
// order is random, with FactsSelector by descending number of facts (ties in
// sampling order), and the threshold is not applied.
func selectSubgraphs(ix *graphio.Index, cands []candidate, budget int, cfg Config) []Selected {
	order := slices.Clone(cands)
	switch {
	case cfg.RandomSelector:
		rng := rand.New(rand.NewSource(cfg.Seed + 7))
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	case cfg.FactsSelector:
		facts := make(map[*subgraph]int, len(order))
		for _, c := range order {
			facts[c.sg] = c.sg.factEdges()
		}
		sort.SliceStable(order, func(i, j int) bool { return facts[order[i].sg] > facts[order[j].sg] })
	default:
		sort.SliceStable(order, func(i, j int) bool { return order[i].logit > order[j].logit })
	}
	byScore := !cfg.RandomSelector && !cfg.FactsSelector
	ev := newEvidenceIndex(ix)
	var out []Selected
	for _, c := range order {
		if len(out) >= budget {
			break
		}
		if byScore && c.score < cfg.Threshold {
			break
		}
		overlap := false
		for _, s := range out {
			if jaccard(s.sg.nodes, c.sg.nodes) > cfg.MaxJaccard {
				overlap = true
				break
			}
		}
		if overlap {
			continue
		}
		sel := ev.collect(c.sg, cfg)
		if len(sel.chunkIx) == 0 {
			continue
		}
		sel.Score = c.score
		out = append(out, sel)
	}
	return out
}

// evidenceIndex finds the facts behind a pair of entities.
type evidenceIndex struct {
	ix     *graphio.Index
	byPair map[[2]int32][]int32 // entity pair → facts joining it
}

func newEvidenceIndex(ix *graphio.Index) *evidenceIndex {
	e := &evidenceIndex{ix: ix, byPair: map[[2]int32][]int32{}}
	for i, f := range ix.Facts {
		k := pairKey(f.Subject, f.Object)
		e.byPair[k] = append(e.byPair[k], int32(i))
	}
	return e
}

// collect gathers a subgraph's evidence: for each fact edge inside it, the facts
// joining the pair give known triples (≤ MaxKnownTriples) and their chunks, in order of
// provenance (≤ MaxEvidenceChunks) (anchors §D.6).
func (e *evidenceIndex) collect(s *subgraph, cfg Config) Selected {
	ix := e.ix
	sel := Selected{Root: ix.Entities[s.root].Name, sg: s}
	for i, n := range s.nodes {
		if i == cfg.MaxPromptEntities {
			break
		}
		sel.Entities = append(sel.Entities, ix.Entities[n].Name)
	}
	seenChunk := map[int32]bool{}
	seenFact := map[int32]bool{}
	for _, ed := range s.edges {
		if ed.rel != relFact {
			continue
		}
		for _, f := range e.byPair[pairKey(s.nodes[ed.u], s.nodes[ed.v])] {
			if seenFact[f] {
				continue
			}
			seenFact[f] = true
			fact := &ix.Facts[f]
			if len(sel.Known) < cfg.MaxKnownTriples {
				sel.Known = append(sel.Known, []string{ix.Entities[fact.Subject].Name, fact.Predicate, ix.Entities[fact.Object].Name})
			}
			for _, c := range fact.Chunks {
				if !seenChunk[c] && len(sel.chunkIx) < cfg.MaxEvidenceChunks {
					seenChunk[c] = true
					sel.chunkIx = append(sel.chunkIx, c)
					sel.Chunks = append(sel.Chunks, ix.Chunks[c].ID)
				}
			}
		}
	}
	return sel
}
