package augment

import (
	"context"
	"fmt"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
)

// Added counts what a run added to the index (the paper's Table 1 columns).
type Added struct {
	Nodes      int `json:"nodes"`      // new entities
	Edges      int `json:"edges"`      // new fact pairs, synonym edges and entity–chunk edges
	Triples    int `json:"triples"`    // new facts
	Hyperedges int `json:"hyperedges"` // new hyperedges
	CrossChunk int `json:"cross_chunk_triples"`
}

// merge adds the accepted facts and hyperedges to ix as run: entities are created
// (tagged with the run) as needed, facts cite their chunks, entities gain mentions in
// those chunks, the new records are embedded with the index's embedder and new entities
// get synonym edges. Only appends, so ix.RemoveRun(run) undoes it exactly.
func merge(ctx context.Context, ix *graphio.Index, run string, facts []Accepted, hypers []AcceptedHyper, emb embed.Embedder, kcfg kg.Config) (Added, error) {
	var a Added
	oldEnt := len(ix.Entities)
	oldMentions := len(ix.Mentions)
	pairs := map[[2]int32]bool{}
	for _, f := range ix.Facts {
		pairs[pairKey(f.Subject, f.Object)] = true
	}
	b := graphio.NewBuilder(ix, run)
	for _, f := range facts {
		s, o := b.Entity(f.Triple[0], ""), b.Entity(f.Triple[2], "")
		if s < 0 || o < 0 || s == o {
			continue // validated already; normalisation made them collide
		}
		for _, c := range f.chunkIx {
			b.AddMention(s, c)
			b.AddMention(o, c)
		}
		if _, isNew, err := b.AddFactIDs(s, f.norm[1], o, f.chunkIx); err != nil {
			return a, fmt.Errorf("augment: merge: %w", err)
		} else if isNew {
			a.Triples++
			if len(f.chunkIx) >= 2 {
				a.CrossChunk++
			}
			if !pairs[pairKey(s, o)] {
				pairs[pairKey(s, o)] = true
				a.Edges++
			}
		}
	}
	for _, h := range hypers {
		var ents []int32
		for _, e := range h.Entities {
			if id := b.Entity(e, ""); id >= 0 {
				ents = append(ents, id)
			}
		}
		for _, c := range h.chunkIx {
			if _, isNew := b.AddHyperedge(h.Text, ents, c, float32(h.Score)); isNew {
				a.Hyperedges++
			}
		}
	}
	a.Nodes = len(ix.Entities) - oldEnt
	a.Edges += len(ix.Mentions) - oldMentions
	if err := kg.EmbedNew(ctx, ix, emb, kcfg.EmbedBatch); err != nil {
		return a, fmt.Errorf("augment: merge: %w", err)
	}
	n, err := kg.AddSynonyms(ix, run, oldEnt, kcfg)
	if err != nil {
		return a, fmt.Errorf("augment: merge: %w", err)
	}
	a.Edges += n
	return a, nil
}

// Rollback removes every record run added (see graphio.Index.RemoveRun).
func Rollback(ix *graphio.Index, run string) error {
	return ix.RemoveRun(run)
}
