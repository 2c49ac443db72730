package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gomlx/compute/dtypes"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/encoder"
	"github.com/graphloom/graphloom/models/lm"
)

// localPrefix starts the identity of a local model folder's embedder.
const localPrefix = "local:"

// IsLocal reports whether an embedder identity is a local model folder's.
func IsLocal(identity string) bool { return strings.HasPrefix(identity, localPrefix) }

// A QueryEmbedder embeds questions differently from passages (a query prompt).
type QueryEmbedder interface {
	EmbedQueries(ctx context.Context, texts []string) ([][]float32, error)
}

// Queries embeds questions: with e's query prompt when it has one, else as passages.
func Queries(ctx context.Context, e Embedder, texts []string) ([][]float32, error) {
	if q, ok := e.(QueryEmbedder); ok {
		return q.EmbedQueries(ctx, texts)
	}
	return e.Embed(ctx, texts)
}

// LocalConfig is what an index records of a local embedder so that it can be
// reopened: the folder and the options given when it was built.
type LocalConfig struct {
	Dir           string  `json:"dir"` // absolute path of the model folder
	Pooling       string  `json:"pooling,omitempty"`
	Normalize     *bool   `json:"normalize,omitempty"`
	QueryPrompt   *string `json:"query_prompt,omitempty"`
	PassagePrompt *string `json:"passage_prompt,omitempty"`
	// QueryTask and PassageTask name the task adapters of a model that has them
	// (jina-embeddings-v3; nil: retrieval.query and retrieval.passage, encoder.Options).
	QueryTask   *string `json:"query_task,omitempty"`
	PassageTask *string `json:"passage_task,omitempty"`
	MaxLength   int     `json:"max_length,omitempty"`
	// DType is the dtype the model's weights are held in: "" or "float32", or
	// "bfloat16" (encoder.Options.DType; the layers compute in bf16 on XLA and in
	// float32 on the pure-Go backend, lm.ComputeFor; vectors agree to bf16's precision).
	DType string `json:"dtype,omitempty"`
}

// Local embeds with a BERT-family model from a local folder (models/encoder) on a
// GoMLX engine. Passages get the folder's passage prompt, questions (Queries) its
// query prompt. Its identity is "local:<folder name>@<digest>", the digest covering
// config, tokenizer, weights, pooling, prompts and normalisation, so that an index
// refuses a different folder or setting.
type Local struct {
	cfg LocalConfig
	m   *encoder.Model
	eng *engine.Engine
	id  string
	own bool // eng was created here
	mu  sync.Mutex
}

// NewLocal loads the folder cfg.Dir. eng may be nil: an engine on the default backend
// is created (closed by Close).
func NewLocal(cfg LocalConfig, eng *engine.Engine) (*Local, error) {
	abs, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("embed: %s: %w", cfg.Dir, err)
	}
	cfg.Dir = abs
	dt, err := lm.ParseDType(cfg.DType)
	if err != nil {
		return nil, fmt.Errorf("embed: local model %s: %w", cfg.Dir, err)
	}
	var compute dtypes.DType
	if dt == dtypes.BFloat16 {
		backend := engine.ResolveBackend("")
		if eng != nil {
			backend = eng.BackendConfig()
		}
		compute = lm.ComputeFor(backend)
	}
	m, err := encoder.Load(abs, encoder.Options{Pooling: cfg.Pooling, Normalize: cfg.Normalize,
		QueryPrompt: cfg.QueryPrompt, PassagePrompt: cfg.PassagePrompt, QueryTask: cfg.QueryTask, PassageTask: cfg.PassageTask,
		MaxLength: cfg.MaxLength, DType: dt, ComputeDType: compute})
	if err != nil {
		return nil, fmt.Errorf("embed: local model: %w", err)
	}
	l := &Local{cfg: cfg, m: m, eng: eng}
	if eng == nil {
		if l.eng, err = engine.New(engine.Config{}); err != nil {
			return nil, err
		}
		l.own = true
	}
	l.id = fmt.Sprintf("%s%s@%s", localPrefix, filepath.Base(abs), m.Digest()[:16])
	return l, nil
}

// Identity implements Embedder.
func (l *Local) Identity() string { return l.id }

// Dim implements Embedder.
func (l *Local) Dim() int { return l.m.Dim() }

// Model returns the encoder.
func (l *Local) Model() *encoder.Model { return l.m }

// Config returns the settings the embedder was opened with.
func (l *Local) Config() LocalConfig { return l.cfg }

// Embed implements Embedder: passages, with the passage prompt.
func (l *Local) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return l.embed(ctx, texts, false)
}

// EmbedQueries implements QueryEmbedder: questions, with the query prompt.
func (l *Local) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return l.embed(ctx, texts, true)
}

func (l *Local) embed(ctx context.Context, texts []string, query bool) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	vs, err := l.m.Embed(l.eng, texts, query)
	if err != nil {
		return nil, fmt.Errorf("embed: %s: %w", l.id, err)
	}
	return vs, nil
}

// Close releases the engine NewLocal created.
func (l *Local) Close() {
	if l.own && l.eng != nil {
		l.eng.Close()
		l.eng = nil
	}
}

// localBlob encodes the folder and options for the index.
func (l *Local) localBlob() ([]byte, error) { return json.Marshal(l.cfg) }

// openLocal reopens the embedder an index records.
func openLocal(id string, blob []byte) (*Local, error) {
	if len(blob) == 0 {
		return nil, fmt.Errorf("embed: %w: the index was embedded with %s but records no model folder; pass --embedder local:DIR", ErrMismatch, id)
	}
	var cfg LocalConfig
	if err := json.Unmarshal(blob, &cfg); err != nil {
		return nil, fmt.Errorf("embed: index embedder state: %w", err)
	}
	l, err := NewLocal(cfg, nil)
	if err == nil && l.Identity() == id {
		return l, nil
	}
	if old := legacyLocal(cfg, id, nil); old != nil {
		if l != nil {
			l.Close()
		}
		return old, nil
	}
	if err != nil {
		return nil, fmt.Errorf("embed: reopening the index's embedder %s from %s: %w", id, cfg.Dir, err)
	}
	l.Close()
	return nil, fmt.Errorf("embed: %w: the index was embedded with %s, but the folder %s now gives %s (its files changed)", ErrMismatch, id, cfg.Dir, l.Identity())
}

// legacyLocal returns cfg's folder read as graphloom read it before it honoured
// similarity_fn_name and default_prompt_name, when that is the embedder id names;
// nil otherwise. An index embedded then holds passages embedded as pooled (a folder
// compared by cosine, euclidean or manhattan distance without a Normalize module)
// and without the default prompt, so its queries are too: rebuild the index for the
// folder's own settings. eng is the engine to run on (nil: its own).
func legacyLocal(cfg LocalConfig, id string, eng *engine.Engine) *Local {
	off, none := false, ""
	c := cfg
	if c.Normalize == nil {
		c.Normalize = &off // as pooled; refused now without --normalize for euclidean
	}
	l, err := NewLocal(c, eng)
	if err != nil {
		return nil
	}
	p := l.m.Pipeline()
	if cfg.Normalize != nil || !p.SentenceTransformers || p.NormalizeModule {
		c.Normalize = cfg.Normalize // normalised then as now: a plain folder, or a Normalize module
	}
	if c.QueryPrompt == nil && p.QueryFromDefault {
		c.QueryPrompt = &none
	}
	if c.PassagePrompt == nil && p.PassageFromDefault {
		c.PassagePrompt = &none
	}
	l.Close()
	if c == cfg {
		return nil // read as now
	}
	if l, err = NewLocal(c, eng); err != nil {
		return nil
	}
	if l.Identity() != id {
		l.Close()
		return nil
	}
	return l
}
