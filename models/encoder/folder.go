package encoder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/compute/dtypes"
)

// Pooling modes, as sentence-transformers' Pooling module names them (pooling_mode_*).
const (
	PoolCLS          = "cls"           // the first token ([CLS] / <s>)
	PoolMean         = "mean"          // mean of the (unpadded) tokens
	PoolMax          = "max"           // element-wise max over the tokens
	PoolMeanSqrtLen  = "mean-sqrt-len" // sum / √(token count)
	PoolWeightedMean = "weighted-mean" // weights 1, 2, …, n by position
	PoolLastToken    = "last-token"    // the last unpadded token
)

// poolOrder is the order sentence-transformers concatenates several modes in.
var poolOrder = []string{PoolCLS, PoolMax, PoolMean, PoolMeanSqrtLen, PoolWeightedMean, PoolLastToken}

// Pipeline is how a folder turns a text into a vector: the settings of its
// sentence-transformers modules, or Options for a plain Hugging Face folder.
type Pipeline struct {
	Pooling       []string // modes, in poolOrder, concatenated when several
	IncludePrompt bool     // pool the prompt's tokens too (sentence-transformers' default)
	// Normalize makes vectors unit length: a Normalize module, or a model compared by
	// cosine (config_sentence_transformers.json's similarity_fn_name, cosine when
	// absent, as in sentence-transformers), since graphloom ranks by dot product.
	Normalize     bool
	QueryPrompt   string // prefixed to queries
	PassagePrompt string // prefixed to passages
	// QueryTask and PassageTask name the task adapters queries and passages are
	// embedded with (jina-embeddings-v3's lora_adaptations: retrieval.query and
	// retrieval.passage by default, as seed 004 encodes them); "" for none.
	QueryTask, PassageTask string
	MaxLength              int  // tokens per text, special tokens included; longer texts are truncated
	Lowercase              bool // sentence_bert_config.json do_lower_case: lowercase texts first
	// SentenceTransformers reports whether the folder has modules.json;
	// NormalizeModule whether it has a Normalize module.
	SentenceTransformers, NormalizeModule bool
	// QueryFromDefault and PassageFromDefault report that the prompt is the one
	// default_prompt_name names (no "query", or no "document" prompt).
	QueryFromDefault, PassageFromDefault bool
	// Dense are the folder's Dense modules, applied in order to the pooled vector
	// before it is normalised.
	Dense []DenseModule
}

// Options override or complete what a folder says. Zero values defer to the folder.
type Options struct {
	// Pooling: one mode or several joined by "+" (cls, mean, max, mean-sqrt-len,
	// weighted-mean, last-token). Default: the folder's 1_Pooling/config.json; a
	// plain Hugging Face folder needs it (Load's error says so).
	Pooling string
	// Normalize: default true unless the folder's model is compared by dot product
	// (similarity_fn_name "dot" without a Normalize module). graphloom ranks passages
	// by dot product, so a model compared by cosine — sentence-transformers' default,
	// and what a plain folder is taken to be — has its vectors normalised; a deviation
	// from sentence-transformers' encode(), which leaves them as pooled.
	Normalize *bool
	// QueryPrompt / PassagePrompt: default config_sentence_transformers.json's
	// prompts "query" and "document" (or "passage", "corpus"); else none.
	QueryPrompt, PassagePrompt *string
	// QueryTask / PassageTask: the task adapters of a model that has them
	// (jina-embeddings-v3); default retrieval.query and retrieval.passage, where the
	// model has them; "" for none (the model's own weights). The prompts then default
	// to config_sentence_transformers.json's prompt of the task's name, else
	// config.json's task_instructions (what the remote code's encode(task=…) prefixes).
	QueryTask, PassageTask *string
	// MaxLength: tokens per text; default sentence_bert_config.json's max_seq_length,
	// else tokenizer_config.json's model_max_length, each capped by the position table.
	MaxLength int
	// BatchSize: texts per forward pass; default 32.
	BatchSize int
	// Scope: store scope of the variables; default DefaultScope.
	Scope string
	// DType: the weights in float32 (the zero value means it) or bf16. ComputeDType
	// (zero: DType) is the layers': in bf16 as sentence-transformers with
	// torch_dtype=bfloat16 computes (LayerNorm, GELU and the attention softmax in
	// float32, cast back to bf16); float32 over bf16 weights widens each weight where
	// it is used (half the memory at float32's speed: lm.ComputeFor says which a
	// backend gets). Pooling and normalisation are float32. For a decoder embedder,
	// lm.Options' fields. bf16 vectors agree with float32 ones to bf16's precision;
	// the folder digest does not include the dtypes, so an index built with one can
	// be queried with another.
	DType, ComputeDType dtypes.DType
}

// module is an entry of modules.json.
type module struct {
	Idx  int    `json:"idx"`
	Name string `json:"name"`
	Path string `json:"path"`
	Type string `json:"type"`
}

// kind is the module's class name without its package (Transformer, Pooling, …).
func (m module) kind() string { return m.Type[strings.LastIndex(m.Type, ".")+1:] }

// poolingConfig is 1_Pooling/config.json.
type poolingConfig struct {
	CLS           bool  `json:"pooling_mode_cls_token"`
	Mean          bool  `json:"pooling_mode_mean_tokens"`
	Max           bool  `json:"pooling_mode_max_tokens"`
	MeanSqrtLen   bool  `json:"pooling_mode_mean_sqrt_len_tokens"`
	WeightedMean  bool  `json:"pooling_mode_weightedmean_tokens"`
	LastToken     bool  `json:"pooling_mode_lasttoken"`
	IncludePrompt *bool `json:"include_prompt"`
}

// readJSON reads dir/name into v; found is false when the file does not exist.
func readJSON(dir, name string, v any) (found bool, err error) {
	path := filepath.Join(dir, name)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("encoder: reading %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("encoder: %s: %w", path, err)
	}
	return true, nil
}

// ReadPipeline reads a folder's sentence-transformers modules (modules.json,
// 1_Pooling/config.json, 2_Normalize, sentence_bert_config.json,
// config_sentence_transformers.json) and applies opts. It returns the folder that
// holds the transformer (config.json, weights, tokenizer.json): dir itself, or the
// Transformer module's path. cfg bounds the maximum length.
func ReadPipeline(dir string, opts Options) (Pipeline, string, error) {
	return readPipeline(dir, opts, true)
}

// readPipeline is ReadPipeline; without needPooling, a plain folder that says nothing
// of pooling is no error (Describe shows it as such).
func readPipeline(dir string, opts Options, needPooling bool) (Pipeline, string, error) {
	p := Pipeline{IncludePrompt: true, Normalize: true}
	modelDir := dir
	var stPrompts map[string]string
	var mods []module
	found, err := readJSON(dir, "modules.json", &mods)
	if err != nil {
		return Pipeline{}, "", err
	}
	if found {
		p.SentenceTransformers, p.Normalize = true, false
		sort := slices.Clone(mods)
		slices.SortFunc(sort, func(a, b module) int { return a.Idx - b.Idx })
		for i, m := range sort {
			sub := filepath.Join(dir, filepath.FromSlash(m.Path))
			switch m.kind() {
			case "Transformer":
				if i != 0 {
					return Pipeline{}, "", fmt.Errorf("encoder: %s: the Transformer module must come first", filepath.Join(dir, "modules.json"))
				}
				modelDir = sub
			case "Pooling":
				var pc poolingConfig
				ok, err := readJSON(sub, "config.json", &pc)
				if err != nil {
					return Pipeline{}, "", err
				}
				if !ok {
					return Pipeline{}, "", fmt.Errorf("encoder: %s not found (modules.json names a Pooling module at %q)", filepath.Join(sub, "config.json"), m.Path)
				}
				for _, on := range []struct {
					set  bool
					mode string
				}{{pc.CLS, PoolCLS}, {pc.Max, PoolMax}, {pc.Mean, PoolMean}, {pc.MeanSqrtLen, PoolMeanSqrtLen}, {pc.WeightedMean, PoolWeightedMean}, {pc.LastToken, PoolLastToken}} {
					if on.set {
						p.Pooling = append(p.Pooling, on.mode)
					}
				}
				if len(p.Pooling) == 0 {
					return Pipeline{}, "", fmt.Errorf("encoder: %s sets no pooling_mode_*", filepath.Join(sub, "config.json"))
				}
				if pc.IncludePrompt != nil {
					p.IncludePrompt = *pc.IncludePrompt
				}
			case "Dense":
				if len(p.Pooling) == 0 || p.NormalizeModule {
					return Pipeline{}, "", fmt.Errorf("encoder: %s: Dense module %q must come after the Pooling module and before Normalize", filepath.Join(dir, "modules.json"), m.Name)
				}
				d, err := readDense(sub, m.Path)
				if err != nil {
					return Pipeline{}, "", err
				}
				p.Dense = append(p.Dense, d)
			case "Normalize":
				p.Normalize, p.NormalizeModule = true, true
			default:
				return Pipeline{}, "", fmt.Errorf("encoder: %s: module %q of type %s is not supported (want Transformer, Pooling, Dense, Normalize)",
					filepath.Join(dir, "modules.json"), m.Name, m.Type)
			}
		}
		var sb struct {
			MaxSeqLength int  `json:"max_seq_length"`
			DoLowerCase  bool `json:"do_lower_case"`
		}
		if _, err := readJSON(modelDir, "sentence_bert_config.json", &sb); err != nil {
			return Pipeline{}, "", err
		}
		p.MaxLength, p.Lowercase = sb.MaxSeqLength, sb.DoLowerCase
		var st struct {
			Prompts       map[string]string `json:"prompts"`
			DefaultPrompt string            `json:"default_prompt_name"`
			Similarity    string            `json:"similarity_fn_name"`
		}
		if _, err := readJSON(dir, "config_sentence_transformers.json", &st); err != nil {
			return Pipeline{}, "", err
		}
		switch st.Similarity {
		case "", "cosine":
			p.Normalize = true // cosine is the dot product of unit vectors
		case "dot":
			// as pooled, or unit length when the folder has a Normalize module
		default:
			if !p.Normalize && opts.Normalize == nil {
				return Pipeline{}, "", fmt.Errorf("encoder: %s: similarity_fn_name %q: graphloom ranks by dot product; pass --normalize true to rank by cosine instead",
					filepath.Join(dir, "config_sentence_transformers.json"), st.Similarity)
			}
		}
		// sentence-transformers' encode_query and encode_document: the "query"
		// prompt, the first of "document", "passage" and "corpus", else the
		// default_prompt_name's prompt, which encode() applies when none is named.
		stPrompts = st.Prompts
		def, hasDef := st.Prompts[st.DefaultPrompt]
		p.QueryPrompt, p.PassagePrompt = def, def
		p.QueryFromDefault, p.PassageFromDefault = hasDef, hasDef
		if s, ok := st.Prompts["query"]; ok {
			p.QueryPrompt, p.QueryFromDefault = s, false
		}
		for _, k := range []string{"document", "passage", "corpus"} {
			if s, ok := st.Prompts[k]; ok {
				p.PassagePrompt, p.PassageFromDefault = s, false
				break
			}
		}
	}
	if p.MaxLength == 0 {
		var tc struct {
			ModelMaxLength float64 `json:"model_max_length"`
		}
		if _, err := readJSON(modelDir, "tokenizer_config.json", &tc); err != nil {
			return Pipeline{}, "", err
		}
		if tc.ModelMaxLength > 0 && tc.ModelMaxLength < 1e9 { // transformers writes 1e30 for "no limit"
			p.MaxLength = int(tc.ModelMaxLength)
		}
	}
	if opts.Pooling != "" {
		modes, err := ParsePooling(opts.Pooling)
		if err != nil {
			return Pipeline{}, "", err
		}
		p.Pooling = modes
	}
	if len(p.Pooling) == 0 && needPooling {
		return Pipeline{}, "", fmt.Errorf("encoder: %s is a plain Hugging Face folder (no modules.json / 1_Pooling/config.json): say how to pool its tokens (--pooling cls|mean|max|mean-sqrt-len|weighted-mean|last-token)", dir)
	}
	if opts.Normalize != nil {
		p.Normalize = *opts.Normalize
	}
	if err := p.chooseTasks(modelDir, stPrompts, opts); err != nil {
		return Pipeline{}, "", err
	}
	if opts.QueryPrompt != nil {
		p.QueryPrompt, p.QueryFromDefault = *opts.QueryPrompt, false
	}
	if opts.PassagePrompt != nil {
		p.PassagePrompt, p.PassageFromDefault = *opts.PassagePrompt, false
	}
	if opts.MaxLength > 0 {
		p.MaxLength = opts.MaxLength
	}
	return p, modelDir, nil
}

// OptionError is an Options value the folder's model cannot take (an unknown pooling
// mode, a task adapter it lacks): a mistake in the caller's settings, not in the
// folder. Errors wrap it; errors.As finds it.
type OptionError struct{ Err error }

func (e OptionError) Error() string { return e.Err.Error() }
func (e OptionError) Unwrap() error { return e.Err }

// Tasks whose adapters embed queries and passages by default (jina-embeddings-v3's).
const (
	DefaultQueryTask   = "retrieval.query"
	DefaultPassageTask = "retrieval.passage"
)

// chooseTasks sets the task adapters of a model that has them (config.json's
// lora_adaptations, load_trained_adapters): Options', else DefaultQueryTask and
// DefaultPassageTask where the model has them; and, for each task, its prompt: the
// sentence-transformers prompt of the task's name, else config.json's
// task_instructions entry. A task the model lacks is an error.
func (p *Pipeline) chooseTasks(modelDir string, stPrompts map[string]string, opts Options) error {
	var raw rawJina
	if _, err := readJSON(modelDir, "config.json", &raw); err != nil {
		return err
	}
	tasks := raw.tasks()
	pick := func(o *string, def string) (string, error) {
		if o != nil {
			if *o != "" && !slices.Contains(tasks, *o) {
				if len(tasks) == 0 {
					return "", OptionError{fmt.Errorf("encoder: %s: task %q: the model has no task adapters", modelDir, *o)}
				}
				return "", OptionError{fmt.Errorf("encoder: %s: task %q: the model's adapters are %q", modelDir, *o, tasks)}
			}
			return *o, nil
		}
		if slices.Contains(tasks, def) {
			return def, nil
		}
		return "", nil
	}
	var err error
	if p.QueryTask, err = pick(opts.QueryTask, DefaultQueryTask); err != nil {
		return err
	}
	if p.PassageTask, err = pick(opts.PassageTask, DefaultPassageTask); err != nil {
		return err
	}
	prompt := func(task string, into *string, fromDefault *bool) {
		if task == "" {
			return
		}
		if s, ok := stPrompts[task]; ok {
			*into, *fromDefault = s, false
		} else if s, ok := raw.Instructions[task]; ok {
			*into, *fromDefault = s, false
		}
	}
	prompt(p.QueryTask, &p.QueryPrompt, &p.QueryFromDefault)
	prompt(p.PassageTask, &p.PassagePrompt, &p.PassageFromDefault)
	return nil
}

// ParsePooling reads one mode or several joined by "+", returned in the order
// sentence-transformers concatenates them.
func ParsePooling(s string) ([]string, error) {
	var modes []string
	for _, part := range strings.Split(s, "+") {
		part = strings.TrimSpace(strings.ToLower(part))
		switch part {
		case "lasttoken", "last":
			part = PoolLastToken
		case "weightedmean":
			part = PoolWeightedMean
		case "cls_token", "cls-token":
			part = PoolCLS
		}
		if !slices.Contains(poolOrder, part) {
			return nil, OptionError{fmt.Errorf("encoder: pooling %q not supported (want %s, or several joined by +)", part, strings.Join(poolOrder, ", "))}
		}
		if !slices.Contains(modes, part) {
			modes = append(modes, part)
		}
	}
	slices.SortFunc(modes, func(a, b string) int { return slices.Index(poolOrder, a) - slices.Index(poolOrder, b) })
	return modes, nil
}
