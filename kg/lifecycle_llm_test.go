package kg

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// TestAddSendsOnlyNewChunksToLLM: an index of 12 chunks built with the LLM extractor
// (two calls per chunk: NER, then triples), then Add of 3 documents, with no answer
// cache: exactly 3 × 2 calls are sent, each about a new chunk, and the old chunks'
// facts are still there.
func TestAddSendsOnlyNewChunksToLLM(t *testing.T) {
	srv := llmtest.NewServer(t)
	var old, added []ingest.Passage
	for i := range 15 {
		key := fmt.Sprintf("item%02d", i)
		script(srv, key, []string{"Keeper " + key, "Town " + key}, [][3]string{{"Keeper " + key, "lives in", "Town " + key}}, "unused")
		p := ingest.Passage{Title: "Doc " + key, Text: fmt.Sprintf("Keeper %s lives in Town %s, %s.", key, key, key)}
		if i < 12 {
			old = append(old, p)
		} else {
			added = append(added, p)
		}
	}
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m"}) // no CacheDir: nothing is answered from a cache
	require.NoError(t, err)
	ex := extract.NewLLM(c, extract.LLMConfig{MaxTokens: 512})
	ix := &graphio.Index{}
	require.NoError(t, ingest.AddPassages(context.Background(), ix, old, ingest.DefaultConfig(), nil, &ingest.Report{}))
	_, err = Build(context.Background(), ix, ex, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	require.Equal(t, 12*2, srv.Count())

	ch, err := Add(context.Background(), ix, append(added, old[0]), ingest.DefaultConfig(), ex, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	sent := srv.Requests()[12*2:]
	assert.Len(t, sent, 3*2, "two calls for each of the 3 new chunks, none for the 12 old ones")
	for _, r := range sent {
		assert.Regexp(t, `item1[234]`, r.LastUser(), "only new chunks are sent")
	}
	assert.Equal(t, 1, ch.Present, "the old document given again is skipped")
	assert.Equal(t, 3, ch.Extracted)
	assert.Len(t, ix.Facts, 15, "one scripted fact per chunk, old ones kept")
}

// TestAddRetriesUnansweredChunks: an index written while the LLM gave one chunk no
// answer (the build went on: --allow-partial) lacks that chunk's facts; the next Add,
// even of nothing new, asks that chunk again and only it, and the index then holds
// its facts.
func TestAddRetriesUnansweredChunks(t *testing.T) {
	for _, n := range []int{6, 12} { // one chunk in 6 is past MergeShare: a merge; in 12, incremental
		t.Run(fmt.Sprint(n), func(t *testing.T) { addRetries(t, n, false, false) })
	}
	t.Run("sync", func(t *testing.T) { addRetries(t, 6, true, false) })
	t.Run("no answer again", func(t *testing.T) { addRetries(t, 6, false, true) })
}

// addRetries builds an index of n chunks whose item03 got no answer, then changes it
// with nothing new (Add, or Sync with the same corpus). With again, the first retry
// gets no answer either: it is counted apart, blocks nothing, and the next change
// asks again.
func addRetries(t *testing.T, n int, sync, again bool) {
	srv := llmtest.NewServer(t)
	fails := 1
	if again {
		fails = 2
	}
	srv.On(llmtest.UserContains("item03")).Fault(llmtest.ServerError(503)).Times(fails)
	var ps []ingest.Passage
	for i := range n {
		key := fmt.Sprintf("item%02d", i)
		script(srv, key, []string{"Keeper " + key, "Town " + key}, [][3]string{{"Keeper " + key, "lives in", "Town " + key}}, "unused")
		ps = append(ps, ingest.Passage{Title: "Doc " + key, Text: fmt.Sprintf("Keeper %s lives in Town %s, %s.", key, key, key), Key: key})
	}
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", MaxRetries: -1, FailFast: -1})
	require.NoError(t, err)
	ex := extract.NewLLM(c, extract.LLMConfig{MaxTokens: 512})
	ix := &graphio.Index{}
	require.NoError(t, ingest.AddPassages(context.Background(), ix, ps, ingest.DefaultConfig(), nil, &ingest.Report{}))
	rep, err := Build(context.Background(), ix, ex, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	require.Equal(t, 1, rep.UnansweredChunks)
	require.Len(t, ix.Facts, n-1)
	calls := srv.Count()

	if sync {
		plan, err := PlanSync(context.Background(), ix, ps, "", ingest.DefaultConfig())
		require.NoError(t, err)
		assert.Equal(t, 1, plan.Retried, "the plan counts the chunk a sync asks again")
	}
	change := func() *Change {
		if sync {
			ch, err := Sync(context.Background(), ix, ps, "", ingest.DefaultConfig(), ex, nil, DefaultConfig(), nil)
			require.NoError(t, err)
			return ch
		}
		ch, err := Add(context.Background(), ix, nil, ingest.DefaultConfig(), ex, nil, DefaultConfig(), nil)
		require.NoError(t, err)
		return ch
	}
	ch := change()
	if again {
		assert.Equal(t, 1, ch.Retried)
		assert.Equal(t, 1, ch.RetryFailed)
		assert.Zero(t, ch.Failed)
		assert.Len(t, ix.Facts, n-1)
		ch = change()
	}
	assert.Equal(t, n == 12 && !sync, ch.Incremental)
	assert.Equal(t, 1, ch.Retried)
	assert.Zero(t, ch.RetryFailed)
	assert.Zero(t, ch.Failed)
	for _, r := range srv.Requests()[calls:] {
		assert.Contains(t, r.LastUser(), "item03", "only the unanswered chunk is asked again")
	}
	assert.Len(t, ix.Facts, n, "its fact is in the index now")
	results, _, err := Results(ix)
	require.NoError(t, err)
	for i, r := range results {
		assert.Empty(t, r.Failed, "chunk %d", i)
	}

	// Nothing unanswered is left: another Add of nothing asks nothing.
	calls = srv.Count()
	ch = change()
	assert.Zero(t, ch.Retried)
	assert.Equal(t, calls, srv.Count())
}
