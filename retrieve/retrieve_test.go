package retrieve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// tableEmbedder maps known texts to fixed vectors; anything else is the zero vector.
type tableEmbedder map[string][]float32

func (t tableEmbedder) Identity() string { return "table" }
func (t tableEmbedder) Dim() int         { return 3 }
func (t tableEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, s := range texts {
		if v, ok := t[s]; ok {
			out[i] = v
		} else {
			out[i] = make([]float32, 3)
		}
	}
	return out, nil
}

// tinyIndex: three chunks, facts a–b (c0), b–c (c1), c–d (c1, c2); embeddings set by hand.
func tinyIndex(t *testing.T) (*graphio.Index, tableEmbedder) {
	ix := &graphio.Index{Meta: graphio.Meta{Embedder: "table"}}
	b := graphio.NewBuilder(ix, "")
	d, _ := b.AddDocument("D", "x", "s")
	c0, _ := b.AddChunk(d, 0, "T0", "alpha beta beta", 3)
	c1, _ := b.AddChunk(d, 1, "T1", "beta gamma", 2)
	c2, _ := b.AddChunk(d, 2, "T2", "gamma delta delta delta", 4)
	for _, f := range []struct {
		s, o string
		c    int32
	}{{"a", "b", c0}, {"b", "c", c1}, {"c", "d", c1}, {"c", "d", c2}} {
		_, _, err := b.AddFact(f.s, "rel", f.o, f.c)
		require.NoError(t, err)
	}
	ix.Embeddings = map[graphio.NodeKind]*graphio.Embedding{
		graphio.KindChunk:  {Dim: 3, Data: []float32{1, 0, 0, 0, 1, 0, 0, 0, 1}},
		graphio.KindEntity: {Dim: 3, Data: make([]float32, 12)},
		// fact scores for the query (1,0,0): 0.9, 0.5, 0.1 → normalised 1, 0.5, 0
		graphio.KindFact: {Dim: 3, Data: []float32{0.9, 0, 0, 0.5, 0, 0, 0.1, 0, 0}},
	}
	require.NoError(t, ix.Validate())
	return ix, tableEmbedder{"q": {1, 0, 0}}
}

func TestBM25MatchesFormula(t *testing.T) {
	ix, emb := tinyIndex(t)
	s, err := NewSearcher(ix, emb, DefaultConfig(), nil)
	require.NoError(t, err)
	got := s.bm25Scores(nil, "delta")
	// "delta" occurs only in chunk 2 ("T2 gamma delta delta delta": 5 terms; avg length 4).
	n, df, tf, dl, avg := 3.0, 1.0, 3.0, 5.0, 4.0
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	want := idf * tf * 2.2 / (tf + 1.2*(0.25+0.75*dl/avg))
	assert.InDelta(t, 0, got[0], 1e-12)
	assert.InDelta(t, want, got[2], 1e-12)
	r, _ := s.Retriever("bm25")
	res, err := r.Retrieve(context.Background(), "the delta", 1)
	require.NoError(t, err)
	assert.Equal(t, "T2", res.Passages[0].Title)
}

func TestDenseAndTriples(t *testing.T) {
	ix, emb := tinyIndex(t)
	s, err := NewSearcher(ix, emb, DefaultConfig(), nil)
	require.NoError(t, err)
	r, _ := s.Retriever("dense")
	res, err := r.Retrieve(context.Background(), "q", 2)
	require.NoError(t, err)
	assert.Equal(t, "T0", res.Passages[0].Title)
	assert.InDelta(t, 1, res.Passages[0].Score, 1e-9)
	r, _ = s.Retriever("triples")
	res, err = r.Retrieve(context.Background(), "q", 2)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"a", "rel", "b"}, {"b", "rel", "c"}}, res.Facts)
	assert.Equal(t, []string{"T0", "T1"}, []string{res.Passages[0].Title, res.Passages[1].Title})
	_, err = s.Retriever("nope")
	assert.Error(t, err)
}

func TestHippoSeedsAndPPR(t *testing.T) {
	ix, emb := tinyIndex(t)
	cfg := DefaultConfig()
	cfg.LinkingTopK = 2
	s, err := NewSearcher(ix, emb, cfg, nil)
	require.NoError(t, err)
	g, err := s.hippoGraph()
	require.NoError(t, err)
	r, _ := s.Retriever("ppr")
	res, err := r.Retrieve(context.Background(), "q", 3)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"a", "rel", "b"}, {"b", "rel", "c"}}, res.Facts, "top LinkingTopK facts")

	// Hand-computed reset: facts a–b (score 1) and b–c (0.5). Entity chunks: a {0},
	// b {0,1}, c {1,2}. a: 1/1 = 1; b: mean(1/2, 0.5/2) = 0.375; c: 0.5/2 = 0.25; top 2
	// entities a, b. Passages: dense (1,0,0) → min-max (1,0,0) × 0.05.
	reset := make([]float64, g.ns.N())
	a, _ := graphio.NewBuilder(ix, "").EntityIndex("a")
	bb, _ := graphio.NewBuilder(ix, "").EntityIndex("b")
	reset[g.ns.Entity(a)] = 1
	reset[g.ns.Entity(bb)] = 0.375
	reset[g.ns.Chunk(0)] = 0.05
	x, ok, err := g.solve(reset)
	require.NoError(t, err)
	require.True(t, ok)
	want := s.passages(x, 3)
	require.Len(t, res.Passages, 3)
	for i := range want {
		assert.Equal(t, want[i].Title, res.Passages[i].Title)
		assert.InDelta(t, want[i].Score, res.Passages[i].Score, 1e-8) // solver tolerance 1e-10
	}
	// The graph has HippoRAG's weights: fact pair c–d supported twice weighs 4.
	c, _ := graphio.NewBuilder(ix, "").EntityIndex("c")
	d, _ := graphio.NewBuilder(ix, "").EntityIndex("d")
	csr, _, _ := ix.Adjacency(graphio.HippoGraph, hippoWeights)
	for p := csr.RowPtr[c]; p < csr.RowPtr[c+1]; p++ {
		if csr.Col[p] == d {
			assert.Equal(t, float32(4), csr.Val[p])
		}
	}
}

func TestRecognitionMemory(t *testing.T) {
	ix, emb := tinyIndex(t)
	srv := llmtest.NewServer(t)
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m"})
	require.NoError(t, err)
	s, err := NewSearcher(ix, emb, DefaultConfig(), c)
	require.NoError(t, err)
	r, _ := s.Retriever("ppr")

	// The model keeps one fact, slightly misspelt: it maps to the closest candidate.
	srv.On(llmtest.UserContains("[[ ## question ## ]]\nq\n")).Reply("[[ ## fact_after_filter ## ]]\n{\"fact\": [[\"b\", \"rel\", \"cc\"]]}\n\n[[ ## completed ## ]]").Times(1)
	res, err := r.Retrieve(context.Background(), "q", 3)
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"b", "rel", "c"}}, res.Facts)

	// Keeping nothing falls back to dense retrieval.
	srv.On(llmtest.UserContains("[[ ## question ## ]]\nq\n")).Reply("[[ ## fact_after_filter ## ]]\n{\"fact\": []}\n[[ ## completed ## ]]")
	res, err = r.Retrieve(context.Background(), "q", 3)
	require.NoError(t, err)
	dr, _ := s.Retriever("dense")
	dres, _ := dr.Retrieve(context.Background(), "q", 3)
	assert.Equal(t, dres.Passages, res.Passages)
	assert.Empty(t, res.Facts)
	assert.Contains(t, srv.Requests()[0].Messages[0].Content, "at most 4")
}

func TestMatchFactsAndSimilarity(t *testing.T) {
	assert.InDelta(t, 1, similarity("abc", "abc"), 1e-12)
	assert.InDelta(t, 0.5, similarity("abc", "xbxcx"), 1e-12) // LCS "bc": 2·2/(3+5)
	cands := []string{`["a","rel","b"]`, `["b","rel","c"]`, `["c","rel","d"]`}
	got := matchFacts("junk\n[[ ## fact_after_filter ## ]]\n{\"fact\": [[\"c\",\"rel\",\"d\"],[\"c\",\"rel\",\"d\"],[\"a\",\"rel\",\"b\"]]}", cands, []int32{10, 11, 12}, 4)
	assert.Equal(t, []int32{12, 10}, got, "mapped, deduplicated, in the model's order")
	assert.Nil(t, matchFacts("no json at all", cands, []int32{10, 11, 12}, 4))
}

func TestParseAnswerAndQuestions(t *testing.T) {
	assert.Equal(t, "Aldwick", ParseAnswer("Thought: Tomas was born there.\nAnswer: Aldwick\n"))
	assert.Equal(t, "plain", ParseAnswer(" plain "))
	dir := t.TempDir()
	p := filepath.Join(dir, "q.jsonl")
	require.NoError(t, os.WriteFile(p, []byte("{\"id\":\"a\",\"question\":\"Who?\"}\n\n{\"question\":\"Where?\"}\n"), 0o644))
	qs, err := ReadQuestions(p)
	require.NoError(t, err)
	assert.Equal(t, []Question{{ID: "a", Question: "Who?"}, {ID: "q3", Question: "Where?"}}, qs)
	require.NoError(t, os.WriteFile(p, []byte("{\"id\":\"a\",\"question\":\"Who?\"}\n{\"id\": 3\n"), 0o644))
	_, err = ReadQuestions(p)
	assert.ErrorContains(t, err, "q.jsonl:2")
}

// TestReadQuestionsErrors: every bad questions file is an error naming the file, the
// line or record, the field and what was expected, never a Go type (issue 49 rows 8,
// 9 and 14).
func TestReadQuestionsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{
		{"id a number", `{"id":7,"question":"Who?"}`, `q.jsonl:1: field "id": want a string, got a number`},
		{"question missing", `{"id":"a"}`, `q.jsonl:1: field "question" is missing`},
		{"question an array", `{"question":["x"]}`, `q.jsonl:1: field "question": want a string, got an array`},
		{"not an object", "{\"question\":\"Who?\"}\n42", `q.jsonl:2: want an object {"id", "question"}, got a number`},
		{"null line", `null`, `q.jsonl:1: want an object {"id", "question"}, got null`},
		{"empty question", `{"question":""}`, `q.jsonl:1: field "question": the question is empty`},
		{"blank question", `{"question":"   "}`, `q.jsonl:1: field "question": the question is empty`},
		{"punctuation only", `{"question":"?!…"}`, `q.jsonl:1: field "question": the question "?!…" has no letter or digit`},
		{"auto id collides", "{\"id\":\"q2\",\"question\":\"Who?\"}\n{\"question\":\"Where?\"}", `q.jsonl:2: no id, and its default id "q2" is the id of line 1`},
		{"explicit id collides with a default", "{\"question\":\"Who?\"}\n{\"id\":\"q1\",\"question\":\"Where?\"}", `q.jsonl:2: id "q1" is the default id of line 1`},
		{"duplicate ids", "{\"id\":\"a\",\"question\":\"Who?\"}\n\n{\"id\":\"a\",\"question\":\"Where?\"}", `q.jsonl:3: id "a" is also the id of line 1`},
		{"array duplicate", `[{"id":"a","question":"Who?"},{"id":"a","question":"Why?"}]`, `q.jsonl: record 2: id "a" is also the id of record 1`},
		{"array of numbers", `[1,2]`, `q.jsonl: record 1: want an object {"id", "question"}, got a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "q.jsonl")
			require.NoError(t, os.WriteFile(p, []byte(tc.file), 0o644))
			_, err := ReadQuestions(p)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "Go value")
		})
	}
}

// On the example corpus, HippoRAG 2's PPR puts the gold passages in the top 5 at least
// as often as BM25 (the retrieval issue's acceptance criterion).
func TestExampleCorpusPPRBeatsBM25(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example index")
	}
	ctx := context.Background()
	ix := exampleIndex(t)
	s, err := Open(ix, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	data, err := os.ReadFile("../examples/harbour/questions.json")
	require.NoError(t, err)
	var qs []struct {
		Question string   `json:"question"`
		Gold     []string `json:"supporting_titles"`
	}
	require.NoError(t, json.Unmarshal(data, &qs))
	recall := func(name string) float64 {
		r, err := s.Retriever(name)
		require.NoError(t, err)
		var sum float64
		for _, q := range qs {
			res, err := r.Retrieve(ctx, q.Question, 5)
			require.NoError(t, err)
			hit := 0
			for _, g := range q.Gold {
				for _, p := range res.Passages {
					if p.Title == g {
						hit++
						break
					}
				}
			}
			sum += float64(hit) / float64(len(q.Gold))
		}
		return sum / float64(len(qs))
	}
	bm25, ppr, hyper := recall("bm25"), recall("ppr"), recall("hyperppr")
	t.Logf("example corpus Recall@5: bm25 %.3f, ppr %.3f, dense %.3f, hyperppr %.3f", bm25, ppr, recall("dense"), hyper)
	assert.GreaterOrEqual(t, ppr, bm25)
	assert.GreaterOrEqual(t, hyper, bm25)
}

// TestGenericHubDoesNotWinPPR: three passages share the generic entity "Empire"; the
// question names "Tomas Brell", whose passage says nothing of the question's other
// words. With hub control (generic filter, query-entity seeds and BM25 fusion) PPR
// ranks Brell's passage first; seeded by its facts alone, PPR mass flows through the
// hub to the passage with most links to it.
func TestGenericHubDoesNotWinPPR(t *testing.T) {
	ctx := context.Background()
	var ps []ingest.Passage
	for i, x := range []string{"Aldwick", "Fenmouth", "Castor", "Lindqvist", "Harrowgate"} {
		ps = append(ps, ingest.Passage{Title: x, Text: fmt.Sprintf("%s was a province of the Empire. The Empire taxed %s heavily. Merchants of the Empire traded in %s. Number %d.", x, x, x, i)})
	}
	ps = append(ps, ingest.Passage{Title: "Tomas Brell", Text: "Tomas Brell was a lamplighter. Tomas Brell married Ines Varrant."})
	for i := 0; i < 40; i++ {
		ps = append(ps, ingest.Passage{Title: fmt.Sprintf("Filler %d", i), Text: fmt.Sprintf("Filler passage %d talks about weather number %d.", i, i)})
	}
	build := func(kcfg kg.Config) *graphio.Index {
		ix := &graphio.Index{}
		require.NoError(t, ingest.AddPassages(ctx, ix, ps, ingest.DefaultConfig(), nil, &ingest.Report{}))
		_, err := kg.Build(ctx, ix, extract.NewRule(extract.DefaultRuleConfig()), nil, kcfg, nil)
		require.NoError(t, err)
		return ix
	}
	q := "Which province of the Empire did Tomas Brell light lamps in?"
	top := func(ix *graphio.Index, cfg Config) string {
		s, err := Open(ix, nil, cfg, nil)
		require.NoError(t, err)
		r, _ := s.Retriever("ppr")
		res, err := r.Retrieve(ctx, q, 1)
		require.NoError(t, err)
		return res.Passages[0].Title
	}
	kcfg := kg.DefaultConfig()
	kcfg.GenericMinChunks = 10
	assert.Equal(t, "Tomas Brell", top(build(kcfg), DefaultConfig()))

	off := DefaultConfig()
	off.Lexical, off.QueryEntities = LexicalDense, false
	kcfg.MaxEntityShare = 0
	assert.NotEqual(t, "Tomas Brell", top(build(kcfg), off), "without hub control the hub's passages win")
}

func TestQueryEntityLinking(t *testing.T) {
	ix := &graphio.Index{}
	b := graphio.NewBuilder(ix, "")
	for _, n := range []string{"manamagan thevai", "thevai", "director", "p s ramakrishna rao", "the", "Thomas Su\u0308dhof"} {
		b.Entity(n, "")
	}
	n := newNameIndex(ix)
	got := func(q string) []string {
		var out []string
		for _, e := range n.link(q) {
			out = append(out, ix.Entities[e].Name)
		}
		return out
	}
	assert.Equal(t, []string{"manamagan thevai"}, got("Who is the director of film Manamagan Thevai?"), "longest match; a lower-case common word never links")
	assert.Equal(t, []string{"p s ramakrishna rao"}, got("Whom did P. S. Ramakrishna Rao marry?"))
	assert.Empty(t, got("The director of the film?"), "the first word and stop words are not names")
	for _, q := range []string{"Where did Thomas S\u00fcdhof work?", "Where did Thomas Su\u0308dhof work?"} {
		assert.Equal(t, []string{"thomas s\u00fcdhof"}, got(q), "a name holding a combining mark, precomposed or not: %q", q)
	}
}

func TestFuse(t *testing.T) {
	dense := []float64{0.2, 0.4, 0.6}
	lex := []float64{3, 0, 1}
	got := fuse(nil, dense, lex, 0.5)
	assert.InDeltaSlice(t, []float64{0.5, 0.25, 0.6666666666666666}, got, 1e-12)
	assert.Equal(t, minMaxFlatToOne(nil, dense), fuse(nil, dense, []float64{0, 0, 0}, 0.5), "no lexical match leaves the dense ranking")
}

func TestLexicalModeFollowsEmbedder(t *testing.T) {
	ix, emb := tinyIndex(t)
	for _, tc := range []struct {
		mode, embedder string
		on             bool
	}{
		{LexicalAuto, "table", false},
		{LexicalAuto, "hash-tfidf:v4", true},
		{LexicalDense, "hash-tfidf:v4", false},
		{LexicalFused, "table", true},
	} {
		cfg := DefaultConfig()
		cfg.Lexical = tc.mode
		s, err := NewSearcher(ix, emb, cfg, nil)
		require.NoError(t, err)
		ix.Meta.Embedder = tc.embedder
		assert.Equal(t, tc.on, s.lexicalOn(), "%s with %s", tc.mode, tc.embedder)
		ix.Meta.Embedder = "table"
	}
	cfg := DefaultConfig()
	cfg.Lexical = "sparse"
	_, err := NewSearcher(ix, emb, cfg, nil)
	assert.ErrorContains(t, err, "lexical mode")
}

func TestLexicalFilterDropsUnrelatedFacts(t *testing.T) {
	ix, emb := tinyIndex(t)
	cfg := DefaultConfig()
	cfg.Lexical, cfg.QueryEntities = LexicalFused, false
	s, err := NewSearcher(ix, emb, cfg, nil)
	require.NoError(t, err)
	r, _ := s.Retriever("ppr")
	// "q" embeds to (1,0,0), whose best fact is a–b, but it names no fact's entity:
	// every linked fact is dropped and the ranking falls back to the passage scores.
	res, err := r.Retrieve(context.Background(), "q", 3)
	require.NoError(t, err)
	assert.Empty(t, res.Facts)
	// A question naming "d" keeps the facts about d.
	res, err = r.Retrieve(context.Background(), "q d", 3)
	require.NoError(t, err)
	require.NotEmpty(t, res.Facts)
	for _, f := range res.Facts {
		assert.True(t, f[0] == "d" || f[2] == "d", "%v names d", f)
	}
	cfg.LexicalFilter = false
	s, err = NewSearcher(ix, emb, cfg, nil)
	require.NoError(t, err)
	r, _ = s.Retriever("ppr")
	res, err = r.Retrieve(context.Background(), "q", 3)
	require.NoError(t, err)
	assert.NotEmpty(t, res.Facts, "without the filter the dense linker keeps its top facts")
}

func TestPCSTPrizesAsGRetriever(t *testing.T) {
	nodes, edges, cost := PCSTPrizes([]float64{0.1, 0.9, 0.5, 0.7}, []float64{0.9, 0.9, 0.8, 0.5, 0.1}, 3, 3, 0.5)
	assert.Equal(t, []float64{0, 3, 1, 2}, nodes)
	// k=0: two edges share 0.9 → min(3/2, 3) = 1.5; k=1: min(2/1, 1.485) = 1.485; k=2: min(1, 1.47015) = 1.
	assert.InDeltaSlice(t, []float64{1.5, 1.5, 1.485, 1, 0}, edges, 1e-12)
	assert.Equal(t, 0.5, cost)
	// retrieval.py clamps topk to the node count (1) and topk_e to the distinct edge
	// similarities (1): node prize 1, edge prize min(1/1, 1) = 1, cost min(5, 0.995).
	nodes, edges, cost = PCSTPrizes([]float64{1}, []float64{0.2}, 3, 3, 5)
	assert.Equal(t, []float64{1}, nodes)
	assert.Equal(t, []float64{1}, edges)
	assert.InDelta(t, 0.995, cost, 1e-12, "cost_e capped below the largest edge prize")
	// Two distinct edge values under topk_e 5: prizes 2 and min(1/2, 1.98) = 0.5.
	nodes, edges, _ = PCSTPrizes([]float64{0.3, 0.2}, []float64{0.7, 0.4, 0.4}, 5, 5, 0.5)
	assert.Equal(t, []float64{2, 1}, nodes)
	assert.InDeltaSlice(t, []float64{2, 0.5, 0.5}, edges, 1e-12)
	// topk_e ≤ 0 (and topk ≤ 0): no prizes, and cost_e as given (retrieval.py lowers it
	// only when edges get prizes).
	for _, k := range []int{0, -2} {
		nodes, edges, cost = PCSTPrizes([]float64{0.3, 0.2}, []float64{0.7, 0.4}, k, k, 0.5)
		assert.Equal(t, []float64{0, 0}, nodes)
		assert.Equal(t, []float64{0, 0}, edges)
		assert.Equal(t, 0.5, cost)
	}
}

func TestPCSTRetrieverReturnsATree(t *testing.T) {
	ctx := context.Background()
	ix := exampleIndex(t)
	for _, text := range []string{PCSTTextCSV, PCSTTextVerbal} {
		cfg := DefaultConfig()
		cfg.PCSTText = text
		s, err := Open(ix, nil, cfg, nil)
		require.NoError(t, err)
		r, err := s.Retriever("pcst")
		require.NoError(t, err)
		res, err := r.Retrieve(ctx, "Who is the daughter of Tomas Brell?", 5)
		require.NoError(t, err)
		require.NotEmpty(t, res.Facts)
		require.NotEmpty(t, res.Passages)
		// The facts form one tree: n entities, n−1 facts, each a distinct pair.
		ents, pairs := map[string]bool{}, map[[2]string]bool{}
		for _, f := range res.Facts {
			ents[f[0]], ents[f[2]] = true, true
			a, b := min(f[0], f[2]), max(f[0], f[2])
			pairs[[2]string{a, b}] = true
		}
		assert.Len(t, res.Facts, len(ents)-1)
		assert.Len(t, pairs, len(res.Facts))
		lines := strings.Split(strings.TrimSpace(res.Subgraph), "\n")
		switch text {
		case PCSTTextCSV:
			assert.Equal(t, "node_id,node_attr", lines[0])
			assert.Contains(t, res.Subgraph, "\n\nsrc,edge_attr,dst\n")
		case PCSTTextVerbal:
			require.Len(t, lines, len(res.Facts))
			for i, f := range res.Facts {
				assert.Equal(t, f[0]+" ["+f[1]+"] "+f[2], lines[i])
			}
		}
		assert.Contains(t, res.Subgraph, "tomas brell", "the entity the question names")
	}
}

func TestBatchRetrievalEqualsOneByOne(t *testing.T) {
	ctx := context.Background()
	ix := exampleIndex(t)
	s, err := Open(ix, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	data, err := os.ReadFile("../examples/harbour/questions.json")
	require.NoError(t, err)
	var qs []struct{ Question string }
	require.NoError(t, json.Unmarshal(data, &qs))
	var texts []string
	for len(texts) <= 2*batchResets { // several SolveBatch blocks, fallbacks between
		texts = append(texts, "zzzz qqqq") // matches nothing: the fallback path
		for _, q := range qs {
			texts = append(texts, q.Question)
		}
	}
	for _, name := range []string{"ppr", "hyperppr"} {
		r, err := s.Retriever(name)
		require.NoError(t, err)
		br, ok := r.(BatchRetriever)
		require.True(t, ok, name)
		batch, err := br.RetrieveBatch(ctx, texts, 10)
		require.NoError(t, err)
		require.Len(t, batch, len(texts))
		for i, q := range texts {
			one, err := r.Retrieve(ctx, q, 10)
			require.NoError(t, err)
			require.Len(t, batch[i].Passages, len(one.Passages), "%s %q", name, q)
			for j := range one.Passages {
				assert.Equal(t, one.Passages[j].ChunkID, batch[i].Passages[j].ChunkID, "%s %q rank %d", name, q, j)
				assert.InDelta(t, one.Passages[j].Score, batch[i].Passages[j].Score, 1e-6)
			}
			assert.Equal(t, one.Facts, batch[i].Facts)
		}
	}
}

func TestRRF(t *testing.T) {
	a := []float64{0.9, 0.1, 0.5} // ranks 1, 3, 2
	b := []float64{0, 7, 7}       // ranks 3, 1, 2 (ties by position)
	var bufs rankBuffers
	got := bufs.rrf(nil, a, b, 0.5)
	want := []float64{0.5/61 + 0.5/63, 0.5/63 + 0.5/61, 0.5/62 + 0.5/62}
	assert.InDeltaSlice(t, want, got, 1e-15)
	assert.Equal(t, []int32{1, 3, 2}, new(rankScratch).ranks(a))
	assert.InDeltaSlice(t, []float64{1.0 / 61, 1.0 / 63, 1.0 / 62}, bufs.rrf(nil, a, b, 0), 1e-15, "μ=0 keeps the PPR ranking")

	// Long enough for the two rankings to be sorted on two goroutines: the same
	// fusion, bit for bit.
	rng := rand.New(rand.NewPCG(9, 10))
	long, other := make([]float64, 3*parallelRanks), make([]float64, 3*parallelRanks)
	for i := range long {
		long[i], other[i] = rng.Float64(), float64(rng.IntN(50)) // ties in the second
	}
	ra, rb := slices.Clone(new(rankScratch).ranks(long)), slices.Clone(new(rankScratch).ranks(other))
	got = bufs.rrf(nil, long, other, 0.3)
	for i := range got {
		if want := 0.7/(rrfK+float64(ra[i])) + 0.3/(rrfK+float64(rb[i])); got[i] != want {
			t.Fatalf("entry %d: %v, want %v", i, got[i], want)
		}
	}
}

// exampleIndex is the example corpus indexed offline with the defaults.
func exampleIndex(t *testing.T) *graphio.Index {
	t.Helper()
	ix, err := kg.BuildOffline(context.Background(), "../examples/harbour/corpus.json", kg.DefaultConfig(), extract.DefaultRuleConfig())
	require.NoError(t, err)
	return ix
}

func TestRetrieversReadOnlyTheirEmbeddingKinds(t *testing.T) {
	// Each retriever over an index read with only EmbeddingKinds(name) returns what it
	// returns over the whole index; a retriever needing a skipped kind is an error.
	ctx := context.Background()
	var buf bytes.Buffer
	require.NoError(t, graphio.Write(&buf, exampleIndex(t)))
	whole, err := graphio.Read(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	sw, err := Open(whole, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	data, err := os.ReadFile("../examples/harbour/questions.json")
	require.NoError(t, err)
	var qs []struct{ Question string }
	require.NoError(t, json.Unmarshal(data, &qs))
	qs = append(qs, struct{ Question string }{"zzzz qqqq"})
	for _, name := range Names {
		kinds, ok := EmbeddingKinds(name)
		require.True(t, ok, name)
		part, err := graphio.ReadWith(bytes.NewReader(buf.Bytes()), graphio.ReadOptions{Embeddings: func(k graphio.NodeKind) bool { return slices.Contains(kinds, k) }})
		require.NoError(t, err)
		require.Len(t, part.SkippedEmbeddings(), 4-len(kinds), name)
		sp, err := Open(part, nil, DefaultConfig(), nil)
		require.NoError(t, err, name)
		rw, err := sw.Retriever(name)
		require.NoError(t, err)
		rp, err := sp.Retriever(name)
		require.NoError(t, err)
		for _, q := range qs {
			want, err := rw.Retrieve(ctx, q.Question, 5)
			require.NoError(t, err)
			got, err := rp.Retrieve(ctx, q.Question, 5)
			require.NoError(t, err)
			assert.Equal(t, want, got, "%s %q", name, q.Question)
		}
		for _, other := range Names {
			if need, _ := EmbeddingKinds(other); !isSubset(need, kinds) {
				_, err := sp.Retriever(other)
				assert.Error(t, err, "%s over an index read for %s", other, name)
			}
		}
	}
}

func isSubset(a, b []graphio.NodeKind) bool {
	for _, k := range a {
		if !slices.Contains(b, k) {
			return false
		}
	}
	return true
}

func TestWarmBuildsLazyStructures(t *testing.T) {
	s, err := Open(exampleIndex(t), nil, DefaultConfig(), nil)
	require.NoError(t, err)
	require.Nil(t, s.bm25)
	require.Nil(t, s.hippo)
	require.NoError(t, s.Warm(context.Background(), "bm25", "ppr"))
	assert.NotNil(t, s.bm25, "BM25 postings")
	assert.NotNil(t, s.hippo, "the PPR graph")
	assert.NotNil(t, s.factLex, "the facts' lexical index")
	assert.Nil(t, s.hyper, "only the retrievers named")
	assert.Error(t, s.Warm(context.Background(), "nope"))
}

// countingEmbedder counts the texts it is asked to embed.
type countingEmbedder struct {
	embed.Embedder
	texts int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts += len(texts)
	return c.Embedder.Embed(ctx, texts)
}

// TestPCSTByRelation checks G-Retriever's relation-text edge prizes: relation vectors
// are the embedder's (each relation embedded once), and the subgraph is a tree that
// keeps the fact whose relation is most similar to the question among its candidates.
func TestPCSTByRelation(t *testing.T) {
	ctx := context.Background()
	ix := exampleIndex(t)
	s, err := Open(ix, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	counter := &countingEmbedder{Embedder: s.Embedder()}
	s2, err := NewSearcher(ix, counter, DefaultConfig(), nil)
	require.NoError(t, err)
	vs, err := s2.RelationVectors(ctx, []string{"daughter of", "married", "daughter of"})
	require.NoError(t, err)
	assert.Equal(t, 2, counter.texts, "one call per distinct relation")
	direct, err := s.Embedder().Embed(ctx, []string{"married"})
	require.NoError(t, err)
	assert.Equal(t, direct[0], vs[1])
	assert.Equal(t, vs[0], vs[2])
	_, err = s2.RelationVectors(ctx, []string{"married", "daughter of"})
	require.NoError(t, err)
	assert.Equal(t, 2, counter.texts, "cached")

	const q = "Who is the daughter of Tomas Brell?"
	sg, err := s.PCSTByRelation(ctx, q)
	require.NoError(t, err)
	require.NotEmpty(t, sg.Facts)
	assert.Len(t, sg.Facts, len(sg.Entities)-1, "a tree")
	// The best relation among the candidates gets the top edge prize, above the cost:
	// PCST keeps it.
	qv, err := s.Embedder().Embed(ctx, []string{q})
	require.NoError(t, err)
	g := s.pcstCandidates(func() []float64 {
		entFusion, _ := s.kindFusion(nil, graphio.KindEntity, q, s.scores(nil, graphio.KindEntity, qv[0]))
		return entFusion.all(nil)
	}())
	best, bestSim := int32(-1), -2.0
	for _, f := range g.facts {
		v, err := s.RelationVectors(ctx, []string{ix.Facts[f].Predicate})
		require.NoError(t, err)
		if c := Cosine(qv[0], v[0]); c > bestSim {
			best, bestSim = f, c
		}
	}
	kept := map[string]bool{}
	for _, f := range sg.Facts {
		kept[ix.Facts[f].Predicate] = true
	}
	assert.True(t, kept[ix.Facts[best].Predicate], "the most similar relation %q is kept (kept: %v)", ix.Facts[best].Predicate, kept)
}

// cutChat answers every request with reply, cut at the token limit.
type cutChat struct{ reply string }

func (c cutChat) Chat(context.Context, llm.ChatRequest) (llm.ChatResponse, error) {
	return llm.ChatResponse{Content: c.reply, FinishReason: llm.FinishLength, CompletionTokens: 64}, nil
}

// TestAnswerCutAtTheTokenLimit: a reply cut in its thought is an error, not an
// answer; one cut after its "Answer:" keeps what follows it.
func TestAnswerCutAtTheTokenLimit(t *testing.T) {
	ps := []Passage{{Title: "Aldwick", Text: "Mira was born in Aldwick."}}
	_, err := Answer(context.Background(), cutChat{"Mira's father is Tomas Brell, who was born in"}, "Where?", ps, 5)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cut at the token limit (64 tokens)")
	a, err := Answer(context.Background(), cutChat{"Tomas Brell was born in Aldwick. Answer: Aldwick"}, "Where?", ps, 5)
	require.NoError(t, err)
	assert.Equal(t, "Aldwick", a)
}
