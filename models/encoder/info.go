package encoder

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/graphloom/graphloom/models/lm"
)

// Info describes an encoder folder as Load would read it, without building the
// network: `graphloom lm info` prints it.
type Info struct {
	Dir            string         `json:"dir"`
	ModelType      string         `json:"model_type"`
	Architectures  []string       `json:"architectures,omitempty"`
	Layers         int            `json:"layers"`
	Hidden         int            `json:"hidden"`
	Heads          int            `json:"heads"`
	Intermediate   int            `json:"intermediate"`
	Positions      string         `json:"positions"`     // how positions enter the attention
	MaxTokens      int            `json:"max_tokens"`    // what the positions allow
	MaxLength      int            `json:"max_length"`    // where texts are cut (the folder's, at most MaxTokens)
	Vocab          int            `json:"vocab"`         // config.json's
	TokenizerVocab int            `json:"tokenizer"`     // tokenizer.json's
	Weights        string         `json:"weights"`       // the file(s) read
	Parameters     int64          `json:"parameters"`    // in the weights files
	StoredDTypes   map[string]int `json:"stored_dtypes"` // tensors per stored dtype
	Pooling        []string       `json:"pooling"`       // empty: a plain folder, --pooling needed
	Dense          []string       `json:"dense,omitempty"`
	Normalize      bool           `json:"normalize"`
	QueryPrompt    string         `json:"query_prompt"`
	PassagePrompt  string         `json:"passage_prompt"`
	Tasks          []string       `json:"tasks,omitempty"` // task adapters (jina-embeddings-v3)
	QueryTask      string         `json:"query_task,omitempty"`
	PassageTask    string         `json:"passage_task,omitempty"`
	Dim            int            `json:"dim"` // the vectors' (0 without pooling)
}

// IsEncoderFolder reports whether dir (or its sentence-transformers Transformer
// module) holds a config.json whose model_type is an encoder's this package runs,
// whatever the rest of the folder holds (Describe reports what is wrong there).
func IsEncoderFolder(dir string) bool {
	modelDir := dir
	var mods []module
	if found, err := readJSON(dir, "modules.json", &mods); found && err == nil {
		for _, m := range mods {
			if m.kind() == "Transformer" {
				modelDir = filepath.Join(dir, filepath.FromSlash(m.Path))
			}
		}
	}
	var c struct {
		ModelType string `json:"model_type"`
	}
	found, err := readJSON(modelDir, "config.json", &c)
	return found && err == nil && slices.Contains(supportedModelTypes, c.ModelType)
}

// Describe reads an encoder folder's config, tokenizer, weights headers and modules.
func Describe(dir string) (Info, error) {
	pipe, modelDir, err := readPipeline(dir, Options{}, false)
	if err != nil {
		return Info{}, err
	}
	cfg, err := ReadConfig(modelDir)
	if err != nil {
		return Info{}, err
	}
	info := Info{Dir: dir, ModelType: cfg.ModelType, Architectures: cfg.Architectures, Layers: cfg.Layers, Hidden: cfg.Hidden,
		Heads: cfg.Heads, Intermediate: cfg.Intermediate, MaxTokens: cfg.MaxTokens(), Vocab: cfg.VocabSize,
		Pooling: pipe.Pooling, Normalize: pipe.Normalize, QueryPrompt: pipe.QueryPrompt, PassagePrompt: pipe.PassagePrompt,
		Tasks: cfg.Jina.Tasks, QueryTask: pipe.QueryTask, PassageTask: pipe.PassageTask, StoredDTypes: map[string]int{}}
	info.MaxLength = cfg.MaxTokens()
	if pipe.MaxLength > 0 && pipe.MaxLength < info.MaxLength {
		info.MaxLength = pipe.MaxLength
	}
	switch {
	case cfg.ModelType == "modernbert":
		m := cfg.ModernBERT
		info.Positions = fmt.Sprintf("rotary: θ %g in the global layers (every %d), %g in the others, which see ±%d tokens", m.GlobalTheta, m.GlobalEvery, m.LocalTheta, m.Window/2)
	case cfg.isJinaBERT():
		info.Positions = fmt.Sprintf("ALiBi, no position table; MLP %s", cfg.JinaBERT.FeedForward)
	case cfg.ModelType == gteType:
		info.Positions = fmt.Sprintf("rotary: θ %g", cfg.GTE.RopeTheta)
		if cfg.GTE.NTKFactor > 0 {
			info.Positions += fmt.Sprintf(", NTK-scaled ×%g", cfg.GTE.NTKFactor)
		}
	case cfg.isJina():
		info.Positions = fmt.Sprintf("rotary: θ %g", cfg.Jina.RotaryBase)
	case cfg.ModelType == "nomic_bert":
		m := cfg.NomicBERT
		info.Positions = fmt.Sprintf("rotary: θ %g; MLP %s", m.RotaryBase, m.Activation)
		if m.MoEEvery > 0 {
			info.Positions += fmt.Sprintf(", %d experts (top %d) in every layer i with i mod %d = 1", m.Experts, m.TopK, m.MoEEvery)
		}
	case cfg.RelativeBuckets > 0:
		info.Positions = fmt.Sprintf("absolute, from %d, and a relative attention bias (%d buckets)", cfg.PositionOffset, mpnetBuckets)
	default:
		info.Positions = fmt.Sprintf("absolute, from %d", cfg.PositionOffset)
	}
	tok, err := lm.LoadTokenizer(modelDir)
	if err != nil {
		return Info{}, fmt.Errorf("encoder: %w", err)
	}
	info.TokenizerVocab = tok.VocabSize()
	ws, release, err := openWeights(modelDir)
	if err != nil {
		return Info{}, fmt.Errorf("encoder: %w", err)
	}
	defer release()
	if err := checkJinaBERT(cfg, ws); err != nil {
		return Info{}, fmt.Errorf("encoder: %s: %w", modelDir, err)
	}
	switch w := ws.(type) {
	case *lm.Checkpoint:
		info.Weights = "safetensors"
		for _, n := range w.Names() {
			shape, _ := w.Shape(n)
			info.Parameters += int64(numel(shape))
			info.StoredDTypes[w.DType(n)]++
		}
	case lm.Weights:
		info.Weights = torchWeights
		for _, t := range w {
			info.Parameters += int64(len(t.Data))
		}
		info.StoredDTypes["as read: float32"] = len(w)
	}
	dim := cfg.Hidden * len(pipe.Pooling)
	for _, d := range pipe.Dense {
		info.Dense = append(info.Dense, fmt.Sprintf("%d → %d, %s (%s)", d.In, d.Out, denseActivations[d.Activation], filepath.Base(d.Weights)))
		dim = d.Out
	}
	if len(pipe.Pooling) > 0 {
		info.Dim = dim
	}
	return info, nil
}

// numel is the number of elements of a shape.
func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// String is the text `graphloom lm info` prints.
func (i Info) String() string {
	var b strings.Builder
	dtypes := make([]string, 0, len(i.StoredDTypes))
	for _, d := range slices.Sorted(maps.Keys(i.StoredDTypes)) {
		dtypes = append(dtypes, fmt.Sprintf("%s (%d tensors)", d, i.StoredDTypes[d]))
	}
	pool := strings.Join(i.Pooling, "+")
	if pool == "" {
		pool = "not said (a plain folder: pass --pooling)"
	}
	fmt.Fprintf(&b, "model        %s\n", i.Dir)
	fmt.Fprintf(&b, "architecture %s (encoder): %d layers, hidden %d, %d heads, intermediate %d\n", i.ModelType, i.Layers, i.Hidden, i.Heads, i.Intermediate)
	fmt.Fprintf(&b, "positions    %s\n", i.Positions)
	fmt.Fprintf(&b, "length       %d tokens read of a text (the model allows %d)\n", i.MaxLength, i.MaxTokens)
	fmt.Fprintf(&b, "parameters   %d (%.3g M) in %s: %s\n", i.Parameters, float64(i.Parameters)/1e6, i.Weights, strings.Join(dtypes, ", "))
	fmt.Fprintf(&b, "vocabulary   %d (tokenizer %d)\n", i.Vocab, i.TokenizerVocab)
	fmt.Fprintf(&b, "pooling      %s", pool)
	for _, d := range i.Dense {
		fmt.Fprintf(&b, ", then Dense %s", d)
	}
	fmt.Fprintf(&b, "; normalised: %t\n", i.Normalize)
	if i.Dim > 0 {
		fmt.Fprintf(&b, "vectors      %d\n", i.Dim)
	}
	fmt.Fprintf(&b, "prompts      query %q, passage %q\n", i.QueryPrompt, i.PassagePrompt)
	if len(i.Tasks) > 0 {
		none := func(t string) string {
			if t == "" {
				return "none"
			}
			return t
		}
		fmt.Fprintf(&b, "adapters     %s; query %s, passage %s\n", strings.Join(i.Tasks, ", "), none(i.QueryTask), none(i.PassageTask))
	}
	return b.String()
}
