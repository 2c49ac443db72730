package retrieve

import (
	"fmt"
	"strings"

	"github.com/graphloom/graphloom/graphio"
)

// Lexical modes for [Config.Lexical].
const (
	// LexicalAuto fuses BM25 with the dense scores when the index was embedded by the
	// built-in hashed embedder, and keeps the papers' pure dense scores when a real
	// embedding model made the vectors.
	LexicalAuto = "auto"
	// LexicalDense is the papers' path: dense scores only.
	LexicalDense = "dense"
	// LexicalFused always fuses BM25 with the dense scores.
	LexicalFused = "fused"
)

// lexicalOn reports whether passage and fact scores fuse BM25 in.
func (s *Searcher) lexicalOn() bool {
	switch s.cfg.Lexical {
	case LexicalFused:
		return true
	case LexicalDense:
		return false
	}
	return strings.HasPrefix(s.ix.Meta.Embedder, "hash-")
}

func validLexical(m string) error {
	switch m {
	case "", LexicalAuto, LexicalDense, LexicalFused:
		return nil
	}
	return fmt.Errorf("retrieve: lexical mode %q: want %s, %s or %s", m, LexicalAuto, LexicalDense, LexicalFused)
}

// fuse returns λ·minmax(lex) + (1−λ)·minmax(dense). A lexical vector with no match
// (all zeros) leaves the dense scores alone, so a question sharing no term with any
// text is ranked by the embedder as in the papers.
func fuse(dense, lex []float64, lambda float64) []float64 {
	d := minMax(dense)
	if allZero(lex) {
		return d
	}
	l := minMax(lex)
	out := make([]float64, len(d))
	for i := range d {
		out[i] = lambda*l[i] + (1-lambda)*d[i]
	}
	return out
}

func allZero(v []float64) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// passageScores are the scores that seed passages (and rank them when the graph
// cannot): min-max dense scores, fused with BM25 when lexical scoring is on.
func (s *Searcher) passageScores(q string, dense []float64) []float64 {
	if !s.lexicalOn() {
		return minMax(dense)
	}
	return fuse(dense, s.bm25Scores(q), s.cfg.LexicalWeight)
}

// factScores are the scores that link facts: min-max dense scores of the
// "subject predicate object" texts, fused, when lexical scoring is on, with BM25 over
// the facts' subject and object names (the lexical scores are returned too, nil when
// off). Predicates are left out of the lexical text: a question's generic words
// ("first", "director", "letter") match them and would link facts about anything.
func (s *Searcher) factScores(q string, dense []float64) (fused, lex []float64) {
	if !s.lexicalOn() {
		return minMax(dense), nil
	}
	s.factLexOnce.Do(func() {
		texts := make([]string, len(s.ix.Facts))
		for i := range s.ix.Facts {
			t := s.factTriple(int32(i))
			texts[i] = t[0] + " " + t[2]
		}
		s.factLex = newLexIndex(texts, s.analyzer(), s.cfg.BM25K1, s.cfg.BM25B)
	})
	lex = s.factLex.scores(q)
	return fuse(dense, lex, s.cfg.LexicalWeight), lex
}

// kindScores fuses dense similarities with BM25 over the texts of entities or
// hyperedges (hyperppr's vector searches), when lexical scoring is on; dense scores
// are returned unchanged otherwise.
func (s *Searcher) kindScores(k graphio.NodeKind, q string, dense []float64) []float64 {
	if !s.lexicalOn() {
		return dense
	}
	var idx *lexIndex
	switch k {
	case graphio.KindEntity:
		s.entLexOnce.Do(func() {
			texts := make([]string, len(s.ix.Entities))
			for i := range s.ix.Entities {
				texts[i] = s.ix.Entities[i].Name
			}
			s.entLex = newLexIndex(texts, s.analyzer(), s.cfg.BM25K1, s.cfg.BM25B)
		})
		idx = s.entLex
	case graphio.KindHyperedge:
		s.hypLexOnce.Do(func() {
			texts := make([]string, len(s.ix.Hyperedges))
			for i := range s.ix.Hyperedges {
				texts[i] = s.ix.Hyperedges[i].Text
			}
			s.hypLex = newLexIndex(texts, s.analyzer(), s.cfg.BM25K1, s.cfg.BM25B)
		})
		idx = s.hypLex
	default:
		return dense
	}
	return fuse(dense, idx.scores(q), s.cfg.LexicalWeight)
}

// final is the passage ranking of a graph retriever: the PPR mass of each passage,
// fused with BM25 when FinalBM25Weight > 0 (μ·minmax(BM25) + (1−μ)·minmax(PPR)).
func (s *Searcher) final(q string, ppr []float64) []float64 {
	mu := s.cfg.FinalBM25Weight
	if mu <= 0 || !s.lexicalOn() {
		return ppr
	}
	return fuse(ppr, s.bm25Scores(q), mu)
}
