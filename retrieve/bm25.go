package retrieve

import (
	"context"
	"math"
	"strings"
	"unicode"
)

// bm25Index is an inverted index of chunk contents (title and text).
type bm25Index struct {
	postings map[string][]posting
	docLen   []float64
	avgLen   float64
}

type posting struct {
	doc int32
	tf  int32
}

// stopwords are dropped from queries and documents.
var stopwords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an the and or of to in on at by for from with as is was are were be been being
		it its this that these those which who whom whose what when where why how did do does has have had not no
		than then there their they them he she his her him i you we our your my me us into over under about after
		before between during also but if so such can could would should will shall may might must`) {
		stopwords[w] = true
	}
}

// terms lower-cases text and splits it into letter/digit runs, without stopwords.
func terms(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !stopwords[w] {
			out = append(out, w)
		}
	}
	return out
}

func (s *Searcher) bm25Index() *bm25Index {
	s.bm25Once.Do(func() {
		idx := &bm25Index{postings: map[string][]posting{}, docLen: make([]float64, len(s.ix.Chunks))}
		var total float64
		for i := range s.ix.Chunks {
			tf := map[string]int32{}
			ts := terms(s.ix.Chunks[i].Content())
			for _, t := range ts {
				tf[t]++
			}
			for t, n := range tf {
				idx.postings[t] = append(idx.postings[t], posting{int32(i), n})
			}
			idx.docLen[i] = float64(len(ts))
			total += float64(len(ts))
		}
		if len(s.ix.Chunks) > 0 {
			idx.avgLen = total / float64(len(s.ix.Chunks))
		}
		s.bm25 = idx
	})
	return s.bm25
}

// bm25Scores returns the Okapi BM25 score of every chunk for the query, with the
// Lucene-style IDF log(1 + (N − df + 0.5)/(df + 0.5)), which is never negative.
func (s *Searcher) bm25Scores(q string) []float64 {
	idx := s.bm25Index()
	n := float64(len(idx.docLen))
	scores := make([]float64, len(idx.docLen))
	k1, b := s.cfg.BM25K1, s.cfg.BM25B
	for _, t := range terms(q) {
		ps := idx.postings[t]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := 1 - b
			if idx.avgLen > 0 {
				norm += b * idx.docLen[p.doc] / idx.avgLen
			}
			scores[p.doc] += idf * tf * (k1 + 1) / (tf + k1*norm)
		}
	}
	return scores
}

type bm25Retriever struct{ s *Searcher }

func (r bm25Retriever) Name() string { return "bm25" }

func (r bm25Retriever) Retrieve(_ context.Context, q string, k int) (Result, error) {
	return Result{Passages: r.s.passages(r.s.bm25Scores(q), k)}, nil
}
