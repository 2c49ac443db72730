package llmtest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Endpoint names the API a request was sent to.
type Endpoint string

// The endpoints the server answers.
const (
	Chat       Endpoint = "chat"       // /v1/chat/completions
	Embeddings Endpoint = "embeddings" // /v1/embeddings
)

// DefaultEmbedDim is the width of the vectors /v1/embeddings answers with by default.
const DefaultEmbedDim = 64

// Message is one chat message of a recorded request. Content parts of a multi-part
// message are joined with newlines.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one request the server received, decoded.
type Request struct {
	Seq      int      // 1-based arrival order
	Endpoint Endpoint // Chat or Embeddings; "" for a path the server does not serve
	Path     string   // URL path as sent, e.g. "/v1/chat/completions"
	Model    string
	// Chat fields.
	Messages    []Message
	Temperature *float64 // nil when not sent
	MaxTokens   int      // max_tokens or max_completion_tokens; 0 when not sent
	JSONMode    bool     // response_format {"type": "json_object"}
	// Embeddings fields.
	Input          []string
	EncodingFormat string
	// Body is the raw request body; Header the request headers.
	Body   []byte
	Header http.Header
	// Outcome, filled in when the server is done with the request.
	Rule     string // name of the rule that handled it ("rule 3" unless named); "" for the default answer
	Matched  bool   // a rule handled it
	Fault    string // description of the injected fault, "" if none
	Status   int    // HTTP status sent; 0 while in flight, or when the connection was cut before any answer
	Answered bool   // a complete 200 answer was written
	Done     bool   // the server finished handling the request
}

// LastUser returns the content of the last user message, or "" if there is none.
func (r Request) LastUser() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Server is an in-process OpenAI-compatible server. Create it with [NewServer].
type Server struct {
	srv  *httptest.Server
	quit chan struct{}
	once sync.Once

	mu          sync.Mutex
	rules       []*Rule
	nextFaults  []queuedFault
	respond     Responder
	embed       func(string) []float32
	embedDim    int
	requests    []*Request
	inFlight    int
	maxInFlight int
	answers     int
}

type queuedFault struct {
	fault Fault
	left  int
}

// NewServer starts a server on a loopback port and stops it when the test ends.
func NewServer(tb testing.TB) *Server {
	tb.Helper()
	s := New()
	tb.Cleanup(s.Close)
	return s
}

// New starts a server on a loopback port; the caller must Close it. Tests use
// NewServer.
func New() *Server {
	s := &Server{quit: make(chan struct{}), embedDim: DefaultEmbedDim}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	return s
}

// Listen starts a server on addr (host:port; port 0 picks one); the caller must Close
// it. `graphloom fake-llm` uses it to serve a script outside tests.
func Listen(addr string) (*Server, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("llmtest: listen: %w", err)
	}
	s := &Server{quit: make(chan struct{}), embedDim: DefaultEmbedDim}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.handle))
	s.srv.Listener.Close()
	s.srv.Listener = l
	s.srv.Start()
	return s, nil
}

// URL returns the API base URL, ending in "/v1", as OpenAI clients expect
// (e.g. "http://127.0.0.1:41234/v1").
func (s *Server) URL() string { return s.srv.URL + "/v1" }

// RootURL returns the server's root URL, without "/v1".
func (s *Server) RootURL() string { return s.srv.URL }

// Close stops the server. Requests held back by a delay are abandoned. Close may be
// called more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.quit)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// On adds a rule for chat requests that m matches and returns it for scripting. A
// rule with no reply and no fault answers with the default answer.
func (s *Server) On(m Matcher) *Rule { return s.addRule(All(EndpointIs(Chat), m)) }

// OnEmbeddings adds a rule for embeddings requests that m matches. Only its fault
// matters: embeddings are always answered with the server's embedder.
func (s *Server) OnEmbeddings(m Matcher) *Rule { return s.addRule(All(EndpointIs(Embeddings), m)) }

func (s *Server) addRule(m Matcher) *Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &Rule{s: s, match: m, name: fmt.Sprintf("rule %d", len(s.rules)+1)}
	s.rules = append(s.rules, r)
	return r
}

// SetDefault sets the answer to chat requests no rule matches (initially "{}").
func (s *Server) SetDefault(f Responder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = f
}

// SetEmbedder replaces the hashed bag-of-words embedder. f may be called concurrently.
func (s *Server) SetEmbedder(f func(text string) []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embed = f
}

// SetEmbedDim sets the width of the default embedder's vectors.
func (s *Server) SetEmbedDim(dim int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if dim > 0 {
		s.embedDim = dim
	}
}

// FailNext applies f to the next n requests, whatever their endpoint, before any
// rule is consulted. Calls queue up: FailNext(1, a); FailNext(2, b) fails one request
// with a, then two with b.
func (s *Server) FailNext(n int, f Fault) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextFaults = append(s.nextFaults, queuedFault{fault: f, left: n})
}

// Requests returns a copy of every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		out[i] = *r
	}
	return out
}

// Count returns the number of requests received (HTTP calls made by clients).
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// CountMatching returns the number of requests received that m matches.
func (s *Server) CountMatching(m Matcher) int {
	n := 0
	for _, r := range s.Requests() {
		if m(r) {
			n++
		}
	}
	return n
}

// Answered returns the requests that got a complete 200 answer.
func (s *Server) Answered() []Request {
	return s.filter(func(r Request) bool { return r.Answered })
}

// AnsweredCount returns the number of requests that got a complete 200 answer.
func (s *Server) AnsweredCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answers
}

// Unmatched returns the chat requests no rule handled (they got the default answer).
func (s *Server) Unmatched() []Request {
	return s.filter(func(r Request) bool { return r.Endpoint == Chat && !r.Matched && r.Done })
}

// Duplicates returns each answered request whose endpoint and body equal those of an
// earlier answered request: work a client with a response cache should not repeat.
func (s *Server) Duplicates() []Request {
	seen := make(map[string]bool)
	var dups []Request
	for _, r := range s.Requests() {
		if !r.Answered {
			continue
		}
		k := string(r.Endpoint) + "\x00" + string(r.Body)
		if seen[k] {
			dups = append(dups, r)
		}
		seen[k] = true
	}
	return dups
}

// InFlight returns the number of requests being handled right now.
func (s *Server) InFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inFlight
}

// MaxInFlight returns the largest number of requests handled at the same time.
func (s *Server) MaxInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxInFlight
}

// Reset forgets recorded requests and the in-flight maximum. Rules, their hit
// counts, queued faults and the default answer are kept.
func (s *Server) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
	s.maxInFlight = s.inFlight
	s.answers = 0
}

func (s *Server) filter(keep func(Request) bool) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// wire formats of the requests the server decodes.
type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wireChatRequest struct {
	Model               string        `json:"model"`
	Messages            []wireMessage `json:"messages"`
	Temperature         *float64      `json:"temperature"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	ResponseFormat      *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Stream bool `json:"stream"`
}

type wireEmbedRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
}

func decodeRequest(r *Request) error {
	switch r.Endpoint {
	case Chat:
		var w wireChatRequest
		if err := json.Unmarshal(r.Body, &w); err != nil {
			return fmt.Errorf("decoding chat request: %w", err)
		}
		if w.Stream {
			return fmt.Errorf("streaming is not supported")
		}
		if len(w.Messages) == 0 {
			return fmt.Errorf("messages is empty")
		}
		r.Model, r.Temperature = w.Model, w.Temperature
		r.MaxTokens = max(w.MaxTokens, w.MaxCompletionTokens)
		r.JSONMode = w.ResponseFormat != nil && w.ResponseFormat.Type == "json_object"
		for i, m := range w.Messages {
			text, err := messageText(m.Content)
			if err != nil {
				return fmt.Errorf("message %d: %w", i, err)
			}
			r.Messages = append(r.Messages, Message{Role: m.Role, Content: text})
		}
	case Embeddings:
		var w wireEmbedRequest
		if err := json.Unmarshal(r.Body, &w); err != nil {
			return fmt.Errorf("decoding embeddings request: %w", err)
		}
		r.Model, r.EncodingFormat = w.Model, w.EncodingFormat
		var one string
		if err := json.Unmarshal(w.Input, &one); err == nil {
			r.Input = []string{one}
		} else if err := json.Unmarshal(w.Input, &r.Input); err != nil {
			return fmt.Errorf("input must be a string or an array of strings")
		}
		if len(r.Input) == 0 {
			return fmt.Errorf("input is empty")
		}
	}
	return nil
}

// messageText accepts a string or an array of content parts.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or an array of parts")
	}
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

func (s *Server) handle(w http.ResponseWriter, hr *http.Request) {
	req := &Request{Path: hr.URL.Path, Header: hr.Header.Clone()}
	switch strings.TrimSuffix(hr.URL.Path, "/") {
	case "/v1/chat/completions", "/chat/completions":
		req.Endpoint = Chat
	case "/v1/embeddings", "/embeddings":
		req.Endpoint = Embeddings
	}
	body, readErr := io.ReadAll(hr.Body)
	req.Body = body
	var decodeErr error
	if req.Endpoint != "" && hr.Method == http.MethodPost && readErr == nil {
		decodeErr = decodeRequest(req) // before the request is shared: Requests reads it under the lock
	}

	s.mu.Lock()
	req.Seq = len(s.requests) + 1
	s.requests = append(s.requests, req)
	s.inFlight++
	s.maxInFlight = max(s.maxInFlight, s.inFlight)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.inFlight--
		req.Done = true
		if req.Answered {
			s.answers++
		}
		s.mu.Unlock()
	}()

	switch {
	case req.Endpoint == "":
		s.writeError(w, req, http.StatusNotFound, "not_found", "llmtest: no such endpoint "+hr.URL.Path)
		return
	case hr.Method != http.MethodPost:
		s.writeError(w, req, http.StatusMethodNotAllowed, "invalid_request_error", "llmtest: use POST")
		return
	case readErr != nil:
		s.writeError(w, req, http.StatusBadRequest, "invalid_request_error", "llmtest: reading body: "+readErr.Error())
		return
	}
	if decodeErr != nil {
		s.writeError(w, req, http.StatusBadRequest, "invalid_request_error", "llmtest: "+decodeErr.Error())
		return
	}

	fault, respond, embed := s.route(req)
	if fault != nil && fault.Delay > 0 {
		t := time.NewTimer(fault.Delay)
		select {
		case <-t.C:
		case <-hr.Context().Done():
			t.Stop()
			return // the client gave up; Status stays 0
		case <-s.quit:
			t.Stop()
			return
		}
	}

	var answer []byte
	if req.Endpoint == Chat {
		answer = chatAnswer(req, respond)
	} else {
		answer = embedAnswer(req, embed)
	}

	switch {
	case fault == nil:
	case fault.Status != 0:
		if fault.RetryAfter != "" {
			w.Header().Set("Retry-After", fault.RetryAfter)
		}
		if fault.Body != "" {
			s.writeRaw(w, req, fault.Status, "text/html", []byte(fault.Body), false)
			return
		}
		msg := fault.Message
		if msg == "" {
			msg = fmt.Sprintf("llmtest: injected %d %s", fault.Status, http.StatusText(fault.Status))
		}
		s.writeError(w, req, fault.Status, errorType(fault.Status), msg)
		return
	case fault.Malformed:
		s.writeRaw(w, req, http.StatusOK, "application/json", []byte(`{"id": "llmtest-malformed", "choices": [{"message": {"content": "unterminated`), false)
		return
	case fault.Truncated:
		w.Header().Set("Content-Length", strconv.Itoa(len(answer)+64))
		s.writeRaw(w, req, http.StatusOK, "application/json", answer[:len(answer)/2], false)
		return
	case fault.Hangup, fault.Drop:
		s.hijack(w, req, fault.Hangup, answer)
		return
	}
	s.writeRaw(w, req, http.StatusOK, "application/json", answer, true)
}

// route picks the fault and responder for req and records which rule handled it.
func (s *Server) route(req *Request) (*Fault, Responder, func(string) []float32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var fault *Fault
	if len(s.nextFaults) > 0 {
		f := s.nextFaults[0].fault
		fault = &f
		if s.nextFaults[0].left--; s.nextFaults[0].left == 0 {
			s.nextFaults = s.nextFaults[1:]
		}
	}
	respond, embed := s.respond, s.embed
	if embed == nil {
		dim := s.embedDim
		embed = func(text string) []float32 { return Embed(text, dim) }
	}
	for _, r := range s.rules {
		if (r.times > 0 && r.hits >= r.times) || !r.match(*req) {
			continue
		}
		r.hits++
		req.Rule, req.Matched = r.name, true
		if r.respond != nil {
			respond = r.respond
		}
		if fault == nil && r.fault != nil {
			f := *r.fault
			fault = &f
		}
		break
	}
	if fault != nil {
		req.Fault = fault.String()
	}
	return fault, respond, embed
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens,omitempty"`
	TotalTokens      int `json:"total_tokens"`
}

func chatAnswer(req *Request, respond Responder) []byte {
	reply := Reply{Content: "{}"}
	if respond != nil {
		reply = respond(*req)
	}
	if reply.PromptTokens == 0 {
		for _, m := range req.Messages {
			reply.PromptTokens += len(strings.Fields(m.Content))
		}
	}
	if reply.CompletionTokens == 0 {
		reply.CompletionTokens = len(strings.Fields(reply.Content))
	}
	if reply.FinishReason == "" {
		reply.FinishReason = "stop"
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      Message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}
	out, _ := json.Marshal(struct {
		ID      string    `json:"id"`
		Object  string    `json:"object"`
		Created int64     `json:"created"`
		Model   string    `json:"model"`
		Choices []choice  `json:"choices"`
		Usage   wireUsage `json:"usage"`
	}{
		ID:      fmt.Sprintf("chatcmpl-llmtest-%d", req.Seq),
		Object:  "chat.completion",
		Created: 1700000000,
		Model:   req.Model,
		Choices: []choice{{Message: Message{Role: "assistant", Content: reply.Content}, FinishReason: reply.FinishReason}},
		Usage: wireUsage{
			PromptTokens:     reply.PromptTokens,
			CompletionTokens: reply.CompletionTokens,
			TotalTokens:      reply.PromptTokens + reply.CompletionTokens,
		},
	})
	return out
}

func embedAnswer(req *Request, embed func(string) []float32) []byte {
	type datum struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]datum, len(req.Input))
	tokens := 0
	for i, text := range req.Input {
		v := embed(text)
		tokens += len(strings.Fields(text))
		var enc any = v
		if req.EncodingFormat == "base64" {
			buf := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(x))
			}
			enc = base64.StdEncoding.EncodeToString(buf)
		}
		data[i] = datum{Object: "embedding", Index: i, Embedding: enc}
	}
	out, _ := json.Marshal(struct {
		Object string    `json:"object"`
		Data   []datum   `json:"data"`
		Model  string    `json:"model"`
		Usage  wireUsage `json:"usage"`
	}{"list", data, req.Model, wireUsage{PromptTokens: tokens, TotalTokens: tokens}})
	return out
}

func errorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status == http.StatusUnauthorized:
		return "invalid_api_key"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

func (s *Server) writeError(w http.ResponseWriter, req *Request, status int, typ, msg string) {
	body, _ := json.Marshal(map[string]any{"error": map[string]any{
		"message": msg, "type": typ, "param": nil, "code": typ,
	}})
	s.writeRaw(w, req, status, "application/json", body, false)
}

func (s *Server) writeRaw(w http.ResponseWriter, req *Request, status int, contentType string, body []byte, answered bool) {
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(status)
	_, err := w.Write(body)
	s.mu.Lock()
	req.Status = status
	req.Answered = answered && err == nil
	s.mu.Unlock()
}

// hijack takes over the connection: with half set it sends a 200 status line,
// headers and half of body before closing; otherwise it closes at once.
func (s *Server) hijack(w http.ResponseWriter, req *Request, half bool, body []byte) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		s.writeError(w, req, http.StatusInternalServerError, "server_error", "llmtest: connection cannot be hijacked")
		return
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	if half {
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
		_, _ = buf.Write(body[:len(body)/2])
		_ = buf.Flush()
		s.mu.Lock()
		req.Status = http.StatusOK
		s.mu.Unlock()
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
