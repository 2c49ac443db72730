package retrieve

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
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
	return embed.IsHashed(s.ix.Meta.Embedder)
}

func validLexical(m string) error {
	switch m {
	case "", LexicalAuto, LexicalDense, LexicalFused:
		return nil
	}
	return fmt.Errorf("retrieve: lexical mode %q: want %s, %s or %s", m, LexicalAuto, LexicalDense, LexicalFused)
}

// CheckPCSTText rejects an unknown PCST textualisation ("" is PCSTTextCSV).
func CheckPCSTText(m string) error {
	switch m {
	case "", PCSTTextCSV, PCSTTextVerbal:
		return nil
	}
	return fmt.Errorf("retrieve: pcst textualisation %q: want %s or %s", m, PCSTTextCSV, PCSTTextVerbal)
}

func validFusion(m string) error {
	switch m {
	case "", FusionRRF, FusionLinear:
		return nil
	}
	return fmt.Errorf("retrieve: final fusion %q: want %s or %s", m, FusionRRF, FusionLinear)
}

// fuse returns λ·minmax(lex) + (1−λ)·minmax(dense). A lexical vector with no match
// (all zeros) leaves the dense scores alone, so a question sharing no term with any
// text is ranked by the embedder as in the papers.
func fuse(sc *scratch, dense, lex []float64, lambda float64) []float64 {
	if allZero(lex) || len(dense) == 0 {
		return minMaxFlatToOne(sc, dense)
	}
	dlo, dhi := bounds(dense)
	llo, lhi := bounds(lex)
	out := sc.f64(len(dense))
	for i, d := range dense {
		out[i] = mix(lambda, unitScale(lex[i], llo, lhi), unitScale(d, dlo, dhi))
	}
	return out
}

// mix is fuse's λ·l + (1−λ)·d of two min-max normalised scores (kernels.Mix).
func mix(lambda, l, d float64) float64 { return kernels.Mix(lambda, l, d) }

// fusion is fuse over float32 dense scores evaluated an entry at a time (at), or into
// a vector (all, all32): the values fuse gives over the widened scores, bit for bit (a
// float32 widens exactly, and its bounds are Bounds32's), without the node-sized
// float64 copies in between. A linking step needs the float32 roundings of every
// fact's score for its top k and the exact scores of those k alone: over 465K facts
// (120K passages) fuse's path wrote and read four vectors of them a question.
type fusion struct {
	dense []float32
	lex   []float64 // nil: the dense scores' min-max alone
	mix   kernels.UnitMix
	raw   bool // the dense scores as they are (rawFusion)
}

// rawFusion leaves the dense scores as they are.
func rawFusion(dense []float32) *fusion { return &fusion{dense: dense, raw: true} }

// newFusion fuses the dense scores with lex (nil: lexical scoring is off) at weight
// lambda; a lexical vector of zeros leaves the dense scores alone, as fuse does.
func newFusion(dense []float32, lex []float64, lambda float64) *fusion {
	f := &fusion{dense: dense, mix: kernels.UnitMix{Lambda: lambda}}
	if len(dense) == 0 {
		return f
	}
	f.mix.ALo, f.mix.AHi = kernels.Bounds32(dense)
	if lex != nil && !allZero(lex) {
		f.lex = lex
		f.mix.BLo, f.mix.BHi = bounds(lex)
	}
	return f
}

// at is entry i's fused score.
func (f *fusion) at(i int) float64 {
	switch {
	case f.raw:
		return float64(f.dense[i])
	case f.lex == nil:
		return f.mix.At(f.dense[i], 0, false)
	}
	return f.mix.At(f.dense[i], f.lex[i], true)
}

// all returns every entry's fused score, all32 their float32 roundings (the bits of
// at, eight entries at a time with AVX-512: over the 465K facts of a 120K-passage
// index, an entry at a time cost 1.3 ms of a ppr query).
func (f *fusion) all(sc *scratch) []float64 {
	out := sc.f64(len(f.dense))
	if f.raw {
		for i, x := range f.dense {
			out[i] = float64(x)
		}
		return out
	}
	f.mix.Into64(out, f.dense, f.lex)
	return out
}

func (f *fusion) all32(sc *scratch) []float32 {
	out := sc.f32(len(f.dense))
	if f.raw {
		copy(out, f.dense)
		return out
	}
	f.mix.Into32(out, f.dense, f.lex)
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

// lexicalBM25 returns the chunks' BM25 scores for q when lexical scoring is on, nil
// otherwise; a graph retriever computes them once and uses them for its passage seeds
// and its final ranking.
func (s *Searcher) lexicalBM25(sc *scratch, q string) []float64 {
	if !s.lexicalOn() {
		return nil
	}
	return s.bm25Scores(sc, q)
}

// passageFusion fuses the scores that seed passages (and rank them when the graph
// cannot): min-max dense scores, fused with the BM25 scores bm25 when lexical scoring
// is on (bm25 not nil).
func (s *Searcher) passageFusion(bm25 []float64, dense []float32) *fusion {
	return newFusion(dense, bm25, s.cfg.LexicalWeight)
}

// factFusion fuses the scores that link facts: min-max dense scores of the
// "subject predicate object" texts, fused, when lexical scoring is on, with BM25 over
// the facts' subject and object names, which it returns too (nil when off; the
// caller gives them back to sc). Predicates are left out of the lexical text: a
// question's generic words ("first", "director", "letter") match them and would link
// facts about anything.
func (s *Searcher) factFusion(sc *scratch, q string, dense []float32) (f *fusion, lex []float64) {
	if !s.lexicalOn() {
		return newFusion(dense, nil, 0), nil
	}
	s.factLexOnce.Do(func() { s.factLex = factCorpus(s.ix).index(s.ix, s.analyzer(), s.cfg.BM25K1, s.cfg.BM25B) })
	lex = s.factLex.scoresInto(sc, q)
	return newFusion(dense, lex, s.cfg.LexicalWeight), lex
}

// topOfKind returns the top n rows of kind k for the question q (embedded qv) by
// kindFusion, their scores rounded to float32; its vectors go back to sc.
func (s *Searcher) topOfKind(sc *scratch, k graphio.NodeKind, q string, qv []float32, n int) []kernels.Neighbor {
	dense := s.scores(sc, k, qv)
	f, lex := s.kindFusion(sc, k, q, dense)
	fused := f.all32(sc)
	top := kernels.TopK(fused, n)
	sc.release32(dense, fused)
	sc.release64(lex)
	return top
}

// kindFusion fuses dense similarities with BM25 over the texts of entities or
// hyperedges (hyperppr's and pcst's vector searches) when lexical scoring is on,
// returning the lexical scores too (nil when off; the caller gives them back to sc);
// the dense scores are left as they are otherwise, and for other kinds.
func (s *Searcher) kindFusion(sc *scratch, k graphio.NodeKind, q string, dense []float32) (f *fusion, lex []float64) {
	var idx *lexIndex
	switch {
	case !s.lexicalOn():
	case k == graphio.KindEntity:
		s.entLexOnce.Do(func() { s.entLex = entityCorpus(s.ix).index(s.ix, s.analyzer(), s.cfg.BM25K1, s.cfg.BM25B) })
		idx = s.entLex
	case k == graphio.KindHyperedge:
		s.hypLexOnce.Do(func() { s.hypLex = hyperedgeCorpus(s.ix).index(s.ix, s.analyzer(), s.cfg.BM25K1, s.cfg.BM25B) })
		idx = s.hypLex
	}
	if idx == nil {
		return rawFusion(dense), nil
	}
	lex = idx.scoresInto(sc, q)
	return newFusion(dense, lex, s.cfg.LexicalWeight), lex
}

// Final fusions for [Config.FinalFusion].
const (
	// FusionRRF is reciprocal-rank fusion (Cormack et al., 2009): a passage scores
	// (1−μ)/(k + its PPR rank) + μ/(k + its BM25 rank), k = 60.
	FusionRRF = "rrf"
	// FusionLinear is μ·minmax(BM25) + (1−μ)·minmax(PPR).
	FusionLinear = "linear"
)

// rrfK is reciprocal-rank fusion's constant, the value of its paper.
const rrfK = 60

// final is the passage ranking of a graph retriever: the PPR mass of each passage,
// fused with the BM25 scores bm25 when FinalBM25Weight > 0 and lexical scoring is on
// (bm25 not nil).
func (s *Searcher) final(sc *scratch, bm25, ppr []float64) []float64 {
	mu := s.cfg.FinalBM25Weight
	if mu <= 0 || bm25 == nil {
		return ppr
	}
	if s.cfg.FinalFusion == FusionLinear {
		return fuse(sc, ppr, bm25, mu)
	}
	return s.rankBufs.rrf(sc, ppr, bm25, mu)
}

// rankedPassages is passages(final(sc, bm25, ppr), k): with reciprocal-rank fusion
// over many passages the top k come from topRRF, which orders only the posKeys of the
// two rankings, with the same passages and scores (120K passages: the two full sorts
// were 5 ms of CPU a question).
func (s *Searcher) rankedPassages(sc *scratch, bm25, ppr []float64, k int) []Passage {
	mu := s.cfg.FinalBM25Weight
	if mu > 0 && bm25 != nil && s.cfg.FinalFusion != FusionLinear && len(ppr) >= rrfTopMin {
		if top, scores, ok := s.rankBufs.topRRF(ppr, bm25, mu, min(k, len(ppr)), rrfTopDepth); ok {
			out := make([]Passage, len(top))
			for j, c := range top {
				out[j] = s.passage(c, scores[j])
			}
			return out
		}
	}
	return s.passages(s.final(sc, bm25, ppr), k)
}

// rrf is weighted reciprocal-rank fusion of two score vectors:
// (1−μ)/(k+rank_a) + μ/(k+rank_b), ranks from 1, ties broken by position. Over many
// passages the two rankings are sorted at once, on two cores (120K passages: 15 ms of
// one core per question before the buffers were recycled and the digits widened).
func (p *rankBuffers) rrf(sc *scratch, a, b []float64, mu float64) []float64 {
	sa, sb := p.get(), p.get()
	defer p.put(sa)
	defer p.put(sb)
	var ra, rb []int32
	if len(a) >= parallelRanks && runtime.GOMAXPROCS(0) > 1 {
		done := make(chan struct{})
		go func() {
			defer close(done)
			ra = sa.ranks(a)
		}()
		rb = sb.ranks(b)
		<-done
	} else {
		ra, rb = sa.ranks(a), sb.ranks(b)
	}
	out := sc.f64(len(a))
	for i := range out {
		out[i] = rrfScore(mu, ra[i], rb[i])
	}
	return out
}

// rrfScore is the fused score of ranks ra and rb.
func rrfScore(mu float64, ra, rb int32) float64 {
	return (1-mu)/(rrfK+float64(ra)) + mu/(rrfK+float64(rb))
}

// parallelRanks is the least vector length for which rrf sorts its two rankings on
// two goroutines.
const parallelRanks = 1 << 14

// rankBuffers recycles the scratch of rankings (rankScratch): a fused query over 120K
// passages sorts two rankings, and fresh buffers are 3 MB each that the process must
// zero and, on a VM, fault in.
type rankBuffers struct{ pool sync.Pool }

func (p *rankBuffers) get() *rankScratch {
	if sc, ok := p.pool.Get().(*rankScratch); ok {
		return sc
	}
	return &rankScratch{}
}

func (p *rankBuffers) put(sc *rankScratch) { p.pool.Put(sc) }

// rankScratch holds the buffers of one ranking; ranks returns a slice of it, valid
// until the scratch is used again.
type rankScratch struct {
	keys, tk  []uint64
	idx, ti   []int32
	rank      []int32
	histogram [rankDigits][1 << rankDigitBits]int32
	// topRRF's: the rank keys of every position and the head of the ranking
	posKeys []uint64
	head    []int32
}

// The radix sort of ranks: 11-bit digits, six passes at most over 64-bit keys.
const (
	rankDigitBits = 11
	rankDigits    = (64 + rankDigitBits - 1) / rankDigitBits
)

// rankKey maps a score to a key that sorts ascending from the highest score: +0 and
// −0 share one, and a NaN's is the greatest of all.
func rankKey(x float64) uint64 {
	if x != x { // NaN: last
		return ^uint64(0)
	}
	if x == 0 {
		x = 0 // −0 ties +0
	}
	b := math.Float64bits(x)
	if b>>63 == 1 { // ascending order of the bits for negatives …
		b = ^b
	} else { // … and positives
		b |= 1 << 63
	}
	return ^b // highest score first (all ones only for a NaN's bits: never here)
}

// ranks returns each score's rank from 1, highest first, ties (and +0 against −0)
// broken by position; a NaN ranks after every number. It is a stable LSD radix sort
// on the scores' order-preserving bit patterns with 11-bit digits, the histograms of
// every digit counted in one pass and a digit that all keys share skipped: the two
// full sorts of every fused query were 9 % of a ppr query with a comparison sort.
func (sc *rankScratch) ranks(v []float64) []int32 {
	n := len(v)
	if cap(sc.keys) < n {
		sc.keys, sc.tk = make([]uint64, n), make([]uint64, n)
		sc.idx, sc.ti, sc.rank = make([]int32, n), make([]int32, n), make([]int32, n)
	}
	keys, idx, tk, ti := sc.keys[:n], sc.idx[:n], sc.tk[:n], sc.ti[:n]
	hist := &sc.histogram
	*hist = [rankDigits][1 << rankDigitBits]int32{}
	const mask = 1<<rankDigitBits - 1
	for i, x := range v {
		k := rankKey(x)
		keys[i], idx[i] = k, int32(i)
		for d := range rankDigits {
			hist[d][k>>(d*rankDigitBits)&mask]++
		}
	}
	for d := range rankDigits {
		shift := uint(d * rankDigitBits)
		count := &hist[d]
		if n == 0 || int(count[keys[0]>>shift&mask]) == n {
			continue // every key has this digit: the pass would keep the order
		}
		var sum int32
		for b, c := range count {
			count[b] = sum
			sum += c
		}
		for j, k := range keys {
			b := k >> shift & mask
			tk[count[b]], ti[count[b]] = k, idx[j]
			count[b]++
		}
		keys, tk = tk, keys
		idx, ti = ti, idx
	}
	r := sc.rank[:n]
	for pos, i := range idx {
		r[i] = int32(pos + 1)
	}
	return r
}
