package kg_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
	"github.com/graphloom/graphloom/retrieve"
)

func rule() extract.Extractor { return extract.NewRule(extract.DefaultRuleConfig()) }

// fresh builds an index of passages from scratch, as `graphloom index` does offline.
func fresh(t *testing.T, ps []ingest.Passage) *graphio.Index {
	t.Helper()
	ix := &graphio.Index{Meta: graphio.Meta{Tokenizer: "cl100k_base", Chunking: ingest.DefaultConfig().Describe()}}
	require.NoError(t, ingest.AddPassages(context.Background(), ix, ps, ingest.DefaultConfig(), nil, &ingest.Report{}))
	_, err := kg.Build(context.Background(), ix, rule(), nil, exact(), nil)
	require.NoError(t, err)
	retrieve.StoreBM25(ix, retrieve.DefaultConfig())
	return ix
}

// roundTrip writes and reads an index, as the CLI does between commands.
func roundTrip(t *testing.T, ix *graphio.Index) *graphio.Index {
	t.Helper()
	p := t.TempDir() + "/x.gl"
	require.NoError(t, graphio.WriteFile(p, ix))
	out, err := graphio.ReadFile(p)
	require.NoError(t, err)
	return out
}

// forChange writes an index and reads it back as the CLI's add, delete and sync do
// (kg.ReadForChange: mapped, its matrices released).
func forChange(t *testing.T, ix *graphio.Index) *graphio.Index {
	t.Helper()
	p := t.TempDir() + "/x.gl"
	require.NoError(t, graphio.WriteFile(p, ix))
	out, err := kg.ReadForChange(p)
	require.NoError(t, err)
	return out
}

func harbour(t *testing.T) (a, b []ingest.Passage, questions []string) {
	t.Helper()
	ps, _, err := ingest.Load("../examples/harbour/corpus.json", true)
	require.NoError(t, err)
	raw, err := os.ReadFile("../examples/harbour/questions.json")
	require.NoError(t, err)
	var qs []struct{ Question string }
	require.NoError(t, json.Unmarshal(raw, &qs))
	for _, q := range qs {
		questions = append(questions, q.Question)
	}
	cut := len(ps) * 2 / 3
	return ps[:cut], ps[cut:], questions
}

// graphOf lists an index's records by content (names, ids, cited chunk ids), so two
// indices built in different ways compare independently of internal numbering.
func graphOf(ix *graphio.Index) map[string][]string {
	g := map[string][]string{}
	add := func(k, v string) { g[k] = append(g[k], v) }
	for _, d := range ix.Documents {
		add("documents", fmt.Sprintf("%s %d", d.ID, d.Count))
	}
	for _, c := range ix.Chunks {
		add("chunks", c.ID)
	}
	for _, e := range ix.Entities {
		add("entities", fmt.Sprintf("%s %q %s %s", e.Name, e.Surface, e.Type, e.Run))
	}
	chunks := func(cs []int32) []string {
		var out []string
		for _, c := range cs {
			out = append(out, ix.Chunks[c].ID)
		}
		return out
	}
	for _, f := range ix.Facts {
		add("facts", fmt.Sprintf("%s %v %g %s", f.ID, chunks(f.Chunks), f.Weight, f.Run))
	}
	for _, h := range ix.Hyperedges {
		var ents []string
		for _, e := range h.Entities {
			ents = append(ents, ix.Entities[e].Name)
		}
		add("hyperedges", fmt.Sprintf("%s %v %v %s", h.ID, ents, chunks(h.Chunks), h.Run))
	}
	for _, m := range ix.Mentions {
		add("mentions", ix.Entities[m.Entity].Name+" "+ix.Chunks[m.Chunk].ID+" "+m.Run)
	}
	for _, s := range ix.Synonyms {
		add("synonyms", fmt.Sprintf("%s|%s %.6f %s", ix.Entities[s.A].Name, ix.Entities[s.B].Name, s.Cosine, s.Run))
	}
	for k := range g {
		sort.Strings(g[k])
	}
	g["embedder"] = []string{ix.Meta.Embedder}
	return g
}

var retrievers = []string{"bm25", "dense", "triples", "ppr", "hyperppr", "pcst"}

// rankings returns, per retriever and question, the top-10 passages' chunk ids.
func rankings(t *testing.T, ix *graphio.Index, questions []string) map[string][]string {
	t.Helper()
	s, err := retrieve.Open(ix, nil, retrieve.DefaultConfig(), nil)
	require.NoError(t, err)
	out := map[string][]string{}
	for _, name := range retrievers {
		r, err := s.Retriever(name)
		require.NoError(t, err, name)
		for _, q := range questions {
			res, err := r.Retrieve(context.Background(), q, 10)
			require.NoError(t, err, name)
			var ids []string
			for _, p := range res.Passages {
				ids = append(ids, fmt.Sprintf("%s %.6f", p.ChunkID, p.Score))
			}
			out[name+": "+q] = ids
		}
	}
	return out
}

func counts(ix *graphio.Index) graphio.Stats {
	st := graphio.ComputeStats(ix, 10)
	st.SizeBytes = 0
	return st
}

// TestAddEqualsFreshBuild: index(A) then Add(B) has the records, the statistics and,
// for every retriever and every question of the example corpus, the rankings (and
// scores) of index(A ∪ B) built from scratch; B's chunks only are extracted.
func TestAddEqualsFreshBuild(t *testing.T) {
	a, b, qs := harbour(t)
	want := fresh(t, append(append([]ingest.Passage{}, a...), b...))

	ix := forChange(t, fresh(t, a))
	ch, err := kg.Add(context.Background(), ix, b, ingest.DefaultConfig(), rule(), nil, exact(), nil)
	require.NoError(t, err)
	require.False(t, ch.Incremental, "a merge")
	retrieve.StoreBM25(ix, retrieve.DefaultConfig())
	ix = roundTrip(t, ix)
	require.NoError(t, ix.Validate())

	assert.Equal(t, len(b), len(ch.Documents))
	assert.Equal(t, len(b), ch.Extracted, "one chunk per harbour passage: only B's are extracted")
	assert.Equal(t, graphOf(want), graphOf(ix))
	assert.Equal(t, counts(want), counts(ix))
	assert.Equal(t, rankings(t, want, qs), rankings(t, ix, qs))

	// Adding the same corpus again changes nothing and counts every document as present.
	ch, err = kg.Add(context.Background(), ix, b, ingest.DefaultConfig(), rule(), nil, exact(), nil)
	require.NoError(t, err)
	assert.Equal(t, len(b), ch.Present)
	assert.Zero(t, ch.Chunks)
	assert.Equal(t, graphOf(want), graphOf(ix))

	h, err := kg.History(ix)
	require.NoError(t, err)
	require.Len(t, h, 1, "an add that found nothing new changed nothing, history included")
	assert.Equal(t, "add", h[0].Op)
	assert.Len(t, h[0].Documents, len(b))
}

// TestDeleteEqualsFreshBuild: index(A ∪ B) then Delete(B) equals index(A) built from
// scratch, records, statistics and rankings.
func TestDeleteEqualsFreshBuild(t *testing.T) {
	a, b, qs := harbour(t)
	want := fresh(t, a)
	ix := forChange(t, fresh(t, append(append([]ingest.Passage{}, a...), b...)))
	var docs []int32
	for i := len(a); i < len(a)+len(b); i++ {
		docs = append(docs, int32(i))
	}
	ch, err := kg.Delete(context.Background(), ix, docs, rule(), nil, exact())
	require.NoError(t, err)
	require.False(t, ch.Incremental, "a merge")
	retrieve.StoreBM25(ix, retrieve.DefaultConfig())
	ix = roundTrip(t, ix)
	require.NoError(t, ix.Validate())
	assert.Equal(t, len(b), ch.Chunks)
	assert.Equal(t, graphOf(want), graphOf(ix))
	assert.Equal(t, counts(want), counts(ix))
	assert.Equal(t, rankings(t, want, qs), rankings(t, ix, qs))
}

// TestTitleGazetteerChange: the rule extractor takes every document title for an
// entity wherever it occurs, so a new document titled "Fenmouth Quay" changes what an
// old chunk naming Fenmouth Quay yields. Add extracts that old chunk again (offline)
// and only it; Delete does the same when the title leaves.
func TestTitleGazetteerChange(t *testing.T) {
	a := []ingest.Passage{
		{Title: "Ada Brell", Text: "Ada Brell sailed from Fenmouth Quay to Aldwick in 1790. She kept a ledger."},
		{Title: "Aldwick", Text: "Aldwick is a market town on the river Dole. Its mill grinds barley."},
	}
	b := []ingest.Passage{{Title: "Fenmouth Quay", Text: "Fenmouth Quay is the old landing of Fenmouth. Fishing boats unload there."}}
	want := fresh(t, append(append([]ingest.Passage{}, a...), b...))
	ix := fresh(t, a)
	ch, err := kg.Add(context.Background(), ix, b, ingest.DefaultConfig(), rule(), nil, exact(), nil)
	require.NoError(t, err)
	assert.Equal(t, 1, ch.Reextracted, "Ada Brell's chunk names the new title")
	assert.Equal(t, graphOf(want), graphOf(ix))

	_, err = kg.Delete(context.Background(), ix, []int32{2}, rule(), nil, exact())
	require.NoError(t, err)
	assert.Equal(t, graphOf(fresh(t, a)), graphOf(ix))
}

// TestDeleteAugmentedFacts: an augmentation run adds a cross-chunk fact citing a
// chunk of A and one of B, and a fact citing two chunks of A. Deleting B removes the
// first (counted for the run) and keeps the second, tagged with the run; rolling the
// run back then gives index(A) from scratch.
func TestDeleteAugmentedFacts(t *testing.T) {
	a, b, _ := harbour(t)
	ix := fresh(t, append(append([]ingest.Passage{}, a...), b...))
	const run = "aug-test"
	oldEnt := len(ix.Entities)
	bl := graphio.NewBuilder(ix, run)
	s, o := bl.Entity("Tomas Brell", ""), bl.Entity("Widow's Lantern", "")
	_, isNew, err := bl.AddFactIDs(s, "rested beside", o, []int32{0, int32(len(a))}) // A's first chunk, B's first
	require.NoError(t, err)
	require.True(t, isNew)
	s2 := bl.Entity("harbour ledger keeper", "")
	_, isNew, err = bl.AddFactIDs(s2, "wrote of", s, []int32{0, 1})
	require.NoError(t, err)
	require.True(t, isNew)
	for _, c := range []int32{0, 1} {
		bl.AddMention(s2, c)
	}
	ix.Runs = append(ix.Runs, graphio.Run{ID: run, Kind: "augment"})
	require.NoError(t, kg.EmbedNew(context.Background(), ix, mustEmbedder(t, ix), 64))
	_, err = kg.AddSynonyms(ix, run, oldEnt, kg.DefaultConfig())
	require.NoError(t, err)

	var docs []int32
	for i := len(a); i < len(a)+len(b); i++ {
		docs = append(docs, int32(i))
	}
	ch, err := kg.Delete(context.Background(), ix, docs, rule(), nil, exact())
	require.NoError(t, err)
	require.NoError(t, ix.Validate())
	assert.Equal(t, map[string]int{run: 1}, ch.RunRecordsRemoved)
	var runFacts []string
	for _, f := range ix.Facts {
		if f.Run == run {
			runFacts = append(runFacts, kg.FactText(ix, &f))
		}
	}
	assert.Equal(t, []string{"harbour ledger keeper wrote of tomas brell"}, runFacts)

	ix = roundTrip(t, ix)
	require.NoError(t, ix.RemoveRun(run))
	want := fresh(t, a)
	assert.Equal(t, graphOf(want), graphOf(ix))
	assert.Equal(t, want.Embeddings[graphio.KindEntity].Rows(), ix.Embeddings[graphio.KindEntity].Rows())
}

// TestAddRefusesAnotherSetup: another chunking, extractor or embedder is refused with
// a message naming the index's and the requested one.
func TestAddRefusesAnotherSetup(t *testing.T) {
	a, b, _ := harbour(t)
	ix := fresh(t, a[:3])
	other := ingest.DefaultConfig()
	other.ChunkTokens = 600
	_, err := kg.Add(context.Background(), ix, b, other, rule(), nil, exact(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "chunk-tokens=1200")
	assert.Contains(t, err.Error(), "chunk-tokens=600")
	c, err := llm.New(llm.Config{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}) // never called
	require.NoError(t, err)
	_, err = kg.Add(context.Background(), ix, b, ingest.DefaultConfig(), extract.NewLLM(c, extract.LLMConfig{}), nil, kg.DefaultConfig(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"rule"`)
	assert.Contains(t, err.Error(), `"llm`)
}

func mustEmbedder(t *testing.T, ix *graphio.Index) embed.Embedder {
	t.Helper()
	e, err := embed.ForIndex(ix, nil)
	require.NoError(t, err)
	return e
}

// moreHopQA reads MoreHopQA-150 from ../shared, skipping the test where it is absent.
func moreHopQA(t *testing.T) *eval.Dataset {
	t.Helper()
	const dataset = "../../shared/data/corpora/morehopqa_150.json"
	if _, err := os.Stat(dataset); err != nil {
		t.Skipf("MoreHopQA-150 not found at %s (a fresh clone has no ../shared/data): %v", dataset, err)
	}
	ds, err := eval.ReadDataset(dataset)
	require.NoError(t, err)
	return ds
}

// TestMoreHopQAEquivalence is the equivalence of TestAddEqualsFreshBuild and
// TestDeleteEqualsFreshBuild on the corpus of MoreHopQA-150 (every passage of its
// examples) and its 150 questions: B is every tenth document.
func TestMoreHopQAEquivalence(t *testing.T) {
	ds := moreHopQA(t)
	var a, b []ingest.Passage
	for i, p := range ds.Corpus() {
		if i%10 == 9 {
			b = append(b, p)
		} else {
			a = append(a, p)
		}
	}
	var qs []string
	for _, e := range ds.Examples {
		qs = append(qs, e.Question)
	}
	wantA := fresh(t, a)
	wantAB := fresh(t, append(append([]ingest.Passage{}, a...), b...))

	added := forChange(t, wantA)
	_, err := kg.Add(context.Background(), added, b, ingest.DefaultConfig(), rule(), nil, exact(), nil)
	require.NoError(t, err)
	retrieve.StoreBM25(added, retrieve.DefaultConfig())
	added = roundTrip(t, added)

	deleted := forChange(t, wantAB)
	var docs []int32
	for i := len(a); i < len(deleted.Documents); i++ {
		docs = append(docs, int32(i))
	}
	_, err = kg.Delete(context.Background(), deleted, docs, rule(), nil, exact())
	require.NoError(t, err)
	retrieve.StoreBM25(deleted, retrieve.DefaultConfig())
	deleted = roundTrip(t, deleted)

	for _, tc := range []struct {
		name      string
		want, got *graphio.Index
	}{{"add", wantAB, added}, {"delete", wantA, deleted}} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, graphOf(tc.want), graphOf(tc.got))
			assert.Equal(t, counts(tc.want), counts(tc.got))
			assert.Equal(t, rankings(t, tc.want, qs), rankings(t, tc.got, qs))
		})
	}
}

// TestDeleteOfASameTitleDocument: deleting one of two documents of the same title
// leaves nothing of it (a shorter survivor does not inherit its later chunks), and
// the survivor equals a fresh build of it alone.
func TestDeleteOfASameTitleDocument(t *testing.T) {
	var long, short strings.Builder
	for i := range 160 {
		fmt.Fprintf(&long, "Mara Vell%d founded Quillhaven%d in %d. ", i, i, 1700+i)
	}
	for i := range 40 {
		fmt.Fprintf(&short, "Odile Varrant%d sailed to Fenmouth%d. ", i, i)
	}
	v1 := ingest.Passage{Title: "Guide", Text: long.String(), Source: "v1/guide.txt", Key: "v1/guide.txt"}
	v2 := ingest.Passage{Title: "Guide", Text: short.String(), Source: "v2/guide.txt", Key: "v2/guide.txt"}
	require.Greater(t, len(fresh(t, []ingest.Passage{v1}).Chunks), 1, "a long document")
	want := fresh(t, []ingest.Passage{v2})
	ix := forChange(t, fresh(t, []ingest.Passage{v1, v2}))
	_, err := kg.Delete(context.Background(), ix, []int32{0}, rule(), nil, exact())
	require.NoError(t, err)
	ix = roundTrip(t, ix)
	require.NoError(t, ix.Validate())
	ids := func(ix *graphio.Index) []string {
		var out []string
		for _, c := range ix.Chunks {
			out = append(out, fmt.Sprintf("%d %s", c.Order, c.ID))
		}
		slices.Sort(out)
		return out
	}
	assert.Equal(t, ids(want), ids(ix), "nothing of the deleted document survives")
	assert.Equal(t, graphOf(want), graphOf(ix))
}

// TestAddChecksTheAPIModel: an index embedded through an API takes new documents
// only from the model that built it: another model served under the same name is
// refused before anything changes, the same model on another server is used, and
// the index keeps the probe it was built with.
func TestAddChecksTheAPIModel(t *testing.T) {
	ctx := context.Background()
	a, b, _ := harbour(t)
	api := func(f func(string) []float32) embed.Embedder {
		srv := llmtest.NewServer(t)
		if f != nil {
			srv.SetEmbedder(f)
		}
		c, err := llm.New(llm.Config{BaseURL: srv.URL(), EmbedModel: "bge-m3"})
		require.NoError(t, err)
		e, err := embed.NewAPI(ctx, c)
		require.NoError(t, err)
		return e
	}
	reversed := func(s string) []float32 {
		v := llmtest.Embed(s, llmtest.DefaultEmbedDim)
		slices.Reverse(v)
		return v
	}
	// With an augmentation run the change rebuilds and replays the run, which embeds
	// its records again: the index's probe must survive that too.
	for _, withRun := range []bool{false, true} {
		t.Run(map[bool]string{false: "no run", true: "with a run"}[withRun], func(t *testing.T) {
			ix := &graphio.Index{Meta: graphio.Meta{Tokenizer: "cl100k_base", Chunking: ingest.DefaultConfig().Describe()}}
			require.NoError(t, ingest.AddPassages(ctx, ix, a, ingest.DefaultConfig(), nil, &ingest.Report{}))
			_, err := kg.Build(ctx, ix, rule(), api(nil), exact(), nil)
			require.NoError(t, err)
			probe := append([]byte(nil), ix.Blobs["embedder"]...)
			require.NotEmpty(t, probe)
			if withRun {
				const run = "aug-test"
				bl := graphio.NewBuilder(ix, run)
				s, o := bl.Entity("Tomas Brell", ""), bl.Entity("harbour ledger keeper", "")
				_, _, err := bl.AddFactIDs(o, "wrote of", s, []int32{0, 1})
				require.NoError(t, err)
				ix.Runs = append(ix.Runs, graphio.Run{ID: run, Kind: "augment"})
				require.NoError(t, kg.EmbedNew(ctx, ix, api(nil), 64))
				require.Equal(t, probe, ix.Blobs["embedder"])
			}
			ix = forChange(t, ix)
			chunks := len(ix.Chunks)

			_, err = kg.Add(ctx, ix, b, ingest.DefaultConfig(), rule(), api(reversed), kg.DefaultConfig(), nil)
			require.ErrorIs(t, err, embed.ErrMismatch)
			assert.Contains(t, err.Error(), "probe text at cosine")
			assert.Len(t, ix.Chunks, chunks, "nothing added")

			_, err = kg.Add(ctx, ix, b, ingest.DefaultConfig(), rule(), api(nil), kg.DefaultConfig(), nil)
			require.NoError(t, err)
			assert.Greater(t, len(ix.Chunks), chunks)
			assert.Equal(t, probe, ix.Blobs["embedder"], "the index keeps its model's probe")
			_, err = embed.ForIndex(ix, api(reversed))
			assert.ErrorIs(t, err, embed.ErrMismatch, "and still tells another model by it")
		})
	}
}

// TestDeleteHandsOverASharedChunk: two or three versions of one document (one title)
// whose first piece is the same text share that chunk. Deleting the version that
// holds it hands it to another version that produced it, in any order of deletes, and
// the index then equals a fresh build of what is left; deleting every version takes it.
func TestDeleteHandsOverASharedChunk(t *testing.T) {
	icfg := ingest.DefaultConfig()
	icfg.ChunkTokens, icfg.OverlapTokens = 24, 0
	build := func(ps []ingest.Passage) *graphio.Index {
		ix := &graphio.Index{Meta: graphio.Meta{Tokenizer: "cl100k_base", Chunking: icfg.Describe()}}
		require.NoError(t, ingest.AddPassages(context.Background(), ix, ps, icfg, nil, &ingest.Report{}))
		_, err := kg.Build(context.Background(), ix, oneRule(), nil, exact(), nil)
		require.NoError(t, err)
		return ix
	}
	first := "Tallow Point Lighthouse was built by Jory Solenne in 1790 on the rocks north of Port Keswyn harbour."
	version := func(n int, rest string) ingest.Passage {
		return ingest.Passage{Title: "Tallow Point", Text: first + "\n\n" + rest, Key: fmt.Sprintf("v%d", n)}
	}
	// The example corpus beside them makes each delete a small share of the index: the
	// incremental path (run twice: once as a merge, once incrementally).
	a, b, _ := harbour(t)
	corpus := append(append([]ingest.Passage{}, a...), b...)
	v := []ingest.Passage{
		version(1, "Its lamp was lit by the Lamplighters' Guild of Port Keswyn until 1840."),
		version(2, "Odile Varrant bought the lighthouse in 1801 and sold it to Ada Brell."),
		version(3, "Mira Solenne kept its ledger after the wreck of the Meridian."),
	}
	// sorted lists: a handed-over chunk keeps its place in the chunk list, a fresh build
	// puts it among its new document's pieces.
	sortedGraph := func(ix *graphio.Index) map[string][]string {
		g := graphOf(ix)
		for _, l := range g {
			slices.Sort(l)
		}
		return g
	}
	owners := func(ix *graphio.Index) map[string]string {
		out := map[string]string{}
		for _, c := range ix.Chunks {
			refs := []string{fmt.Sprintf("%s@%d", ix.Documents[c.Doc].Key, c.Order)}
			for _, a := range c.Also {
				refs = append(refs, fmt.Sprintf("%s@%d", ix.Documents[a.Doc].Key, a.Order))
			}
			slices.Sort(refs)
			out[c.Text] = strings.Join(refs, " ")
		}
		return out
	}
	all := build(append(slices.Clone(corpus), v...))
	shared := ""
	for _, c := range all.Chunks {
		if c.Title == "Tallow Point [chunk 1]" {
			shared = c.Text
		}
	}
	require.True(t, strings.HasPrefix(first, shared) && shared != "", "the first piece is the same text in every version")
	require.Equal(t, "v1@0 v2@0 v3@0", owners(all)[shared], "the shared piece is recorded for every version")
	keys := func(ix *graphio.Index, ks ...string) []int32 {
		var out []int32
		for i, d := range ix.Documents {
			if slices.Contains(ks, d.Key) {
				out = append(out, int32(i))
			}
		}
		require.Len(t, out, len(ks))
		return out
	}
	for _, merge := range []bool{true, false} {
		cfg := kg.DefaultConfig()
		cfg.Merge = merge
		for _, order := range [][]string{{"v1", "v2", "v3"}, {"v2", "v1", "v3"}, {"v3", "v1", "v2"}} {
			t.Run(fmt.Sprintf("merge=%v/%s", merge, strings.Join(order, ",")), func(t *testing.T) {
				ix := forChange(t, all)
				left := slices.Clone(v)
				for i, k := range order {
					ch, err := kg.Delete(context.Background(), ix, keys(ix, k), oneRule(), nil, cfg)
					require.NoError(t, err, "delete %s", k)
					if i == 0 {
						require.Equal(t, !merge, ch.Incremental)
					}
					ix = roundTrip(t, ix)
					require.NoError(t, ix.Validate())
					left = slices.DeleteFunc(left, func(p ingest.Passage) bool { return p.Key == k })
					want := build(append(slices.Clone(corpus), left...))
					assert.Equal(t, owners(want), owners(ix), "after deleting %s", k)
					if merge { // an incremental change equals a fresh build at the next merge
						assert.Equal(t, sortedGraph(want), sortedGraph(ix), "after deleting %s", k)
					} else {
						assert.Equal(t, sortedGraph(want)["chunks"], sortedGraph(ix)["chunks"], "after deleting %s", k)
					}
				}
				_, has := owners(ix)[shared]
				assert.False(t, has, "every version deleted: the shared piece is gone")
			})
		}
	}
}

// TestAddRecordsASharedChunk: a version added later that shares an old version's piece
// is recorded on that chunk, so deleting the old version hands the piece over.
func TestAddRecordsASharedChunk(t *testing.T) {
	icfg := ingest.DefaultConfig()
	icfg.ChunkTokens, icfg.OverlapTokens = 24, 0
	first := "Tallow Point Lighthouse was built by Jory Solenne in 1790 on the rocks north of Port Keswyn harbour."
	v1 := ingest.Passage{Title: "Tallow Point", Text: first + "\n\nIts lamp was lit by the Lamplighters' Guild.", Key: "v1"}
	v2 := ingest.Passage{Title: "Tallow Point", Text: first + "\n\nOdile Varrant bought the lighthouse in 1801.", Key: "v2"}
	a, _, _ := harbour(t)
	ix := &graphio.Index{Meta: graphio.Meta{Tokenizer: "cl100k_base", Chunking: icfg.Describe()}}
	require.NoError(t, ingest.AddPassages(context.Background(), ix, append(slices.Clone(a), v1), icfg, nil, &ingest.Report{}))
	_, err := kg.Build(context.Background(), ix, oneRule(), nil, kg.DefaultConfig(), nil)
	require.NoError(t, err)
	ix = forChange(t, ix)
	n := len(ix.Chunks)
	_, err = kg.Add(context.Background(), ix, []ingest.Passage{v2}, icfg, oneRule(), nil, kg.DefaultConfig(), nil)
	require.NoError(t, err)
	ix = roundTrip(t, ix)
	require.Len(t, ix.Chunks, n+1, "v2 brings one new piece")
	var shared *graphio.Chunk
	for i := range ix.Chunks {
		if ix.Chunks[i].Title == "Tallow Point [chunk 1]" {
			shared = &ix.Chunks[i]
		}
	}
	require.NotNil(t, shared)
	require.Len(t, shared.Also, 1)
	assert.Equal(t, "v1", ix.Documents[shared.Doc].Key)
	assert.Equal(t, "v2", ix.Documents[shared.Also[0].Doc].Key)

	var d1 []int32
	for i, d := range ix.Documents {
		if d.Key == "v1" {
			d1 = append(d1, int32(i))
		}
	}
	_, err = kg.Delete(context.Background(), ix, d1, oneRule(), nil, kg.DefaultConfig())
	require.NoError(t, err)
	var titles []string
	for _, c := range ix.Chunks {
		if ix.Documents[c.Doc].Key == "v2" {
			titles = append(titles, c.Title)
		}
	}
	assert.ElementsMatch(t, []string{"Tallow Point [chunk 1]", "Tallow Point [chunk 2]"}, titles, "v2 keeps both its pieces")
}
