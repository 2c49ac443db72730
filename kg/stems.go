package kg

import (
	"maps"
	"slices"
	"strings"

	"github.com/kljensen/snowball/english"

	"github.com/graphloom/graphloom/graphio"
)

// stemKey is an entity name with every word reduced to its Snowball (Porter2)
// English stem: "harbour towns" and "harbour town" share "harbour town",
// "lamplighters guild" and "lamplighter guild" share "lamplight guild".
func stemKey(name string) string {
	ws := strings.Fields(name)
	for i, w := range ws {
		ws[i] = english.Stem(w, false)
	}
	return strings.Join(ws, " ")
}

// addStemSynonyms links, with a synonym edge of weight 1, entities (index ≥ from)
// whose names differ only in inflection — same stem key — as entity resolution by
// normalisation; names shorter than cfg.SynonymMinAlnum are skipped as in
// AddSynonyms. It returns the number of new edges.
func addStemSynonyms(ix *graphio.Index, run string, from int, cfg Config) int {
	groups := map[string][]int32{}
	for i := range ix.Entities {
		name := ix.Entities[i].Name
		if graphio.AlnumLen(name) < cfg.SynonymMinAlnum {
			continue
		}
		k := stemKey(name)
		groups[k] = append(groups[k], int32(i))
	}
	b := graphio.NewBuilder(ix, run)
	n := 0
	for _, k := range slices.Sorted(maps.Keys(groups)) { // in key order: the edge order is part of the index
		g := groups[k]
		for i, x := range g {
			for _, y := range g[i+1:] {
				if int(x) < from && int(y) < from {
					continue // linked by an earlier run
				}
				if b.AddSynonym(x, y, 1) {
					n++
				}
			}
		}
	}
	return n
}
