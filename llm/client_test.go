package llm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/graphloom/graphloom/llm/llmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testKey is a fake API key; tests check it never leaks.
const testKey = "sk-test-SECRET-4f1c9e0b7a"

// newTestClient returns a client for srv with fast retries; mod adjusts the config.
func newTestClient(t *testing.T, srv *llmtest.Server, mod func(*Config), opts ...Option) *Client {
	t.Helper()
	cfg := Config{
		BaseURL:     srv.URL(),
		Model:       "test-model",
		EmbedModel:  "test-embed",
		APIKey:      testKey,
		Timeout:     5 * time.Second,
		BackoffBase: time.Millisecond,
		BackoffMax:  5 * time.Millisecond,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg, opts...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// sleepRecorder is a WithSleep replacement that records waits and returns at once.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepRecorder) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

func ask(text string) ChatRequest { return ChatRequest{Messages: []Message{User(text)}} }

func TestChatSendsRequestAndReturnsAnswer(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.UserContains("capital of France")).
		ReplyWith(llmtest.Reply{Content: "Paris", PromptTokens: 12, CompletionTokens: 1})
	c := newTestClient(t, srv, nil)

	resp, err := c.Chat(context.Background(), ChatRequest{
		Messages:    []Message{System("Be brief."), User("What is the capital of France?")},
		Temperature: Temp(0.5),
		MaxTokens:   100,
		JSONMode:    true,
		Stage:       "qa",
	})
	require.NoError(t, err)
	assert.Equal(t, ChatResponse{Content: "Paris", PromptTokens: 12, CompletionTokens: 1, FinishReason: "stop"}, resp)

	reqs := srv.Requests()
	require.Len(t, reqs, 1)
	r := reqs[0]
	assert.Equal(t, "/v1/chat/completions", r.Path)
	assert.Equal(t, "test-model", r.Model)
	assert.Equal(t, []llmtest.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "What is the capital of France?"}}, r.Messages)
	require.NotNil(t, r.Temperature)
	assert.InDelta(t, 0.5, *r.Temperature, 1e-12)
	assert.Equal(t, 100, r.MaxTokens)
	assert.True(t, r.JSONMode)
	assert.Equal(t, "Bearer "+testKey, r.Header.Get("Authorization"))

	u := c.Usage()
	assert.Equal(t, int64(1), u.Calls)
	assert.Equal(t, int64(12), u.PromptTokens)
	assert.Equal(t, int64(1), u.Stages["qa"].CompletionTokens)
}

func TestChatDefaultsFromConfig(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       func(*Config)
		req       ChatRequest
		wantTemp  float64
		wantMax   int
		wantField string
	}{
		{"config temperature and cap", func(c *Config) { c.Temperature = 0.2; c.MaxTokens = 50 }, ask("x"), 0.2, 50, "max_tokens"},
		{"request overrides", func(c *Config) { c.Temperature = 0.2; c.MaxTokens = 50 },
			ChatRequest{Messages: []Message{User("x")}, Temperature: Temp(0), MaxTokens: 7}, 0, 7, "max_tokens"},
		{"max_completion_tokens field", func(c *Config) { c.MaxTokens = 9; c.MaxCompletionTokensField = true }, ask("x"), 0, 9, "max_completion_tokens"},
		{"no cap", nil, ask("x"), 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			c := newTestClient(t, srv, tc.cfg)
			_, err := c.Chat(context.Background(), tc.req)
			require.NoError(t, err)
			r := srv.Requests()[0]
			require.NotNil(t, r.Temperature)
			assert.InDelta(t, tc.wantTemp, *r.Temperature, 1e-12)
			assert.Equal(t, tc.wantMax, r.MaxTokens)
			if tc.wantField != "" {
				assert.Contains(t, string(r.Body), `"`+tc.wantField+`"`)
			} else {
				assert.NotContains(t, string(r.Body), `max_`)
			}
		})
	}
}

func TestChatRetries(t *testing.T) {
	for _, tc := range []struct {
		name         string
		faults       []llmtest.Fault // FailNext(1, f) each, in order
		maxRetries   int
		wantCalls    int
		wantKind     Kind // "" when the request finally succeeds
		wantStatus   int
		wantFailures map[Kind]int64
	}{
		{"429 then success", []llmtest.Fault{llmtest.RateLimited("1")}, 0, 2, "", 0,
			map[Kind]int64{KindRateLimited: 1}},
		{"500 twice then success", []llmtest.Fault{llmtest.ServerError(500), llmtest.ServerError(500)}, 0, 3, "", 0,
			map[Kind]int64{KindServerError: 2}},
		{"502 with an HTML body", []llmtest.Fault{{Status: 502, Body: "<html>Bad Gateway</html>"}}, 0, 2, "", 0,
			map[Kind]int64{KindServerError: 1}},
		{"503 until retries run out", repeat(llmtest.ServerError(503), 5), 2, 3, KindServerError, 503,
			map[Kind]int64{KindServerError: 3}},
		{"400 not retried", []llmtest.Fault{llmtest.Status(400)}, 0, 1, KindClientError, 400,
			map[Kind]int64{KindClientError: 1}},
		{"404 not retried", []llmtest.Fault{llmtest.Status(404)}, 0, 1, KindClientError, 404,
			map[Kind]int64{KindClientError: 1}},
		{"408 retried as timeout", []llmtest.Fault{llmtest.Status(408)}, 0, 2, "", 0,
			map[Kind]int64{KindTimeout: 1}},
		{"malformed body is a bad response", repeat(llmtest.Malformed(), 5), 1, 2, KindBadResponse, 0,
			map[Kind]int64{KindBadResponse: 2}},
		{"malformed body once then success", []llmtest.Fault{llmtest.Malformed()}, 0, 2, "", 0,
			map[Kind]int64{KindBadResponse: 1}},
		{"truncated body retried", []llmtest.Fault{llmtest.Truncated()}, 0, 2, "", 0,
			map[Kind]int64{KindNetwork: 1}},
		{"hangup mid-body retried", []llmtest.Fault{llmtest.Hangup()}, 0, 2, "", 0,
			map[Kind]int64{KindNetwork: 1}},
		{"dropped connection retried", []llmtest.Fault{llmtest.Drop()}, 0, 2, "", 0,
			map[Kind]int64{KindNetwork: 1}},
		{"retries disabled", []llmtest.Fault{llmtest.ServerError(500)}, -1, 1, KindServerError, 500,
			map[Kind]int64{KindServerError: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.On(llmtest.Any()).Reply("fine")
			for _, f := range tc.faults {
				srv.FailNext(1, f)
			}
			var sleeps sleepRecorder
			c := newTestClient(t, srv, func(c *Config) {
				if tc.maxRetries != 0 {
					c.MaxRetries = tc.maxRetries
				}
			}, WithSleep(sleeps.sleep))

			resp, err := c.Chat(context.Background(), ask("hello"))
			assert.Equal(t, tc.wantCalls, srv.Count(), "HTTP calls")
			u := c.Usage()
			assert.Equal(t, int64(tc.wantCalls), u.Calls)
			assert.Equal(t, tc.wantFailures, u.Failures)
			assert.Equal(t, int64(tc.wantCalls-1), u.Retries)
			assert.Len(t, sleeps.recorded(), tc.wantCalls-1)
			if tc.wantKind == "" {
				require.NoError(t, err)
				assert.Equal(t, "fine", resp.Content)
				assert.Zero(t, u.Errors)
				return
			}
			require.Error(t, err)
			var ae *APIError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tc.wantKind, ae.Kind)
			assert.Equal(t, tc.wantKind, Classify(err))
			assert.Equal(t, tc.wantStatus, ae.Status)
			assert.Equal(t, tc.wantCalls, ae.Attempts)
			assert.Equal(t, int64(1), u.Errors)
			assert.Equal(t, "chat", ae.Op)
		})
	}
}

func repeat(f llmtest.Fault, n int) []llmtest.Fault {
	out := make([]llmtest.Fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}

func TestRetryAfterIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter string
		backoffMax time.Duration
		want       time.Duration
		tolerance  time.Duration
	}{
		{"seconds", "1", time.Minute, time.Second, 0},
		{"fractional seconds", "0.25", time.Minute, 250 * time.Millisecond, 0},
		{"capped by BackoffMax", "120", 2 * time.Second, 2 * time.Second, 0},
		{"HTTP date", time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat), time.Minute, 30 * time.Second, 2 * time.Second},
		{"date in the past", time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat), time.Minute, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.FailNext(1, llmtest.RateLimited(tc.retryAfter))
			var sleeps sleepRecorder
			c := newTestClient(t, srv, func(c *Config) { c.BackoffMax = tc.backoffMax }, WithSleep(sleeps.sleep))
			_, err := c.Chat(context.Background(), ask("hi"))
			require.NoError(t, err)
			require.Len(t, sleeps.recorded(), 1)
			assert.InDelta(t, float64(tc.want), float64(sleeps.recorded()[0]), float64(tc.tolerance))
		})
	}
}

func TestRetryAfterRealWaitIsCapped(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.FailNext(1, llmtest.RateLimited("1"))
	c := newTestClient(t, srv, func(c *Config) { c.BackoffMax = 50 * time.Millisecond })
	start := time.Now()
	_, err := c.Chat(context.Background(), ask("hi"))
	require.NoError(t, err)
	elapsed := time.Since(start)
	assert.GreaterOrEqual(t, elapsed, 50*time.Millisecond, "the capped Retry-After wait")
	assert.Less(t, elapsed, 900*time.Millisecond, "Retry-After: 1 must be capped by BackoffMax")
	assert.Equal(t, 2, srv.Count())
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "3"}, 3 * time.Second, true},
		{"milliseconds header wins", map[string]string{"Retry-After-Ms": "150", "Retry-After": "3"}, 150 * time.Millisecond, true},
		{"date", map[string]string{"Retry-After": now.Add(5 * time.Second).Format(http.TimeFormat)}, 5 * time.Second, true},
		{"past date", map[string]string{"Retry-After": now.Add(-5 * time.Second).Format(http.TimeFormat)}, 0, true},
		{"negative", map[string]string{"Retry-After": "-1"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"huge", map[string]string{"Retry-After": "1e300"}, 24 * time.Hour, true},
		{"huge ms", map[string]string{"Retry-After-Ms": "1e300"}, 24 * time.Hour, true},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.header {
				h.Set(k, v)
			}
			got, ok := parseRetryAfter(h, now)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestBackoffIsFullJitterWithinBounds(t *testing.T) {
	c := &Client{cfg: Config{BackoffBase: 10 * time.Millisecond, BackoffMax: 100 * time.Millisecond}}
	for n := range 12 {
		ceil := min(10*time.Millisecond<<n, 100*time.Millisecond)
		distinct := make(map[time.Duration]bool)
		for range 200 {
			d := c.backoff(n, &APIError{})
			require.GreaterOrEqual(t, d, time.Duration(0))
			require.LessOrEqual(t, d, ceil, "retry %d", n)
			distinct[d] = true
		}
		assert.Greater(t, len(distinct), 1, "waits are jittered")
	}
	// Large retry counts must not overflow.
	d := c.backoff(200, &APIError{})
	assert.LessOrEqual(t, d, 100*time.Millisecond)
}

func TestTimeoutIsRetriedThenFails(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).Delay(5 * time.Second)
	c := newTestClient(t, srv, func(c *Config) {
		c.Timeout = 60 * time.Millisecond
		c.MaxRetries = 2
	})
	start := time.Now()
	_, err := c.Chat(context.Background(), ask("slow"))
	require.Error(t, err)
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.ErrorIs(t, err, ErrTimeout)
	assert.Equal(t, KindTimeout, Classify(err))
	assert.True(t, IsRetryable(err))
	var ae *APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, 3, ae.Attempts)
	assert.Contains(t, err.Error(), "timeout")
	assert.Equal(t, 3, srv.Count())
	u := c.Usage()
	assert.Equal(t, map[Kind]int64{KindTimeout: 3}, u.Failures)
	assert.Equal(t, int64(1), u.Errors)
	assert.Empty(t, srv.Answered(), "the server saw every client give up")
}

func TestTimeoutThenSuccess(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).Delay(5 * time.Second).Times(1)
	srv.On(llmtest.Any()).Reply("late but fine")
	c := newTestClient(t, srv, func(c *Config) { c.Timeout = 60 * time.Millisecond })
	resp, err := c.Chat(context.Background(), ask("slow"))
	require.NoError(t, err)
	assert.Equal(t, "late but fine", resp.Content)
	assert.Equal(t, 2, srv.Count())
}

func TestCallerCancellationIsNotRetried(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).Delay(5 * time.Second)
	c := newTestClient(t, srv, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel()
	_, err := c.Chat(ctx, ask("slow"))
	require.Error(t, err)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, KindCanceled, Classify(err))
	assert.Equal(t, 1, srv.Count())
	u := c.Usage()
	assert.Zero(t, u.Retries)
	assert.Empty(t, u.Failures)
	assert.Zero(t, u.Errors)
}

func TestNetworkErrorRetried(t *testing.T) {
	// Nothing listens on this port once the server is closed.
	srv := llmtest.NewServer(t)
	url := srv.URL()
	srv.Close()
	var sleeps sleepRecorder
	c, err := New(Config{BaseURL: url, Model: "m", MaxRetries: 2}, WithSleep(sleeps.sleep))
	require.NoError(t, err)
	_, err = c.Chat(context.Background(), ask("x"))
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrNetwork)
	assert.Len(t, sleeps.recorded(), 2)
}

func TestSecondIdenticalRequestHitsCache(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).ReplyWith(llmtest.Reply{Content: "answer", PromptTokens: 5, CompletionTokens: 2})
	dir := t.TempDir()
	c := newTestClient(t, srv, func(c *Config) { c.CacheDir = dir })
	ctx := context.Background()
	req := ChatRequest{Messages: []Message{System("s"), User("question")}, Stage: "extract"}

	first, err := c.Chat(ctx, req)
	require.NoError(t, err)
	assert.False(t, first.Cached)
	second, err := c.Chat(ctx, req)
	require.NoError(t, err)
	assert.True(t, second.Cached)
	assert.Equal(t, first.Content, second.Content)
	assert.Equal(t, first.PromptTokens, second.PromptTokens)
	assert.Equal(t, 1, srv.Count(), "the second request costs no HTTP call")

	u := c.Usage()
	assert.Equal(t, int64(2), u.Requests)
	assert.Equal(t, int64(1), u.CacheHits)
	assert.Equal(t, int64(5), u.PromptTokens, "cache hits cost no tokens")

	// The stage is accounting only: same answer, from the cache.
	req.Stage = "other"
	third, err := c.Chat(ctx, req)
	require.NoError(t, err)
	assert.True(t, third.Cached)

	// A new client on the same directory sees the cache.
	c2 := newTestClient(t, srv, func(c *Config) { c.CacheDir = dir })
	again, err := c2.Chat(ctx, req)
	require.NoError(t, err)
	assert.True(t, again.Cached)
	assert.Equal(t, "answer", again.Content)
	assert.Equal(t, 1, srv.Count())
	assert.Zero(t, c2.Usage().Calls)
	assert.Empty(t, srv.Duplicates())
}

func TestCacheKeyCoversWhatChangesTheAnswer(t *testing.T) {
	base := ChatRequest{Messages: []Message{User("q")}}
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		req  ChatRequest
	}{
		{"other message", nil, ask("q2")},
		{"other role", nil, ChatRequest{Messages: []Message{System("q")}}},
		{"extra message", nil, ChatRequest{Messages: []Message{System("s"), User("q")}}},
		{"temperature", nil, ChatRequest{Messages: base.Messages, Temperature: Temp(0.7)}},
		{"max tokens", nil, ChatRequest{Messages: base.Messages, MaxTokens: 10}},
		{"JSON mode", nil, ChatRequest{Messages: base.Messages, JSONMode: true}},
		{"model", func(c *Config) { c.Model = "other-model" }, base},
		{"config temperature", func(c *Config) { c.Temperature = 0.3 }, base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			dir := t.TempDir()
			c := newTestClient(t, srv, func(c *Config) { c.CacheDir = dir })
			_, err := c.Chat(context.Background(), base)
			require.NoError(t, err)
			c2 := newTestClient(t, srv, func(c *Config) {
				c.CacheDir = dir
				if tc.cfg != nil {
					tc.cfg(c)
				}
			})
			resp, err := c2.Chat(context.Background(), tc.req)
			require.NoError(t, err)
			assert.False(t, resp.Cached)
			assert.Equal(t, 2, srv.Count())
		})
	}
}

func TestCorruptCacheEntryIsAMiss(t *testing.T) {
	for _, tc := range []struct {
		name    string
		corrupt func(data []byte) []byte
	}{
		{"truncated", func(d []byte) []byte { return d[:len(d)/2] }},
		{"empty", func([]byte) []byte { return nil }},
		{"garbage", func([]byte) []byte { return []byte("\x00\xff not json") }},
		{"wrong version", func(d []byte) []byte { return []byte(strings.Replace(string(d), `"v":1`, `"v":99`, 1)) }},
		{"wrong key", func(d []byte) []byte { return []byte(strings.Replace(string(d), `"key":"`, `"key":"x`, 1)) }},
		{"no answer", func([]byte) []byte { return []byte(`{"v":1,"kind":"chat"}`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.On(llmtest.Any()).Reply("fresh")
			dir := t.TempDir()
			c := newTestClient(t, srv, func(c *Config) { c.CacheDir = dir })
			_, err := c.Chat(context.Background(), ask("q"))
			require.NoError(t, err)

			files := cacheFiles(t, dir)
			require.Len(t, files, 1)
			data, err := os.ReadFile(files[0])
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(files[0], tc.corrupt(data), 0o600))

			resp, err := c.Chat(context.Background(), ask("q"))
			require.NoError(t, err, "a corrupt entry is never fatal")
			assert.False(t, resp.Cached)
			assert.Equal(t, "fresh", resp.Content)
			assert.Equal(t, 2, srv.Count())
			assert.Equal(t, int64(1), c.Usage().CacheCorrupt)

			// The entry was rewritten: a third request is a hit.
			resp, err = c.Chat(context.Background(), ask("q"))
			require.NoError(t, err)
			assert.True(t, resp.Cached)
			assert.Equal(t, 2, srv.Count())
		})
	}
}

// cacheFiles lists the entries under dir, failing on leftover temporary files.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		require.False(t, strings.HasPrefix(d.Name(), ".tmp-"), "temporary file left behind: %s", path)
		rel, _ := filepath.Rel(dir, path)
		require.Regexp(t, `^[0-9a-f]{2}/[0-9a-f]{64}\.json$`, filepath.ToSlash(rel))
		files = append(files, path)
		return nil
	}))
	return files
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.UserContains("ok")).Reply("fine")
	srv.On(llmtest.UserContains("auth")).Fault(llmtest.Fault{Status: 401, Message: "Incorrect API key provided: " + testKey})
	dir := t.TempDir()
	c := newTestClient(t, srv, func(c *Config) { c.CacheDir = dir })
	ctx := context.Background()

	_, err := c.Chat(ctx, ask("ok"))
	require.NoError(t, err)
	_, err = c.Embed(ctx, []string{"some text", "more text"})
	require.NoError(t, err)
	for _, f := range cacheFiles(t, dir) {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.NotContains(t, string(data), testKey, f)
		assert.NotContains(t, string(data), "SECRET", f)
	}

	_, err = c.Chat(ctx, ask("auth"))
	require.Error(t, err)
	assert.Equal(t, KindClientError, Classify(err))
	assert.NotContains(t, err.Error(), testKey)
	assert.Contains(t, err.Error(), "[REDACTED]")
	assert.NotContains(t, fmt.Sprintf("%v %+v %#v", err, err, err), testKey)

	cfg := c.Config()
	for _, s := range []string{
		cfg.String(), fmt.Sprint(cfg), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg),
		fmt.Sprintf("%v %+v %#v", c, c, c), fmt.Sprint(&cfg), c.Usage().String(),
	} {
		assert.NotContains(t, s, testKey)
	}
	assert.Contains(t, cfg.String(), "APIKey: REDACTED")
}

func TestConcurrencyIsBounded(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).ReplyFunc(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "echo " + r.LastUser()}
	}).Delay(40 * time.Millisecond)
	c := newTestClient(t, srv, func(c *Config) { c.Concurrency = 3 })

	reqs := make([]ChatRequest, 24)
	for i := range reqs {
		reqs[i] = ask(fmt.Sprintf("request %d", i))
	}
	var (
		inCallback atomic.Int32
		overlap    atomic.Bool
		done       = make([]string, len(reqs))
	)
	err := c.ChatAll(context.Background(), reqs, func(i int, resp ChatResponse, err error) {
		if inCallback.Add(1) > 1 {
			overlap.Store(true)
		}
		defer inCallback.Add(-1)
		require.NoError(t, err)
		done[i] = resp.Content
	})
	require.NoError(t, err)
	for i, content := range done {
		assert.Equal(t, fmt.Sprintf("echo request %d", i), content)
	}
	assert.False(t, overlap.Load(), "onDone calls must not overlap")
	assert.Equal(t, 24, srv.Count())
	assert.LessOrEqual(t, srv.MaxInFlight(), 3)
	assert.Equal(t, 3, srv.MaxInFlight(), "the client does use its slots")
}

func TestChatAllCancelled(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).Delay(5 * time.Second)
	c := newTestClient(t, srv, func(c *Config) { c.Concurrency = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
	defer cancel()
	reqs := make([]ChatRequest, 10)
	for i := range reqs {
		reqs[i] = ask(fmt.Sprint(i))
	}
	var calls atomic.Int32
	err := c.ChatAll(ctx, reqs, func(_ int, _ ChatResponse, err error) {
		calls.Add(1)
		assert.Equal(t, KindCanceled, Classify(err))
	})
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, int32(10), calls.Load(), "every request is reported")
	assert.LessOrEqual(t, srv.Count(), 2)
}

func TestIdenticalConcurrentRequestsAreSentOnce(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).Reply("shared").Delay(60 * time.Millisecond)
	c := newTestClient(t, srv, func(c *Config) { c.CacheDir = t.TempDir() })
	var wg sync.WaitGroup
	results := make([]ChatResponse, 8)
	for i := range results {
		wg.Go(func() {
			resp, err := c.Chat(context.Background(), ask("same question"))
			assert.NoError(t, err)
			results[i] = resp
		})
	}
	wg.Wait()
	assert.Equal(t, 1, srv.Count())
	cached := 0
	for _, r := range results {
		assert.Equal(t, "shared", r.Content)
		if r.Cached {
			cached++
		}
	}
	assert.Equal(t, 7, cached)
	u := c.Usage()
	assert.Equal(t, int64(7), u.Deduplicated+u.CacheHits)
}

func TestInvalidRequestsSendNothing(t *testing.T) {
	srv := llmtest.NewServer(t)
	c := newTestClient(t, srv, nil)
	for _, tc := range []struct {
		name string
		req  ChatRequest
	}{
		{"no messages", ChatRequest{}},
		{"unknown role", ChatRequest{Messages: []Message{{Role: "robot", Content: "x"}}}},
		{"NaN temperature", ChatRequest{Messages: []Message{User("x")}, Temperature: Temp(math.NaN())}},
		{"negative temperature", ChatRequest{Messages: []Message{User("x")}, Temperature: Temp(-1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Chat(context.Background(), tc.req)
			require.Error(t, err)
		})
	}
	assert.Zero(t, srv.Count())
}

func TestNotConfigured(t *testing.T) {
	c, err := New(Config{})
	require.NoError(t, err)
	_, err = c.Chat(context.Background(), ask("x"))
	assert.ErrorIs(t, err, ErrNotConfigured)
	assert.Equal(t, KindConfig, Classify(err))
	_, err = c.Embed(context.Background(), []string{"x"})
	assert.ErrorIs(t, err, ErrNotConfigured)

	_, err = New(Config{BaseURL: "localhost:11434"})
	require.Error(t, err, "a URL without scheme is rejected")
	_, err = New(Config{BaseURL: "http://u:hunter2@host/v1", Temperature: -1})
	require.Error(t, err)
}

func TestEmbed(t *testing.T) {
	srv := llmtest.NewServer(t)
	dir := t.TempDir()
	c := newTestClient(t, srv, func(c *Config) {
		c.EmbedBatchSize = 3
		c.CacheDir = dir
	})
	texts := []string{"alpha beta", "gamma", "delta epsilon", "alpha beta", "zeta", "eta theta", "iota", "gamma"}
	got, err := c.Embed(context.Background(), texts)
	require.NoError(t, err)
	require.Len(t, got, len(texts))
	for i, text := range texts {
		assert.Equal(t, llmtest.Embed(text, llmtest.DefaultEmbedDim), got[i], "text %d", i)
	}
	// 6 distinct texts in batches of 3.
	assert.Equal(t, 2, srv.Count())
	for _, r := range srv.Requests() {
		assert.Equal(t, "/v1/embeddings", r.Path)
		assert.Equal(t, "test-embed", r.Model)
		assert.LessOrEqual(t, len(r.Input), 3)
	}
	u := c.Usage()
	assert.Equal(t, int64(8), u.Stages["embed"].Requests)
	assert.Equal(t, int64(2), u.Deduplicated)
	assert.Positive(t, u.PromptTokens)

	// Vectors handed out are independent copies.
	got[0][0] = 42
	assert.NotEqual(t, float32(42), got[3][0])

	// Everything is cached now, per text: a different mix costs nothing…
	again, err := c.Embed(context.Background(), []string{"iota", "alpha beta"})
	require.NoError(t, err)
	assert.Equal(t, llmtest.Embed("iota", llmtest.DefaultEmbedDim), again[0])
	assert.Equal(t, 2, srv.Count())
	// …and a new text only that one.
	_, err = c.Embed(context.Background(), []string{"iota", "kappa"})
	require.NoError(t, err)
	require.Equal(t, 3, srv.Count())
	assert.Equal(t, []string{"kappa"}, srv.Requests()[2].Input)
}

func TestEmbedUsesItsOwnServer(t *testing.T) {
	chat := llmtest.NewServer(t)
	embed := llmtest.NewServer(t)
	embed.SetEmbedDim(8)
	c := newTestClient(t, chat, func(c *Config) { c.EmbedBaseURL = embed.URL() })
	vecs, err := c.Embed(context.Background(), []string{"x"})
	require.NoError(t, err)
	assert.Len(t, vecs[0], 8)
	assert.Zero(t, chat.Count())
	assert.Equal(t, 1, embed.Count())
}

func TestEmbedFailures(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(*llmtest.Server)
		wantKind Kind
	}{
		{"empty vectors", func(s *llmtest.Server) { s.SetEmbedder(func(string) []float32 { return nil }) }, KindBadResponse},
		{"server down", func(s *llmtest.Server) { s.FailNext(100, llmtest.ServerError(503)) }, KindServerError},
		{"rejected", func(s *llmtest.Server) { s.OnEmbeddings(llmtest.UserContains("bad")).Fault(llmtest.Status(400)) }, KindClientError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewServer(t)
			tc.setup(srv)
			c := newTestClient(t, srv, func(c *Config) { c.MaxRetries = 1; c.EmbedBatchSize = 1 })
			_, err := c.Embed(context.Background(), []string{"bad input"})
			require.Error(t, err)
			assert.Equal(t, tc.wantKind, Classify(err))
			var ae *APIError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, "embed", ae.Op)
		})
	}
}

func TestEmbedPartialFailureKeepsAnsweredBatches(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.OnEmbeddings(llmtest.UserContains("poison")).Fault(llmtest.Status(400))
	dir := t.TempDir()
	c := newTestClient(t, srv, func(c *Config) { c.EmbedBatchSize = 1; c.CacheDir = dir; c.Concurrency = 1 })
	_, err := c.Embed(context.Background(), []string{"good one", "poison", "good two"})
	require.Error(t, err)
	answered := len(srv.Answered())
	// Whatever was answered before the failure is cached and not asked again.
	srv.Reset()
	_, err = c.Embed(context.Background(), []string{"good one", "good two"})
	require.NoError(t, err)
	assert.Equal(t, 2-answered, srv.Count())
}

func TestChatJSON(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.UserContains("good")).Reply("```json\n{\"entities\": [\"Alice\", \"Bob\",]}\n```")
	srv.On(llmtest.UserContains("bad")).Reply("I'm sorry, I can't do that.")
	c := newTestClient(t, srv, nil)

	var out struct {
		Entities []string `json:"entities"`
	}
	_, err := c.ChatJSON(context.Background(), ChatRequest{Messages: []Message{User("good")}, JSONMode: true, Stage: "extract"}, &out)
	require.NoError(t, err)
	assert.Equal(t, []string{"Alice", "Bob"}, out.Entities)

	resp, err := c.ChatJSON(context.Background(), ChatRequest{Messages: []Message{User("bad")}, Stage: "extract"}, &out)
	require.Error(t, err)
	assert.Equal(t, KindUnparseable, Classify(err))
	assert.ErrorIs(t, err, ErrNoJSON)
	assert.Equal(t, "I'm sorry, I can't do that.", resp.Content, "the raw answer is returned for logging")
	u := c.Usage()
	assert.Equal(t, int64(1), u.Unparseable)
	assert.Equal(t, int64(1), u.Stages["extract"].Unparseable)
	assert.Contains(t, u.String(), "1 unparseable")
}

func TestUsageString(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.FailNext(1, llmtest.RateLimited("0"))
	c := newTestClient(t, srv, func(c *Config) { c.CacheDir = t.TempDir() })
	assert.Equal(t, "LLM: no requests.", c.Usage().String())
	ctx := context.Background()
	_, err := c.Chat(ctx, ChatRequest{Messages: []Message{User("a")}, Stage: "extract"})
	require.NoError(t, err)
	_, err = c.Chat(ctx, ChatRequest{Messages: []Message{User("a")}, Stage: "extract"})
	require.NoError(t, err)
	_, err = c.Embed(ctx, []string{"x y z"})
	require.NoError(t, err)

	s := c.Usage().String()
	for _, want := range []string{"LLM: 3 requests, 3 HTTP calls", "1 cache hits", "1 retries",
		"failed attempts: rate_limited 1", "By stage:", "embed 1 requests", "extract 2 requests"} {
		assert.Contains(t, s, want)
	}
	assert.NotContains(t, s, "\n")
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want Kind
	}{
		{"nil", nil, ""},
		{"api error", &APIError{Kind: KindRateLimited}, KindRateLimited},
		{"wrapped api error", fmt.Errorf("stage: %w", &APIError{Kind: KindServerError}), KindServerError},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), KindCanceled},
		{"parse", &ParseError{Err: ErrNoJSON}, KindUnparseable},
		{"config", ErrNotConfigured, KindConfig},
		{"other", errors.New("boom"), KindOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Classify(tc.err))
		})
	}
	assert.ErrorIs(t, &APIError{Kind: KindTimeout}, ErrTimeout)
	assert.NotErrorIs(t, &APIError{Kind: KindTimeout}, ErrRateLimited)
}

func TestPromptTokens(t *testing.T) {
	reqs := []ChatRequest{{Messages: []Message{System("ab"), User("cde")}}, {Messages: []Message{User("")}}}
	count := func(s string) int { return len(s) }
	assert.Equal(t, 2+4+3+4+0+4, PromptTokens(reqs, count))
	assert.Zero(t, PromptTokens(nil, count))
}

// TestChatJSONCutAnswer: through the client, an answer the server cut at max tokens
// keeps its whole values only, and Usage counts it.
func TestChatJSONCutAnswer(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.UserContains("triples")).ReplyWith(llmtest.Reply{
		Content:      `{"triples": [["Mara Vell", "founded", "Quillhaven"], ["Mara Vell", "born in", "Ostr`,
		FinishReason: "length",
	})
	c := newTestClient(t, srv, nil)
	var v struct{ Triples [][]string }
	resp, err := c.ChatJSON(context.Background(), ChatRequest{Messages: []Message{User("triples please")}, Stage: "extract"}, &v)
	require.NoError(t, err)
	assert.Equal(t, FinishLength, resp.FinishReason)
	assert.Equal(t, [][]string{{"Mara Vell", "founded", "Quillhaven"}}, v.Triples, "no stump \"Ostr\", no short triple")
	u := c.Usage()
	assert.Equal(t, int64(1), u.Cut)
	assert.Contains(t, u.String(), "1 answers cut at the token limit")
}

// TestCacheThatCannotKeepAnswers: a cache directory no answer can be written to is
// refused when the client is made (here /proc, which even root cannot write), and
// a cache that starts failing later (its directory gone) reports the first failure
// once, counts every one, and still answers.
func TestCacheThatCannotKeepAnswers(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).Reply("fine")
	if st, err := os.Stat("/proc"); err == nil && st.IsDir() {
		_, err := New(Config{BaseURL: srv.URL(), Model: "m", CacheDir: "/proc"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "cache /proc cannot be written")
	}
	dir := filepath.Join(t.TempDir(), "cache")
	var warned []error
	var mu sync.Mutex
	c := newTestClient(t, srv, func(c *Config) { c.CacheDir = dir }, WithCacheErrorHook(func(err error) {
		mu.Lock()
		warned = append(warned, err)
		mu.Unlock()
	}))
	require.NoError(t, os.RemoveAll(dir))
	require.NoError(t, os.WriteFile(dir, []byte("not a directory"), 0o644))
	for _, q := range []string{"a", "b"} {
		resp, err := c.Chat(context.Background(), ask(q))
		require.NoError(t, err)
		assert.Equal(t, "fine", resp.Content)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, warned, 1, "the first failure is reported, once")
	assert.Contains(t, warned[0].Error(), dir)
	assert.EqualValues(t, 2, c.Usage().CacheWriteErrors)
}

// TestReaskUnparseable: a cached answer that holds no usable JSON is what a rerun
// gets, unless Config.ReaskUnparseable: then it is asked again once per client, and
// a readable new answer replaces it in the cache; readable cached answers are never
// asked again.
func TestReaskUnparseable(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t)
	srv.On(llmtest.UserContains("flaky")).Reply("I'm sorry, I can't do that.").Times(2)
	srv.On(llmtest.UserContains("flaky")).Reply(`{"entities": ["Ada"]}`)
	srv.On(llmtest.UserContains("stubborn")).Reply("No.")
	srv.On(llmtest.UserContains("fine")).Reply(`{"entities": ["Bob"]}`)
	dir := t.TempDir()
	type answer struct {
		Entities []string `json:"entities"`
	}
	ask := func(c *Client, q string) ([]string, error) {
		var out answer
		_, err := c.ChatJSON(ctx, ChatRequest{Messages: []Message{User(q)}, Stage: "extract"}, &out)
		return out.Entities, err
	}
	first := newTestClient(t, srv, func(c *Config) { c.CacheDir = dir })
	for _, q := range []string{"flaky", "stubborn", "fine"} {
		_, _ = ask(first, q)
	}
	require.Equal(t, 3, srv.Count())

	// A plain rerun reads the cache: the same unreadable answer, no request.
	_, err := ask(newTestClient(t, srv, func(c *Config) { c.CacheDir = dir }), "flaky")
	assert.Equal(t, KindUnparseable, Classify(err))
	assert.Equal(t, 3, srv.Count())

	reask := func() *Client {
		return newTestClient(t, srv, func(c *Config) { c.CacheDir = dir; c.ReaskUnparseable = true })
	}
	c := reask()
	_, err = ask(c, "flaky") // asked again: unreadable a second time (the rule's second reply)
	assert.Equal(t, KindUnparseable, Classify(err))
	assert.Equal(t, 4, srv.Count())
	_, err = ask(c, "flaky") // once per client
	assert.Equal(t, KindUnparseable, Classify(err))
	assert.Equal(t, 4, srv.Count())
	got, err := ask(c, "fine")
	require.NoError(t, err)
	assert.Equal(t, []string{"Bob"}, got)
	assert.Equal(t, 4, srv.Count(), "a readable cached answer is not asked again")
	_, err = ask(c, "stubborn")
	assert.Equal(t, KindUnparseable, Classify(err))
	assert.Equal(t, 5, srv.Count())
	assert.Equal(t, int64(2), c.Usage().Reasked)
	assert.Contains(t, c.Usage().String(), "2 cached unreadable answers asked again")

	c = reask()
	got, err = ask(c, "flaky") // a new client asks once more; the answer now reads
	require.NoError(t, err)
	assert.Equal(t, []string{"Ada"}, got)
	assert.Equal(t, 6, srv.Count())
	got, err = ask(newTestClient(t, srv, func(c *Config) { c.CacheDir = dir }), "flaky")
	require.NoError(t, err, "the readable answer replaced the cached one")
	assert.Equal(t, []string{"Ada"}, got)
	assert.Equal(t, 6, srv.Count())

	// Through Chat with Usable, as callers parsing their own answers (ChatAll) do: an
	// answer fresh from the server is never asked again, one read from the cache is.
	srv.On(llmtest.UserContains("own parse")).Reply("not json").Times(1)
	srv.On(llmtest.UserContains("own parse")).Reply(`{"ok": true}`)
	req := ChatRequest{Messages: []Message{User("own parse")}, Usable: func(r ChatResponse) error {
		var v map[string]any
		return ParseAnswer(r, &v)
	}}
	resp, err := reask().Chat(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "not json", resp.Content, "a fresh answer is what was asked")
	assert.Equal(t, 7, srv.Count())
	var contents []string
	require.NoError(t, reask().ChatAll(ctx, []ChatRequest{req, req}, func(_ int, r ChatResponse, err error) {
		require.NoError(t, err)
		contents = append(contents, r.Content)
	}))
	assert.Equal(t, []string{`{"ok": true}`, `{"ok": true}`}, contents)
	assert.Equal(t, 8, srv.Count(), "asked again once for both")

	// A re-ask that fails fails only its own request: one waiting on it asks itself.
	srv.On(llmtest.UserContains("fails once")).Reply("not json").Times(1)
	srv.On(llmtest.UserContains("fails once")).Fault(llmtest.Status(400)).Times(1)
	srv.On(llmtest.UserContains("fails once")).Reply(`{"ok": true}`)
	once := req
	once.Messages = []Message{User("fails once")}
	_, err = reask().Chat(ctx, once) // fills the cache
	require.NoError(t, err)
	var oks, fails int
	require.NoError(t, reask().ChatAll(ctx, []ChatRequest{once, once}, func(_ int, r ChatResponse, err error) {
		switch {
		case err != nil:
			fails++
		case r.Content == `{"ok": true}`:
			oks++
		}
	}))
	assert.Equal(t, 1, fails, "the failed re-ask's request")
	assert.Equal(t, 1, oks, "the other asked itself")
}

// TestCacheSweepsStaleTemps: a sweep removes the temporary files a killed writer left
// more than an hour ago in the shards it is given and the root's probes, and keeps a
// live writer's, every entry, other shards' and files that are not the cache's.
func TestCacheSweepsStaleTemps(t *testing.T) {
	dir := t.TempDir()
	shard, other := filepath.Join(dir, "ab"), filepath.Join(dir, "cd")
	require.NoError(t, os.MkdirAll(shard, 0o700))
	require.NoError(t, os.MkdirAll(other, 0o700))
	old := time.Now().Add(-2 * time.Hour)
	write := func(path string, mtime time.Time) string {
		require.NoError(t, os.WriteFile(path, []byte("{"), 0o600))
		require.NoError(t, os.Chtimes(path, mtime, mtime))
		return path
	}
	stale := []string{write(filepath.Join(shard, ".tmp-123"), old), write(filepath.Join(dir, ".probe-9"), old)}
	kept := []string{
		write(filepath.Join(shard, ".tmp-456"), time.Now()), // a live writer's
		write(filepath.Join(shard, "abcdef.json"), old),     // an entry
		write(filepath.Join(dir, "notes.tmp-1"), old),       // not the cache's
		write(filepath.Join(dir, ".tmp-1"), old),            // not in a shard
		write(filepath.Join(other, ".tmp-5"), old),          // a shard not swept this time
	}
	sweepTemps(dir, time.Now(), []string{"ab", "ef"})
	for _, f := range stale {
		assert.NoFileExists(t, f)
	}
	for _, f := range kept {
		assert.FileExists(t, f)
	}
	_, err := openCache(dir) // sweeps its root's probes and a few shards
	require.NoError(t, err)
	assert.FileExists(t, kept[1])
}
