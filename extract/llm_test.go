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
