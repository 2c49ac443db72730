package llm

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/llm/llmtest"
)

// closedPort returns a loopback URL nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr + "/v1"
}

// TestFailFast: against a closed port, a server answering 501 or one that never
// answers, the client gives up after Config.FailFast failed attempts: every request
// then fails at once with KindDown, naming the last error.
func TestFailFast(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, cfg *Config)
		wantLast string
	}{
		{"closed port", func(t *testing.T, cfg *Config) { cfg.BaseURL = closedPort(t) }, "connection refused"},
		{"501", func(t *testing.T, cfg *Config) {
			srv := llmtest.NewServer(t)
			srv.On(llmtest.Any()).Fault(llmtest.ServerError(501))
			cfg.BaseURL = srv.URL()
		}, "HTTP 501"},
		{"never answers", func(t *testing.T, cfg *Config) {
			srv := llmtest.NewServer(t)
			srv.On(llmtest.Any()).Delay(time.Minute)
			cfg.BaseURL = srv.URL()
			cfg.Timeout = 50 * time.Millisecond
		}, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Model: "m", Timeout: 5 * time.Second, BackoffBase: 200 * time.Millisecond, BackoffMax: time.Second, FailFast: 4, Concurrency: 4}
			tc.setup(t, &cfg)
			c, err := New(cfg)
			require.NoError(t, err)
			start := time.Now()
			errs := make([]error, 20)
			var wg sync.WaitGroup
			for i := range errs {
				wg.Go(func() { _, errs[i] = c.Chat(context.Background(), ask(fmt.Sprint("q", i))) })
			}
			wg.Wait()
			assert.Less(t, time.Since(start), 10*time.Second, "gave up early instead of retrying 20 requests 6 times")
			for _, err := range errs {
				require.Error(t, err)
				assert.Equal(t, KindDown, Classify(err), err.Error())
			}
			assert.ErrorIs(t, errs[19], ErrServerDown)
			assert.Contains(t, errs[19].Error(), tc.wantLast)
			assert.Contains(t, c.LastError().Error(), tc.wantLast)
			u := c.Usage()
			assert.LessOrEqual(t, u.Calls, int64(8), "at most FailFast attempts plus the ones in flight")
		})
	}
}

// TestFailFastNotAfterAnAnswer: once the server answered, later failures are retried
// as usual, and rate limiting never counts.
func TestFailFastNotAfterAnAnswer(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).Reply("ok").Times(1)
	srv.On(llmtest.Any()).Fault(llmtest.ServerError(503)).Times(6)
	srv.On(llmtest.Any()).Reply("ok again")
	c := newTestClient(t, srv, func(c *Config) { c.FailFast = 2; c.Concurrency = 1 })
	_, err := c.Chat(context.Background(), ask("a"))
	require.NoError(t, err)
	for i := range 3 {
		_, err = c.Chat(context.Background(), ask(fmt.Sprint("b", i)))
		assert.NotEqual(t, KindDown, Classify(err))
	}
	resp, err := c.Chat(context.Background(), ask("c"))
	require.NoError(t, err)
	assert.Equal(t, "ok again", resp.Content)

	rl := llmtest.NewServer(t)
	rl.On(llmtest.Any()).Fault(llmtest.RateLimited("0")).Times(5)
	rl.On(llmtest.Any()).Reply("fine")
	c = newTestClient(t, rl, func(c *Config) { c.FailFast = 2 })
	resp, err = c.Chat(context.Background(), ask("x"))
	require.NoError(t, err)
	assert.Equal(t, "fine", resp.Content)
}

// TestRequestDeadlineStartsAtTheFirstAttempt: requests queued behind the client's
// concurrency limit longer than the deadline still get their answers: the deadline
// bounds a request from its first attempt, not from when the caller fanned it out.
func TestRequestDeadlineStartsAtTheFirstAttempt(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).Delay(120 * time.Millisecond)
	c := newTestClient(t, srv, func(c *Config) {
		c.Concurrency = 1
		c.RequestDeadline = 300 * time.Millisecond
	})
	var wg sync.WaitGroup
	errs := make([]error, 5) // the last waits about 480 ms for its slot
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Chat(context.Background(), ask(fmt.Sprint("q", i)))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "request %d", i)
	}
	assert.Equal(t, 5, srv.Count())
}

// TestRequestDeadlineAcrossRetries: a request ends at Config.RequestDeadline however
// many retries it has left.
func TestRequestDeadlineAcrossRetries(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).Fault(llmtest.ServerError(503))
	var retries []time.Duration
	var mu sync.Mutex
	c := newTestClient(t, srv, func(c *Config) {
		c.FailFast = -1
		c.MaxRetries = 100
		c.BackoffBase, c.BackoffMax = 50*time.Millisecond, 50*time.Millisecond
		c.RequestDeadline = 300 * time.Millisecond
	}, WithRetryHook(func(ae *APIError, wait time.Duration) {
		mu.Lock()
		retries = append(retries, wait)
		mu.Unlock()
	}))
	start := time.Now()
	_, err := c.Chat(context.Background(), ask("x"))
	require.Error(t, err)
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Equal(t, KindTimeout, Classify(err))
	assert.Contains(t, err.Error(), "request deadline of 300ms")
	assert.Contains(t, err.Error(), "HTTP 503")
	assert.Less(t, srv.Count(), 100)
	mu.Lock()
	assert.NotEmpty(t, retries, "the retry hook saw the retries")
	mu.Unlock()

	// A 4xx other than 408 and 429 is not retried, deadline or not.
	bad := llmtest.NewServer(t)
	bad.On(llmtest.Any()).Fault(llmtest.Status(422))
	c = newTestClient(t, bad, nil)
	_, err = c.Chat(context.Background(), ask("x"))
	assert.Equal(t, KindClientError, Classify(err))
	assert.Equal(t, 1, bad.Count())
}
