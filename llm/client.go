package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// Message roles.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // RoleSystem, RoleDeveloper, RoleUser or RoleAssistant
	Content string `json:"content"`
}

// System returns a system message.
func System(content string) Message { return Message{Role: RoleSystem, Content: content} }

// User returns a user message.
func User(content string) Message { return Message{Role: RoleUser, Content: content} }

// Assistant returns an assistant message (a previous answer, or a few-shot example).
func Assistant(content string) Message { return Message{Role: RoleAssistant, Content: content} }

// PromptTokens is the prompt tokens reqs would send, count giving a text's tokens:
// each message's content and 4 tokens of the chat format's overhead per message.
func PromptTokens(reqs []ChatRequest, count func(string) int) int {
	n := 0
	for _, r := range reqs {
		for _, m := range r.Messages {
			n += count(m.Content) + 4
		}
	}
	return n
}

// ChatRequest is one chat completion request.
type ChatRequest struct {
	Messages []Message
	// Temperature overrides Config.Temperature when non-nil.
	Temperature *float64
	// MaxTokens overrides Config.MaxTokens when positive.
	MaxTokens int
	// JSONMode asks the server for a JSON object (response_format json_object).
	// Servers differ in how well they enforce it: parse answers with ParseJSON anyway.
	JSONMode bool
	// Stage labels the request in Usage ("extract", "summarize", …); default "chat".
	// It does not change the answer and is not part of the cache key.
	Stage string
	// Usable, when set, reports an answer the caller cannot use (one that does not
	// parse). With Config.ReaskUnparseable, a cached answer it refuses is asked again
	// past the cache, once per request and client (ChatJSON sets it). Not part of the
	// cache key.
	Usable func(ChatResponse) error
}

// Temp returns a pointer to t, for ChatRequest.Temperature.
func Temp(t float64) *float64 { return &t }

// ChatResponse is the answer to a ChatRequest.
type ChatResponse struct {
	Content          string
	PromptTokens     int
	CompletionTokens int
	// FinishReason is the server's: "stop", or FinishLength when the answer was cut
	// at MaxTokens (ParseAnswer then drops its unfinished tail).
	FinishReason string
	// Cached is true when the answer cost no HTTP call: it came from the cache, or
	// from an identical request in flight at the same time.
	Cached bool

	fromDisk bool // read from the on-disk cache (not just shared in flight)
}

// Option configures what Config cannot hold: collaborators rather than settings.
type Option func(*clientOptions)

type clientOptions struct {
	httpClient *http.Client
	sleep      func(context.Context, time.Duration) error
	onRetry    func(*APIError, time.Duration)
	onCache    func(error)
}

// WithCacheErrorHook calls hook once, with the error, when the client first fails to
// write an answer to its cache (a full disk): that answer and later ones may be paid
// for again by a rerun. The CLI prints it; later failures are only counted
// (Counters.CacheWriteErrors).
func WithCacheErrorHook(hook func(err error)) Option {
	return func(o *clientOptions) { o.onCache = hook }
}

// WithRetryHook calls hook before each wait to retry a failed attempt, with the
// failure and the wait; the CLI uses it to show retries on its progress lines. hook
// may be called concurrently.
func WithRetryHook(hook func(ae *APIError, wait time.Duration)) Option {
	return func(o *clientOptions) { o.onRetry = hook }
}

// WithHTTPClient makes the client send requests through hc (a proxy, custom TLS, a
// test transport). By default each Client has its own transport keeping up to
// Concurrency idle connections.
func WithHTTPClient(hc *http.Client) Option {
	return func(o *clientOptions) { o.httpClient = hc }
}

// WithSleep replaces the wait between retries. sleep must return early with
// ctx.Err() when ctx ends. Tests use it to observe backoff without waiting.
func WithSleep(sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(o *clientOptions) { o.sleep = sleep }
}

// Client talks to an OpenAI-compatible server (Ollama, vLLM, llama.cpp server,
// OpenAI) through the official openai-go SDK, adding bounded concurrency, retries
// with backoff, an on-disk response cache and accounting. It is safe for concurrent
// use; create one per server and share it.
type Client struct {
	cfg       Config
	chat      openai.ChatCompletionService
	embed     openai.EmbeddingService
	ownClient *http.Client // closed by Close; nil when the caller supplied one
	sem       chan struct{}
	cache     *diskCache
	usage     *usageTracker
	sleep     func(context.Context, time.Duration) error

	mu      sync.Mutex
	flights map[string]*flight

	// Fail-fast state: whether any attempt ever succeeded, the failed attempts
	// counted towards Config.FailFast, the last failure, and the error every request
	// gets once the client gave up (down is closed then).
	answered atomic.Bool
	failed   atomic.Int64
	lastErr  atomic.Pointer[APIError]
	downErr  atomic.Pointer[APIError]
	down     context.Context // ends when the client gives up on its server
	giveUp   context.CancelFunc
	onRetry  func(ae *APIError, wait time.Duration)
	onCache  func(error)
	cacheBad atomic.Bool // a cache write failed (onCache was called)

	embedSpace string          // the embedding cache's key space (EmbedProbe), under mu
	reasked    map[string]bool // chat keys asked again past the cache (ChatJSON), under mu
}

// cacheWriteFailed counts a failed cache write and reports the first one.
func (c *Client) cacheWriteFailed(stage string, err error) {
	c.usage.add(stage, func(u *Counters) { u.CacheWriteErrors++ })
	if c.onCache != nil && c.cacheBad.CompareAndSwap(false, true) {
		c.onCache(err)
	}
}

// LastError returns the last failed attempt's error, or nil if none failed.
func (c *Client) LastError() error {
	if e := c.lastErr.Load(); e != nil {
		return e
	}
	return nil
}

// noteFailure records a failed attempt and gives up on the server when the first
// Config.FailFast attempts all failed.
func (c *Client) noteFailure(ae *APIError) {
	c.lastErr.Store(ae)
	if c.cfg.FailFast < 0 || c.answered.Load() || ae.Kind == KindRateLimited {
		return
	}
	if n := c.failed.Add(1); n >= int64(c.cfg.FailFast) {
		d := &APIError{Op: ae.Op, Kind: KindDown, Status: ae.Status, Attempts: int(n), Err: ae,
			Message: fmt.Sprintf("giving up: the first %d attempts all failed and none succeeded; last: %s", n, ae.Error())}
		if c.downErr.CompareAndSwap(nil, d) {
			c.giveUp()
		}
	}
}

// gaveUp returns the error of a client that gave up on its server, for op and stage.
func (c *Client) gaveUp(op, stage string) *APIError {
	d := c.downErr.Load()
	if d == nil {
		return nil
	}
	e := *d
	e.Op, e.Stage = op, stage
	return &e
}

// flight is a chat request in progress that identical requests wait for.
type flight struct {
	done chan struct{}
	resp ChatResponse
	err  error
}

// New returns a client for cfg, with defaults filled in. It fails on an invalid
// configuration or an unusable cache directory; an unconfigured chat or embeddings
// side only fails when used (ErrNotConfigured).
func New(cfg Config, opts ...Option) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o clientOptions
	for _, opt := range opts {
		opt(&o)
	}
	c := &Client{
		cfg:     cfg,
		sem:     make(chan struct{}, cfg.Concurrency),
		usage:   newUsageTracker(),
		sleep:   o.sleep,
		flights: make(map[string]*flight),
		onRetry: o.onRetry,
		onCache: o.onCache,
	}
	c.down, c.giveUp = context.WithCancel(context.Background())
	if c.sleep == nil {
		c.sleep = sleepCtx
	}
	hc := o.httpClient
	if hc == nil {
		tr := &http.Transport{Proxy: http.ProxyFromEnvironment}
		if dt, ok := http.DefaultTransport.(*http.Transport); ok {
			tr = dt.Clone()
		}
		tr.MaxIdleConnsPerHost = cfg.Concurrency
		hc = &http.Client{Transport: tr}
		c.ownClient = hc
	}
	// The services, unlike openai.NewClient, read nothing from the environment:
	// everything comes from cfg. Retries are ours (MaxRetries 0 here).
	common := []option.RequestOption{option.WithHTTPClient(hc), option.WithMaxRetries(0)}
	if cfg.APIKey != "" {
		common = append(common, option.WithAPIKey(cfg.APIKey))
	}
	if cfg.BaseURL != "" {
		c.chat = openai.NewChatCompletionService(slices.Concat(common, []option.RequestOption{option.WithBaseURL(cfg.BaseURL)})...)
	}
	if u := cfg.embedBaseURL(); u != "" {
		c.embed = openai.NewEmbeddingService(slices.Concat(common, []option.RequestOption{option.WithBaseURL(u)})...)
	}
	if cfg.CacheDir != "" {
		cache, err := openCache(cfg.CacheDir)
		if err != nil {
			return nil, err
		}
		c.cache = cache
	}
	return c, nil
}

// Config returns the client's configuration, defaults filled in.
func (c *Client) Config() Config { return c.cfg }

// String describes the client without its API key.
func (c *Client) String() string { return "llm.Client{" + c.cfg.String() + "}" }

// GoString is String, so %#v does not print the key.
func (c *Client) GoString() string { return c.String() }

// Usage returns a snapshot of the client's accounting.
func (c *Client) Usage() Usage { return c.usage.snapshot() }

// Close releases idle connections. The client remains usable.
func (c *Client) Close() {
	if c.ownClient != nil {
		c.ownClient.CloseIdleConnections()
	}
}

// Chat sends one chat completion request, or answers it from the cache. Timeouts,
// network errors, 429, 5xx and malformed answers are retried with backoff; the
// returned error is an *APIError (see Classify), a context error, or
// ErrNotConfigured.
func (c *Client) Chat(ctx context.Context, req ChatRequest) (ChatResponse, error) {
	resp, err := c.chatOnce(ctx, req)
	if err == nil && resp.fromDisk && req.Usable != nil && c.cfg.ReaskUnparseable && c.cache != nil && req.Usable(resp) != nil {
		if again, ok, aerr := c.reask(ctx, req); aerr != nil {
			return again, aerr
		} else if ok {
			resp = again
		}
	}
	if err == nil && resp.FinishReason == FinishLength {
		c.usage.add(cmp.Or(req.Stage, kindChat), func(u *Counters) { u.Cut++ })
	}
	return resp, err
}

func (c *Client) chatOnce(ctx context.Context, req ChatRequest) (ChatResponse, error) {
	stage := cmp.Or(req.Stage, kindChat)
	c.usage.add(stage, func(u *Counters) { u.Requests++ })
	if !c.cfg.Configured() {
		return ChatResponse{}, fmt.Errorf("llm: chat: %w", ErrNotConfigured)
	}
	k, err := c.chatKey(req)
	if err != nil {
		return ChatResponse{}, err
	}
	if c.cache == nil {
		return c.sendChat(ctx, stage, k)
	}
	key, err := hashKey(k)
	if err != nil {
		return ChatResponse{}, err
	}
	for {
		f, leader := c.join(key)
		if leader {
			resp, err := c.chatThroughCache(ctx, stage, key, k)
			c.land(key, f, resp, err)
			return resp, err
		}
		select {
		case <-f.done:
		case <-ctx.Done():
			return ChatResponse{}, fmt.Errorf("llm: chat: %w", ctx.Err())
		}
		if f.err != nil && Classify(f.err) == KindCanceled && ctx.Err() == nil {
			continue // the request we waited for was cancelled, not ours: send it ourselves
		}
		if f.err != nil {
			c.usage.add(stage, func(u *Counters) { u.Errors++ })
			return ChatResponse{}, f.err
		}
		c.usage.add(stage, func(u *Counters) { u.Deduplicated++ })
		resp := f.resp
		resp.Cached = true
		return resp, nil
	}
}

// reask sends req past the cache and caches the answer in place of the one there
// (ChatJSON under Config.ReaskUnparseable). ok is false when this client already
// asked req again: a second unreadable answer is what the request gets.
func (c *Client) reask(ctx context.Context, req ChatRequest) (ChatResponse, bool, error) {
	stage := cmp.Or(req.Stage, kindChat)
	k, err := c.chatKey(req)
	if err != nil {
		return ChatResponse{}, false, err
	}
	key, err := hashKey(k)
	if err != nil {
		return ChatResponse{}, false, err
	}
	// Identical requests asking at once (ChatAll's duplicates, shared in flight) wait
	// for one answer.
	rkey := "reask\x00" + key
	f, leader := c.join(rkey)
	for !leader {
		select {
		case <-f.done:
		case <-ctx.Done():
			return ChatResponse{}, false, fmt.Errorf("llm: chat: %w", ctx.Err())
		}
		switch {
		case f.err == nil:
			return f.resp, true, nil
		case errors.Is(f.err, errNotReasked):
			return ChatResponse{}, false, nil // the cached answer stands
		}
		// The re-ask we waited for failed (its own deadline, a 5xx): ask ourselves.
		f, leader = c.join(rkey)
	}
	resp, ok, err := c.reaskLead(ctx, stage, key, k)
	landErr := err
	if !ok && err == nil {
		landErr = errNotReasked
	}
	c.land(rkey, f, resp, landErr)
	return resp, ok, err
}

// errNotReasked tells requests waiting on a re-ask that none was made.
var errNotReasked = errors.New("llm: not asked again")

// reaskLead asks k again past the cache, at most once per client (see reask).
func (c *Client) reaskLead(ctx context.Context, stage, key string, k chatKey) (ChatResponse, bool, error) {
	c.mu.Lock()
	if c.reasked == nil {
		c.reasked = map[string]bool{}
	}
	done := c.reasked[key]
	c.reasked[key] = true
	c.mu.Unlock()
	if done {
		// Asked again already (by this request or one like it): what the cache holds
		// now is that answer.
		if e, st := c.cache.get(key, kindChat); st == cacheHit {
			return cachedResponse(e), true, nil
		}
		return ChatResponse{}, false, nil
	}
	c.usage.add(stage, func(u *Counters) { u.Reasked++ })
	resp, err := c.sendChat(ctx, stage, k)
	if err != nil {
		c.mu.Lock()
		delete(c.reasked, key) // not asked after all: a retry of the request may ask
		c.mu.Unlock()
		return resp, false, err // do counted the failure
	}
	c.putChat(stage, key, k, resp)
	return resp, true, nil
}

// cachedResponse is the answer a cache entry holds.
func cachedResponse(e cacheEntry) ChatResponse {
	return ChatResponse{
		Content:          e.Chat.Content,
		PromptTokens:     e.Chat.PromptTokens,
		CompletionTokens: e.Chat.CompletionTokens,
		FinishReason:     e.Chat.FinishReason,
		Cached:           true,
		fromDisk:         true,
	}
}

// join registers a request for key; the first caller leads, later ones wait for it.
func (c *Client) join(key string) (*flight, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.flights[key]; ok {
		return f, false
	}
	f := &flight{done: make(chan struct{})}
	c.flights[key] = f
	return f, true
}

func (c *Client) land(key string, f *flight, resp ChatResponse, err error) {
	c.mu.Lock()
	delete(c.flights, key)
	c.mu.Unlock()
	f.resp, f.err = resp, err
	close(f.done)
}

func (c *Client) chatThroughCache(ctx context.Context, stage, key string, k chatKey) (ChatResponse, error) {
	e, st := c.cache.get(key, kindChat)
	switch st {
	case cacheHit:
		c.usage.add(stage, func(u *Counters) { u.CacheHits++ })
		return cachedResponse(e), nil
	case cacheCorrupt:
		c.usage.add(stage, func(u *Counters) { u.CacheCorrupt++ })
	}
	resp, err := c.sendChat(ctx, stage, k)
	if err != nil {
		return resp, err
	}
	c.putChat(stage, key, k, resp)
	return resp, nil
}

// putChat caches a chat answer under key.
func (c *Client) putChat(stage, key string, k chatKey, resp ChatResponse) {
	err := c.cache.put(cacheEntry{Kind: kindChat, Key: key, Model: k.Model, Chat: &cachedChat{
		Content:          resp.Content,
		PromptTokens:     resp.PromptTokens,
		CompletionTokens: resp.CompletionTokens,
		FinishReason:     resp.FinishReason,
	}})
	if err != nil {
		c.cacheWriteFailed(stage, err)
	}
}

// chatKey resolves req against the configuration into everything that shapes the
// answer, validating it on the way.
func (c *Client) chatKey(req ChatRequest) (chatKey, error) {
	k := chatKey{
		V:              cacheVersion,
		Kind:           kindChat,
		BaseURL:        canonicalBaseURL(c.cfg.BaseURL),
		Model:          c.cfg.Model,
		Messages:       slices.Clone(req.Messages),
		Temperature:    c.cfg.Temperature,
		MaxTokens:      c.cfg.MaxTokens,
		MaxTokensField: "max_tokens",
		JSONMode:       req.JSONMode,
	}
	if req.Temperature != nil {
		k.Temperature = *req.Temperature
	}
	if req.MaxTokens > 0 {
		k.MaxTokens = req.MaxTokens
	}
	if c.cfg.MaxCompletionTokensField {
		k.MaxTokensField = "max_completion_tokens"
	}
	switch {
	case len(k.Messages) == 0:
		return k, errors.New("llm: chat: request has no messages")
	case math.IsNaN(k.Temperature) || math.IsInf(k.Temperature, 0) || k.Temperature < 0:
		return k, fmt.Errorf("llm: chat: invalid temperature %g", k.Temperature)
	}
	for i, m := range k.Messages {
		switch m.Role {
		case RoleSystem, RoleDeveloper, RoleUser, RoleAssistant:
		default:
			return k, fmt.Errorf("llm: chat: message %d: unknown role %q", i, m.Role)
		}
	}
	return k, nil
}

func (c *Client) sendChat(ctx context.Context, stage string, k chatKey) (ChatResponse, error) {
	msgs := make([]openai.ChatCompletionMessageParamUnion, len(k.Messages))
	for i, m := range k.Messages {
		switch m.Role {
		case RoleSystem:
			msgs[i] = openai.SystemMessage(m.Content)
		case RoleDeveloper:
			msgs[i] = openai.DeveloperMessage(m.Content)
		case RoleUser:
			msgs[i] = openai.UserMessage(m.Content)
		case RoleAssistant:
			msgs[i] = openai.AssistantMessage(m.Content)
		}
	}
	params := openai.ChatCompletionNewParams{
		Model:       k.Model,
		Messages:    msgs,
		Temperature: openai.Float(k.Temperature),
	}
	if k.MaxTokens > 0 {
		if k.MaxTokensField == "max_completion_tokens" {
			params.MaxCompletionTokens = openai.Int(int64(k.MaxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(k.MaxTokens))
		}
	}
	if k.JSONMode {
		params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONObject: &shared.ResponseFormatJSONObjectParam{},
		}
	}
	var resp ChatResponse
	err := c.do(ctx, kindChat, stage, func(ctx context.Context, into option.RequestOption) error {
		var raw []byte
		if _, err := c.chat.New(ctx, params, option.WithResponseBodyInto(&raw), into); err != nil {
			return err
		}
		var cc openai.ChatCompletion
		if err := json.Unmarshal(raw, &cc); err != nil {
			return &badResponseError{msg: "chat completion is not valid JSON", err: err, urlEnv: EnvBaseURL, url: c.cfg.BaseURL}
		}
		if len(cc.Choices) == 0 {
			return &badResponseError{msg: "chat completion has no choices" + serverErrorMessage(raw)}
		}
		resp = ChatResponse{
			Content:          cc.Choices[0].Message.Content,
			PromptTokens:     int(cc.Usage.PromptTokens),
			CompletionTokens: int(cc.Usage.CompletionTokens),
			FinishReason:     cc.Choices[0].FinishReason,
		}
		return nil
	})
	if err != nil {
		return ChatResponse{}, err
	}
	c.usage.add(stage, func(u *Counters) {
		u.PromptTokens += int64(resp.PromptTokens)
		u.CompletionTokens += int64(resp.CompletionTokens)
	})
	return resp, nil
}

// serverErrorMessage extracts {"error": {"message": …}} (or {"error": "…"}) from a
// 200 body some servers send instead of an answer.
func serverErrorMessage(raw []byte) string {
	var body struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &body) != nil || len(body.Error) == 0 {
		return ""
	}
	var obj struct {
		Message string `json:"message"`
	}
	var s string
	switch {
	case json.Unmarshal(body.Error, &obj) == nil && obj.Message != "":
		return ": " + obj.Message
	case json.Unmarshal(body.Error, &s) == nil && s != "":
		return ": " + s
	}
	return ""
}

// ChatJSON sends req and decodes the answer's JSON into v with ParseAnswer. An answer
// that holds no usable JSON is counted as Unparseable in Usage and returned as an
// error for which Classify gives KindUnparseable, alongside the response.
//
// With Config.ReaskUnparseable, a cached answer that holds no usable JSON is asked
// again past the cache (once per request and client) and replaced by the new answer.
func (c *Client) ChatJSON(ctx context.Context, req ChatRequest, v any) (ChatResponse, error) {
	if t := reflect.TypeOf(v); req.Usable == nil && t != nil && t.Kind() == reflect.Pointer {
		req.Usable = func(r ChatResponse) error { // into a fresh value: v gets only the answer used
			return ParseAnswer(r, reflect.New(reflect.TypeOf(v).Elem()).Interface())
		}
	}
	resp, err := c.Chat(ctx, req)
	if err != nil {
		return resp, err
	}
	if err := ParseAnswer(resp, v); err != nil {
		c.usage.add(cmp.Or(req.Stage, kindChat), func(u *Counters) { u.Unparseable++ })
		return resp, fmt.Errorf("stage %s: %w", cmp.Or(req.Stage, kindChat), err)
	}
	return resp, nil
}

// ChatAll sends every request, up to Config.Concurrency at a time, and calls onDone
// (when not nil) once per request as it completes. onDone calls never overlap, so it
// may update shared state without locking. ChatAll returns when all are done, with
// ctx.Err() if the context ended first (the requests not sent by then fail with it).
func (c *Client) ChatAll(ctx context.Context, reqs []ChatRequest, onDone func(i int, resp ChatResponse, err error)) error {
	var (
		next atomic.Int64
		mu   sync.Mutex
		wg   sync.WaitGroup
	)
	// Twice the HTTP slots, so cache hits and backoff waits do not idle the server.
	for range min(len(reqs), 2*c.cfg.Concurrency) {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(reqs) {
					return
				}
				resp, err := c.Chat(ctx, reqs[i])
				if onDone != nil {
					mu.Lock()
					onDone(i, resp, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return ctx.Err()
}

// Embed returns the embeddings of texts, in input order. Texts are sent in batches
// of Config.EmbedBatchSize, concurrently; each vector is cached on its own as soon
// as its batch is answered, so an interrupted call loses nothing received. Equal
// texts are sent once.
//
// Vectors are cached by server, model name and text, and by which model answered
// under the name once EmbedProbe has told (embed.NewAPI calls it).
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	const stage = kindEmbed
	c.usage.add(stage, func(u *Counters) { u.Requests += int64(len(texts)) })
	if !c.cfg.EmbedConfigured() {
		return nil, fmt.Errorf("llm: embed: %w", ErrNotConfigured)
	}
	type item struct {
		key, text string
		idx       []int
		vec       []float32
	}
	base := canonicalBaseURL(c.cfg.embedBaseURL())
	space := c.currentSpace() // once: a probe meanwhile does not split the call's keys
	var items []*item
	byKey := make(map[string]*item, len(texts))
	dups := 0
	for i, t := range texts {
		key, err := c.embedKey(base, space, t)
		if err != nil {
			return nil, err
		}
		if it, ok := byKey[key]; ok {
			it.idx = append(it.idx, i)
			dups++
			continue
		}
		it := &item{key: key, text: t, idx: []int{i}}
		byKey[key] = it
		items = append(items, it)
	}
	if dups > 0 {
		c.usage.add(stage, func(u *Counters) { u.Deduplicated += int64(dups) })
	}

	var missing []*item
	for _, it := range items {
		if c.cache == nil {
			missing = append(missing, it)
			continue
		}
		e, st := c.cache.get(it.key, kindEmbed)
		switch st {
		case cacheHit:
			it.vec, _ = decodeVector(e.Embedding, e.Dim) // get validated it
			c.usage.add(stage, func(u *Counters) { u.CacheHits++ })
			continue
		case cacheCorrupt:
			c.usage.add(stage, func(u *Counters) { u.CacheCorrupt++ })
		}
		missing = append(missing, it)
	}

	if len(missing) > 0 {
		bctx, cancel := context.WithCancel(ctx)
		defer cancel()
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			firstErr error
		)
		for batch := range slices.Chunk(missing, c.cfg.EmbedBatchSize) {
			wg.Go(func() {
				inputs := make([]string, len(batch))
				for i, it := range batch {
					inputs[i] = it.text
				}
				vecs, err := c.sendEmbed(bctx, stage, inputs)
				if err != nil {
					mu.Lock()
					if firstErr == nil || (Classify(firstErr) == KindCanceled && Classify(err) != KindCanceled) {
						firstErr = err
					}
					mu.Unlock()
					cancel()
					return
				}
				for i, it := range batch {
					it.vec = vecs[i]
					if c.cache == nil {
						continue
					}
					err := c.cache.put(cacheEntry{Kind: kindEmbed, Key: it.key, Model: c.cfg.EmbedModel,
						Embedding: encodeVector(vecs[i]), Dim: len(vecs[i])})
					if err != nil {
						c.cacheWriteFailed(stage, err)
					}
				}
			})
		}
		wg.Wait()
		if firstErr != nil {
			return nil, firstErr
		}
	}

	out := make([][]float32, len(texts))
	for _, it := range items {
		for j, i := range it.idx {
			if j == 0 {
				out[i] = it.vec
			} else {
				out[i] = slices.Clone(it.vec)
			}
		}
	}
	return out, nil
}

func (c *Client) sendEmbed(ctx context.Context, stage string, inputs []string) ([][]float32, error) {
	params := openai.EmbeddingNewParams{
		Input:          openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: inputs},
		Model:          c.cfg.EmbedModel,
		EncodingFormat: openai.EmbeddingNewParamsEncodingFormatFloat,
	}
	var (
		vecs   [][]float32
		tokens int64
	)
	err := c.do(ctx, kindEmbed, stage, func(ctx context.Context, into option.RequestOption) error {
		var raw []byte
		if _, err := c.embed.New(ctx, params, option.WithResponseBodyInto(&raw), into); err != nil {
			return err
		}
		var er openai.CreateEmbeddingResponse
		if err := json.Unmarshal(raw, &er); err != nil {
			env, u := EnvBaseURL, c.cfg.BaseURL
			if c.cfg.EmbedBaseURL != "" {
				env, u = EnvEmbedBaseURL, c.cfg.EmbedBaseURL
			}
			return &badResponseError{msg: "embeddings answer is not valid JSON", err: err, urlEnv: env, url: u}
		}
		if len(er.Data) != len(inputs) {
			return &badResponseError{msg: fmt.Sprintf("embeddings answer has %d vectors for %d inputs%s",
				len(er.Data), len(inputs), serverErrorMessage(raw))}
		}
		vecs = make([][]float32, len(inputs))
		for _, d := range er.Data {
			i := int(d.Index)
			switch {
			case d.Index < 0 || i >= len(inputs) || vecs[i] != nil:
				return &badResponseError{msg: fmt.Sprintf("embeddings answer has a bad or repeated index %d", d.Index)}
			case len(d.Embedding) == 0:
				return &badResponseError{msg: fmt.Sprintf("embeddings answer has an empty vector at index %d", i)}
			}
			v := make([]float32, len(d.Embedding))
			for j, x := range d.Embedding {
				v[j] = float32(x)
			}
			vecs[i] = v
		}
		tokens = er.Usage.PromptTokens
		return nil
	})
	if err != nil {
		return nil, err
	}
	c.usage.add(stage, func(u *Counters) { u.PromptTokens += tokens })
	return vecs, nil
}

// do runs attempt until it succeeds, fails for good, or ctx ends, holding one
// concurrency slot per attempt and bounding each by Config.Timeout. attempt must
// pass its option through to the SDK call (it captures the HTTP response, so status
// and headers survive bodies the SDK cannot parse).
func (c *Client) do(parent context.Context, op, stage string, attempt func(context.Context, option.RequestOption) error) error {
	base, cancel := context.WithCancel(parent)
	defer cancel()
	// A client that gives up on its server wakes requests waiting for a slot or a retry.
	stop := context.AfterFunc(c.down, cancel)
	defer stop()
	// The request deadline runs from the first attempt: a request queued behind the
	// client's concurrency limit (callers fan out freely) has not been asked yet.
	ctx, cancelDeadline := base, context.CancelFunc(func() {})
	defer func() { cancelDeadline() }()
	startDeadline := func() (context.Context, context.CancelFunc) { // cancelled by the defer above
		return context.WithTimeoutCause(base, c.cfg.RequestDeadline, errDeadline)
	}
	var last *APIError
	ended := func() error {
		if d := c.gaveUp(op, stage); d != nil {
			return d
		}
		if parent.Err() == nil && errors.Is(context.Cause(ctx), errDeadline) {
			e := &APIError{Op: op, Stage: stage, Kind: KindTimeout, Retryable: true, Err: last,
				Message: fmt.Sprintf("no answer within the request deadline of %v", c.cfg.RequestDeadline)}
			if last != nil {
				e.Attempts, e.Status = last.Attempts, last.Status
				e.Message += "; last: " + last.Error()
			}
			c.usage.add(stage, func(u *Counters) { u.Errors++ })
			return e
		}
		return fmt.Errorf("llm: %s: %w", op, parent.Err())
	}
	for n := 0; ; n++ {
		if d := c.gaveUp(op, stage); d != nil {
			c.usage.add(stage, func(u *Counters) { u.Errors++ })
			return d
		}
		select {
		case c.sem <- struct{}{}:
		case <-ctx.Done():
			return ended()
		}
		if ctx.Err() != nil { // both were ready and select took the slot: no attempt after the end
			<-c.sem
			return ended()
		}
		if n == 0 {
			ctx, cancelDeadline = startDeadline()
		}
		if d := c.gaveUp(op, stage); d != nil {
			<-c.sem
			c.usage.add(stage, func(u *Counters) { u.Errors++ })
			return d
		}
		var hr *http.Response
		actx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
		start := time.Now()
		err := attempt(actx, option.WithResponseInto(&hr))
		elapsed := time.Since(start)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		c.usage.add(stage, func(u *Counters) { u.Calls++; u.RequestTime += elapsed })
		// The slot is freed once the attempt is accounted for: the request waiting for
		// it then sees a server this failure made the client give up on.
		if err == nil {
			c.answered.Store(true)
			<-c.sem
			return nil
		}
		if ctx.Err() != nil {
			<-c.sem
			return ended()
		}
		ae := c.classify(op, stage, err, hr, timedOut)
		ae.Attempts = n + 1
		last = ae
		c.usage.add(stage, func(u *Counters) { u.failure(ae.Kind) })
		c.noteFailure(ae)
		<-c.sem
		if !ae.Retryable || n >= c.cfg.retries() {
			c.usage.add(stage, func(u *Counters) { u.Errors++ })
			return ae
		}
		c.usage.add(stage, func(u *Counters) { u.Retries++ })
		wait := c.backoff(n, ae)
		if c.onRetry != nil {
			c.onRetry(ae, wait)
		}
		if err := c.sleep(ctx, wait); err != nil {
			if ctx.Err() != nil {
				return ended()
			}
			return fmt.Errorf("llm: %s: waiting to retry after %s: %w", op, ae.Kind, err)
		}
	}
}

// errDeadline is the cause of a request's context ending at Config.RequestDeadline.
var errDeadline = errors.New("llm: request deadline")

// classify turns a failed attempt into an *APIError.
func (c *Client) classify(op, stage string, err error, hr *http.Response, timedOut bool) *APIError {
	ae := &APIError{Op: op, Stage: stage}
	var (
		oe  *openai.Error
		bre *badResponseError
	)
	var header http.Header
	if hr != nil && hr.StatusCode >= 400 {
		ae.Status, header = hr.StatusCode, hr.Header
	}
	if errors.As(err, &oe) {
		// The SDK error holds the request (and its Authorization header): keep
		// only the status and the server's message.
		ae.Status, ae.Message = oe.StatusCode, oe.Message
		if oe.Response != nil {
			header = oe.Response.Header
		}
	} else {
		ae.Err = err
	}
	switch {
	case ae.Status == http.StatusTooManyRequests:
		ae.Kind, ae.Retryable = KindRateLimited, true
	case ae.Status == http.StatusRequestTimeout:
		ae.Kind, ae.Retryable = KindTimeout, true
	case ae.Status >= 500:
		ae.Kind, ae.Retryable = KindServerError, true
	case ae.Status >= 400:
		ae.Kind = KindClientError
	case timedOut || isTimeoutError(err):
		ae.Kind, ae.Retryable = KindTimeout, true
		ae.Message = fmt.Sprintf("no answer within %v", c.cfg.Timeout)
	case errors.As(err, &bre) && bre.urlEnv != "" && hr != nil && !strings.Contains(hr.Header.Get("Content-Type"), "json"):
		// Not JSON at all (an HTML page, plain text): the URL is most likely not the
		// API root. Retrying would get the same page.
		ct := hr.Header.Get("Content-Type")
		if ct == "" {
			ct = "no Content-Type"
		}
		ae.Kind, ae.Message = KindBadResponse, fmt.Sprintf("%s: the server answered HTTP %d with %s, not JSON: check %s (%s), the OpenAI-compatible API root, which usually ends in /v1",
			bre.msg, hr.StatusCode, ct, bre.urlEnv, redactURL(bre.url))
	case errors.As(err, &bre):
		ae.Kind, ae.Retryable, ae.Message = KindBadResponse, true, bre.Error()
	case isNetworkError(err):
		ae.Kind, ae.Retryable, ae.Message = KindNetwork, true, err.Error()
	default:
		ae.Kind, ae.Message = KindOther, err.Error()
	}
	if ae.Status != 0 && ae.Message == "" {
		ae.Message = http.StatusText(ae.Status)
	}
	if header != nil {
		ae.retryAfter, ae.hasRetryAfter = parseRetryAfter(header, time.Now())
	}
	ae.Message = c.redact(ae.Message)
	return ae
}

// redact removes the API key from text (a server may echo it in an error) and
// bounds its length.
func (c *Client) redact(text string) string {
	if c.cfg.APIKey != "" {
		text = strings.ReplaceAll(text, c.cfg.APIKey, "[REDACTED]")
	}
	const limit = 500
	if len(text) > limit {
		text = strings.ToValidUTF8(text[:limit], "") + "…"
	}
	return text
}

// backoff returns the wait before retry n (from 0): the server's Retry-After when it
// gave one, else full jitter over min(BackoffMax, BackoffBase·2ⁿ); never above
// BackoffMax.
func (c *Client) backoff(n int, ae *APIError) time.Duration {
	if ae.hasRetryAfter {
		return min(ae.retryAfter, c.cfg.BackoffMax)
	}
	ceil := c.cfg.BackoffBase
	for i := 0; i < n && ceil < c.cfg.BackoffMax; i++ {
		ceil *= 2
	}
	ceil = min(ceil, c.cfg.BackoffMax)
	if ceil <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceil) + 1))
}

// parseRetryAfter reads Retry-After-Ms (OpenAI) or Retry-After, in seconds or as an
// HTTP date.
func parseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	const maxWait = 24 * time.Hour
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			if ms > float64(maxWait/time.Millisecond) {
				return maxWait, true
			}
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || math.IsNaN(s) {
			return 0, false
		}
		if s > maxWait.Seconds() {
			return maxWait, true
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxWait), true
	}
	return 0, false
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
