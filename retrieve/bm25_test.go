package retrieve

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLexIndexMatchesSequential checks the parallel, blockwise index against a plain
// sequential build: same postings in the same order, same lengths.
func TestLexIndexMatchesSequential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("harbour harbours keeper keepers lamp lamps guild founded founding the of Port Keswyn 1791 salt rope")
	texts := make([]string, 5000) // more than one block of 4096, many workers
	for i := range texts {
		var b strings.Builder
		for range 3 + rng.IntN(20) {
			fmt.Fprint(&b, words[rng.IntN(len(words))], " ")
		}
		texts[i] = b.String()
	}
	an := Analyzer{Stem: true}
	got := newLexIndex(texts, an, 1.2, 0.75)
	want := map[string][]posting{}
	var total float64
	for i, text := range texts {
		ts := an.Terms(text)
		tf := map[string]int32{}
		for _, w := range ts {
			tf[w]++
		}
		for w, n := range tf {
			want[w] = append(want[w], posting{int32(i), n})
		}
		assert.Equal(t, float64(len(ts)), got.docLen[i])
		total += float64(len(ts))
	}
	assert.Equal(t, want, got.postings)
	assert.Equal(t, total/float64(len(texts)), got.avgLen)
	assert.Contains(t, got.postings, "harbour", "stems index both forms")
	assert.NotContains(t, got.postings, "harbours")
}

// materialized returns idx's postings as a map, whichever form they are held in.
func (idx *lexIndex) materialized() map[string][]posting {
	if idx.stored == nil {
		return idx.postings
	}
	out := map[string][]posting{}
	for i := range idx.stored.n {
		t := string(idx.stored.termAt(i))
		out[t] = idx.stored.lookup(t)
	}
	return out
}

// sameLex asserts that two indices hold the same postings and lengths.
func sameLex(t *testing.T, want, got *lexIndex, msg string) {
	t.Helper()
	assert.Equal(t, want.materialized(), got.materialized(), msg)
	assert.Equal(t, want.docLen, got.docLen, msg)
	assert.Equal(t, want.avgLen, got.avgLen, msg)
}

func TestStoredBM25Postings(t *testing.T) {
	ix := exampleIndex(t)
	cfg := DefaultConfig()
	an := Analyzer{Stem: cfg.Stem}
	built := func(c lexCorpus) *lexIndex { return newLexIndex(c.texts(), an, cfg.BM25K1, cfg.BM25B) }
	StoreBM25(ix, cfg)
	s, err := Open(ix, nil, cfg, nil)
	require.NoError(t, err)
	stored := map[string]*lexIndex{}
	for _, c := range lexCorpora(ix) {
		require.NotEmpty(t, ix.Blobs[c.blob], c.blob)
		idx := c.index(ix, an, cfg.BM25K1, cfg.BM25B)
		require.NotNil(t, idx.stored, "%s: read from its blob", c.blob)
		sameLex(t, built(c), idx, c.blob+": the stored postings are the built ones")
		stored[c.blob] = idx
	}
	// The texts are the ones the retrievers searched before the blobs.
	assert.Equal(t, ix.Chunks[2].Content(), chunkCorpus(ix).texts()[2])
	f := s.factTriple(4)
	assert.Equal(t, f[0]+" "+f[2], factCorpus(ix).texts()[4])
	// A stored index scores as the built one, term by term, to the bit.
	for _, q := range []string{"Who founded the lighthouse keepers' guild?", "harbour harbour salt", "zzz unknown", ""} {
		for _, c := range lexCorpora(ix) {
			assert.Equal(t, built(c).scores(q), stored[c.blob].scores(q), "%s: %q", c.blob, q)
		}
	}
	assert.Same(t, s.bm25Index().stored, s.bm25Index().stored)
	assert.NotNil(t, s.bm25Index().stored, "the searcher reads the chunks' blob")
	blobs := maps.Clone(ix.Blobs)
	StoreBM25(ix, cfg)
	assert.Equal(t, blobs, ix.Blobs, "the blobs are a function of the texts")

	// The searcher takes a blob whose digest matches as it is.
	doctored := built(chunkCorpus(ix))
	for term, ps := range doctored.postings {
		ps[0].tf += 7
		doctored.postings[term] = ps
		break
	}
	blob, ok := encodeBM25(doctored, chunkCorpus(ix).digest(an))
	require.True(t, ok)
	ix.Blobs[BM25Blob] = blob
	sameLex(t, doctored, chunkCorpus(ix).index(ix, an, cfg.BM25K1, cfg.BM25B), "a matching blob is read")

	// A blob for other texts, another analyzer, or a malformed one is ignored.
	ix.Blobs[BM25Blob] = blobs[BM25Blob]
	idx := chunkCorpus(ix).index(ix, Analyzer{}, cfg.BM25K1, cfg.BM25B)
	assert.Nil(t, idx.stored)
	sameLex(t, newLexIndex(chunkCorpus(ix).texts(), Analyzer{}, cfg.BM25K1, cfg.BM25B), idx, "another analyzer")
	ix.Chunks[3].Text += " Lighthouse keepers"
	rebuilt := built(chunkCorpus(ix))
	idx = chunkCorpus(ix).index(ix, an, cfg.BM25K1, cfg.BM25B)
	assert.Nil(t, idx.stored, "a stale blob is ignored")
	sameLex(t, rebuilt, idx, "a stale blob is ignored")
	StoreBM25(ix, cfg)
	good := ix.Blobs[BM25Blob]
	header := len(bm25BlobMagic) + 32
	flip := func(at int) []byte { b := slices.Clone(good); b[at] ^= 0x5a; return b }
	le := binary.LittleEndian
	docs := len(ix.Chunks)
	// Where the term count and the tables start: after the document lengths.
	at := header + binary.PutUvarint(make([]byte, 10), uint64(docs))
	for _, l := range rebuilt.docLen {
		at += binary.PutUvarint(make([]byte, 10), uint64(l))
	}
	nt, k := binary.Uvarint(good[at:])
	tables := at + k
	termOffAt := func(i int) int { return tables + 4*i }
	listOffAt := func(i int) int { return tables + 4*(int(nt)+1) + 4*i }
	setU32 := func(at int, v uint32) []byte { b := slices.Clone(good); le.PutUint32(b[at:], v); return b }
	textLen := le.Uint32(good[termOffAt(int(nt)):])
	lists := tables + 8*(int(nt)+1) + int(textLen)
	for _, tc := range []struct {
		name string
		blob []byte
	}{
		{"empty", nil},
		{"magic only", good[:len(bm25BlobMagic)]},
		{"version 1", append([]byte("GLBM25\x01"), good[len(bm25BlobMagic):]...)},
		{"cut in the digest", good[:header-1]},
		{"cut in the lengths", good[:header+3]},
		{"cut in the tables", good[:tables+10]},
		{"cut in the postings", good[:len(good)-1]},
		{"trailing byte", append(slices.Clone(good), 0)},
		{"term count past the bytes", append(append(slices.Clone(good[:at]), 0xff, 0xff, 0xff, 0xff, 0x0f), good[tables:]...)},
		{"first term offset not 0", setU32(termOffAt(0), 1)},
		{"term offsets decreasing", setU32(termOffAt(2), le.Uint32(good[termOffAt(1):])-1)},
		{"term offset past the text", setU32(termOffAt(1), textLen+1)},
		{"list offset past the lists", setU32(listOffAt(1), uint32(len(good)))},
		{"terms out of order", func() []byte {
			b := slices.Clone(good)
			t0 := tables + 8*(int(nt)+1)
			b[t0], b[t0+1] = 0xff, 0xff
			return b
		}()},
		{"empty postings list", func() []byte { b := slices.Clone(good); b[lists] = 0; return b }()},
		{"document past the corpus", func() []byte { b := slices.Clone(good); b[lists+1] = byte(docs + 1); return b }()},
		{"flipped list byte", flip(lists + 2)},
	} {
		ix.Blobs[BM25Blob] = tc.blob
		idx := chunkCorpus(ix).index(ix, an, cfg.BM25K1, cfg.BM25B)
		if idx.stored != nil {
			// A flip that keeps the blob well-formed is read; it must still decode.
			_ = idx.materialized()
			assert.Equal(t, "flipped list byte", tc.name, "%s: read as well-formed", tc.name)
			continue
		}
		sameLex(t, rebuilt, idx, tc.name)
	}
}

// TestTermsKeepCombiningMarks: a combining mark continues its word, and a decomposed
// letter reads as its precomposed form, so a question typed one way finds a passage
// written the other.
func TestTermsKeepCombiningMarks(t *testing.T) {
	an := Analyzer{}
	for _, tc := range []struct{ name, text string }{
		{"a decomposed ü (NFD)", "Thomas Su\u0308dhof"},
		{"a precomposed ü (NFC)", "Thomas S\u00fcdhof"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, []string{"thomas", "s\u00fcdhof"}, an.Terms(tc.text))
		})
	}
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"Devanagari vowel signs and virama", "हिन्दी भाषा", []string{"हिन्दी", "भाषा"}},
		{"Thai vowels above and below", "ภาษาไทย สวัสดี", []string{"ภาษาไทย", "สวัสดี"}},
		{"Arabic harakat", "كَتَبَ الوَلَدُ", []string{"كَتَبَ", "الوَلَدُ"}},
		{"a mark after a space belongs to no word", "a \u0301b", []string{"b"}},
		{"Persian's zero-width non-joiner stays inside its word", "می\u200cخواهم", []string{"می\u200cخواهم"}},
		{"Latin text as before", "The Meridian's master, in 1801.", []string{"meridian", "s", "master", "1801"}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, an.Terms(tc.text)) })
	}
	idx := newLexIndex([]string{"Thomas Su\u0308dhof won the prize.", "Mara Vell founded Quillhaven."}, an, 1.2, 0.75)
	both, first := idx.scores("Who is Thomas S\u00fcdhof?"), idx.scores("Thomas")
	require.Len(t, both, 2)
	assert.Zero(t, both[1])
	assert.Greater(t, first[0], 0.0)
	assert.InDelta(t, 2*first[0], both[0], 1e-9, "the surname matches as well as the first name (both occur once, in one of the two passages)")
}
