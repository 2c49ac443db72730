package embed

import (
	"context"
	"encoding/json"
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
	probe []float32 // the L2-normalised embedding of probeText

	modelChanged bool // the cache held another model's vectors under the name
}

// probeText is what NewAPI embeds to learn the dimension; its vector, stored in the
// index, tells apart two models served under one name.
const probeText = "graphloom"

// MinProbeCosine is the cosine below which an embedding model's probe vector differs
// from the one an index stored: another model under the same name (another server's
// "bge-m3" that is a different quantisation is above it; a different model is far
// below, near 0).
const MinProbeCosine = 0.98

// NewAPI returns an embedder over c's embedding model. It embeds one probe text to
// learn the dimension and to tell the model from another served under its name
// later (asked of the server each time: a cached vector would hide a new model). The
// client's answer cache is then keyed by that model (llm.Client.EmbedProbe), so
// vectors another model gave under the name are not mixed into an index.
func NewAPI(ctx context.Context, c *llm.Client) (*API, error) {
	cfg := c.Config()
	if cfg.EmbedModel == "" {
		return nil, fmt.Errorf("embed: no embedding model configured (GRAPHLOOM_EMBED_MODEL or --embed-model)")
	}
	a := &API{c: c, model: cfg.EmbedModel}
	// Past the cache: the model behind the name now; the client then serves only
	// vectors that model gave.
	v, changed, err := c.EmbedProbe(ctx, probeText, func(old, now []float32) bool {
		return Cosine(old, now) >= MinProbeCosine
	})
	if err != nil {
		return nil, fmt.Errorf("embed: probe %s: %w", a.model, err)
	}
	if len(v) == 0 {
		return nil, fmt.Errorf("embed: probe %s: empty answer", a.model)
	}
	a.dim, a.probe, a.modelChanged = len(v), normalize(v), changed
	return a, nil
}

// ModelChanged reports that the answer cache held vectors of another model served
// under the same name (re-pulled or replaced on the server): they are not used, and
// this model's are asked for anew.
func (a *API) ModelChanged() bool { return a.modelChanged }

// apiBlob is an API embedder's state in an index: its probe vector.
type apiBlob struct {
	Text  string    `json:"probe_text"`
	Probe []float32 `json:"probe"`
}

func (a *API) apiBlob() ([]byte, error) { return json.Marshal(apiBlob{probeText, a.probe}) }

// checkProbe compares a's probe vector with the one an index stored (blob; none in
// indices written before it was stored).
func (a *API) checkProbe(id string, blob []byte) error {
	if len(blob) == 0 {
		return nil
	}
	var b apiBlob
	if err := json.Unmarshal(blob, &b); err != nil {
		return fmt.Errorf("embed: index embedder state of %s: %w", id, err)
	}
	if b.Text != probeText || len(b.Probe) != len(a.probe) {
		return fmt.Errorf("embed: %w: the index's %s probe is %d-dimensional, the configured model's %d", ErrMismatch, id, len(b.Probe), len(a.probe))
	}
	if cos := Cosine(b.Probe, a.probe); !(cos >= MinProbeCosine) {
		return fmt.Errorf("embed: %w: the configured %s embeds a probe text at cosine %.3f from the model that built the index (want ≥ %.2f): another model is served under that name; configure the server that built the index (GRAPHLOOM_EMBED_BASE_URL), or rebuild it",
			ErrMismatch, id, cos, MinProbeCosine)
	}
	return nil
}

// Cosine is the cosine similarity of a and b in float64 (0 when either is zero), as
// torch.nn.CosineSimilarity computes it.
func Cosine(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
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
		normalize(v)
	}
	return vs, nil
}

// normalize scales v to unit L2 norm in place (a zero vector stays zero) and returns it.
func normalize(v []float32) []float32 {
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
	return v
}
