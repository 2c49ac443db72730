package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/augment"
	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/retrieve"
)

// llmFlags are the LLM and embedding-model flags shared by the commands that may call
// a model. Values default to the environment (GRAPHLOOM_LLM_BASE_URL, …); the API key
// is only ever read from the environment.
type llmFlags struct {
	baseURL, model, embedBaseURL, embedModel, cache string
	concurrency                                     int
	timeout                                         time.Duration
	failFast                                        bool // --llm-fail-fast (read only once registered)
	client                                          *llm.Client
	cmd                                             *cobra.Command

	mu         sync.Mutex
	lastRetry  time.Time
	suppressed int
}

func (f *llmFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	env := llm.ConfigFromEnv(nil)
	fl := cmd.Flags()
	fl.StringVar(&f.baseURL, "llm-base-url", env.BaseURL, "OpenAI-compatible API root, e.g. http://localhost:11434/v1 ($GRAPHLOOM_LLM_BASE_URL)")
	fl.StringVar(&f.model, "llm-model", env.Model, "chat model ($GRAPHLOOM_LLM_MODEL)")
	fl.StringVar(&f.embedBaseURL, "embed-base-url", env.EmbedBaseURL, "embeddings API root; default: the LLM's ($GRAPHLOOM_EMBED_BASE_URL)")
	fl.StringVar(&f.embedModel, "embed-model", env.EmbedModel, "embedding model ($GRAPHLOOM_EMBED_MODEL)")
	fl.StringVar(&f.cache, "llm-cache", env.CacheDir, "response cache directory; 'off' disables it ($GRAPHLOOM_LLM_CACHE)")
	fl.IntVar(&f.concurrency, "llm-concurrency", llm.DefaultConcurrency, "most LLM requests in flight")
	fl.DurationVar(&f.timeout, "llm-timeout", llm.DefaultTimeout, "timeout of one LLM request")
	fl.BoolVar(&f.failFast, "llm-fail-fast", true, fmt.Sprintf("give up on a server whose first %d attempts all fail; false keeps retrying (a server still loading its model)", llm.DefaultFailFast))
	limitFlag(cmd, "llm-concurrency", atLeast1(1024))
	limitFlag(cmd, "llm-timeout", flagRange{lo: 0, hi: 86400, loOpen: true})
}

func (f *llmFlags) config() llm.Config {
	cfg := llm.ConfigFromEnv(nil)
	cfg.BaseURL, cfg.Model, cfg.EmbedBaseURL, cfg.EmbedModel = f.baseURL, f.model, f.embedBaseURL, f.embedModel
	cfg.Concurrency, cfg.Timeout = f.concurrency, f.timeout
	if f.cmd != nil && !f.failFast {
		cfg.FailFast = -1
	}
	switch f.cache {
	case "off", "none", "-":
		cfg.CacheDir = ""
	default:
		cfg.CacheDir = f.cache
	}
	return cfg
}

// chatConfigured reports whether a chat model is configured.
func (f *llmFlags) chatConfigured() bool { return f.config().Configured() }

// get returns the client, creating it on first use.
func (f *llmFlags) get() (*llm.Client, error) {
	if f.client != nil {
		return f.client, nil
	}
	c, err := llm.New(f.config(), llm.WithRetryHook(f.onRetry))
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.client = c
	f.mu.Unlock()
	return c, nil
}

// chat returns the client, or an error saying how to configure a chat model.
func (f *llmFlags) chat() (*llm.Client, error) {
	if !f.chatConfigured() {
		return nil, usageError{fmt.Errorf("no LLM configured: set GRAPHLOOM_LLM_BASE_URL and GRAPHLOOM_LLM_MODEL (or --llm-base-url, --llm-model)")}
	}
	return f.get()
}

// optionalChat returns the configured chat model for the steps that use one when it is
// there (recognition memory, answering, judging): a nil interface when none is configured.
func (f *llmFlags) optionalChat() (retrieve.Chatter, error) {
	if !f.chatConfigured() {
		return nil, nil
	}
	c, err := f.get()
	if err != nil {
		return nil, err
	}
	return c, nil
}

// embedder returns the named embedder: "hash" (nil: built-in, fitted by the caller)
// or "api".
func (f *llmFlags) embedder(ctx context.Context, name string) (embed.Embedder, error) {
	switch name {
	case "hash", "":
		return nil, nil
	case "api":
		c, err := f.get()
		if err != nil {
			return nil, err
		}
		return embed.NewAPI(ctx, c)
	}
	return nil, usageError{fmt.Errorf("unknown embedder %q (want hash or api)", name)}
}

// apiEmbedder returns the configured API embedder if an embedding model is set, for
// opening indices embedded through an API; nil otherwise.
func (f *llmFlags) apiEmbedder(ctx context.Context) (embed.Embedder, error) {
	if f.config().EmbedModel == "" {
		return nil, nil
	}
	return f.embedder(ctx, "api")
}

// onRetry prints a line when the client waits to retry, at most one every 2 s (with
// the number of retries since the last line), unless --quiet.
func (f *llmFlags) onRetry(ae *llm.APIError, wait time.Duration) {
	if f.cmd == nil {
		return
	}
	if q, _ := f.cmd.Flags().GetBool("quiet"); q {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if time.Since(f.lastRetry) < 2*time.Second {
		f.suppressed++
		return
	}
	more := ""
	if f.suppressed > 0 {
		more = fmt.Sprintf(" (and %d more retries since the last line)", f.suppressed)
	}
	f.lastRetry, f.suppressed = time.Now(), 0
	f.cmd.PrintErrf("LLM: attempt %d failed (%s); retrying in %s%s\n", ae.Attempts, ae.Error(), wait.Round(time.Millisecond), more)
}

// live summarises the client's work so far for progress lines, or "" before any call.
func (f *llmFlags) live() string {
	f.mu.Lock()
	c := f.client
	f.mu.Unlock()
	if c == nil {
		return ""
	}
	u := c.Usage()
	if u.Calls == 0 && u.CacheHits == 0 {
		return "LLM: waiting for the first answer"
	}
	s := fmt.Sprintf("LLM: %d HTTP calls, %d cache hits, %d retries", u.Calls, u.CacheHits, u.Retries)
	if len(u.Failures) > 0 {
		counts := map[string]int{}
		for k, n := range u.Failures {
			counts[string(k)] = int(n)
		}
		s += ", failed attempts: " + augment.FormatCounts(counts)
	}
	return s
}

// failureSummary describes the client's failed attempts by kind and its last error,
// or "" when nothing failed.
func (f *llmFlags) failureSummary() string {
	if f.client == nil {
		return ""
	}
	u := f.client.Usage()
	if len(u.Failures) == 0 {
		return ""
	}
	counts := map[string]int{}
	for k, n := range u.Failures {
		counts[string(k)] = int(n)
	}
	s := "failed attempts by kind: " + augment.FormatCounts(counts)
	if err := f.client.LastError(); err != nil {
		s += "; last error: " + err.Error()
	}
	return s
}

// report prints the LLM usage summary if a client was used.
func (f *llmFlags) report(w io.Writer) {
	if f.client != nil {
		fmt.Fprintln(w, "LLM usage:", f.client.Usage().String())
	}
}

func (f *llmFlags) usage() any {
	if f.client == nil {
		return nil
	}
	return f.client.Usage()
}
