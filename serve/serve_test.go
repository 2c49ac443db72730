package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
)

func writeIndex(t *testing.T, path string, n int) {
	t.Helper()
	ctx := context.Background()
	var ps []ingest.Passage
	for i := 0; i < n; i++ {
		ps = append(ps, ingest.Passage{Title: fmt.Sprintf("Passage %d", i), Text: fmt.Sprintf("Mara Vell%d founded Quillhaven%d in %d. Mara Vell%d was born in Ostrid%d.", i, i, 1800+i, i, i)})
	}
	ix := &graphio.Index{}
	require.NoError(t, ingest.AddPassages(ctx, ix, ps, ingest.DefaultConfig(), nil, &ingest.Report{}))
	_, err := kg.Build(ctx, ix, extract.NewRule(extract.DefaultRuleConfig()), nil, kg.DefaultConfig(), nil)
	require.NoError(t, err)
	require.NoError(t, graphio.WriteFile(path, ix))
}

func newTestServer(t *testing.T, n int, cfg Config) (*Server, *httptest.Server, string) {
	path := filepath.Join(t.TempDir(), "x.gl")
	writeIndex(t, path, n)
	s, err := New(path, func() (*graphio.Index, error) { return graphio.ReadFile(path) }, nil, cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts, path
}

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return resp.StatusCode, v
}

func TestQueryAndBatch(t *testing.T) {
	_, ts, _ := newTestServer(t, 4, DefaultConfig())
	code, v := post(t, ts.URL+"/v1/query", `{"question": "Where was Mara Vell2 born?", "retriever": "bm25", "top_k": 2}`)
	require.Equal(t, http.StatusOK, code, v)
	ps := v["passages"].([]any)
	require.Len(t, ps, 2)
	assert.Equal(t, "Passage 2", ps[0].(map[string]any)["title"])

	code, v = post(t, ts.URL+"/v1/query/batch", `{"questions": [{"question": "Who founded Quillhaven1?"}, {"id": "b", "question": "Where was Mara Vell3 born?"}]}`)
	require.Equal(t, http.StatusOK, code, v)
	res := v["results"].([]any)
	require.Len(t, res, 2)
	assert.Equal(t, "q1", res[0].(map[string]any)["id"])
	assert.Equal(t, "ppr", res[1].(map[string]any)["retriever"], "the default retriever")
	assert.Equal(t, "Passage 3", res[1].(map[string]any)["passages"].([]any)[0].(map[string]any)["title"])

	resp, err := http.Get(ts.URL + "/v1/stats")
	require.NoError(t, err)
	var st graphio.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	resp.Body.Close()
	assert.Equal(t, 4, st.Chunks)
}

func TestBadRequests(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxBody, cfg.MaxBatch = 300, 2
	_, ts, _ := newTestServer(t, 2, cfg)
	for _, tc := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/v1/query", `{"question": `, 400, "malformed JSON"},
		{"/v1/query", `{"question": "x", "nope": 1}`, 400, "unknown field"},
		{"/v1/query", `{"question": ""}`, 400, "question is empty"},
		{"/v1/query", `{"question": "x", "retriever": "magic"}`, 400, "unknown retriever"},
		{"/v1/query", `{"question": "x", "top_k": -1}`, 400, "top_k"},
		{"/v1/query", `{"question": "x", "top_k": 1000}`, 400, "top_k"},
		{"/v1/query", `{"question": "` + strings.Repeat("a", 400) + `"}`, 413, "over 300 bytes"},
		{"/v1/query/batch", `{"questions": []}`, 400, "want 1 to 2"},
		{"/v1/query/batch", `{"questions": [{"question": "a"}, {"question": "b"}, {"question": "c"}]}`, 400, "want 1 to 2"},
		{"/v1/query", `{"question": "x"} {"question": "y"}`, 400, "trailing data"},
	} {
		code, v := post(t, ts.URL+tc.path, tc.body)
		assert.Equal(t, tc.code, code, tc.body)
		assert.Contains(t, v["error"], tc.want, tc.body)
	}
	resp, err := http.Get(ts.URL + "/v1/query")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestBusyAnswers503(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxInFlight = 1
	s, _, _ := newTestServer(t, 2, cfg)
	s.slots <- struct{}{} // one request in flight
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/query", strings.NewReader(`{"question": "x"}`)))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	<-s.slots
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/query", strings.NewReader(`{"question": "x"}`)))
	assert.Equal(t, http.StatusOK, rec.Code)
}

// TestReloadIsAtomic: queries run without a single error while the index file is
// replaced and reloaded; afterwards they see the new index.
func TestReloadIsAtomic(t *testing.T) {
	_, ts, path := newTestServer(t, 2, DefaultConfig())
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var errs []string
	var mu sync.Mutex
	for c := 0; c < 4; c++ {
		wg.Go(func() {
			for i := 0; i < 200; i++ {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Post(ts.URL+"/v1/query", "application/json", bytes.NewReader([]byte(`{"question": "Where was Mara Vell1 born?", "retriever": "bm25"}`)))
				if err != nil {
					mu.Lock()
					errs = append(errs, err.Error())
					mu.Unlock()
					continue
				}
				if resp.StatusCode != 200 {
					mu.Lock()
					errs = append(errs, resp.Status)
					mu.Unlock()
				}
				resp.Body.Close()
			}
		})
	}
	writeIndex(t, path, 6) // an atomic rewrite, as augment does
	code, v := post(t, ts.URL+"/v1/reload", `{}`)
	close(stop)
	wg.Wait()
	require.Equal(t, http.StatusOK, code, v)
	assert.Equal(t, float64(6), v["chunks"])
	assert.Empty(t, errs)
	code, v = post(t, ts.URL+"/v1/query", `{"question": "Where was Mara Vell5 born?", "retriever": "bm25", "top_k": 1}`)
	require.Equal(t, 200, code)
	assert.Equal(t, "Passage 5", v["passages"].([]any)[0].(map[string]any)["title"])
}

func TestReloadFailureKeepsTheIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.gl")
	writeIndex(t, path, 2)
	broken := false
	s, err := New(path, func() (*graphio.Index, error) {
		if broken {
			return nil, fmt.Errorf("truncated")
		}
		return graphio.ReadFile(path)
	}, nil, DefaultConfig())
	require.NoError(t, err)
	broken = true
	_, err = s.Reload()
	require.ErrorContains(t, err, "truncated")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/query", strings.NewReader(`{"question": "Where was Mara Vell1 born?"}`)))
	assert.Equal(t, http.StatusOK, rec.Code, "the old index still serves")
	_, err = New(path, func() (*graphio.Index, error) { return nil, fmt.Errorf("no such file") }, nil, DefaultConfig())
	assert.ErrorContains(t, err, "no such file")
	cfg := DefaultConfig()
	cfg.Retriever = "magic"
	_, err = New(path, func() (*graphio.Index, error) { return graphio.ReadFile(path) }, nil, cfg)
	assert.ErrorContains(t, err, "unknown default retriever")
}
