package llm

import (
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Config holds every knob of the LLM client. A zero field selects its default; see
// [DefaultConfig].
type Config struct {
	// BaseURL is the OpenAI-compatible API root, version path included:
	// "http://localhost:11434/v1" (Ollama), "http://localhost:8000/v1" (vLLM),
	// "http://localhost:8080/v1" (llama.cpp server), "https://api.openai.com/v1".
	BaseURL string
	// Model is the chat model name, as the server knows it.
	Model string
	// EmbedBaseURL is the API root for embeddings; empty means BaseURL.
	EmbedBaseURL string
	// EmbedModel is the embedding model name.
	EmbedModel string
	// APIKey is sent as a bearer token. Optional for local servers. It is never
	// printed (String, GoString and LogValue redact it), logged, written to the
	// response cache or used in cache keys.
	APIKey string
	// Concurrency bounds the HTTP requests one Client has in flight; default 16.
	// Callers may fan out freely: excess requests wait for a slot.
	Concurrency int
	// Timeout bounds each HTTP attempt, reading the answer included; default 120s.
	Timeout time.Duration
	// RequestDeadline bounds one request across all its attempts and the waits
	// between them, from its first attempt (the wait for a Concurrency slot before it
	// does not count); default 10 minutes, or three Timeouts when that is longer (a
	// deadline shorter than one attempt would cap the Timeout asked for). When it
	// passes, the request fails with KindTimeout.
	RequestDeadline time.Duration
	// FailFast is the number of failed attempts after which a client that has never
	// had an answer gives up on the server: every request then fails at once with the
	// last error (KindDown wrapping it). Rate limiting does not count. Default 8; a
	// negative value disables it.
	FailFast int
	// MaxRetries is the number of retries after a first failed attempt, for
	// timeouts, network errors, 429, 5xx and malformed answers; default 6. A
	// negative value disables retries.
	MaxRetries int
	// BackoffBase and BackoffMax shape the wait before retry n (from 0): a uniform
	// random duration in [0, min(BackoffMax, BackoffBase·2ⁿ)] ("full jitter").
	// A server's Retry-After replaces it, capped at BackoffMax. Defaults 1s and 60s;
	// a BackoffBase above BackoffMax is lowered to it.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// CacheDir is the directory of the on-disk response cache; empty disables it.
	// Answers are stored as they arrive, so a killed run loses nothing it was told.
	CacheDir string
	// ReaskUnparseable makes Chat ask the server again, once per request and client,
	// when a cached answer fails the request's Usable check (ChatJSON's: no usable
	// JSON), and cache the new answer in its place. Off by default: a cached answer is what the request gets, so a
	// rerun pays for nothing twice (at temperature 0 a model often repeats itself).
	ReaskUnparseable bool
	// Temperature is the sampling temperature of requests that do not set their
	// own; default 0.
	Temperature float64
	// MaxTokens caps completion tokens of requests that do not set their own;
	// 0 leaves it to the server.
	MaxTokens int
	// MaxCompletionTokensField sends the completion cap as "max_completion_tokens"
	// instead of "max_tokens"; OpenAI's reasoning models accept only the former,
	// while most local servers know only the latter.
	MaxCompletionTokensField bool
	// EmbedBatchSize is the number of texts per embeddings request; default 64
	// (GRAPHLOOM_EMBED_BATCH sets it: some servers accept fewer).
	EmbedBatchSize int
}

// Defaults of the fields of Config.
const (
	DefaultConcurrency     = 16
	DefaultTimeout         = 120 * time.Second
	DefaultMaxRetries      = 6
	DefaultRequestDeadline = 10 * time.Minute
	DefaultFailFast        = 8
	DefaultBackoffBase     = time.Second
	DefaultBackoffMax      = 60 * time.Second
	DefaultEmbedBatchSize  = 64
)

// Environment variables read by ConfigFromEnv.
const (
	EnvBaseURL      = "GRAPHLOOM_LLM_BASE_URL"
	EnvModel        = "GRAPHLOOM_LLM_MODEL"
	EnvEmbedBaseURL = "GRAPHLOOM_EMBED_BASE_URL"
	EnvEmbedModel   = "GRAPHLOOM_EMBED_MODEL"
	EnvAPIKey       = "GRAPHLOOM_API_KEY"
	EnvOpenAIAPIKey = "OPENAI_API_KEY"
	// EnvCache names the cache directory; "off" (or "none", "-") disables the cache.
	EnvCache = "GRAPHLOOM_LLM_CACHE"
	// EnvEmbedBatch is the number of texts per embeddings request (EmbedBatchSize):
	// servers cap it (text-embeddings-inference's default client batch is 32).
	EnvEmbedBatch = "GRAPHLOOM_EMBED_BATCH"
)

// DefaultConfig returns a Config with every default filled in and no server set.
func DefaultConfig() Config { return Config{}.withDefaults() }

// ConfigFromEnv builds a Config from environment variables, read through lookup
// (os.Getenv when nil, so tests can pass a map's lookup instead of touching the
// process environment): GRAPHLOOM_LLM_BASE_URL, GRAPHLOOM_LLM_MODEL,
// GRAPHLOOM_EMBED_BASE_URL, GRAPHLOOM_EMBED_MODEL, GRAPHLOOM_EMBED_BATCH (a
// positive count; anything else is refused by Validate), GRAPHLOOM_API_KEY (falling back
// to OPENAI_API_KEY) and GRAPHLOOM_LLM_CACHE, whose default is
// $XDG_CACHE_HOME/graphloom/llm, else $HOME/.cache/graphloom/llm, else no cache.
func ConfigFromEnv(lookup func(string) string) Config {
	if lookup == nil {
		lookup = os.Getenv
	}
	get := func(k string) string { return strings.TrimSpace(lookup(k)) }
	cfg := DefaultConfig()
	cfg.BaseURL = get(EnvBaseURL)
	cfg.Model = get(EnvModel)
	cfg.EmbedBaseURL = get(EnvEmbedBaseURL)
	cfg.EmbedModel = get(EnvEmbedModel)
	cfg.APIKey = get(EnvAPIKey)
	if cfg.APIKey == "" {
		cfg.APIKey = get(EnvOpenAIAPIKey)
	}
	if v := get(EnvEmbedBatch); v != "" {
		cfg.EmbedBatchSize = -1 // not a positive count: Validate refuses it
		if n, err := strconv.Atoi(v); err == nil && n > 0 {
			cfg.EmbedBatchSize = n
		}
	}
	switch dir := get(EnvCache); {
	case dir == "off" || dir == "none" || dir == "-":
		cfg.CacheDir = ""
	case dir != "":
		cfg.CacheDir = dir
	case get("XDG_CACHE_HOME") != "":
		cfg.CacheDir = filepath.Join(get("XDG_CACHE_HOME"), "graphloom", "llm")
	case get("HOME") != "":
		cfg.CacheDir = filepath.Join(get("HOME"), ".cache", "graphloom", "llm")
	}
	return cfg
}

// Configured reports whether chat is usable: a base URL and a model are set.
func (c Config) Configured() bool { return c.BaseURL != "" && c.Model != "" }

// EmbedConfigured reports whether embeddings are usable: an embeddings base URL (or
// BaseURL) and an embedding model are set.
func (c Config) EmbedConfigured() bool { return c.embedBaseURL() != "" && c.EmbedModel != "" }

func (c Config) embedBaseURL() string {
	if c.EmbedBaseURL != "" {
		return c.EmbedBaseURL
	}
	return c.BaseURL
}

func (c Config) withDefaults() Config {
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.RequestDeadline <= 0 {
		c.RequestDeadline = max(DefaultRequestDeadline, 3*c.Timeout)
	}
	if c.FailFast == 0 {
		c.FailFast = DefaultFailFast
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.BackoffBase > c.BackoffMax {
		c.BackoffBase = c.BackoffMax
	}
	if c.EmbedBatchSize == 0 {
		c.EmbedBatchSize = DefaultEmbedBatchSize
	}
	return c
}

// retries is the number of retries after the first attempt.
func (c Config) retries() int { return max(c.MaxRetries, 0) }

// Validate checks that the URLs parse as http(s) URLs and the numbers make sense.
func (c Config) Validate() error {
	for _, u := range []struct{ name, value string }{{"BaseURL", c.BaseURL}, {"EmbedBaseURL", c.EmbedBaseURL}} {
		if u.value == "" {
			continue
		}
		p, err := url.Parse(u.value)
		if err != nil { // url.Error quotes the whole URL, password included: not shown
			return fmt.Errorf("llm: config: %s %q does not parse as a URL; want an http(s) URL such as http://localhost:11434/v1", u.name, redactURL(u.value))
		}
		if (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return fmt.Errorf("llm: config: %s %q: want an http(s) URL such as http://localhost:11434/v1", u.name, redactURL(u.value))
		}
	}
	switch {
	case c.Temperature < 0:
		return fmt.Errorf("llm: config: Temperature %g is negative", c.Temperature)
	case c.MaxTokens < 0:
		return fmt.Errorf("llm: config: MaxTokens %d is negative", c.MaxTokens)
	case c.EmbedBatchSize < 0:
		return fmt.Errorf("llm: config: EmbedBatchSize %d: want a positive count (%s)", c.EmbedBatchSize, EnvEmbedBatch)
	}
	return nil
}

func (c Config) keyState() string {
	if c.APIKey == "" {
		return "unset"
	}
	return "REDACTED"
}

// String describes the configuration with the API key (and any password in a URL)
// redacted.
func (c Config) String() string {
	return fmt.Sprintf("llm.Config{BaseURL: %q, Model: %q, EmbedBaseURL: %q, EmbedModel: %q, APIKey: %s, "+
		"Concurrency: %d, Timeout: %v, RequestDeadline: %v, FailFast: %d, MaxRetries: %d, BackoffBase: %v, BackoffMax: %v, CacheDir: %q, "+
		"Temperature: %g, MaxTokens: %d, MaxCompletionTokensField: %t, EmbedBatchSize: %d}",
		redactURL(c.BaseURL), c.Model, redactURL(c.EmbedBaseURL), c.EmbedModel, c.keyState(),
		c.Concurrency, c.Timeout, c.RequestDeadline, c.FailFast, c.MaxRetries, c.BackoffBase, c.BackoffMax, c.CacheDir,
		c.Temperature, c.MaxTokens, c.MaxCompletionTokensField, c.EmbedBatchSize)
}

// GoString is String, so %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// LogValue makes slog print the configuration with the API key redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("base_url", redactURL(c.BaseURL)),
		slog.String("model", c.Model),
		slog.String("embed_base_url", redactURL(c.EmbedBaseURL)),
		slog.String("embed_model", c.EmbedModel),
		slog.String("api_key", c.keyState()),
		slog.Int("concurrency", c.Concurrency),
		slog.Duration("timeout", c.Timeout),
		slog.Duration("request_deadline", c.RequestDeadline),
		slog.Int("fail_fast", c.FailFast),
		slog.Int("max_retries", c.MaxRetries),
		slog.Duration("backoff_base", c.BackoffBase),
		slog.Duration("backoff_max", c.BackoffMax),
		slog.String("cache_dir", c.CacheDir),
		slog.Float64("temperature", c.Temperature),
		slog.Int("max_tokens", c.MaxTokens),
		slog.Int("embed_batch_size", c.EmbedBatchSize),
	)
}

// RedactURL hides the password of a URL with user info, for messages.
func RedactURL(s string) string { return redactURL(s) }

// redactURL hides the password of a URL with user info; of a string that does not
// parse as a URL, whatever lies between "://" and the last "@" (user info, as far as
// one can tell).
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		rest, scheme := s, ""
		if i := strings.Index(s, "://"); i >= 0 {
			scheme, rest = s[:i+3], s[i+3:]
		}
		if j := strings.LastIndex(rest, "@"); j >= 0 {
			return scheme + "xxxxx" + rest[j:]
		}
		return s
	}
	if u.User == nil {
		return s
	}
	return u.Redacted()
}
