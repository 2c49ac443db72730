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

// stemSignature is what stemming leaves of a name for sure: its words' count and each
// word's first two letters (Porter2 changes a word from its third letter on, apart
// from the apostrophes it strips from its start and "dying", "lying" and "tying"; checked
// on the 185K entity names of the 2Wiki 30K corpus).
func stemSignature(name string) string {
	var b []byte
	for w := range strings.FieldsSeq(name) {
		w = strings.TrimLeft(w, "'")
		switch w {
		case "dying", "lying", "tying":
			w = w[:1] + "i"
		}
		n := 0
		for i := range w {
			if n == 2 {
				w = w[:i]
				break
			}
			n++
		}
		b = append(append(b, w...), ' ')
	}
	return string(b)
}

// addStemSynonyms links, through b (a synonym builder of the index), with a synonym
// edge of weight 1, entities (index ≥ from) whose names differ only in inflection —
// same stem key — as entity resolution by normalisation; names shorter than
// cfg.SynonymMinAlnum are skipped as in AddSynonyms. It returns the number of new
// edges.
func addStemSynonyms(b *graphio.Builder, from int, cfg Config) int {
	ix := b.Index()
	// Stemming changes a word's ending only, so two names with one stem key have the
	// same words' count and first letters: with from > 0, only the old names that
	// share that with a new one are stemmed (stemming every name was most of an
	// incremental add's synonym search).
	var want map[string]bool
	if from > 0 {
		want = map[string]bool{}
		for _, e := range ix.Entities[from:] {
			want[stemSignature(e.Name)] = true
		}
	}
	groups := map[string][]int32{}
	for i := range ix.Entities {
		name := ix.Entities[i].Name
		if graphio.AlnumLen(name) < cfg.SynonymMinAlnum || want != nil && !want[stemSignature(name)] {
			continue
		}
		k := stemKey(name)
		groups[k] = append(groups[k], int32(i))
	}
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
