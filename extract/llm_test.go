package extract

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/llm"
)

// blockingChatter answers every call with an empty JSON object once released,
// counting the calls in flight.
type blockingChatter struct {
	release        chan struct{}
	inFlight, peak atomic.Int64
}

func (c *blockingChatter) ChatJSON(ctx context.Context, _ llm.ChatRequest, _ any) (llm.ChatResponse, error) {
	n := c.inFlight.Add(1)
	defer c.inFlight.Add(-1)
	for p := c.peak.Load(); n > p && !c.peak.CompareAndSwap(p, n); p = c.peak.Load() {
	}
	select {
	case <-c.release:
	case <-ctx.Done():
		return llm.ChatResponse{}, ctx.Err()
	}
	return llm.ChatResponse{Content: "{}"}, nil
}

func (c *blockingChatter) Config() llm.Config { return llm.Config{} }

// TestLLMExtractBoundsGoroutines: a large corpus keeps at most 64 chunks in progress
// and does not start a goroutine per chunk; every chunk is still extracted.
func TestLLMExtractBoundsGoroutines(t *testing.T) {
	const n = 2000
	chunks := make([]Chunk, n)
	for i := range chunks {
		chunks[i] = Chunk{ID: fmt.Sprint(i), Title: "T", Text: "Mara Vell founded Quillhaven."}
	}
	c := &blockingChatter{release: make(chan struct{})}
	before := runtime.NumGoroutine()
	var out []Result
	var err error
	var wg sync.WaitGroup
	wg.Go(func() { out, err = NewLLM(c, DefaultLLMConfig()).Extract(context.Background(), chunks, nil) })
	require.Eventually(t, func() bool { return c.inFlight.Load() == 64 }, 5*time.Second, time.Millisecond)
	assert.Less(t, runtime.NumGoroutine()-before, 100, "goroutines while 64 chunks wait on the LLM")
	close(c.release)
	wg.Wait()
	require.NoError(t, err)
	assert.Len(t, out, n)
	assert.LessOrEqual(t, c.peak.Load(), int64(64))
}

// TestUnanswered: the failures a rerun may not meet again count as unanswered — a
// retryable one, a server the client gave up on, an interrupted run — and a refused
// request or an unreadable answer does not.
func TestUnanswered(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"timeout", &llm.APIError{Kind: llm.KindTimeout, Retryable: true}, true},
		{"server down", &llm.APIError{Kind: llm.KindDown, Err: &llm.APIError{Kind: llm.KindNetwork, Retryable: true}}, true},
		{"interrupted", context.Canceled, true},
		{"refused", &llm.APIError{Kind: llm.KindClientError}, false},
		{"unreadable", &llm.ParseError{Err: llm.ErrNoJSON}, false},
	} {
		assert.Equal(t, c.want, unanswered(c.err), c.name)
	}
}

// scriptedChatter answers each stage with its scripted content, parsed as the client
// parses, and records the user messages it was sent.
type scriptedChatter struct {
	mu      sync.Mutex
	answers map[string]string
	asked   []string
}

func (c *scriptedChatter) ChatJSON(_ context.Context, req llm.ChatRequest, v any) (llm.ChatResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, req.Messages[len(req.Messages)-1].Content)
	c.mu.Unlock()
	resp := llm.ChatResponse{Content: c.answers[req.Stage]}
	return resp, llm.ParseAnswer(resp, v)
}

func (c *scriptedChatter) Config() llm.Config { return llm.Config{} }

// TestLLMAnswerShapes: hyperedge answers with string scores and bare entity names
// are read; numbers keep their digits; an answer without the key the prompt asks for
// fails the chunk, naming the key; the prompt carries the document's title, not the
// chunk's "[chunk k]" suffix.
func TestLLMAnswerShapes(t *testing.T) {
	chunk := Chunk{ID: "c1", Title: "Prague [chunk 2]", Text: "Prague had 1300000 people. Ilse Moravec was born in Brno in 1931."}
	cfg := DefaultLLMConfig()
	cfg.Hyperedges = true
	c := &scriptedChatter{answers: map[string]string{
		"ner":        `{"named_entities": ["Prague", "Ilse Moravec", "Brno"]}`,
		"triples":    `{"triples": [["Prague", "population", 1300000], ["Ilse Moravec", "born in", "Brno"]]}`,
		"hyperedges": `{"hyperedges": [{"text": "Ilse Moravec was born in Brno in 1931.", "entities": ["Ilse Moravec", {"name": "Brno"}], "score": "8"}]}`,
	}}
	out, err := NewLLM(c, cfg).Extract(context.Background(), []Chunk{chunk}, nil)
	require.NoError(t, err)
	require.Len(t, out, 1)
	r := out[0]
	require.Empty(t, r.Failed)
	assert.Contains(t, r.Triples, Triple{Subject: "Prague", Predicate: "population", Object: "1300000"})
	require.Len(t, r.Hyperedges, 1)
	assert.Equal(t, []string{"Ilse Moravec", "Brno"}, r.Hyperedges[0].Entities)
	assert.InDelta(t, 8, r.Hyperedges[0].Score, 1e-6)
	for _, m := range c.asked {
		assert.Contains(t, m, "Prague\nPrague had")
		assert.NotContains(t, m, "[chunk")
	}

	for stage, key := range answerKeys {
		t.Run("no "+key, func(t *testing.T) {
			bad := &scriptedChatter{answers: map[string]string{}}
			for s, a := range c.answers {
				bad.answers[s] = a
			}
			bad.answers[stage] = `{"entities": []}`
			out, err := NewLLM(bad, cfg).Extract(context.Background(), []Chunk{chunk}, nil)
			require.NoError(t, err)
			assert.Contains(t, out[0].Failed, stage+": ")
			assert.Contains(t, out[0].Failed, `the answer has no "`+key+`"`)
			assert.False(t, out[0].Unanswered, "an answer that could not be used, not a missing one")
		})
	}
}

// TestUsableAnswers: the check that decides whether a cached answer is asked again
// (--llm-reask-unparseable) reads an answer as chunk does: the stage's key in any
// case, holding a list.
func TestUsableAnswers(t *testing.T) {
	for _, tc := range []struct {
		stage, answer string
		ok            bool
	}{
		{"triples", `{"triples": [["a", "b", "c"]]}`, true},
		{"triples", `{"Triples": [["a", "b", "c"]]}`, true},
		{"triples", `{"triples": "none"}`, false},
		{"triples", `{"relations": []}`, false},
		{"ner", `{"named_entities": ["Prague"]}`, true},
		{"ner", `{"named_entities": "Prague, Brno"}`, false},
		{"hyperedges", `{"hyperedges": [{"text": "x", "entities": ["y"], "score": "7"}]}`, true},
		{"hyperedges", `not json`, false},
	} {
		err := usable(tc.stage)(llm.ChatResponse{Content: tc.answer})
		assert.Equal(t, tc.ok, err == nil, "%s %s: %v", tc.stage, tc.answer, err)
	}
}
