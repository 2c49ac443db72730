package encoder

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/lm"
)

// DefaultBatchSize is the number of texts per forward pass.
const DefaultBatchSize = 32

// Model is a loaded sentence encoder: network (a BERT-family encoder, or a decoder
// LM of package lm), tokenizer and pooling pipeline.
type Model struct {
	net    *Network     // nil for a decoder embedder
	dec    *lm.Model    // nil for an encoder
	dense  []denseLayer // the pipeline's Dense modules
	hidden int
	tok    *lm.Tokenizer
	pipe   Pipeline
	dir    string
	digest string
	store  *model.Store
	scope  string
	maxLen int
	batch  int
	tasks  [2]int // task adapters of passages and queries (-1: none)

	mu    sync.Mutex
	stats Stats
}

// Stats count an encoder's work.
type Stats struct {
	Texts     int // texts embedded
	Truncated int // texts cut to the maximum length
	Batches   int // forward passes
	Shapes    int // distinct padded [batch, length] shapes run (one compiled executable each, and each task's own for a model with task adapters)
	shapes    map[[2]int]bool
}

// Load reads a local sentence-transformers or Hugging Face folder (see ReadPipeline
// and the package doc) and creates the encoder's variables in a new store. The
// maximum length is Options.MaxLength, else the folder's, capped by the position table
// (max_position_embeddings − offset).
func Load(dir string, opts Options) (*Model, error) {
	pipe, modelDir, err := ReadPipeline(dir, opts)
	if err != nil {
		return nil, err
	}
	if decoderFolder(modelDir) {
		return loadDecoder(dir, modelDir, pipe, opts)
	}
	cfg, err := ReadConfig(modelDir)
	if err != nil {
		return nil, err
	}
	tok, err := lm.LoadTokenizer(modelDir)
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	ckpt, release, err := openWeights(modelDir)
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	defer release()
	store := model.NewStore()
	net, err := NewNetwork(store, cfg, ckpt, opts.Scope, opts.DType, opts.ComputeDType)
	if err != nil {
		return nil, fmt.Errorf("encoder: %s: %w", modelDir, err)
	}
	if tok.VocabSize() > cfg.VocabSize {
		return nil, fmt.Errorf("encoder: %s: tokenizer.json has ids up to %d, config.json vocab_size is %d", modelDir, tok.VocabSize()-1, cfg.VocabSize)
	}
	maxLen := cfg.MaxTokens()
	if pipe.MaxLength > 0 && pipe.MaxLength < maxLen {
		maxLen = pipe.MaxLength
	}
	pipe.MaxLength = maxLen
	digest, err := folderDigest(modelDir, pipe)
	if err != nil {
		return nil, err
	}
	m := &Model{net: net, hidden: cfg.Hidden, tok: tok, pipe: pipe, dir: dir, digest: digest, store: store,
		scope: net.scope, maxLen: maxLen, batch: opts.BatchSize}
	for i, task := range []string{pipe.PassageTask, pipe.QueryTask} {
		if m.tasks[i], err = cfg.TaskIndex(task); err != nil {
			return nil, fmt.Errorf("%w (%s)", err, modelDir)
		}
	}
	if m.batch <= 0 {
		m.batch = DefaultBatchSize
	}
	if err := m.loadDense(); err != nil {
		return nil, err
	}
	return m, nil
}

// Config returns the encoder's architecture (zero for a decoder embedder: see
// Decoder).
func (m *Model) Config() Config {
	if m.net == nil {
		return Config{}
	}
	return m.net.cfg
}

// Decoder returns the decoder LM of a decoder embedder (nil for an encoder).
func (m *Model) Decoder() *lm.Model { return m.dec }

// Pipeline returns the pooling, normalisation, prompts and maximum length in use.
func (m *Model) Pipeline() Pipeline { return m.pipe }

// Tokenizer returns the folder's tokenizer.
func (m *Model) Tokenizer() *lm.Tokenizer { return m.tok }

// Dir returns the folder the model was loaded from.
func (m *Model) Dir() string { return m.dir }

// Digest is a SHA-256 over config.json, tokenizer.json, the weights' index (the
// safetensors headers, sizes and sampled bytes) and the pipeline (pooling, prompts,
// normalisation, maximum length): two encoders with the same digest make the same
// vectors.
func (m *Model) Digest() string { return m.digest }

// Dim returns the vector dimension: hidden size × pooling modes.
func (m *Model) Dim() int {
	if n := len(m.pipe.Dense); n > 0 {
		return m.pipe.Dense[n-1].Out
	}
	return m.hidden * len(m.pipe.Pooling)
}

// Stats returns the work done so far.
func (m *Model) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.shapes = nil
	return s
}

// Prompt returns the prompt a text of the kind gets (query or passage).
func (m *Model) Prompt(query bool) string {
	if query {
		return m.pipe.QueryPrompt
	}
	return m.pipe.PassagePrompt
}

// Tokenize returns the ids a text is embedded from (prompt prefixed, stripped of
// surrounding whitespace, lowercased when the folder says so, special tokens added,
// truncated to the maximum length), and how many leading tokens pooling skips (the
// prompt's, when include_prompt is false). sentence-transformers strips every text it
// tokenizes (the prompt and text joined, and the prompt alone when its tokens are
// counted): a byte-level BPE or Unigram tokenizer reads a trailing newline or space
// as tokens of its own, which moved Qwen3-Embedding's last token.
func (m *Model) Tokenize(text string, query bool) (ids []int32, skip int, truncated bool, err error) {
	prompt := m.Prompt(query)
	s := pyStrip(prompt + text)
	if m.pipe.Lowercase {
		s = strings.ToLower(s)
	}
	ids, truncated, err = m.tok.EncodeTruncated(s, true, m.maxLen)
	if err != nil {
		return nil, 0, false, err
	}
	if !m.pipe.IncludePrompt && prompt != "" {
		// sentence-transformers: the prompt's length with special tokens, less one
		// (the closing [SEP] / </s>).
		p := pyStrip(prompt)
		if m.pipe.Lowercase {
			p = strings.ToLower(p)
		}
		pids, err := m.tok.Encode(p, true)
		if err != nil {
			return nil, 0, false, err
		}
		skip = min(max(len(pids)-1, 0), len(ids))
	}
	return ids, skip, truncated, nil
}

// pyStrip is Python's str.strip(): Unicode white space and the separators
// U+001C to U+001F, which Python counts as white space and Go does not.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) })
}

// Embed returns one vector per text, in order: queries (query true) get the query
// prompt, passages the passage prompt. Texts are sorted by token count and run in
// batches padded to bucket shapes.
func (m *Model) Embed(eng *engine.Engine, texts []string, query bool) ([][]float32, error) {
	type item struct {
		i    int
		ids  []int32
		skip int
	}
	items := make([]item, len(texts))
	truncated := 0
	for i, t := range texts {
		ids, skip, tr, err := m.Tokenize(t, query)
		if err != nil {
			return nil, fmt.Errorf("encoder: text %d: %w", i, err)
		}
		if tr {
			truncated++
		}
		items[i] = item{i, ids, skip}
	}
	order := slices.Clone(items)
	slices.SortStableFunc(order, func(a, b item) int { return len(b.ids) - len(a.ids) })
	out := make([][]float32, len(texts))
	dim := m.Dim()
	for lo := 0; lo < len(order); lo += m.batch {
		chunk := order[lo:min(lo+m.batch, len(order))]
		var run []item
		for _, it := range chunk {
			if len(it.ids) == 0 { // a tokenizer without special tokens on empty text
				out[it.i] = make([]float32, dim)
				continue
			}
			run = append(run, it)
		}
		if len(run) == 0 {
			continue
		}
		seqs := make([][]int32, len(run))
		skips := make([]int, len(run))
		for j, it := range run {
			seqs[j], skips[j] = it.ids, it.skip
		}
		vecs, err := m.forward(eng, seqs, skips, query)
		if err != nil {
			return nil, err
		}
		for j, it := range run {
			out[it.i] = vecs[j]
		}
	}
	m.mu.Lock()
	m.stats.Texts += len(texts)
	m.stats.Truncated += truncated
	m.mu.Unlock()
	return out, nil
}

// forward pools one batch of token sequences (longest first) of queries or passages.
func (m *Model) forward(eng *engine.Engine, seqs [][]int32, skips []int, query bool) ([][]float32, error) {
	if eng == nil {
		return nil, errors.New("encoder: no engine")
	}
	c := m.Config() // a decoder's zero Config: positions 0, 1, … and id 0 as padding, both unused
	n := 0
	for _, s := range seqs {
		n = max(n, len(s))
	}
	b, t := lm.BatchBucket(len(seqs)), lm.SeqBucket(n)
	ids := make([]int32, b*t)
	pos := make([]int32, b*t)
	mask := make([]float32, b*t)
	pool := make([]float32, b*t)
	padPos := int32(0)
	if c.PositionOffset > 0 {
		padPos = int32(c.PadTokenID)
	}
	for i := range b {
		row := i * t
		var s []int32
		if i < len(seqs) {
			s = seqs[i]
		}
		p := c.Positions(s)
		for j := range t {
			if j < len(s) {
				ids[row+j], pos[row+j], mask[row+j] = s[j], p[j], 1
				if j >= skips[i] {
					pool[row+j] = 1
				}
				continue
			}
			ids[row+j], pos[row+j] = int32(c.PadTokenID), padPos
		}
	}
	task, name := -1, m.scope+"/embed"
	if m.net != nil {
		if task = m.tasks[0]; query {
			task = m.tasks[1]
		}
	}
	if task >= 0 { // each task's adapters are constants of their own executables
		name = fmt.Sprintf("%s/task%d", name, task)
	}
	x, err := eng.Exec(engine.Key{Name: name, Bucket: fmt.Sprintf("%dx%d", b, t)}, m.store,
		func(_ *model.Scope, in []*graph.Node) []*graph.Node {
			return []*graph.Node{m.pooled(in[0], in[1], in[2], in[3], task)}
		})
	if err != nil {
		return nil, err
	}
	outs, err := x.Call(tensors.FromFlatDataAndDimensions(ids, b, t), tensors.FromFlatDataAndDimensions(pos, b, t),
		tensors.FromFlatDataAndDimensions(mask, b, t), tensors.FromFlatDataAndDimensions(pool, b, t))
	if err != nil {
		return nil, fmt.Errorf("encoder: forward: %w", err)
	}
	flat, err := tensors.CopyFlatData[float32](outs[0])
	for _, o := range outs {
		_ = o.FinalizeAll()
	}
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.stats.Batches++
	if m.stats.shapes == nil {
		m.stats.shapes = map[[2]int]bool{}
	}
	m.stats.shapes[[2]int{b, t}] = true
	m.stats.Shapes = len(m.stats.shapes)
	m.mu.Unlock()
	dim := m.Dim()
	res := make([][]float32, len(seqs))
	for i := range seqs {
		res[i] = flat[i*dim : (i+1)*dim : (i+1)*dim]
	}
	return res, nil
}

// pooled is the graph of one batch: hidden states, each pooling mode over the tokens
// poolMask selects (concatenated in sentence-transformers' order), the Dense modules,
// then the Normalize module's x / max(‖x‖, 1e-12); task is the index of the task
// adapters (-1: none).
func (m *Model) pooled(ids, positions, mask, poolMask *graph.Node, task int) *graph.Node {
	var h *graph.Node // [B, T, H]
	if m.dec != nil {
		h = m.dec.Hidden(m.dec.EmbedTokens(ids), mask)
	} else {
		h = m.net.Hidden(ids, positions, mask, task)
	}
	g := h.Graph()
	dims := h.Shape().Dimensions
	bsz, t := dims[0], dims[1]
	pm := graph.InsertAxes(poolMask, -1) // [B, T, 1]
	count := graph.ReduceSum(pm, 1)      // [B, 1]
	sum := graph.ReduceSum(graph.Mul(h, pm), 1)
	var parts []*graph.Node
	for _, mode := range m.pipe.Pooling {
		var p *graph.Node
		switch mode {
		case PoolCLS:
			p = graph.Reshape(graph.Slice(h, graph.AxisRange(), graph.AxisElem(0)), bsz, dims[2])
		case PoolMean:
			p = graph.Div(sum, graph.Max(count, graph.Scalar(g, dtypes.Float32, 1e-9)))
		case PoolMeanSqrtLen:
			p = graph.Div(sum, graph.Sqrt(graph.Max(count, graph.Scalar(g, dtypes.Float32, 1e-9))))
		case PoolMax:
			sel := graph.BroadcastToDims(graph.GreaterThan(pm, graph.ScalarZero(g, dtypes.Float32)), dims...)
			p = graph.ReduceMax(graph.Where(sel, h, graph.Scalar(g, dtypes.Float32, -1e9)), 1)
		case PoolWeightedMean:
			w := graph.Mul(graph.AddScalar(graph.Iota(g, shapes.Make(dtypes.Float32, bsz, t, 1), 1), 1), pm)
			p = graph.Div(graph.ReduceSum(graph.Mul(h, w), 1), graph.Max(graph.ReduceSum(w, 1), graph.Scalar(g, dtypes.Float32, 1e-9)))
		case PoolLastToken:
			idx := graph.Iota(g, shapes.Make(dtypes.Float32, bsz, t), 1)
			last := graph.ReduceAndKeep(graph.Where(graph.GreaterThan(poolMask, graph.ScalarZero(g, dtypes.Float32)), idx, graph.ScalarZero(g, dtypes.Float32)), graph.ReduceMax, 1)
			onehot := graph.ConvertDType(graph.Equal(idx, last), dtypes.Float32) // [B, T]
			p = graph.ReduceSum(graph.Mul(h, graph.InsertAxes(onehot, -1)), 1)
		}
		parts = append(parts, p)
	}
	out := parts[0]
	if len(parts) > 1 {
		out = graph.Concatenate(parts, 1)
	}
	out = m.applyDense(out)
	if m.pipe.Normalize {
		norm := graph.Sqrt(graph.ReduceAndKeep(graph.Square(out), graph.ReduceSum, -1))
		out = graph.Div(out, graph.Max(norm, graph.Scalar(g, dtypes.Float32, 1e-12)))
	}
	return out
}
