package retrieve

import (
	"context"
	"math"
	"runtime"
	"slices"
	"strings"

	"github.com/kljensen/snowball/english"

	"github.com/graphloom/graphloom/graphio"
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

// Analyzer turns text into index terms: its words (lower case, NFC, combining marks
// kept in their words) without stopwords, Snowball (Porter2) English stems when Stem
// is set.
type Analyzer struct {
	Stem bool
}

// Terms returns the terms of text.
func (a Analyzer) Terms(text string) []string {
	ws := words(text)
	if a.Stem {
		for i, w := range ws {
			ws[i] = english.Stem(w, false) // leaves words of one or two letters and non-Latin words alone
		}
	}
	return ws
}

// words returns the words of text that are not stopwords: in Unicode NFC, lower
// case, runs of letters, digits and combining marks (graphio.TextWords). A mark continues
// its word, as in Unicode's word boundaries (UAX #29): splitting there cut Devanagari
// and Thai words at every vowel sign, Arabic at every haraka, and a decomposed "u" +
// U+0308 out of "Südhof". NFC makes the decomposed and the precomposed "ü" one term.
func words(text string) []string {
	var out []string
	for _, w := range graphio.TextWords(text) {
		if !stopwords[w] {
			out = append(out, w)
		}
	}
	return out
}

// lexIndex is an Okapi BM25 inverted index over a list of texts (chunks, facts,
// entity names or hyperedges): postings built in memory, or stored ones read in
// place (decodeBM25).
type lexIndex struct {
	postings map[string][]posting // nil when stored is set
	stored   *storedPostings
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
	idx := &lexIndex{docLen: make([]float64, len(texts)), an: an, k1: k1, b: b}
	var total float64
	workers := runtime.GOMAXPROCS(0)
	// Texts are split into words a block at a time on every core. Each distinct word
	// gets an id and is stemmed once (the block's new words on every core: stemming is
	// most of the cost, and a corpus repeats its words); then the texts are added in
	// order, counting terms by id, so the postings are those of a sequential pass.
	const block = 4096
	wordID := map[string]int32{}
	var termOf []int32 // word id → term id
	termID := map[string]int32{}
	var terms []string    // term id → term
	var lists [][]posting // term id → postings
	var counts []int32    // term id → occurrences in the current text
	var fresh, freshTerms []string
	ws := make([][]string, min(block, len(texts)))
	ids := make([][]int32, min(block, len(texts)))
	for lo := 0; lo < len(texts); lo += block {
		hi := min(lo+block, len(texts))
		parallel(hi-lo, workers, 64, func(i int) { ws[i] = words(texts[lo+i]) })
		fresh = fresh[:0]
		for i, doc := range ws[:hi-lo] {
			ids[i] = slices.Grow(ids[i][:0], len(doc))
			for _, w := range doc {
				id, added := intern(wordID, w)
				if added {
					fresh = append(fresh, w)
				}
				ids[i] = append(ids[i], id)
			}
		}
		freshTerms = append(freshTerms[:0], fresh...)
		if an.Stem {
			parallel(len(fresh), workers, 256, func(j int) { freshTerms[j] = english.Stem(fresh[j], false) })
		}
		for _, t := range freshTerms {
			tid, added := intern(termID, t)
			if added {
				terms = append(terms, t)
				lists = append(lists, nil)
				counts = append(counts, 0)
			}
			termOf = append(termOf, tid)
		}
		for i := lo; i < hi; i++ {
			doc := ids[i-lo]
			for _, id := range doc {
				counts[termOf[id]]++
			}
			// Terms in order of first occurrence, as a sequential pass adds them.
			for _, id := range doc {
				if tid := termOf[id]; counts[tid] > 0 {
					lists[tid] = append(lists[tid], posting{int32(i), counts[tid]})
					counts[tid] = 0
				}
			}
			idx.docLen[i] = float64(len(doc))
			total += float64(len(doc))
		}
	}
	idx.postings = make(map[string][]posting, len(terms))
	for tid, t := range terms {
		idx.postings[t] = lists[tid]
	}
	if len(texts) > 0 {
		idx.avgLen = total / float64(len(texts))
	}
	return idx
}

// intern returns the id of s in m, giving a new s the next id (added true).
func intern(m map[string]int32, s string) (id int32, added bool) {
	if id, ok := m[s]; ok {
		return id, false
	}
	id = int32(len(m))
	m[s] = id
	return id, true
}

// parallel calls f(i) for every i < n on up to workers goroutines, each with a
// contiguous range of at least grain indices.
func parallel(n, workers, grain int, f func(i int)) {
	inRanges(n, min(workers, (n+grain-1)/grain), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			f(i)
		}
	})
}

// lookup returns the postings of term t, in document order.
func (idx *lexIndex) lookup(t string) []posting {
	if idx.stored != nil {
		return idx.stored.lookup(t)
	}
	return idx.postings[t]
}

// scores returns the Okapi BM25 score of every text for the query, with the
// Lucene-style IDF log(1 + (N − df + 0.5)/(df + 0.5)), which is never negative. A
// query term counts once however often the query repeats it.
func (idx *lexIndex) scores(q string) []float64 { return idx.scoresInto(nil, q) }

// scoresInto is scores in a vector from sc.
func (idx *lexIndex) scoresInto(sc *scratch, q string) []float64 {
	n := float64(len(idx.docLen))
	scores := sc.f64z(len(idx.docLen))
	seen := map[string]bool{}
	for _, t := range idx.an.Terms(q) {
		if seen[t] {
			continue
		}
		ps := idx.lookup(t)
		if len(ps) == 0 {
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

// bm25Index is the BM25 index of chunk contents (title and text): the postings the
// index stores (StoreBM25) when they were computed from these chunks with this
// analyzer, else built from the chunks.
func (s *Searcher) bm25Index() *lexIndex {
	s.bm25Once.Do(func() { s.bm25 = chunkCorpus(s.ix).index(s.ix, s.analyzer(), s.cfg.BM25K1, s.cfg.BM25B) })
	return s.bm25
}

// bm25Scores returns the BM25 score of every chunk for the query.
func (s *Searcher) bm25Scores(sc *scratch, q string) []float64 {
	return s.bm25Index().scoresInto(sc, q)
}

type bm25Retriever struct{ s *Searcher }

func (r bm25Retriever) Name() string { return "bm25" }

func (r bm25Retriever) Retrieve(_ context.Context, q string, k int) (Result, error) {
	return Result{Passages: r.s.passages(r.s.bm25Scores(nil, q), k)}, nil
}
