package kg_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
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

// oneRule is one rule extractor for the whole test: each new one loads the NER tagger
// again (most of a small build's time).
var oneRule = sync.OnceValue(rule)

// freshOne is fresh with oneRule.
func freshOne(t *testing.T, ps []ingest.Passage) *graphio.Index {
	t.Helper()
	ix := &graphio.Index{Meta: graphio.Meta{Tokenizer: "cl100k_base", Chunking: ingest.DefaultConfig().Describe()}}
	require.NoError(t, ingest.AddPassages(context.Background(), ix, ps, ingest.DefaultConfig(), nil, &ingest.Report{}))
	_, err := kg.Build(context.Background(), ix, oneRule(), nil, kg.DefaultConfig(), nil)
	require.NoError(t, err)
	retrieve.StoreBM25(ix, retrieve.DefaultConfig())
	return ix
}

// harbourGold returns the example corpus's questions and their supporting titles.
func harbourGold(t *testing.T) ([]string, [][]string) {
	t.Helper()
	raw, err := os.ReadFile("../examples/harbour/questions.json")
	require.NoError(t, err)
	var qs []struct {
		Question         string
		SupportingTitles []string `json:"supporting_titles"`
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

// checkBounded asserts that ix, changed between merges, differs from want, a fresh
// build of the same corpus, by no more than its bound: the facts and chunks are a
// fresh build's (the example corpus is below the generic filter's 200 chunks), BM25
// postings equal StoreBM25's, every record has its vector, each chunk's vector is
// within the tracked IDF drift of a fresh build's (1 − cosine ≤ drift), and every
// retriever's R@5 on the example questions is within 0.05 of a fresh build's.
func checkBounded(t *testing.T, ix, want *graphio.Index, qs []string, gold [][]string) {
	t.Helper()
	g, w := graphOf(ix), graphOf(want)
	assert.Equal(t, w["facts"], g["facts"])
	assert.Equal(t, w["chunks"], g["chunks"])
	again := *ix
	again.Blobs = map[string][]byte{}
	retrieve.StoreBM25(&again, retrieve.DefaultConfig())
	for _, blob := range []string{retrieve.BM25Blob, "bm25.facts", "bm25.entities", "bm25.hyperedges"} {
		assert.Equal(t, again.Blobs[blob], ix.Blobs[blob], "%s: carried over as computed afresh", blob)
	}
	require.Equal(t, len(ix.Chunks), ix.Embeddings[graphio.KindChunk].Rows())
	require.Equal(t, len(ix.Entities), ix.Embeddings[graphio.KindEntity].Rows())
	require.Equal(t, len(ix.Facts), ix.Embeddings[graphio.KindFact].Rows())
	require.Equal(t, len(ix.Hyperedges), ix.Embeddings[graphio.KindHyperedge].Rows())

	st, ok := kg.ReadState(ix)
	require.True(t, ok)
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
	// The drift bounds the IDF weights' change; 1e-6 is float32 rounding (a change
	// that leaves the table as it was has drift 0 and vectors equal to rounding).
	assert.LessOrEqual(t, worst, st.IDFDrift+1e-6, "1 − cosine to a fresh build's chunk vector")
	got, exp := recallAt5(t, ix, qs, gold), recallAt5(t, want, qs, gold)
	for _, r := range retrievers {
		assert.InDelta(t, exp[r], got[r], 0.05, "%s R@5", r)
	}
}

// changeCounts counts the records by key (entities by name, facts and hyperedges by
// id, synonym edges by their names, chunks and documents by id) in after and not in
// before (added), and the other way round (removed).
func changeCounts(before, after map[string][]string) (added, removed map[string]int) {
	added, removed = map[string]int{}, map[string]int{}
	key := func(kind, rec string) string {
		if kind == "documents" || kind == "chunks" {
			return rec
		}
		return strings.Fields(rec)[0] // name or id first (names of one word here)
	}
	for kind, singular := range map[string]string{"documents": "document", "chunks": "chunk", "facts": "fact", "hyperedges": "hyperedge"} {
		b, a := map[string]bool{}, map[string]bool{}
		for _, r := range before[kind] {
			b[key(kind, r)] = true
		}
		for _, r := range after[kind] {
			a[key(kind, r)] = true
		}
		for k := range a {
			if !b[k] {
				added[singular]++
			}
		}
		for k := range b {
			if !a[k] {
				removed[singular]++
			}
		}
	}
	return added, removed
}

// TestIncrementalThenMerge: on the example corpus, an add and then a delete between
// merges each stay within their bound of a fresh build (checkBounded), and nothing of
// a deleted chunk stays reachable; an explicit merge (kg.Merge) then gives the fresh
// build exactly; and, without it, the next add, which passes Config.MergeShare, is a
// merge, re-extracts the chunks the deletion's titles deferred, and gives the fresh
// build of the final corpus exactly.
func TestIncrementalThenMerge(t *testing.T) {
	ps, _, err := ingest.Load("../examples/harbour/corpus.json", true)
	require.NoError(t, err)
	qs, gold := harbourGold(t)
	cfg := kg.DefaultConfig()
	cfg.MergeShare = 0.25 // 5 of the 20 chunks: 2 added and 2 deleted stay below it
	ix := forChange(t, freshOne(t, ps[:20]))
	counted := func(ch *kg.Change, before, after map[string][]string) {
		t.Helper()
		added, removed := changeCounts(before, after)
		for _, k := range []string{"document", "chunk", "fact", "hyperedge"} {
			assert.Equal(t, added[k], ch.Added[k], "%s added", k)
			assert.Equal(t, removed[k], ch.Removed[k], "%s removed", k)
		}
	}

	before := graphOf(ix)
	ch, err := kg.Add(context.Background(), ix, ps[20:22], ingest.DefaultConfig(), oneRule(), nil, cfg, nil)
	require.NoError(t, err)
	require.True(t, ch.Incremental)
	counted(ch, before, graphOf(ix))
	retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
	ix = roundTrip(t, ix)
	require.NoError(t, ix.Validate())
	checkBounded(t, ix, freshOne(t, ps[:22]), qs, gold)
	st, _ := kg.ReadState(ix)
	assert.Equal(t, ch.IDFDrift, st.IDFDrift)
	assert.Greater(t, st.IDFDrift, 0.0, "new chunks move the IDF table")
	assert.Equal(t, 2, st.Changed)

	gone := map[string]bool{}
	for _, c := range ix.Chunks[5:7] {
		gone[c.ID] = true
	}
	before = graphOf(ix)
	ch, err = kg.Delete(context.Background(), ix, []int32{5, 6}, oneRule(), nil, cfg)
	require.NoError(t, err)
	require.True(t, ch.Incremental)
	counted(ch, before, graphOf(ix))
	retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
	ix = roundTrip(t, ix)
	require.NoError(t, ix.Validate())
	for _, c := range ix.Chunks {
		assert.False(t, gone[c.ID], "a deleted chunk")
	}
	after := append(append([]ingest.Passage{}, ps[:5]...), ps[7:22]...)
	wantAfter := freshOne(t, after)
	checkBounded(t, ix, wantAfter, qs, gold)
	st, _ = kg.ReadState(ix)
	assert.Equal(t, 4, st.Changed)
	assert.Len(t, st.PendingTitles, 2, "the deleted documents' titles, re-extraction deferred")

	// An explicit merge of a copy (graphloom index --merge) gives the fresh build.
	merged := forChange(t, ix)
	ch, err = kg.Merge(context.Background(), merged, oneRule(), nil, cfg)
	require.NoError(t, err)
	require.False(t, ch.Incremental)
	retrieve.UpdateBM25(merged, retrieve.DefaultConfig(), ch.Remap)
	merged = roundTrip(t, merged)
	assert.Equal(t, graphOf(wantAfter), graphOf(merged))
	assert.Equal(t, counts(wantAfter), counts(merged))

	ch, err = kg.Add(context.Background(), ix, ps[22:25], ingest.DefaultConfig(), oneRule(), nil, cfg, nil)
	require.NoError(t, err)
	require.False(t, ch.Incremental, "4 + 3 changed chunks pass 25 %% of 20: a merge")
	retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
	ix = roundTrip(t, ix)
	want := freshOne(t, append(after, ps[22:25]...))
	assert.Equal(t, graphOf(want), graphOf(ix))
	assert.Equal(t, counts(want), counts(ix))
	st, ok := kg.ReadState(ix)
	require.True(t, ok)
	assert.Zero(t, st.Changed, "a merge starts the count again")
	assert.Empty(t, st.PendingTitles)
}

// TestMoreHopQABounded is TestIncrementalThenMerge's bound on MoreHopQA-150's corpus
// and questions: every fiftieth document added incrementally to an index of the
// others, then deleted again incrementally, each within checkBounded of a fresh build.
func TestMoreHopQABounded(t *testing.T) {
	ds := moreHopQA(t)
	var a, b []ingest.Passage
	for i, p := range ds.Corpus() {
		if i%50 == 49 {
			b = append(b, p)
		} else {
			a = append(a, p)
		}
	}
	var qs []string
	var gold [][]string
	for _, e := range ds.Examples {
		var titles []string
		for _, g := range e.Gold {
			titles = append(titles, g.Title)
		}
		qs, gold = append(qs, e.Question), append(gold, titles)
	}
	cfg := kg.DefaultConfig()
	ix := forChange(t, freshOne(t, a))
	ch, err := kg.Add(context.Background(), ix, b, ingest.DefaultConfig(), oneRule(), nil, cfg, nil)
	require.NoError(t, err)
	require.True(t, ch.Incremental, "%d of %d documents: below MergeShare", len(b), len(a)+len(b))
	retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
	ix = roundTrip(t, ix)
	require.NoError(t, ix.Validate())
	checkBounded(t, ix, freshOne(t, append(append([]ingest.Passage{}, a...), b...)), qs, gold)

	var docs []int32
	for i := len(a); i < len(ix.Documents); i++ {
		docs = append(docs, int32(i))
	}
	ch, err = kg.Delete(context.Background(), ix, docs, oneRule(), nil, cfg)
	require.NoError(t, err)
	require.True(t, ch.Incremental)
	retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
	ix = roundTrip(t, ix)
	require.NoError(t, ix.Validate())
	checkBounded(t, ix, freshOne(t, a), qs, gold)
}
