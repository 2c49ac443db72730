package kg_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

// exact is the configuration of a change made as a merge: the index equals a fresh
// build (the equivalence tests use it).
func exact() kg.Config {
	cfg := kg.DefaultConfig()
	cfg.Merge = true
	return cfg
}

// between is the configuration of a change made incrementally, whatever its size.
func between() kg.Config {
	cfg := kg.DefaultConfig()
	cfg.MergeShare = 1
	return cfg
}

// harbourGold returns the example corpus's questions and their supporting titles.
func harbourGold(t *testing.T) ([]string, [][]string) {
	t.Helper()
	raw, err := os.ReadFile("../examples/harbour/questions.json")
	require.NoError(t, err)
	var qs []struct {
		Question          string
		SupportingTitles  []string `json:"supporting_titles"`
	}
	require.NoError(t, json.Unmarshal(raw, &qs))
	var q []string
	var gold [][]string
	for _, x := range qs {
		q, gold = append(q, x.Question), append(gold, x.SupportingTitles)
	}
	return q, gold
}

// recallAt5 returns, per retriever, the mean share of a question's supporting titles
// among the titles of its top 5 passages.
func recallAt5(t *testing.T, ix *graphio.Index, qs []string, gold [][]string) map[string]float64 {
	t.Helper()
	s, err := retrieve.Open(ix, nil, retrieve.DefaultConfig(), nil)
	require.NoError(t, err)
	byID := map[string]string{}
	for _, c := range ix.Chunks {
		byID[c.ID] = c.Title
	}
	out := map[string]float64{}
	for _, name := range retrievers {
		r, err := s.Retriever(name)
		require.NoError(t, err, name)
		sum := 0.0
		for i, q := range qs {
			res, err := r.Retrieve(context.Background(), q, 5)
			require.NoError(t, err, name)
			var titles []string
			for _, p := range res.Passages {
				titles = append(titles, byID[p.ChunkID])
			}
			hit := 0
			for _, g := range gold[i] {
				if slices.Contains(titles, g) {
					hit++
				}
			}
			sum += float64(hit) / float64(len(gold[i]))
		}
		out[name] = sum / float64(len(qs))
	}
	return out
}

// TestIncrementalChangeBounded: an add or a delete between merges (frozen IDF table
// and filters) differs from a fresh build of the same corpus by no more than its
// bound: the facts and hyperedges are a fresh build's (the example corpus is below the
// generic filter's 200 chunks, and its rule extraction depends on no other chunk's
// title here), each chunk's vector is within the tracked IDF drift of a fresh build's
// (1 − cosine ≤ drift), BM25 postings equal StoreBM25's, nothing of a deleted chunk
// remains reachable, and every retriever's R@5 on the example questions is within
// 0.05 of a fresh build's. A merge afterwards gives the fresh build exactly.
func TestIncrementalChangeBounded(t *testing.T) {
	ps, _, err := ingest.Load("../examples/harbour/corpus.json", true)
	require.NoError(t, err)
	qs, gold := harbourGold(t)
	for _, tc := range []struct {
		name        string
		base, after []ingest.Passage // the indexed corpus and the one after the change
		change      func(ix *graphio.Index) (*kg.Change, error)
		merge       []ingest.Passage // then added as a merge: the final corpus is after + merge
	}{
		{name: "add", base: ps[:38], after: ps[:42],
			change: func(ix *graphio.Index) (*kg.Change, error) {
				return kg.Add(context.Background(), ix, ps[38:42], ingest.DefaultConfig(), rule(), nil, between(), nil)
			}, merge: ps[42:]},
		{name: "delete", base: ps, after: append(append([]ingest.Passage{}, ps[:5]...), ps[9:]...),
			change: func(ix *graphio.Index) (*kg.Change, error) {
				return kg.Delete(context.Background(), ix, []int32{5, 6, 7, 8}, rule(), nil, between())
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := forChange(t, fresh(t, tc.base))
			gone := map[string]bool{}
			for _, c := range ix.Chunks {
				gone[c.ID] = true
			}
			ch, err := tc.change(ix)
			require.NoError(t, err)
			require.True(t, ch.Incremental)
			retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
			ix = roundTrip(t, ix)
			require.NoError(t, ix.Validate())
			want := fresh(t, tc.after)
			for _, c := range want.Chunks {
				delete(gone, c.ID)
			}

			// Exact between merges: the facts, hyperedges and BM25 postings.
			g, w := graphOf(ix), graphOf(want)
			assert.Equal(t, w["facts"], g["facts"])
			assert.Equal(t, w["chunks"], g["chunks"])
			assert.Equal(t, len(w["hyperedges"]), len(g["hyperedges"]))
			again := *ix
			again.Blobs = map[string][]byte{}
			retrieve.StoreBM25(&again, retrieve.DefaultConfig())
			for _, blob := range []string{retrieve.BM25Blob, "bm25.facts", "bm25.entities", "bm25.hyperedges"} {
				assert.Equal(t, again.Blobs[blob], ix.Blobs[blob], "%s: carried over as computed afresh", blob)
			}
			// Nothing of a deleted chunk is reachable.
			for _, c := range ix.Chunks {
				assert.False(t, gone[c.ID])
			}
			require.Equal(t, len(ix.Chunks), ix.Embeddings[graphio.KindChunk].Rows())
			require.Equal(t, len(ix.Entities), ix.Embeddings[graphio.KindEntity].Rows())
			require.Equal(t, len(ix.Facts), ix.Embeddings[graphio.KindFact].Rows())
			require.Equal(t, len(ix.Hyperedges), ix.Embeddings[graphio.KindHyperedge].Rows())

			// Bounded: vectors within the tracked drift, rankings within 0.05 of R@5.
			st, ok := kg.ReadState(ix)
			require.True(t, ok)
			assert.Equal(t, ch.IDFDrift, st.IDFDrift)
			assert.Greater(t, st.IDFDrift, 0.0)
			at := map[string]int{}
			for i, c := range want.Chunks {
				at[c.ID] = i
			}
			worst := 0.0
			for i, c := range ix.Chunks {
				a, b := ix.Embeddings[graphio.KindChunk].Row(i), want.Embeddings[graphio.KindChunk].Row(at[c.ID])
				dot := 0.0
				for k := range a {
					dot += float64(a[k]) * float64(b[k])
				}
				worst = max(worst, 1-dot)
			}
			assert.LessOrEqual(t, worst, st.IDFDrift, "1 − cosine to a fresh build's chunk vector")
			got, exp := recallAt5(t, ix, qs, gold), recallAt5(t, want, qs, gold)
			for _, r := range retrievers {
				assert.InDelta(t, exp[r], got[r], 0.05, "%s R@5", r)
			}

			if tc.merge == nil {
				return
			}
			// A merge after incremental changes gives the fresh build exactly.
			ch, err = kg.Add(context.Background(), ix, tc.merge, ingest.DefaultConfig(), rule(), nil, exact(), nil)
			require.NoError(t, err)
			require.False(t, ch.Incremental)
			retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
			ix = roundTrip(t, ix)
			full := fresh(t, append(append([]ingest.Passage{}, tc.after...), tc.merge...))
			assert.Equal(t, graphOf(full), graphOf(ix))
			assert.Equal(t, counts(full), counts(ix))
			st, ok = kg.ReadState(ix)
			require.True(t, ok)
			assert.Zero(t, st.Changed, "a merge starts the count again")
		})
	}
}

// TestMergeShare: changes are incremental until the chunks changed since the last
// merge pass Config.MergeShare of the corpus; the change that passes it is a merge.
func TestMergeShare(t *testing.T) {
	ps, _, err := ingest.Load("../examples/harbour/corpus.json", true)
	require.NoError(t, err)
	cfg := kg.DefaultConfig()
	cfg.MergeShare = 0.12 // 4 of the 35 chunks
	ix := forChange(t, fresh(t, ps[:35]))
	for _, tc := range []struct {
		from, to    int
		incremental bool
		changed     int
	}{{35, 37, true, 2}, {37, 39, true, 4}, {39, 41, false, 0}, {41, 42, true, 1}} {
		ch, err := kg.Add(context.Background(), ix, ps[tc.from:tc.to], ingest.DefaultConfig(), rule(), nil, cfg, nil)
		require.NoError(t, err)
		assert.Equal(t, tc.incremental, ch.Incremental, "adding %d–%d", tc.from, tc.to)
		st, ok := kg.ReadState(ix)
		require.True(t, ok)
		assert.Equal(t, tc.changed, st.Changed, "adding %d–%d", tc.from, tc.to)
		retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
		require.NoError(t, ix.Validate())
	}
}
