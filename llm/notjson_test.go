package llm

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNotJSONNamesTheURL: a server answering an HTML page with status 200 (a base URL
// without /v1, a web UI) fails at once with the content type that came back and the
// setting to check (issue 49 row 18).
func TestNotJSONNamesTheURL(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte("<!doctype html><html><body>Open WebUI</body></html>"))
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name string
		call func(c *Client) error
		want string
	}{
		{"chat", func(c *Client) error {
			_, err := c.Chat(context.Background(), ChatRequest{Messages: []Message{{Role: RoleUser, Content: "hi"}}})
			return err
		}, "chat completion is not valid JSON: the server answered HTTP 200 with text/html; charset=utf-8, not JSON: check GRAPHLOOM_LLM_BASE_URL (" + srv.URL + "), the OpenAI-compatible API root, which usually ends in /v1"},
		{"embeddings", func(c *Client) error {
			_, err := c.Embed(context.Background(), []string{"hi"})
			return err
		}, "embeddings answer is not valid JSON: the server answered HTTP 200 with text/html; charset=utf-8, not JSON: check GRAPHLOOM_LLM_BASE_URL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			c, err := New(Config{BaseURL: srv.URL, Model: "m", EmbedModel: "e", Timeout: 5 * time.Second, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
			require.NoError(t, err)
			err = tc.call(c)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "invalid character '<'")
			assert.Equal(t, int32(1), calls.Load(), "the same page would come back: no retry")
		})
	}
}
