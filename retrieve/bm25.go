package retrieve

import (
	"context"
	"math"
	"runtime"
	"strings"
	"sync"
	"unicode"

	"github.com/kljensen/snowball/english"
)

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

// Analyzer turns text into index terms: lower-cased letter/digit runs without
// stopwords, Snowball (Porter2) English stems when Stem is set.
type Analyzer struct {
	Stem bool
}

// Terms returns the terms of text.
func (a Analyzer) Terms(text string) []string { return a.terms(text, nil) }

// terms is Terms with the stems of words remembered in memo (nil: none): stemming is
// most of the cost of indexing a corpus, and its words repeat.
func (a Analyzer) terms(text string, memo map[string]string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if stopwords[w] {
			continue
		}
		if a.Stem {
			s, ok := memo[w]
			if !ok {
				// english.Stem leaves words of one or two letters and non-Latin words alone.
				s = english.Stem(w, false)
				if memo != nil {
					memo[w] = s
				}
			}
			w = s
		}
		out = append(out, w)
	}
	return out
}

// lexIndex is an Okapi BM25 inverted index over a list of texts (chunks, facts,
// entity names or hyperedges).
type lexIndex struct {
	postings map[string][]posting
	docLen   []float64
	avgLen   float64
	an       Analyzer
	k1, b    float64
}

type posting struct {
	doc int32
	tf  int32
}

func newLexIndex(texts []string, an Analyzer, k1, b float64) *lexIndex {
	idx := &lexIndex{postings: map[string][]posting{}, docLen: make([]float64, len(texts)), an: an, k1: k1, b: b}
	var total float64
	workers := runtime.GOMAXPROCS(0)
	memos := make([]map[string]string, workers)
	for w := range memos {
		memos[w] = map[string]string{}
	}
	// Texts are analysed a block at a time on every core (each with its own stem
	// memo), then added in order, so the postings are those of a sequential pass.
	const block = 4096
	terms := make([][]string, min(block, len(texts)))
	for lo := 0; lo < len(texts); lo += block {
		hi := min(lo+block, len(texts))
		var wg sync.WaitGroup
		n := min(workers, (hi-lo+63)/64)
		for w := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := lo + w; i < hi; i += n {
					terms[i-lo] = an.terms(texts[i], memos[w])
				}
			}()
		}
		wg.Wait()
		for i := lo; i < hi; i++ {
			ts := terms[i-lo]
			tf := map[string]int32{}
			for _, t := range ts {
				tf[t]++
			}
			for t, n := range tf {
				idx.postings[t] = append(idx.postings[t], posting{int32(i), n})
			}
			idx.docLen[i] = float64(len(ts))
			total += float64(len(ts))
		}
	}
	if len(texts) > 0 {
		idx.avgLen = total / float64(len(texts))
	}
	return idx
}

// scores returns the Okapi BM25 score of every text for the query, with the
// Lucene-style IDF log(1 + (N − df + 0.5)/(df + 0.5)), which is never negative. A
// query term counts once however often the query repeats it.
func (idx *lexIndex) scores(q string) []float64 {
	n := float64(len(idx.docLen))
	scores := make([]float64, len(idx.docLen))
	seen := map[string]bool{}
	for _, t := range idx.an.Terms(q) {
		ps := idx.postings[t]
		if len(ps) == 0 || seen[t] {
			continue
		}
		seen[t] = true
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := 1 - idx.b
			if idx.avgLen > 0 {
				norm += idx.b * idx.docLen[p.doc] / idx.avgLen
			}
			scores[p.doc] += idf * tf * (idx.k1 + 1) / (tf + idx.k1*norm)
		}
	}
	return scores
}

func (s *Searcher) analyzer() Analyzer { return Analyzer{Stem: s.cfg.Stem} }

// bm25Index is the BM25 index of chunk contents (title and text).
func (s *Searcher) bm25Index() *lexIndex {
	s.bm25Once.Do(func() {
		texts := make([]string, len(s.ix.Chunks))
		for i := range s.ix.Chunks {
			texts[i] = s.ix.Chunks[i].Content()
		}
		s.bm25 = newLexIndex(texts, s.analyzer(), s.cfg.BM25K1, s.cfg.BM25B)
	})
	return s.bm25
}

// bm25Scores returns the BM25 score of every chunk for the query.
func (s *Searcher) bm25Scores(q string) []float64 { return s.bm25Index().scores(q) }

type bm25Retriever struct{ s *Searcher }

func (r bm25Retriever) Name() string { return "bm25" }

func (r bm25Retriever) Retrieve(_ context.Context, q string, k int) (Result, error) {
	return Result{Passages: r.s.passages(r.s.bm25Scores(q), k)}, nil
}
