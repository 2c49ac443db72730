package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/augment"
	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/models/encoder"
	"github.com/graphloom/graphloom/models/lm"
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
	reask                                           bool // --llm-reask-unparseable
	client                                          *llm.Client
	cmd                                             *cobra.Command

	mu         sync.Mutex
	lastRetry  time.Time
	suppressed int

	// A local embedding model folder's settings (--pooling, …) and, on commands that
	// open an index, the embedder to open it with (--embedder).
	pooling, normalize, queryPrompt, passagePrompt string
	queryTask, passageTask                         string
	embedDType                                     string
	open                                           string
	local                                          map[string]*embed.Local

	// eng is the command's one tensor engine (engine), made on first use.
	eng *engine.Engine
}

// engine returns the command's tensor engine, made on first use and shared by all
// that need one — a local embedding model, CrossAug's scorer, CAGE, G-Retriever,
// calibration: on a GPU each engine is a PJRT client, and XLA's GPU client by default
// preallocates most of the GPU's memory for itself.
func (f *llmFlags) engine() (*engine.Engine, error) {
	if f.eng == nil {
		eng, err := engine.New(engine.Config{})
		if err != nil {
			return nil, err
		}
		f.eng = eng
	}
	return f.eng, nil
}

func (f *llmFlags) register(cmd *cobra.Command) {
	f.cmd = cmd
	env := llm.ConfigFromEnv(nil)
	fl := cmd.Flags()
	fl.StringVar(&f.baseURL, "llm-base-url", env.BaseURL, "OpenAI-compatible API root, e.g. http://localhost:11434/v1 ($GRAPHLOOM_LLM_BASE_URL)")
	fl.StringVar(&f.model, "llm-model", env.Model, "chat model ($GRAPHLOOM_LLM_MODEL)")
	fl.StringVar(&f.embedBaseURL, "embed-base-url", env.EmbedBaseURL, "embeddings API root; default: the LLM's ($GRAPHLOOM_EMBED_BASE_URL)")
	fl.StringVar(&f.embedModel, "embed-model", env.EmbedModel, "embedding model ($GRAPHLOOM_EMBED_MODEL)")
	for _, name := range []string{"llm-base-url", "embed-base-url"} { // --help shows defaults: no password there
		fl.Lookup(name).DefValue = llm.RedactURL(fl.Lookup(name).DefValue)
	}
	fl.StringVar(&f.cache, "llm-cache", env.CacheDir, "response cache directory; 'off' disables it ($GRAPHLOOM_LLM_CACHE)")
	fl.IntVar(&f.concurrency, "llm-concurrency", llm.DefaultConcurrency, "most LLM requests in flight")
	fl.DurationVar(&f.timeout, "llm-timeout", llm.DefaultTimeout, "timeout of one LLM request")
	fl.BoolVar(&f.reask, "llm-reask-unparseable", false, "ask again, once, the requests whose cached answer could not be read (extraction, completion, synthetic QA, judge; by default a rerun reads the cached answer and pays for nothing)")
	fl.BoolVar(&f.failFast, "llm-fail-fast", true, fmt.Sprintf("give up on a server whose first %d attempts all fail; false keeps retrying (a server still loading its model)", llm.DefaultFailFast))
	fl.StringVar(&f.pooling, "pooling", "", "local embedding model: pooling when the folder has no 1_Pooling/config.json (cls, mean, max, mean-sqrt-len, weighted-mean, last-token; several joined by +)")
	fl.StringVar(&f.normalize, "normalize", "auto", "local embedding model: unit-length vectors: auto (unit length unless the folder compares by dot product without a Normalize module), true or false")
	fl.StringVar(&f.queryPrompt, "query-prompt", "", "local embedding model: prompt prefixed to questions (default: config_sentence_transformers.json's \"query\" prompt)")
	fl.StringVar(&f.passagePrompt, "passage-prompt", "", "local embedding model: prompt prefixed to passages (default: config_sentence_transformers.json's \"document\" prompt)")
	fl.StringVar(&f.queryTask, "query-task", "", "local embedding model with task adapters (jina-embeddings-v3): those questions are embedded with (default retrieval.query; \"\" for none)")
	fl.StringVar(&f.passageTask, "passage-task", "", "local embedding model with task adapters: those passages are embedded with (default retrieval.passage; \"\" for none)")
	fl.StringVar(&f.embedDType, "embed-dtype", "float32", "local embedding model: dtype its weights and layers run in: float32, or bfloat16 (half the memory; on the pure-Go CPU backend much slower)")
	limitChoices(cmd, "embed-dtype", lm.DTypeNames...)
	limitFlag(cmd, "llm-concurrency", atLeast1(1024))
	limitFlag(cmd, "llm-timeout", flagRange{lo: 0, hi: 86400, loOpen: true})
}

func (f *llmFlags) config() llm.Config {
	cfg := llm.ConfigFromEnv(nil)
	cfg.BaseURL, cfg.Model, cfg.EmbedBaseURL, cfg.EmbedModel = f.baseURL, f.model, f.embedBaseURL, f.embedModel
	cfg.Concurrency, cfg.Timeout = f.concurrency, f.timeout
	cfg.RequestDeadline = 0 // from the timeout given (llm.Config.RequestDeadline), not the default one's
	if f.cmd != nil && !f.failFast {
		cfg.FailFast = -1
	}
	cfg.ReaskUnparseable = f.reask
	switch f.cache {
	case "off", "none", "-":
		cfg.CacheDir = ""
	default:
		cfg.CacheDir = f.cache
	}
	return cfg
}

// inputs names the files of the local embedding model folder --embedder local:DIR
// reads (for output guards: an output may go inside the folder, not over them).
func (f *llmFlags) inputs() []inSpec {
	dir, ok := strings.CutPrefix(f.open, "local:")
	if !ok {
		return nil
	}
	var ins []inSpec
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "modules.json", "vocab.txt"} {
		ins = append(ins, inSpec{"--embedder local:" + dir, filepath.Join(dir, name)})
	}
	return ins
}

// cachesAnswers reports whether LLM answers are kept on disk (a rerun then pays
// only for what was not answered).
func (f *llmFlags) cachesAnswers() bool { return f.config().CacheDir != "" }

// chatConfigured reports whether a chat model is configured.
func (f *llmFlags) chatConfigured() bool { return f.config().Configured() }

// get returns the client, creating it on first use.
func (f *llmFlags) get() (*llm.Client, error) {
	if f.client != nil {
		return f.client, nil
	}
	if cfg := f.config(); cfg.CacheDir == "" && f.cmd != nil && !f.cmd.Flags().Changed("llm-cache") && os.Getenv(llm.EnvCache) == "" {
		f.cmd.PrintErrln("warning: LLM answers are not cached (neither GRAPHLOOM_LLM_CACHE, XDG_CACHE_HOME nor HOME is set): a killed job would pay for every answer again")
	}
	c, err := llm.New(f.config(), llm.WithRetryHook(f.onRetry), llm.WithCacheErrorHook(func(err error) {
		if f.cmd != nil {
			f.cmd.PrintErrf("warning: %v; answers not cached would be paid for again by a rerun\n", err)
		}
	}))
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

// registerOpen adds --embedder to a command that opens an index: by default the
// index's own embedder is used (a local folder is reopened from the path the index
// records); local:DIR names the folder, and a different one is refused.
func (f *llmFlags) registerOpen(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.open, "embedder", "", "embedder to open the index with: default the index's own (built-in, its local model folder, or the configured API model); local:DIR names a local model folder, refused unless it is the one that built the index")
}

// embedder returns the named embedder: "hash" (nil: built-in, fitted by the caller),
// "api", or "local:DIR" (a sentence-transformers or Hugging Face BERT-family folder,
// completed by --pooling, --normalize, --query-prompt, --passage-prompt).
func (f *llmFlags) embedder(ctx context.Context, name string) (embed.Embedder, error) {
	if dir, ok := strings.CutPrefix(name, "local:"); ok {
		return f.localEmbedder(dir)
	}
	switch name {
	case "hash", "":
		return nil, nil
	case "api":
		c, err := f.get()
		if err != nil {
			return nil, err
		}
		a, err := embed.NewAPI(ctx, c)
		if err != nil {
			return nil, err
		}
		if a.ModelChanged() && f.cmd != nil {
			f.cmd.PrintErrf("note: the embedding model served as %q is not the one whose vectors the LLM cache holds under that name (re-pulled or replaced): they are not used, and this model's are asked for\n", c.Config().EmbedModel)
		}
		return a, nil
	}
	return nil, usageError{fmt.Errorf("unknown embedder %q (want hash, api or local:DIR)", name)}
}

// localEmbedder loads a local model folder once per command.
func (f *llmFlags) localEmbedder(dir string) (embed.Embedder, error) {
	if dir == "" {
		return nil, usageError{fmt.Errorf("--embedder local:DIR needs a folder")}
	}
	if l, ok := f.local[dir]; ok {
		return l, nil
	}
	cfg := embed.LocalConfig{Dir: dir, Pooling: f.pooling}
	if f.embedDType == "bfloat16" {
		cfg.DType = f.embedDType
	}
	switch f.normalize {
	case "auto", "":
	case "true", "false":
		v := f.normalize == "true"
		cfg.Normalize = &v
	default:
		return nil, usageError{fmt.Errorf("--normalize %q: want auto, true or false", f.normalize)}
	}
	if f.cmd != nil && f.cmd.Flags().Changed("query-prompt") {
		cfg.QueryPrompt = &f.queryPrompt
	}
	if f.cmd != nil && f.cmd.Flags().Changed("passage-prompt") {
		cfg.PassagePrompt = &f.passagePrompt
	}
	if f.cmd != nil && f.cmd.Flags().Changed("query-task") {
		cfg.QueryTask = &f.queryTask
	}
	if f.cmd != nil && f.cmd.Flags().Changed("passage-task") {
		cfg.PassageTask = &f.passageTask
	}
	eng, err := f.engine()
	if err != nil {
		return nil, err
	}
	l, err := embed.NewLocal(cfg, eng)
	var bad encoder.OptionError
	if errors.As(err, &bad) { // --pooling or --query-task / --passage-task the folder cannot take
		return nil, usageError{err}
	}
	if err != nil {
		return nil, err
	}
	if f.local == nil {
		f.local = map[string]*embed.Local{}
	}
	f.local[dir] = l
	return l, nil
}

// apiEmbedder returns the embedder --embedder names (on commands with registerOpen),
// else the configured API embedder if an embedding model is set, for opening indices
// embedded through an API; nil otherwise.
func (f *llmFlags) apiEmbedder(ctx context.Context) (embed.Embedder, error) {
	switch {
	case strings.HasPrefix(f.open, "local:"):
		return f.embedder(ctx, f.open)
	case f.open != "" && f.open != "api" && f.open != "hash":
		return nil, usageError{fmt.Errorf("unknown embedder %q (want local:DIR, api or hash; the default is the index's own)", f.open)}
	}
	if f.config().EmbedModel == "" {
		return nil, nil
	}
	return f.embedder(ctx, "api")
}

// deferredEmbedder returns the embedder ix records, opened only when a change must
// embed a text the index does not hold (embed.Defer): its local model folder, or the
// API model configured for this command; nil for the built-in embedder. done closes
// what was opened.
func (f *llmFlags) deferredEmbedder(ctx context.Context, ix *graphio.Index) (emb embed.Embedder, done func()) {
	d := embed.Defer(ix, func() (embed.Embedder, error) {
		var api embed.Embedder
		if !embed.IsLocal(ix.Meta.Embedder) {
			var err error
			if api, err = f.apiEmbedder(ctx); err != nil {
				return nil, err
			}
		}
		return embed.ForIndex(ix, api)
	})
	if d == nil {
		return nil, func() {}
	}
	return d, d.Close
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
