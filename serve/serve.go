// Package serve answers retrieval over HTTP with the index loaded once: a JSON API for
// single and batch queries with any retriever, index statistics and health, with
// request limits, per-request deadlines and an atomic reload, so readers see an
// augmented index as soon as it is written.
//
//	GET  /healthz          {"status": "ok", "index": …, "loaded": …, "chunks": …}
//	GET  /v1/stats         graphio.Stats of the loaded index
//	POST /v1/query         {"question", "retriever"?, "top_k"?} → retrieve.RunLine
//	POST /v1/query/batch   {"questions": [{"id"?, "question"}], "retriever"?, "top_k"?} → {"results": [RunLine]}
//	POST /v1/reload        re-read the index file; {"loaded": …, "chunks": …}
//
// Every request passes, in order: a Host check (an IP literal, localhost or one of
// Config.AllowHosts; against DNS rebinding, 403), an Origin check (none, the same host,
// or one of Config.CORSOrigins; 403), the bearer token (Config.Token: required for
// every request when set, and for /v1/reload always; 401), and for a POST with a body,
// Content-Type application/json (415). CORS headers are sent only to CORSOrigins.
// An internal error is answered 500 with only an id; its detail goes to
// Config.ErrorLog under that id.
package serve

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/internal/jsonmsg"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

// Config holds the server's limits.
type Config struct {
	// Retrieval is the retrieval configuration every query uses.
	Retrieval retrieve.Config
	// Retriever is the default retriever; "ppr".
	Retriever string
	// TopK is the default number of passages; 5. MaxTopK bounds a request's; 100.
	TopK, MaxTopK int
	// MaxBatch is the most questions of one batch request; 1,000.
	MaxBatch int
	// MaxPassages bounds the passages one batch request returns (its questions ×
	// top_k), each with its text, all held in memory until the answer is written;
	// 10,000.
	MaxPassages int
	// MaxBody is the largest request body in bytes; 1 MiB.
	MaxBody int64
	// Timeout is the deadline of one request; 30 s.
	Timeout time.Duration
	// MaxInFlight bounds the requests served at once; beyond it the server answers
	// 503 with Retry-After. 0 = 64.
	MaxInFlight int
	// Workers is the number of questions of a batch retrieved at once; 0 = GOMAXPROCS.
	Workers int
	// Token is the bearer token clients send ("Authorization: Bearer TOKEN"); the CLI
	// reads it from GRAPHLOOM_SERVE_TOKEN. When set, every request needs it; /v1/reload
	// needs it always (without a token, reload with SIGHUP).
	Token string
	// AllowHosts are the Host names (with or without the port) requests may name
	// besides IP literals and localhost: the server's public name behind a reverse
	// proxy. A request naming any other host is refused (DNS rebinding).
	AllowHosts []string
	// CORSOrigins are the browser origins ("https://app.example") answered with CORS
	// headers; requests from any other cross origin are refused. None by default.
	CORSOrigins []string
	// ErrorLog receives the detail of every internal error (500). The client is told
	// only the error's id, which the log line carries: a retrieval error can hold the
	// embedding API's own message (a key's first characters, an upstream address) or
	// a file path. nil writes to standard error.
	ErrorLog *log.Logger
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Retrieval: retrieve.DefaultConfig(), Retriever: "ppr", TopK: 5, MaxTopK: 100, MaxBatch: 1000,
		MaxPassages: 10000, MaxBody: 1 << 20, Timeout: 30 * time.Second, MaxInFlight: 64}
}

// Loader reads the index (graphio.ReadFile of the served path, in the CLI).
type Loader func() (*graphio.Index, error)

// loaded is one loaded index and its searcher.
type loaded struct {
	ix       *graphio.Index
	searcher *retrieve.Searcher
	at       time.Time

	statsOnce sync.Once
	st        graphio.Stats // computed on the first /v1/stats of this index
}

// stats returns the index's statistics, computed once per loaded index: they walk
// every record, which polling /v1/stats would otherwise repeat.
func (l *loaded) stats() graphio.Stats {
	l.statsOnce.Do(func() { l.st = graphio.ComputeStats(l.ix, 10) })
	return l.st
}

// Server is the HTTP API. Create it with New; it is an http.Handler.
type Server struct {
	cfg    Config
	name   string // the index path, for /healthz
	load   Loader
	api    embed.Embedder // the API embedder when the index needs one, else nil
	cur    atomic.Pointer[loaded]
	reload sync.Mutex // one reload at a time
	slots  chan struct{}
	mux    *http.ServeMux
}

// New loads the index and returns the server. api is the embedding model for an
// index embedded by one (nil for the built-in embedder).
func New(name string, load Loader, api embed.Embedder, cfg Config) (*Server, error) {
	d := DefaultConfig()
	if cfg.Retriever == "" {
		cfg.Retriever = d.Retriever
	}
	if cfg.TopK <= 0 {
		cfg.TopK = d.TopK
	}
	if cfg.MaxTopK <= 0 {
		cfg.MaxTopK = d.MaxTopK
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = d.MaxBatch
	}
	if cfg.MaxPassages <= 0 {
		cfg.MaxPassages = d.MaxPassages
	}
	if cfg.TopK > cfg.MaxPassages {
		return nil, fmt.Errorf("serve: the default top-k %d exceeds the most passages a batch may return (%d): every batch leaving top_k out would be refused", cfg.TopK, cfg.MaxPassages)
	}
	if cfg.TopK > cfg.MaxTopK {
		return nil, fmt.Errorf("serve: the default top-k %d exceeds the most a request may ask for (%d): every request leaving top_k out would be refused", cfg.TopK, cfg.MaxTopK)
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = d.MaxBody
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = d.Timeout
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = d.MaxInFlight
	}
	if !slices.Contains(retrieve.Names, cfg.Retriever) {
		return nil, fmt.Errorf("serve: unknown default retriever %q", cfg.Retriever)
	}
	if cfg.ErrorLog == nil {
		cfg.ErrorLog = log.New(os.Stderr, "", log.LstdFlags)
	}
	s := &Server{cfg: cfg, name: name, load: load, api: api, slots: make(chan struct{}, cfg.MaxInFlight), mux: http.NewServeMux()}
	if _, err := s.Reload(); err != nil {
		return nil, err
	}
	s.mux.HandleFunc("GET /healthz", s.health)
	s.mux.HandleFunc("GET /v1/stats", s.limited(s.stats))
	s.mux.HandleFunc("POST /v1/query", s.limited(s.query))
	s.mux.HandleFunc("POST /v1/query/batch", s.limited(s.batch))
	s.mux.HandleFunc("POST /v1/reload", s.limited(s.reloadHandler))
	return s, nil
}

// ServeHTTP implements http.Handler: the checks of the package doc, then the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.hostAllowed(r.Host) {
		fail(w, http.StatusForbidden, "Host %q is not this server's name (pass --allow-host to serve it under that name)", r.Host)
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		cors := slices.Contains(s.cfg.CORSOrigins, origin)
		if !cors && !sameOrigin(origin, r.Host) {
			fail(w, http.StatusForbidden, "Origin %q is not allowed (pass --cors %s to allow it)", origin, origin)
			return
		}
		if cors {
			w.Header().Set("Access-Control-Allow-Origin", origin)
			w.Header().Add("Vary", "Origin")
			if r.Method == http.MethodOptions {
				w.Header().Set("Access-Control-Allow-Methods", "GET, POST")
				w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
				w.Header().Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
	}
	if s.cfg.Token != "" || r.URL.Path == "/v1/reload" {
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="graphloom"`)
			if s.cfg.Token == "" {
				fail(w, http.StatusUnauthorized, "reload over HTTP needs a token: start the server with GRAPHLOOM_SERVE_TOKEN set, or send it SIGHUP")
				return
			}
			fail(w, http.StatusUnauthorized, "missing or wrong bearer token (Authorization: Bearer $GRAPHLOOM_SERVE_TOKEN)")
			return
		}
	}
	if r.Method == http.MethodPost && r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			fail(w, http.StatusUnsupportedMediaType, "Content-Type %q: want application/json", r.Header.Get("Content-Type"))
			return
		}
	}
	// The route is matched once: its handler is called directly (the API's handlers
	// read no path values).
	h, pattern := s.mux.Handler(r)
	if pattern == "" {
		// No route: the mux's handler answers 404, 405 (with Allow) or a redirect to
		// the cleaned path in plain text; the API answers its errors in JSON.
		w = &jsonErrors{ResponseWriter: w, path: r.URL.Path, method: r.Method}
	}
	h.ServeHTTP(w, r)
}

// jsonErrors rewrites the mux's own 404 and 405 answers as the API's JSON errors
// (other answers, such as a redirect to the cleaned path, pass unchanged).
type jsonErrors struct {
	http.ResponseWriter
	path, method string
	replaced     bool
}

func (j *jsonErrors) WriteHeader(status int) {
	switch status {
	case http.StatusNotFound:
		j.replaced = true
		j.Header().Del("X-Content-Type-Options")
		fail(j.ResponseWriter, status, "no such endpoint %s (this server answers /healthz, /v1/stats, /v1/query, /v1/query/batch and /v1/reload)", j.path)
	case http.StatusMethodNotAllowed:
		j.replaced = true
		fail(j.ResponseWriter, status, "%s %s: method not allowed (allowed: %s)", j.method, j.path, j.Header().Get("Allow"))
	default:
		j.ResponseWriter.WriteHeader(status)
	}
}

func (j *jsonErrors) Write(b []byte) (int, error) {
	if j.replaced {
		return len(b), nil // the mux's plain-text body: the JSON one is written
	}
	return j.ResponseWriter.Write(b)
}

// hostAllowed reports whether a request's Host names this server: an IP literal,
// localhost, or one of AllowHosts. A DNS-rebinding page reaches the server under its
// own domain name, which is none of these.
func (s *Server) hostAllowed(host string) bool {
	if host == "" {
		return true // HTTP/1.0 without Host: not a browser
	}
	name := host
	if h, _, err := net.SplitHostPort(host); err == nil {
		name = h
	}
	name = strings.TrimSuffix(strings.Trim(name, "[]"), ".")
	if net.ParseIP(name) != nil || strings.EqualFold(name, "localhost") {
		return true
	}
	for _, a := range s.cfg.AllowHosts {
		if strings.EqualFold(a, host) || strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// sameOrigin reports whether a browser Origin is the server itself.
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

// authorized reports whether the request carries the configured bearer token.
func (s *Server) authorized(r *http.Request) bool {
	if s.cfg.Token == "" {
		return false
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(s.cfg.Token)) == 1
}

// CheckListen refuses to listen on an address reachable from other machines without
// a token, unless insecure: the API would be open to the network.
func CheckListen(addr string, token, insecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("serve: --addr %q: want HOST:PORT: %w", addr, err)
	}
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || strings.EqualFold(host, "localhost") {
		return nil
	}
	if token || insecure {
		return nil
	}
	where := host
	if where == "" {
		where = "every interface"
	}
	return fmt.Errorf("serve: --addr %s listens on %s, beyond this machine, without a token: set GRAPHLOOM_SERVE_TOKEN (clients send Authorization: Bearer TOKEN), listen on 127.0.0.1, or pass --insecure", addr, where)
}

// Reload reads the index again and swaps it in atomically: requests in flight finish
// on the index they started with. On error the served index is unchanged.
func (s *Server) Reload() (*graphio.Index, error) {
	l, err := s.reloaded()
	if err != nil {
		return nil, err
	}
	return l.ix, nil
}

// reloaded is Reload returning what it published (a later reload may replace it
// before the caller reads s.cur).
func (s *Server) reloaded() (*loaded, error) {
	s.reload.Lock()
	defer s.reload.Unlock()
	ix, err := s.load()
	if err != nil {
		return nil, fmt.Errorf("serve: load %s: %w", s.name, err)
	}
	sr, err := retrieve.Open(ix, s.api, s.cfg.Retrieval, nil)
	if err != nil {
		return nil, fmt.Errorf("serve: %s: %w", s.name, err)
	}
	s.warm(sr)
	l := &loaded{ix: ix, searcher: sr, at: time.Now()}
	s.cur.Store(l)
	return l, nil
}

// warm builds the lazy structures of bm25 and the default retriever before the index
// is published (retrieve.Searcher.Warm): otherwise every request of the first wave
// after a (re)load waits on them, which was the p99 of the loopback load test. A
// failing warm-up (an embedding API that is down) is left to the first real request
// to report.
func (s *Server) warm(sr *retrieve.Searcher) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.Timeout)
	defer cancel()
	_ = sr.Warm(ctx, slices.Compact([]string{"bm25", s.cfg.Retriever})...)
}

// apiError is the body of every error answer.
type apiError struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func fail(w http.ResponseWriter, status int, format string, args ...any) {
	writeJSON(w, status, apiError{Error: fmt.Sprintf(format, args...)})
}

// limited bounds the requests in flight and gives each a deadline.
func (s *Server) limited(h func(w http.ResponseWriter, r *http.Request)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.slots <- struct{}{}:
			defer func() { <-s.slots }()
		default:
			w.Header().Set("Retry-After", "1")
			fail(w, http.StatusServiceUnavailable, "busy: %d requests in flight", s.cfg.MaxInFlight)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.Timeout)
		defer cancel()
		// The context does not end a body read: a client that sends its headers and
		// stalls would hold the slot for good. A read deadline ends it (where the
		// connection supports one; the CLI's http.Server also sets ReadTimeout).
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(s.cfg.Timeout))
		r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
		h(w, r.WithContext(ctx))
	}
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	cur := s.cur.Load()
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "index": s.name, "loaded": cur.at.UTC().Format(time.RFC3339Nano),
		"chunks": len(cur.ix.Chunks), "runs": len(cur.ix.Runs)})
}

func (s *Server) stats(w http.ResponseWriter, _ *http.Request) {
	cur := s.cur.Load()
	out := struct {
		graphio.Stats
		Calibration *calibrationInfo `json:"calibration,omitempty"`
	}{Stats: cur.stats()}
	if cal := cur.searcher.Calibration(); cal != nil {
		stale := cal.Warning(func(gen string) string { return kg.StaleWarning(cur.ix, gen, "the stored calibration") })
		info := &calibrationInfo{Uses: map[string]string{}, Generation: cal.Generation, Stale: stale}
		for name, f := range cal.Retrievers {
			info.Uses[name] = f.Use
		}
		out.Calibration = info
	}
	writeJSON(w, http.StatusOK, out)
}

// calibrationInfo is what /v1/stats says of the calibration the server applies.
type calibrationInfo struct {
	Uses       map[string]string `json:"uses"` // retriever → variant applied
	Generation string            `json:"index_generation"`
	Stale      string            `json:"stale,omitempty"` // why it is stale; empty when current
}

func (s *Server) reloadHandler(w http.ResponseWriter, r *http.Request) {
	if b, _ := io.ReadAll(io.LimitReader(r.Body, 64)); strings.TrimSpace(string(b)) != "" && strings.Join(strings.Fields(string(b)), "") != "{}" {
		fail(w, http.StatusBadRequest, "reload takes no body (or an empty JSON object)")
		return
	}
	l, err := s.reloaded()
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"loaded": l.at.UTC().Format(time.RFC3339Nano), "chunks": len(l.ix.Chunks), "runs": len(l.ix.Runs)})
}

// QueryRequest is the body of /v1/query. TopK means what the CLI's --top-k means:
// absent is the server's default, any value outside 1 to MaxTopK is refused.
type QueryRequest struct {
	Question  string `json:"question"`
	Retriever string `json:"retriever,omitempty"`
	TopK      *int   `json:"top_k,omitempty"`
}

// BatchRequest is the body of /v1/query/batch.
type BatchRequest struct {
	Questions []retrieve.Question `json:"questions"`
	Retriever string              `json:"retriever,omitempty"`
	TopK      *int                `json:"top_k,omitempty"`
}

// decode reads a JSON body strictly — no unknown field, no key in another case or
// given twice (exactKeys), nothing after the value; it answers the error itself and
// reports false.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		fail(w, http.StatusRequestEntityTooLarge, "request body over %d bytes", tooBig.Limit)
		return false
	case err != nil:
		fail(w, http.StatusBadRequest, "reading the request body: %v", err)
		return false
	}
	if err := exactKeys(data, reflect.TypeOf(v)); err != nil {
		fail(w, http.StatusBadRequest, "request body: %v", err)
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "malformed JSON body: %s", jsonmsg.Describe(err))
		return false
	}
	if _, err := dec.Token(); err != io.EOF {
		fail(w, http.StatusBadRequest, "malformed JSON body: trailing data")
		return false
	}
	return true
}

// pick resolves a request's retriever and top-k, answering errors itself.
func (s *Server) pick(w http.ResponseWriter, sr *retrieve.Searcher, name string, topK *int) (retrieve.Retriever, int, bool) {
	if name == "" {
		name = s.cfg.Retriever
	}
	k := s.cfg.TopK
	if topK != nil {
		k = *topK
	}
	if k < 1 || k > s.cfg.MaxTopK {
		fail(w, http.StatusBadRequest, "top_k %d: out of range, want 1 to %d (leave it out for the default, %d)", k, s.cfg.MaxTopK, s.cfg.TopK)
		return nil, 0, false
	}
	r, err := sr.Retriever(name)
	if err != nil {
		fail(w, http.StatusBadRequest, "%v", err)
		return nil, 0, false
	}
	return r, k, true
}

func (s *Server) query(w http.ResponseWriter, r *http.Request) {
	var req QueryRequest
	if !decode(w, r, &req) {
		return
	}
	if err := retrieve.CheckQuestion(req.Question); err != nil {
		fail(w, http.StatusBadRequest, "question: %v", err)
		return
	}
	cur := s.cur.Load()
	ret, k, ok := s.pick(w, cur.searcher, req.Retriever, req.TopK)
	if !ok {
		return
	}
	lines, err := retrieve.Run(r.Context(), ret, nil, []retrieve.Question{{ID: "q1", Question: req.Question}}, retrieve.RunConfig{TopK: k, Workers: 1}, nil)
	if err != nil {
		s.retrievalFailed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, lines[0])
}

func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	var req BatchRequest
	if !decode(w, r, &req) {
		return
	}
	if len(req.Questions) == 0 || len(req.Questions) > s.cfg.MaxBatch {
		fail(w, http.StatusBadRequest, "questions: want 1 to %d, got %d", s.cfg.MaxBatch, len(req.Questions))
		return
	}
	given := make(map[string]int, len(req.Questions))
	for i, q := range req.Questions {
		if q.ID == "" {
			continue
		}
		if j, dup := given[q.ID]; dup {
			fail(w, http.StatusBadRequest, "questions[%d]: id %q is also questions[%d]'s: ids must be unique", i, q.ID, j)
			return
		}
		given[q.ID] = i
	}
	for i := range req.Questions {
		if err := retrieve.CheckQuestion(req.Questions[i].Question); err != nil {
			fail(w, http.StatusBadRequest, "questions[%d]: %v", i, err)
			return
		}
		if rd := req.Questions[i].Reader; rd != "" { // the form an answering retriever is asked
			if err := retrieve.CheckQuestion(rd); err != nil {
				fail(w, http.StatusBadRequest, "questions[%d].reader: %v", i, err)
				return
			}
		}
		if req.Questions[i].ID == "" {
			id := fmt.Sprintf("q%d", i+1)
			if j, taken := given[id]; taken {
				fail(w, http.StatusBadRequest, "questions[%d] has no id and its default, %q, is questions[%d]'s: give it one", i, id, j)
				return
			}
			req.Questions[i].ID = id
		}
	}
	cur := s.cur.Load()
	ret, k, ok := s.pick(w, cur.searcher, req.Retriever, req.TopK)
	if !ok {
		return
	}
	if n := len(req.Questions) * k; n > s.cfg.MaxPassages {
		fail(w, http.StatusBadRequest, "%d questions × top_k %d ask for %d passages, at most %d a request: split the batch or lower top_k",
			len(req.Questions), k, n, s.cfg.MaxPassages)
		return
	}
	lines, err := retrieve.Run(r.Context(), ret, nil, req.Questions, retrieve.RunConfig{TopK: k, Workers: s.cfg.Workers, BatchSize: 32}, nil)
	if err != nil {
		s.retrievalFailed(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": lines})
}

func (s *Server) retrievalFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(r.Context().Err(), context.DeadlineExceeded) {
		fail(w, http.StatusGatewayTimeout, "deadline of %s exceeded", s.cfg.Timeout)
		return
	}
	s.internalError(w, r, err)
}

// internalError answers 500 with a fresh error id and writes the error itself, under
// that id, to Config.ErrorLog only.
func (s *Server) internalError(w http.ResponseWriter, r *http.Request, err error) {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read does not fail (Go 1.24)
	id := hex.EncodeToString(b[:])
	s.cfg.ErrorLog.Printf("serve: error %s on %s %s: %v", id, r.Method, r.URL.Path, err)
	fail(w, http.StatusInternalServerError, "internal error %s: the server's log has its detail", id)
}
