package embed

import (
	"context"
	"fmt"
	"math"

	"github.com/graphloom/graphloom/llm"
)

// API embeds through an OpenAI-compatible /embeddings endpoint (Ollama, vLLM,
// llama.cpp server, OpenAI). Vectors are L2-normalised on arrival, as HippoRAG 2 does.
type API struct {
	c     *llm.Client
	model string
	dim   int
}

// NewAPI returns an embedder over c's embedding model. It embeds one probe text to
// learn the dimension (the answer is cached like any other).
func NewAPI(ctx context.Context, c *llm.Client) (*API, error) {
	cfg := c.Config()
	if cfg.EmbedModel == "" {
		return nil, fmt.Errorf("embed: no embedding model configured (GRAPHLOOM_EMBED_MODEL or --embed-model)")
	}
	a := &API{c: c, model: cfg.EmbedModel}
	vs, err := c.Embed(ctx, []string{"graphloom"})
	if err != nil {
		return nil, fmt.Errorf("embed: probe %s: %w", a.model, err)
	}
	if len(vs) != 1 || len(vs[0]) == 0 {
		return nil, fmt.Errorf("embed: probe %s: empty answer", a.model)
	}
	a.dim = len(vs[0])
	return a, nil
}

// Identity implements Embedder: "api:<model>".
func (a *API) Identity() string { return "api:" + a.model }

// Dim implements Embedder.
func (a *API) Dim() int { return a.dim }

// Embed implements Embedder.
func (a *API) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vs, err := a.c.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embed: %s: %w", a.model, err)
	}
	for i, v := range vs {
		if len(v) != a.dim {
			return nil, fmt.Errorf("embed: %s returned dimension %d for text %d, want %d", a.model, len(v), i, a.dim)
		}
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		if s > 0 {
			inv := float32(1 / math.Sqrt(s))
			for j := range v {
				v[j] *= inv
			}
		}
	}
	return vs, nil
}
