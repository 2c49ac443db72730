package lm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Info describes a model directory without loading its weights: what `graphloom lm
// info` prints.
type Info struct {
	Dir          string         `json:"dir"`
	ModelType    string         `json:"model_type"`
	Layers       int            `json:"layers"`
	Hidden       int            `json:"hidden"`
	Heads        int            `json:"heads"`
	KVHeads      int            `json:"kv_heads"`
	HeadDim      int            `json:"head_dim"`
	Parameters   int64          `json:"parameters"`    // elements of every stored tensor
	StoredDTypes map[string]int `json:"stored_dtypes"` // tensors per stored dtype
	ComputeDType string         `json:"compute_dtype"`
	Rope         Rope           `json:"rope"`
	RopeTheta    float64        `json:"rope_theta"`
	Context      int            `json:"context"` // Config.Context: the most positions (0: unbounded)
	SlidingWin   int            `json:"sliding_window,omitempty"`
	Vocab        int            `json:"vocab"`           // config.json's vocab_size
	TokenizerVoc int            `json:"tokenizer_vocab"` // ids the tokenizer knows
	Tied         bool           `json:"tied_embeddings"`
	BOS          int            `json:"bos_token_id"`
	EOS          []int          `json:"eos_token_ids"` // config.json's, then generation_config.json's others
	ChatTemplate string         `json:"chat_template"` // the file it comes from, or "" (a base model)
}

// Describe reads dir's config.json, the headers of its safetensors files, its
// tokenizer and its tokenizer_config.json / generation_config.json.
func Describe(dir string) (Info, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return Info{}, err
	}
	info := Info{Dir: dir, ModelType: cfg.ModelType, Layers: cfg.Layers, Hidden: cfg.Hidden, Heads: cfg.Heads,
		KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim, ComputeDType: "float32", Rope: cfg.Rope, RopeTheta: cfg.RopeTheta,
		Context: cfg.Context(), SlidingWin: cfg.SlidingWindow, Vocab: cfg.VocabSize, Tied: cfg.TieEmbeddings,
		BOS: cfg.BOS, EOS: cfg.EOS, StoredDTypes: map[string]int{}}
	ck, err := OpenCheckpoint(dir)
	if err != nil {
		return Info{}, err
	}
	defer ck.Close()
	for _, n := range ck.Names() {
		shape, _ := ck.Shape(n)
		info.Parameters += int64(numel(shape))
		info.StoredDTypes[ck.DType(n)]++
	}
	tc, err := ReadTokenizerConfig(dir)
	if err != nil {
		return Info{}, err
	}
	tok, err := loadTokenizer(dir, tc)
	if err != nil {
		return Info{}, err
	}
	info.TokenizerVoc = tok.VocabSize()
	info.ChatTemplate = tc.Path
	gen, ok, err := ReadGenerationConfig(dir)
	if err != nil {
		return Info{}, err
	}
	if ok {
		info.EOS = mergeEOS(gen.EOS, cfg.EOS)
	}
	return info, nil
}

// String is the human-readable form.
func (i Info) String() string {
	var b strings.Builder
	rope := i.Rope.Type
	if rope == "" {
		rope = "default"
	}
	if i.Rope.Factor != 0 {
		rope += fmt.Sprintf(" ×%g", i.Rope.Factor)
	}
	dtypes := make([]string, 0, len(i.StoredDTypes))
	for _, d := range slices.Sorted(maps.Keys(i.StoredDTypes)) {
		dtypes = append(dtypes, fmt.Sprintf("%s (%d tensors)", d, i.StoredDTypes[d]))
	}
	ctx := "unbounded"
	if i.Context > 0 {
		ctx = fmt.Sprint(i.Context)
	}
	chat := "none (base model: pass --prompt-format)"
	if i.ChatTemplate != "" {
		chat = i.ChatTemplate
	}
	fmt.Fprintf(&b, "model        %s\n", i.Dir)
	fmt.Fprintf(&b, "architecture %s: %d layers, hidden %d, %d heads (%d key/value) of %d\n", i.ModelType, i.Layers, i.Hidden, i.Heads, i.KVHeads, i.HeadDim)
	fmt.Fprintf(&b, "parameters   %d (%.3g B)\n", i.Parameters, float64(i.Parameters)/1e9)
	fmt.Fprintf(&b, "dtype        stored %s; computed in %s\n", strings.Join(dtypes, ", "), i.ComputeDType)
	fmt.Fprintf(&b, "rope         %s, theta %g\n", rope, i.RopeTheta)
	fmt.Fprintf(&b, "context      %s", ctx)
	if i.SlidingWin > 0 {
		fmt.Fprintf(&b, " (sliding window %d)", i.SlidingWin)
	}
	fmt.Fprintf(&b, "\nvocabulary   %d (tokenizer %d), embeddings tied: %t\n", i.Vocab, i.TokenizerVoc, i.Tied)
	fmt.Fprintf(&b, "bos / eos    %d / %v\n", i.BOS, i.EOS)
	fmt.Fprintf(&b, "chat         %s\n", chat)
	return b.String()
}
