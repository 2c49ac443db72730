package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
	"github.com/graphloom/graphloom/retrieve"
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
	return postWith(t, url, body, map[string]string{"Content-Type": "application/json"})
}

// postWith posts body to url with the given headers ("Host" sets the Host).
func postWith(t *testing.T, url, body string, headers map[string]string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var v map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
	return resp.StatusCode, v
}

// jsonRequest is a POST of a JSON body to the server on loopback.
func jsonRequest(path, body string) *http.Request {
	r := httptest.NewRequest("POST", path, strings.NewReader(body))
	r.Host = "127.0.0.1:8080"
	r.Header.Set("Content-Type", "application/json")
	return r
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
	cfg.MaxBody, cfg.MaxBatch, cfg.MaxPassages = 300, 2, 12
	_, ts, _ := newTestServer(t, 2, cfg)
	for _, tc := range []struct {
		path, body string
		code       int
		want       string
	}{
		{"/v1/query", `{"question": `, 400, "malformed JSON"},
		{"/v1/query", `{"question": "x", "nope": 1}`, 400, "unknown field"},
		{"/v1/query", `{"question": ""}`, 400, "question is empty"},
		{"/v1/query", `{"question": "   "}`, 400, "question is empty"},
		{"/v1/query", `{"question": "?!"}`, 400, `question "?!" has no letter or digit`},
		{"/v1/query/batch", `{"questions": [{"question": "x"}, {"question": "..."}]}`, 400, "questions[1]: the question"},
		{"/v1/query", `[1,2]`, 400, "want an object, got an array"},
		{"/v1/query", `{"question": 7}`, 400, `field "question": want a string, got a number`},
		{"/v1/query/batch", `{"questions": [1]}`, 400, `want an object, got a number`},
		{"/v1/query", `{"question": "x", "top_k": 0}`, 400, "top_k 0: out of range, want 1 to 100"},
		{"/v1/query", `{"question": "x", "retriever": "magic"}`, 400, "unknown retriever"},
		{"/v1/query", `{"question": "x", "top_k": -1}`, 400, "top_k"},
		{"/v1/query", `{"question": "x", "top_k": 1000}`, 400, "top_k"},
		{"/v1/query", `{"question": "` + strings.Repeat("a", 400) + `"}`, 413, "over 300 bytes"},
		{"/v1/query/batch", `{"questions": []}`, 400, "want 1 to 2"},
		{"/v1/query/batch", `{"questions": [{"question": "a"}, {"question": "b"}, {"question": "c"}]}`, 400, "want 1 to 2"},
		{"/v1/query", `{"question": "x"} {"question": "y"}`, 400, "trailing data"},
		{"/v1/query/batch", `{"questions": [{"question": "a"}, {"question": "b"}], "top_k": 7}`, 400, "2 questions × top_k 7 ask for 14 passages, at most 12"},
		{"/v1/query/batch", `{"questions": [{"question": "a", "reader": "  "}]}`, 400, "questions[0].reader: the question is empty"},
		// encoding/json would read these, matching keys in any case and keeping the
		// last of two: what a proxy checked may not be what is searched.
		{"/v1/query", `{"Question": "x"}`, 400, `request body: field "Question": keys are case-sensitive, want "question"`},
		{"/v1/query", `{"question": "x", "TOP_K": 3}`, 400, `field "TOP_K": keys are case-sensitive, want "top_k"`},
		{"/v1/query", `{"question": "x", "question": "y"}`, 400, `field "question" given twice`},
		{"/v1/query/batch", `{"questions": [{"question": "a"}, {"id": "b", "Id": "c", "question": "b"}]}`, 400, `field "questions[1].Id": keys are case-sensitive, want "id"`},
		{"/v1/query/batch", `{"questions": [{"question": "a", "question": "b"}]}`, 400, `field "questions[0].question" given twice`},
		// Malformed inside a list: the decoder's message (the key check stops, never spins).
		{"/v1/query/batch", `{"questions": [{"question": "a"} {"question": "b"}]}`, 400, "malformed JSON"},
		{"/v1/query/batch", `{"questions": [@]}`, 400, "malformed JSON"},
		{"/v1/query", `[1 2]`, 400, "malformed JSON"},
	} {
		code, v := post(t, ts.URL+tc.path, tc.body)
		assert.Equal(t, tc.code, code, tc.body)
		assert.Contains(t, v["error"], tc.want, tc.body)
	}
	// The mux's own refusals are JSON errors too.
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/v1/query", http.StatusMethodNotAllowed, "GET /v1/query: method not allowed (allowed: POST"},
		{"/v1/nope", http.StatusNotFound, "no such endpoint /v1/nope"},
	} {
		resp, err := http.Get(ts.URL + tc.path)
		require.NoError(t, err)
		var body apiError
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body), tc.path)
		resp.Body.Close()
		assert.Equal(t, tc.code, resp.StatusCode)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		assert.Contains(t, body.Error, tc.want)
	}
}

// TestDefaultTopKWithinMax: a default top-k above the most a request may ask for
// would refuse every request that leaves top_k out, so the server does not start.
func TestDefaultTopKWithinMax(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.gl")
	writeIndex(t, path, 2)
	cfg := DefaultConfig()
	cfg.TopK = 200
	_, err := New(path, func() (*graphio.Index, error) { return graphio.ReadFile(path) }, nil, cfg)
	assert.ErrorContains(t, err, "the default top-k 200 exceeds the most a request may ask for (100)")
}

// TestHardening: reload needs a token, a token set guards everything, a foreign Host or
// Origin is refused, bodies must be JSON, and CORS headers go only to --cors origins
// (issue 49 row 11).
func TestHardening(t *testing.T) {
	json := map[string]string{"Content-Type": "application/json"}
	with := func(extra map[string]string) map[string]string {
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}
	q := `{"question": "Where was Mara Vell1 born?"}`
	_, open, _ := newTestServer(t, 2, DefaultConfig())
	cfg := DefaultConfig()
	cfg.Token, cfg.AllowHosts, cfg.CORSOrigins = "s3cret", []string{"rag.example.org"}, []string{"https://app.example"}
	_, guarded, _ := newTestServer(t, 2, cfg)
	auth := map[string]string{"Authorization": "Bearer s3cret"}
	for _, tc := range []struct {
		name    string
		url     string
		body    string
		headers map[string]string
		code    int
		want    string
	}{
		{"reload without a token configured", open.URL + "/v1/reload", `{}`, json, 401, "GRAPHLOOM_SERVE_TOKEN"},
		{"reload from a foreign page", open.URL + "/v1/reload", `{}`, map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403, `Origin "http://evil.example" is not allowed`},
		{"reload without the token", guarded.URL + "/v1/reload", `{}`, json, 401, "bearer token"},
		{"reload with a wrong token", guarded.URL + "/v1/reload", `{}`, with(map[string]string{"Authorization": "Bearer nope"}), 401, "bearer token"},
		{"reload with the token", guarded.URL + "/v1/reload", ``, auth, 200, ""},
		{"reload with a body", guarded.URL + "/v1/reload", `{"index": "other.gl"}`, with(auth), 400, "reload takes no body"},
		{"batch with an id twice", open.URL + "/v1/query/batch", `{"questions": [{"id": "a", "question": "Who?"}, {"id": "a", "question": "Where?"}]}`, json, 400, `questions[1]: id "a" is also questions[0]'s`},
		{"batch with a default id taken", open.URL + "/v1/query/batch", `{"questions": [{"question": "Who?"}, {"id": "q1", "question": "Where?"}]}`, json, 400, `questions[0] has no id and its default, "q1", is questions[1]'s`},
		{"query without the token", guarded.URL + "/v1/query", q, json, 401, "bearer token"},
		{"query with the token", guarded.URL + "/v1/query", q, with(auth), 200, ""},
		{"foreign Host", open.URL + "/v1/query", q, with(map[string]string{"Host": "evil.example:8080"}), 403, `Host "evil.example:8080" is not this server's name`},
		{"localhost Host", open.URL + "/v1/query", q, with(map[string]string{"Host": "localhost:8080"}), 200, ""},
		{"allowed Host", guarded.URL + "/v1/query", q, with(map[string]string{"Host": "rag.example.org", "Authorization": "Bearer s3cret"}), 200, ""},
		{"text/plain body", open.URL + "/v1/query", q, map[string]string{"Content-Type": "text/plain"}, 415, `Content-Type "text/plain": want application/json`},
		{"form body", open.URL + "/v1/query", q, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "want application/json"},
		{"json with charset", open.URL + "/v1/query", q, map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200, ""},
		{"same origin", open.URL + "/v1/query", q, with(map[string]string{"Origin": open.URL}), 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, v := postWith(t, tc.url, tc.body, tc.headers)
			assert.Equal(t, tc.code, code, v)
			if tc.want != "" {
				assert.Contains(t, v["error"], tc.want)
			}
		})
	}
	t.Run("CORS only for --cors origins", func(t *testing.T) {
		req, err := http.NewRequest("OPTIONS", guarded.URL+"/v1/query", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", "https://app.example")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		assert.Equal(t, "https://app.example", resp.Header.Get("Access-Control-Allow-Origin"))
		req, err = http.NewRequest("GET", open.URL+"/healthz", nil)
		require.NoError(t, err)
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), "no CORS headers without --cors")
	})
}

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		addr            string
		token, insecure bool
		ok              bool
	}{
		{"127.0.0.1:8080", false, false, true},
		{"localhost:8080", false, false, true},
		{"[::1]:8080", false, false, true},
		{"0.0.0.0:8080", false, false, false},
		{":8080", false, false, false},
		{"192.168.1.5:8080", false, false, false},
		{"0.0.0.0:8080", true, false, true},
		{"0.0.0.0:8080", false, true, true},
	} {
		err := CheckListen(tc.addr, tc.token, tc.insecure)
		if tc.ok {
			assert.NoError(t, err, tc.addr)
		} else {
			assert.ErrorContains(t, err, "without a token", tc.addr)
		}
	}
}

func TestBusyAnswers503(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxInFlight = 1
	s, _, _ := newTestServer(t, 2, cfg)
	s.slots <- struct{}{} // one request in flight
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, jsonRequest("/v1/query", `{"question": "x"}`))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	<-s.slots
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, jsonRequest("/v1/query", `{"question": "x"}`))
	assert.Equal(t, http.StatusOK, rec.Code)
}

// TestReloadIsAtomic: queries run without a single error while the index file is
// replaced and reloaded; afterwards they see the new index.
func TestReloadIsAtomic(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Token = "s3cret"
	_, ts, path := newTestServer(t, 2, cfg)
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
				req, err := http.NewRequest("POST", ts.URL+"/v1/query", bytes.NewReader([]byte(`{"question": "Where was Mara Vell1 born?", "retriever": "bm25"}`)))
				if err != nil {
					panic(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer s3cret")
				resp, err := http.DefaultClient.Do(req)
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
	code, v := postWith(t, ts.URL+"/v1/reload", `{}`, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret"})
	close(stop)
	wg.Wait()
	require.Equal(t, http.StatusOK, code, v)
	assert.Equal(t, float64(6), v["chunks"])
	assert.Empty(t, errs)
	code, v = postWith(t, ts.URL+"/v1/query", `{"question": "Where was Mara Vell5 born?", "retriever": "bm25", "top_k": 1}`, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret"})
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
	s.ServeHTTP(rec, jsonRequest("/v1/query", `{"question": "Where was Mara Vell1 born?"}`))
	assert.Equal(t, http.StatusOK, rec.Code, "the old index still serves")
	_, err = New(path, func() (*graphio.Index, error) { return nil, fmt.Errorf("no such file") }, nil, DefaultConfig())
	assert.ErrorContains(t, err, "no such file")
	cfg := DefaultConfig()
	cfg.Retriever = "magic"
	_, err = New(path, func() (*graphio.Index, error) { return graphio.ReadFile(path) }, nil, cfg)
	assert.ErrorContains(t, err, "unknown default retriever")
}

// TestReloadAfterAdd: documents are added to the served index (kg.Add, as `index
// --add` does, then an atomic rewrite) and the server reloads it while clients query
// it with several retrievers: no request fails, requests keep being answered after
// the reload, and the added documents are found.
func TestReloadAfterAdd(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Token = "s3cret"
	s, ts, path := newTestServer(t, 4, cfg)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var mu sync.Mutex
	var errs []string
	answered, afterReload := 0, 0
	var reloaded bool
	for c, retriever := range []string{"bm25", "dense", "ppr", "hyperppr"} {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				after := reloaded
				mu.Unlock()
				body := fmt.Sprintf(`{"question": "Where was Mara Vell%d born?", "retriever": %q}`, (c+i)%6, retriever)
				req := jsonRequest("/v1/query", body)
				req.Header.Set("Authorization", "Bearer s3cret")
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, req)
				mu.Lock()
				answered++
				if after {
					afterReload++
				}
				if rec.Code != http.StatusOK {
					errs = append(errs, fmt.Sprintf("%s: %d %s", retriever, rec.Code, rec.Body.String()))
				}
				mu.Unlock()
			}
		})
	}

	ix, err := graphio.ReadFile(path)
	require.NoError(t, err)
	var more []ingest.Passage
	for i := 4; i < 6; i++ {
		more = append(more, ingest.Passage{Title: fmt.Sprintf("Passage %d", i), Text: fmt.Sprintf("Mara Vell%d founded Quillhaven%d in %d. Mara Vell%d was born in Ostrid%d.", i, i, 1800+i, i, i)})
	}
	ch, err := kg.Add(context.Background(), ix, more, ingest.DefaultConfig(), extract.NewRule(extract.DefaultRuleConfig()), nil, kg.DefaultConfig(), nil)
	require.NoError(t, err)
	require.Equal(t, 2, ch.Chunks)
	require.NoError(t, graphio.WriteFile(path, ix))
	code, v := postWith(t, ts.URL+"/v1/reload", `{}`, map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret"})
	require.Equal(t, http.StatusOK, code, v)
	assert.Equal(t, float64(6), v["chunks"])
	mu.Lock()
	reloaded = true
	mu.Unlock()
	for {
		mu.Lock()
		n := afterReload
		mu.Unlock()
		if n >= 40 {
			break
		}
		runtime.Gosched()
	}
	close(stop)
	wg.Wait()
	assert.Empty(t, errs, "no request fails across the add and the reload")
	assert.Positive(t, answered)

	req := jsonRequest("/v1/query", `{"question": "Where was Mara Vell5 born?", "retriever": "bm25", "top_k": 1}`)
	req.Header.Set("Authorization", "Bearer s3cret")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), `"title":"Passage 5"`)
}

// TestStatsShowCalibration: /v1/stats says which calibration variant each graph
// retriever applies, and why it is stale when the index changed since it was fitted
// or an earlier calibration method fitted it; a calibrated ppr still answers.
func TestStatsShowCalibration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method int
		stale  string // in the warning; "" none
	}{{"current", retrieve.CalibrationMethod, ""}, {"stale", retrieve.CalibrationMethod, "index generation"},
		{"outdated", 0, "calibration method 0"}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.gl")
			writeIndex(t, path, 4)
			ix, err := graphio.ReadFile(path)
			require.NoError(t, err)
			w := make([]float64, retrieve.NumFeatures)
			w[retrieve.FeatDefault] = 1
			gen := kg.Generation(ix)
			if tc.name == "stale" {
				gen = "g0-000000000000"
			}
			require.NoError(t, retrieve.WriteCalibration(ix, &retrieve.Calibration{Features: retrieve.FeatureNames, Gates: retrieve.GateNames,
				Generation: gen, Method: tc.method, Retrievers: map[string]*retrieve.Fitted{"ppr": {Use: retrieve.VariantFusion,
					Fusion: retrieve.Fusion{Kind: retrieve.FusionRRF, Mu: 0.3}, NoGate: retrieve.Ranker{W: w}, Ranker: retrieve.Ranker{W: w, V: zeros()}}}}))
			require.NoError(t, graphio.WriteFile(path, ix))
			s, err := New(path, func() (*graphio.Index, error) { return graphio.ReadFile(path) }, nil, DefaultConfig())
			require.NoError(t, err)
			ts := httptest.NewServer(s)
			defer ts.Close()
			resp, err := http.Get(ts.URL + "/v1/stats")
			require.NoError(t, err)
			var st struct {
				Chunks      int
				Calibration *struct {
					Uses  map[string]string `json:"uses"`
					Stale string            `json:"stale"`
				} `json:"calibration"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
			resp.Body.Close()
			assert.Equal(t, 4, st.Chunks)
			require.NotNil(t, st.Calibration)
			assert.Equal(t, map[string]string{"ppr": "fusion"}, st.Calibration.Uses)
			if tc.stale == "" {
				assert.Empty(t, st.Calibration.Stale)
			} else {
				assert.Contains(t, st.Calibration.Stale, tc.stale)
			}
			code, v := post(t, ts.URL+"/v1/query", `{"question": "Where was Mara Vell2 born?", "retriever": "ppr", "top_k": 2}`)
			require.Equal(t, http.StatusOK, code, v)
			assert.Len(t, v["passages"].([]any), 2)
		})
	}
}

func zeros() [][]float64 {
	v := make([][]float64, retrieve.NumFeatures)
	for j := range v {
		v[j] = make([]float64, retrieve.NumGates)
	}
	return v
}

// TestStalledBodyFreesItsSlot: a client that sends a request's headers and then
// stalls, mid-body, loses its slot at the request timeout instead of holding it for
// good (with every slot held, every later request would get 503).
func TestStalledBodyFreesItsSlot(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxInFlight = 1
	cfg.Timeout = 300 * time.Millisecond
	_, ts, _ := newTestServer(t, 2, cfg)
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	require.NoError(t, err)
	defer conn.Close()
	_, err = fmt.Fprintf(conn, "POST /v1/query HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"question\": ", ts.Listener.Addr())
	require.NoError(t, err)
	time.Sleep(100 * time.Millisecond) // the stalled request holds the one slot
	code, _ := post(t, ts.URL+"/v1/query", `{"question": "x"}`)
	assert.Equal(t, http.StatusServiceUnavailable, code, "the slot is held while the body is read")
	require.Eventually(t, func() bool {
		code, _ := post(t, ts.URL+"/v1/query", `{"question": "Mara Vell0"}`)
		return code == http.StatusOK
	}, 5*time.Second, 100*time.Millisecond, "the stalled request gives its slot back at the timeout")
}

// TestInternalErrorsOnlyLogTheirDetail: a failing embedding API (its message holding
// a key's first characters) and a failing reload (a path) are answered 500 with an
// error id alone; the detail is in the error log under that id.
func TestInternalErrorsOnlyLogTheirDetail(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewServer(t)
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), EmbedModel: "bge-m3"})
	require.NoError(t, err)
	api, err := embed.NewAPI(ctx, c)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "x.gl")
	ix := &graphio.Index{}
	require.NoError(t, ingest.AddPassages(ctx, ix, []ingest.Passage{{Title: "P", Text: "Mara Vell founded Quillhaven in 1801."}}, ingest.DefaultConfig(), nil, &ingest.Report{}))
	_, err = kg.Build(ctx, ix, extract.NewRule(extract.DefaultRuleConfig()), api, kg.DefaultConfig(), nil)
	require.NoError(t, err)
	require.NoError(t, graphio.WriteFile(path, ix))

	var logged bytes.Buffer
	cfg := DefaultConfig()
	cfg.Token = "s3cret"
	cfg.ErrorLog = log.New(&logged, "", 0)
	broken := false
	s, err := New(path, func() (*graphio.Index, error) {
		if broken {
			return nil, fmt.Errorf("read /srv/private/x.gl: truncated")
		}
		return graphio.ReadFile(path)
	}, api, cfg)
	require.NoError(t, err)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	auth := map[string]string{"Content-Type": "application/json", "Authorization": "Bearer s3cret"}

	code, v := postWith(t, ts.URL+"/v1/query", `{"question": "Who founded Quillhaven?", "retriever": "dense"}`, auth)
	require.Equal(t, http.StatusOK, code, v)
	srv.FailNext(1000, llmtest.Fault{Status: http.StatusUnauthorized, Message: "Incorrect API key provided: sk-live-4f9a****"})
	broken = true
	idRe := regexp.MustCompile(`^internal error ([0-9a-f]{12}): the server's log has its detail$`)
	var ids []string
	for _, tc := range []struct{ path, body, detail string }{
		{"/v1/query", `{"question": "Who founded Quillhaven?", "retriever": "dense"}`, "sk-live-4f9a"},
		{"/v1/query/batch", `{"questions": [{"question": "Who founded Quillhaven?"}], "retriever": "dense"}`, "sk-live-4f9a"},
		{"/v1/reload", `{}`, "/srv/private/x.gl"},
	} {
		code, v := postWith(t, ts.URL+tc.path, tc.body, auth)
		require.Equal(t, http.StatusInternalServerError, code, tc.path)
		m := idRe.FindStringSubmatch(v["error"].(string))
		require.NotNil(t, m, "%s answered %q", tc.path, v["error"])
		ids = append(ids, m[1])
		line := ""
		for _, l := range strings.Split(logged.String(), "\n") {
			if strings.Contains(l, "error "+m[1]+" on POST "+tc.path+": ") {
				line = l
			}
		}
		assert.Contains(t, line, tc.detail, "the log line of %s", m[1])
	}
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(ids))), 3, "every error gets its own id")
}
