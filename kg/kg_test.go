package kg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// chunkIndex returns an index holding the given passages, one chunk each.
func chunkIndex(t *testing.T, texts map[string]string) *graphio.Index {
	t.Helper()
	var ps []ingest.Passage
	titles := make([]string, 0, len(texts))
	for title := range texts {
		titles = append(titles, title)
	}
	sort.Strings(titles)
	for _, title := range titles {
		ps = append(ps, ingest.Passage{Title: title, Text: texts[title], Source: "test"})
	}
	ix := &graphio.Index{}
	require.NoError(t, ingest.AddPassages(context.Background(), ix, ps, ingest.DefaultConfig(), nil, &ingest.Report{}))
	return ix
}

func TestBuildOffline(t *testing.T) {
	ix := chunkIndex(t, map[string]string{
		"Brell":  "Tomas Brell, the harbourmaster of Port Keswyn, was born in Aldwick. Tomas Brell married Ada Brell in Port Keswyn.",
		"Keswyn": "Port Keswyn is a harbour town on the Brackwater Coast. The Lamplighters' Guild stands in Port Keswyn.",
	})
	rep, err := Build(context.Background(), ix, extract.NewRule(extract.DefaultRuleConfig()), nil, DefaultConfig(), nil)
	require.NoError(t, err)
	require.NoError(t, ix.Validate())
	assert.Greater(t, rep.Entities, len(ix.Chunks))
	assert.Greater(t, rep.Facts, 3)
	assert.Greater(t, rep.Hyperedges, 1)
	for k, m := range ix.Embeddings {
		assert.Positive(t, m.Rows(), "%s embeddings", k)
	}
	_, ok := graphio.NewBuilder(ix, "").EntityIndex("port keswyn")
	assert.True(t, ok)
	assert.Contains(t, ix.Meta.Embedder, "hash-tfidf")
	assert.Equal(t, "rule", ix.Meta.Extractor)
}

// TestBuildOfflineReproducible builds the example corpus twice: the two indices are
// the same bytes but for their creation time (tags, synonym edges and their order
// included).
func TestBuildOfflineReproducible(t *testing.T) {
	// The example corpus, plus passages naming entities in two inflections each, so
	// that many groups of stem synonyms are linked.
	data, err := os.ReadFile(filepath.Join("..", "examples", "harbour", "corpus.json"))
	require.NoError(t, err)
	var docs []map[string]string
	require.NoError(t, json.Unmarshal(data, &docs))
	for i, name := range []string{"Harbour Town", "Lamplighter Guild", "Salt Merchant", "Copper Mine", "River Gate",
		"Stone Bridge", "Wool Market", "Sail Loft", "Pilot Cutter", "Bell Buoy"} {
		docs = append(docs, map[string]string{"title": fmt.Sprintf("Pair %d", i),
			"text": fmt.Sprintf("The %s of Aldwick was sold in 1790. The %ss of Fennmouth were older.", name, name)})
	}
	corpus := filepath.Join(t.TempDir(), "corpus.json")
	data, err = json.Marshal(docs)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(corpus, data, 0o644))
	var encoded [2][]byte
	for i := range encoded {
		ix, err := BuildOffline(context.Background(), corpus, DefaultConfig(), extract.DefaultRuleConfig())
		require.NoError(t, err)
		require.NotEmpty(t, ix.Synonyms)
		ix.Meta.Created = ""
		var buf bytes.Buffer
		require.NoError(t, graphio.Write(&buf, ix))
		encoded[i] = buf.Bytes()
	}
	assert.True(t, bytes.Equal(encoded[0], encoded[1]), "two builds of the same corpus differ")
}

// script answers NER, triples and hyperedge calls for a chunk whose text contains key.
func script(srv *llmtest.Server, key string, ents []string, triples [][3]string, hyper string) {
	nj, _ := json.Marshal(map[string]any{"named_entities": ents})
	tj, _ := json.Marshal(map[string]any{"triples": triples})
	hj, _ := json.Marshal(map[string]any{"hyperedges": []map[string]any{{"text": hyper, "entities": []map[string]string{{"name": ents[0]}, {"name": ents[1]}}, "score": 8}}})
	srv.On(llmtest.All(llmtest.UserContains(key), llmtest.SystemContains("extract named entities"))).Reply(string(nj))
	srv.On(llmtest.All(llmtest.UserContains(key), llmtest.SystemContains("RDF graph"))).Reply("Here you go:\n```json\n" + string(tj) + "\n```")
	srv.On(llmtest.All(llmtest.UserContains(key), llmtest.SystemContains("hyper-relations"))).Reply(string(hj))
}

func TestBuildWithLLM(t *testing.T) {
	srv := llmtest.NewServer(t)
	script(srv, "alpha", []string{"Ada Brell", "Aldwick"}, [][3]string{{"Ada Brell", "born in", "Aldwick"}, {"Ada Brell", "born in", "Aldwick"}, {"bad", "triple"}},
		"Ada Brell was born in Aldwick, alpha.")
	script(srv, "beta", []string{"Tomas Brell", "Port Keswyn"}, [][3]string{{"Tomas Brell", "harbourmaster of", "Port Keswyn"}},
		"Tomas Brell kept the harbour of Port Keswyn, beta.")
	// gamma's NER answer is not JSON; delta times out on every attempt.
	srv.On(llmtest.UserContains("gamma")).Reply("I cannot help with that.")
	srv.On(llmtest.UserContains("delta")).Fault(llmtest.Slow(2 * time.Second))
	srv.FailNext(1, llmtest.RateLimited("0"))

	texts := map[string]string{
		"A": "Ada Brell was born in Aldwick, alpha.",
		"B": "Tomas Brell kept the harbour of Port Keswyn, beta.",
		"C": "Nothing to see, gamma.",
		"D": "Slow text, delta.",
	}
	cache := t.TempDir()
	run := func() (*graphio.Index, *Report, llm.Usage) {
		c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", CacheDir: cache, Timeout: 300 * time.Millisecond,
			MaxRetries: 1, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond})
		require.NoError(t, err)
		ix := chunkIndex(t, texts)
		rep, err := Build(context.Background(), ix, extract.NewLLM(c, extract.LLMConfig{Hyperedges: true, MaxTokens: 512}), nil, DefaultConfig(), nil)
		require.NoError(t, err)
		return ix, rep, c.Usage()
	}
	ix, rep, usage := run()
	assert.Equal(t, 2, rep.FailedChunks, "gamma (unparseable) and delta (timeout) are counted and skipped: %v", rep.FailureExamples)
	assert.Equal(t, int64(2), usage.Unparseable, "gamma's NER and hyperedge answers")
	assert.GreaterOrEqual(t, usage.Retries, int64(2), "the 429 and the timeouts were retried")
	var got []string
	for _, f := range ix.Facts {
		got = append(got, fmt.Sprintf("%s|%s|%s", ix.Entities[f.Subject].Name, f.Predicate, ix.Entities[f.Object].Name))
	}
	sort.Strings(got)
	assert.Equal(t, []string{"ada brell|born in|aldwick", "tomas brell|harbourmaster of|port keswyn"}, got, "exactly the scripted triples")
	var hyper []string
	for _, h := range ix.Hyperedges {
		hyper = append(hyper, h.Text)
	}
	sort.Strings(hyper)
	assert.Equal(t, []string{"Ada Brell was born in Aldwick, alpha.", "Tomas Brell kept the harbour of Port Keswyn, beta."}, hyper)
	assert.Equal(t, 2, rep.InvalidTriples, "the duplicate and the two-part triple are rejected")
	assert.Equal(t, "llm:m+ext++", ix.Meta.Extractor)

	calls := srv.Count()
	ix2, _, usage2 := run()
	// Answered requests come from the cache; only the failed ones are tried again.
	assert.Equal(t, int64(0), usage2.CacheCorrupt)
	assert.Equal(t, len(ix.Facts), len(ix2.Facts))
	sent := srv.Requests()[calls:]
	for _, r := range sent {
		assert.Contains(t, []string{"Slow text, delta.", "Nothing to see, gamma."}, lastLine(r.LastUser()), "only failed chunks are re-sent")
	}
}

func lastLine(s string) string {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '\n' {
			return s[i+1:]
		}
	}
	return s
}

func TestAddSynonymsSkipsShortNames(t *testing.T) {
	ix := &graphio.Index{}
	b := graphio.NewBuilder(ix, "")
	for _, n := range []string{"ab", "ab!", "Lamplighter Guild", "Lamplighters Guild", "Gull Rock"} {
		b.Entity(n, "")
	}
	ix.Embeddings = map[graphio.NodeKind]*graphio.Embedding{graphio.KindEntity: {Dim: 2, Data: []float32{
		1, 0, // ab == ab! after normalisation: one entity
		0.6, 0.8,
		0.6, 0.8,
		0.8, 0.6,
	}}}
	n, err := AddSynonyms(ix, "", 0, DefaultConfig())
	require.NoError(t, err)
	assert.Equal(t, 3, n, "\"ab\" is too short to get synonyms")
	assert.Equal(t, []graphio.Synonym{{A: 1, B: 2, Cosine: 1}, {A: 1, B: 3, Cosine: 0.96}, {A: 2, B: 3, Cosine: 0.96}}, roundSyn(ix.Synonyms))
}

func roundSyn(s []graphio.Synonym) []graphio.Synonym {
	for i := range s {
		s[i].Cosine = float32(int(s[i].Cosine*100+0.5)) / 100
	}
	return s
}

// Above ExactKNNLimit the hashed embedder's synonym search blocks on the names' words;
// on the example corpus (and with only the later half queried, as augment does) it
// links exactly the pairs the exact search links, with the same cosines.
func TestAddSynonymsBlockedMatchesExact(t *testing.T) {
	corpus := filepath.Join("..", "examples", "harbour", "corpus.json")
	ix, err := BuildOffline(context.Background(), corpus, DefaultConfig(), extract.DefaultRuleConfig())
	require.NoError(t, err)
	blocked := DefaultConfig()
	blocked.ExactKNNLimit = 1
	_, ok := hashedNameBlocks(ix, make([]bool, len(ix.Entities)), blocked)
	require.True(t, ok, "the blocked path is taken")
	for _, from := range []int{0, len(ix.Entities) / 2} {
		var got [2][]graphio.Synonym
		for k, cfg := range []Config{DefaultConfig(), blocked} {
			ix.Synonyms = nil
			_, err := AddSynonyms(ix, "", from, cfg)
			require.NoError(t, err)
			got[k] = ix.Synonyms
		}
		require.NotEmpty(t, got[0], "from %d", from)
		assert.Equal(t, got[0], got[1], "from %d", from)
	}
}
