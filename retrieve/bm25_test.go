package retrieve

import (
	"fmt"
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

func TestStoredBM25Postings(t *testing.T) {
	ix := exampleIndex(t)
	cfg := DefaultConfig()
	built := newLexIndex(chunkTexts(ix), Analyzer{Stem: cfg.Stem}, cfg.BM25K1, cfg.BM25B)
	StoreBM25(ix, cfg)
	blob := ix.Blobs[BM25Blob]
	require.NotEmpty(t, blob)
	open := func() *lexIndex {
		s, err := Open(ix, nil, cfg, nil)
		require.NoError(t, err)
		return s.bm25Index()
	}
	assert.Equal(t, built, open(), "the stored postings are the built ones")
	StoreBM25(ix, cfg)
	assert.Equal(t, blob, ix.Blobs[BM25Blob], "the blob is a function of the chunks")

	// The searcher reads the blob: one whose digest matches is taken as it is.
	doctored := newLexIndex(chunkTexts(ix), Analyzer{Stem: cfg.Stem}, cfg.BM25K1, cfg.BM25B)
	for term, ps := range doctored.postings {
		ps[0].tf += 7
		doctored.postings[term] = ps
		break
	}
	ix.Blobs[BM25Blob] = encodeBM25(doctored, bm25Digest(chunkTexts(ix), Analyzer{Stem: cfg.Stem}))
	assert.Equal(t, doctored, open())

	// A blob for other chunks, another analyzer, or a malformed one is ignored.
	ix.Blobs[BM25Blob] = blob
	unstemmed := cfg
	unstemmed.Stem = false
	s, err := Open(ix, nil, unstemmed, nil)
	require.NoError(t, err)
	assert.Equal(t, newLexIndex(chunkTexts(ix), Analyzer{}, cfg.BM25K1, cfg.BM25B), s.bm25Index())
	ix.Chunks[3].Text += " Lighthouse keepers"
	rebuilt := newLexIndex(chunkTexts(ix), Analyzer{Stem: cfg.Stem}, cfg.BM25K1, cfg.BM25B)
	assert.Equal(t, rebuilt, open(), "a stale blob is ignored")
	StoreBM25(ix, cfg)
	good := ix.Blobs[BM25Blob]
	for _, cut := range []int{0, 5, len(bm25BlobMagic) + 31, len(bm25BlobMagic) + 40, len(good) / 2, len(good) - 1} {
		ix.Blobs[BM25Blob] = good[:cut]
		assert.Equal(t, rebuilt, open(), "blob cut at %d", cut)
	}
	ix.Blobs[BM25Blob] = append(slices.Clone(good), 0)
	assert.Equal(t, rebuilt, open(), "trailing bytes")
}
