package lm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/engine"
)

// seqBuckets are the padded sequence (and cache) lengths.
var seqBuckets = []int{8, 16, 32, 64, 128, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096}

// SeqBucket returns the padded length for a sequence of n tokens: the smallest of 8,
// 16, 32, …, 4096 that holds it, then multiples of 2048.
func SeqBucket(n int) int {
	for _, b := range seqBuckets {
		if n <= b {
			return b
		}
	}
	return (n + 2047) / 2048 * 2048
}

// BatchBucket returns the padded batch size: a power of two up to 32, then multiples of 32.
func BatchBucket(n int) int {
	b := 1
	for b < n && b < 32 {
		b *= 2
	}
	if n <= b {
		return b
	}
	return (n + 31) / 32 * 32
}

// Piece is part of an input sequence: token ids, or raw embedding vectors of width
// Hidden (soft-prompt tokens such as G-Retriever's graph token).
type Piece struct {
	IDs    []int32
	Embeds [][]float32
}

// EmbedIDs returns the token embeddings of ids, [len(ids)][Hidden] float32 (a
// host-side lookup of the rows of the embedding table, read in place: no copy of the
// table; EmbedTokens is the in-graph one).
func (m *Model) EmbedIDs(ids []int32) ([][]float32, error) {
	h := m.cfg.Hidden
	for _, id := range ids {
		if id < 0 || int(id) >= m.cfg.VocabSize {
			return nil, fmt.Errorf("lm: token id %d out of the vocabulary (%d)", id, m.cfg.VocabSize)
		}
	}
	table, err := m.embed.Value()
	if err != nil {
		return nil, fmt.Errorf("lm: embedding table: %w", err)
	}
	out := make([][]float32, len(ids))
	err = table.ConstFlatData(func(flat any) {
		for i, id := range ids {
			row := make([]float32, h)
			switch t := flat.(type) {
			case []float32:
				copy(row, t[int(id)*h:])
			case []bfloat16.BFloat16:
				for j, v := range t[int(id)*h : (int(id)+1)*h] {
					row[j] = v.Float32()
				}
			}
			out[i] = row
		}
	})
	if err != nil {
		return nil, fmt.Errorf("lm: embedding table: %w", err)
	}
	return out, nil
}

// Splice concatenates pieces into one input sequence of embeddings [T][Hidden].
func (m *Model) Splice(pieces ...Piece) ([][]float32, error) {
	var out [][]float32
	for i, p := range pieces {
		if p.IDs != nil && p.Embeds != nil {
			return nil, fmt.Errorf("lm: piece %d has both ids and embeddings", i)
		}
		if p.IDs != nil {
			e, err := m.EmbedIDs(p.IDs)
			if err != nil {
				return nil, err
			}
			out = append(out, e...)
			continue
		}
		for j, v := range p.Embeds {
			if len(v) != m.cfg.Hidden {
				return nil, fmt.Errorf("lm: piece %d vector %d has width %d, want %d", i, j, len(v), m.cfg.Hidden)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

// padded packs sequences of embeddings into right-padded [B', T', H] and mask [B', T']
// tensors with bucketed B' and T' (at least minT).
func (m *Model) padded(seqs [][][]float32, minT int) (emb, mask *tensors.Tensor, b, t int, err error) {
	if len(seqs) == 0 {
		return nil, nil, 0, 0, errors.New("lm: no sequences")
	}
	n := 0
	for i, s := range seqs {
		if len(s) == 0 {
			return nil, nil, 0, 0, fmt.Errorf("lm: sequence %d is empty", i)
		}
		n = max(n, len(s))
	}
	h := m.cfg.Hidden
	b, t = BatchBucket(len(seqs)), SeqBucket(max(n, minT))
	e := make([]float32, b*t*h)
	mk := make([]int32, b*t)
	for i, s := range seqs {
		for j, v := range s {
			if len(v) != h {
				return nil, nil, 0, 0, fmt.Errorf("lm: sequence %d position %d has width %d, want %d", i, j, len(v), h)
			}
			copy(e[(i*t+j)*h:], v)
			mk[i*t+j] = 1
		}
	}
	return tensors.FromFlatDataAndDimensions(e, b, t, h), tensors.FromFlatDataAndDimensions(mk, b, t), b, t, nil
}

// ForwardEmbeds runs the model on sequences of input embeddings (each [T_i][Hidden],
// see Splice) and returns the logits of every real position, [i][T_i][Vocab].
func (m *Model) ForwardEmbeds(eng *engine.Engine, seqs [][][]float32) ([][][]float32, error) {
	if !m.HasHead() {
		return nil, m.errNoHead()
	}
	for _, s := range seqs {
		if err := m.cfg.CheckLength(len(s)); err != nil {
			return nil, err
		}
	}
	emb, mask, b, t, err := m.padded(seqs, 0)
	if err != nil {
		return nil, err
	}
	x, err := eng.Exec(engine.Key{Name: m.scope + "/logits", Bucket: fmt.Sprintf("%dx%d", b, t)}, m.store,
		func(_ *model.Scope, in []*graph.Node) []*graph.Node { return []*graph.Node{m.Logits(in[0], in[1])} })
	if err != nil {
		return nil, err
	}
	outs, err := x.Call(emb, mask)
	if err != nil {
		return nil, fmt.Errorf("lm: forward: %w", err)
	}
	flat, err := tensors.CopyFlatData[float32](outs[0])
	engine.Finalize(outs...)
	if err != nil {
		return nil, err
	}
	v := m.cfg.VocabSize
	res := make([][][]float32, len(seqs))
	for i, s := range seqs {
		res[i] = make([][]float32, len(s))
		for j := range s {
			res[i][j] = flat[(i*t+j)*v : (i*t+j+1)*v]
		}
	}
	return res, nil
}

// ForwardIDs is ForwardEmbeds on token ids.
func (m *Model) ForwardIDs(eng *engine.Engine, ids [][]int32) ([][][]float32, error) {
	seqs, err := m.embedAll(ids)
	if err != nil {
		return nil, err
	}
	return m.ForwardEmbeds(eng, seqs)
}

func (m *Model) embedAll(ids [][]int32) ([][][]float32, error) {
	seqs := make([][][]float32, len(ids))
	for i, s := range ids {
		e, err := m.EmbedIDs(s)
		if err != nil {
			return nil, err
		}
		seqs[i] = e
	}
	return seqs, nil
}

// GenerateOptions configures generation: greedy by default, sampled with
// Temperature > 0 (transformers' order: temperature, then top-p).
type GenerateOptions struct {
	MaxNewTokens int     // ≥ 1; G-Retriever: 32
	EOS          []int32 // stop ids; nil = the config's (and generation_config.json's) eos_token_id(s)
	// Temperature > 0 samples from softmax(logits / Temperature); 0 is greedy.
	Temperature float64
	// TopP in (0, 1] keeps the smallest set of most probable tokens whose
	// probability reaches TopP (nucleus sampling); 0 or 1 keeps all.
	TopP float64
	// TopK > 0 keeps only the TopK most probable tokens when sampling (applied
	// before TopP, as transformers' TopKLogitsWarper); 0 keeps all.
	TopK int
	// RepetitionPenalty > 0 and ≠ 1 divides the positive logits (multiplies the
	// negative ones) of every token already in the row — its prompt (PromptIDs) and
	// what it generated — greedy or sampled (transformers' repetition_penalty, CTRL's).
	RepetitionPenalty float64
	// PromptIDs are the prompts' token ids, for RepetitionPenalty (GenerateIDs sets
	// them; a prompt given as embeddings has none to penalise).
	PromptIDs [][]int32
	// Seed seeds the sampler (a fixed seed gives the same tokens).
	Seed uint64
	// Stop, when set, is asked after each new token of a row (its tokens so far)
	// whether the row is done (e.g. a stop string was generated); the token stays.
	Stop func(row int, ids []int32) bool
}

// Generate decodes greedily from each prompt of input embeddings (see Splice) with a
// key/value cache: one prefill over the right-padded prompts, then one cached step
// per new token. A row stops at an EOS id (not included in its output) or after
// MaxNewTokens tokens; all rows stop when all have.
func (m *Model) Generate(eng *engine.Engine, prompts [][][]float32, opts GenerateOptions) ([][]int32, error) {
	if opts.MaxNewTokens < 1 {
		return nil, fmt.Errorf("lm: generate: MaxNewTokens %d, want ≥ 1", opts.MaxNewTokens)
	}
	if !m.HasHead() {
		return nil, m.errNoHead()
	}
	eos := map[int32]bool{}
	if opts.EOS == nil {
		for _, e := range m.cfg.EOS {
			eos[int32(e)] = true
		}
	}
	for _, e := range opts.EOS {
		eos[e] = true
	}
	emb, mask, b, t, err := m.padded(prompts, 0)
	if err != nil {
		return nil, fmt.Errorf("lm: generate: %w", err)
	}
	n := 0
	for _, p := range prompts {
		n = max(n, len(p))
	}
	if err := m.cfg.CheckLength(n + opts.MaxNewTokens); err != nil {
		return nil, fmt.Errorf("%w (prompt of %d tokens + %d new)", err, n, opts.MaxNewTokens)
	}
	c := SeqBucket(max(t, n+opts.MaxNewTokens))
	lens := make([]int32, b)
	last := make([]int32, b)
	for i := range b {
		lens[i] = 1 // padding rows: one (zero) token
		if i < len(prompts) {
			lens[i] = int32(len(prompts[i]))
		}
		last[i] = lens[i] - 1
	}
	pre, err := eng.Exec(engine.Key{Name: m.scope + "/prefill", Bucket: fmt.Sprintf("%dx%dx%d", b, t, c)}, m.store,
		func(_ *model.Scope, in []*graph.Node) []*graph.Node { return m.prefillGraph(in[0], in[1], in[2], c) })
	if err != nil {
		return nil, err
	}
	outs, err := pre.Call(emb, mask, tensors.FromFlatDataAndDimensions(last, b))
	if err != nil {
		return nil, fmt.Errorf("lm: generate: prefill: %w", err)
	}
	var rng *rand.Rand
	if opts.Temperature > 0 {
		rng = rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	}
	penalty := opts.RepetitionPenalty > 0 && opts.RepetitionPenalty != 1
	res := make([][]int32, len(prompts))
	for i := range res {
		res[i] = []int32{}
	}
	pick := func(greedy, logits *tensors.Tensor) []int32 {
		ids := tensors.MustCopyFlatData[int32](greedy)
		if rng == nil && !penalty {
			return ids
		}
		lg := tensors.MustCopyFlatData[float32](logits)
		v := len(lg) / b
		for i := range min(len(ids), len(prompts)) {
			row := lg[i*v : (i+1)*v]
			if penalty {
				var prompt []int32
				if i < len(opts.PromptIDs) {
					prompt = opts.PromptIDs[i]
				}
				penalize(row, opts.RepetitionPenalty, prompt, res[i])
			}
			if rng == nil {
				ids[i] = argmax(row)
			} else {
				ids[i] = sampleTopP(row, opts.Temperature, opts.TopP, opts.TopK, rng)
			}
		}
		return ids
	}
	next := pick(outs[0], outs[1])
	engine.Finalize(outs[:2]...)
	caches := outs[2:] // keys of each layer, then values
	defer func() { engine.Finalize(caches...) }()
	donate := make([]bool, 3+len(caches))
	for i := 3; i < len(donate); i++ {
		donate[i] = true
	}
	cmask := make([]int32, b*c)
	for i := range b {
		for j := range int(lens[i]) {
			cmask[i*c+j] = 1
		}
	}
	done := make([]bool, len(prompts))
	var step *engine.Executable
	for s := 0; ; s++ {
		all := true
		for i := range prompts {
			if done[i] {
				continue
			}
			if eos[next[i]] {
				done[i] = true
				continue
			}
			res[i] = append(res[i], next[i])
			if len(res[i]) >= opts.MaxNewTokens || (opts.Stop != nil && opts.Stop(i, res[i])) {
				done[i] = true
				continue
			}
			all = false
		}
		if all {
			return res, nil
		}
		if step == nil {
			if step, err = eng.Exec(engine.Key{Name: m.scope + "/decode", Bucket: fmt.Sprintf("%dx%d", b, c)}, m.store,
				func(_ *model.Scope, in []*graph.Node) []*graph.Node {
					l := len(m.layers)
					return m.decodeGraph(in[0], in[1], in[2], in[3:3+l], in[3+l:3+2*l])
				}); err != nil {
				return nil, err
			}
		}
		slot := make([]int32, b)
		for i := range b {
			slot[i] = lens[i] + int32(s) // right padding: slot = position
			cmask[i*c+int(slot[i])] = 1
		}
		in := append([]*tensors.Tensor{tensors.FromFlatDataAndDimensions(next, b), tensors.FromFlatDataAndDimensions(slot, b),
			tensors.FromFlatDataAndDimensions(append([]int32(nil), cmask...), b, c)}, caches...)
		outs, err := step.CallDonating(donate, in...)
		engine.Finalize(in[:3]...)
		if err != nil {
			caches = nil // donated: no longer ours
			return nil, fmt.Errorf("lm: generate: step %d: %w", s, err)
		}
		next = pick(outs[0], outs[1])
		engine.Finalize(outs[0], outs[1])
		engine.Finalize(caches...) // donated; finalizing an emptied tensor is a no-op
		caches = outs[2:]
	}
}

// penalize applies a repetition penalty to logits in place: each token id in prompt
// or generated, once, has its logit divided by penalty when positive, multiplied
// when negative (transformers' RepetitionPenaltyLogitsProcessor).
func penalize(logits []float32, penalty float64, prompt, generated []int32) {
	seen := make(map[int32]bool, len(prompt)+len(generated))
	for _, ids := range [][]int32{prompt, generated} {
		for _, id := range ids {
			if seen[id] || id < 0 || int(id) >= len(logits) {
				continue
			}
			seen[id] = true
			if l := float64(logits[id]); l < 0 {
				logits[id] = float32(l * penalty)
			} else {
				logits[id] = float32(l / penalty)
			}
		}
	}
}

// argmax returns the index of the largest logit (the first of equals).
func argmax(logits []float32) int32 {
	best := 0
	for i, l := range logits {
		if l > logits[best] {
			best = i
		}
	}
	return int32(best)
}

// sampleTopP draws a token from softmax(logits / temperature) restricted to the topK
// most probable tokens (0: all), then to the nucleus of probability topP of those
// (at least the most probable token), in float64.
func sampleTopP(logits []float32, temperature, topP float64, topK int, rng *rand.Rand) int32 {
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = max(mx, float64(l))
	}
	p := make([]float64, len(logits))
	order := make([]int, len(logits))
	z := 0.0
	for i, l := range logits {
		p[i] = math.Exp((float64(l) - mx) / temperature)
		z += p[i]
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return p[order[a]] > p[order[b]] })
	if topK > 0 && topK < len(order) {
		order = order[:topK]
		z = 0
		for _, i := range order {
			z += p[i]
		}
	}
	keep, mass := len(order), 0.0
	if topP > 0 && topP < 1 {
		for k, i := range order {
			mass += p[i] / z
			if mass >= topP {
				keep = k + 1
				break
			}
		}
	}
	total := 0.0
	for _, i := range order[:keep] {
		total += p[i]
	}
	u := rng.Float64() * total
	for _, i := range order[:keep] {
		if u -= p[i]; u < 0 {
			return int32(i)
		}
	}
	return int32(order[keep-1])
}

// GenerateIDs is Generate on prompts of token ids.
func (m *Model) GenerateIDs(eng *engine.Engine, prompts [][]int32, opts GenerateOptions) ([][]int32, error) {
	seqs, err := m.embedAll(prompts)
	if err != nil {
		return nil, err
	}
	if opts.PromptIDs == nil {
		opts.PromptIDs = prompts
	}
	return m.Generate(eng, seqs, opts)
}

// prefillGraph runs the prompts embeds [B, T, H] under mask [B, T] and returns the
// greedy next ids [B] and logits [B, V] at positions last [B], and the key/value
// caches, one [B, C, KVHeads, HeadDim] per layer, keys first (padding slots and slots
// ≥ T zero).
func (m *Model) prefillGraph(embeds, mask, last *graph.Node, c int) []*graph.Node {
	g := embeds.Graph()
	dims := embeds.Shape().Dimensions
	bsz, t := dims[0], dims[1]
	real := graph.NotEqual(mask, graph.ScalarZero(g, mask.DType()))
	qi := graph.Iota(g, shapes.Make(dtypes.Int32, bsz, t, t), 1)
	ki := graph.Iota(g, shapes.Make(dtypes.Int32, bsz, t, t), 2)
	allowed := graph.LogicalAnd(m.causal(qi, ki), graph.BroadcastToDims(graph.InsertAxes(real, 1), bsz, t, t))
	positions := PositionsFromMask(mask)
	// Padding slots of the caches are zero, as the slots past T: decode adds each new
	// key and value into its (zero) slot.
	keep := graph.Reshape(graph.ConvertDType(real, m.dtype), bsz, t, 1, 1)
	var ks, vs []*graph.Node
	pad := func(x *graph.Node) *graph.Node {
		if c == t {
			return x
		}
		zs := graph.Zeros(g, shapes.Make(x.DType(), bsz, c-t, m.cfg.KVHeads, m.cfg.HeadDim))
		return graph.Concatenate([]*graph.Node{x, zs}, 1)
	}
	x := toDType(embeds, m.dtype)
	for i := range m.layers {
		x = m.block(&m.layers[i], x, positions, allowed, func(k, v *graph.Node) (*graph.Node, *graph.Node) {
			ks, vs = append(ks, pad(graph.Mul(k, keep))), append(vs, pad(graph.Mul(v, keep)))
			return k, v
		})
	}
	h := m.rmsNorm(x, m.norm)
	sel := graph.OneHot(last, t, h.DType())                          // [B, T]
	hl := DotGeneral(sel, []int{1}, []int{0}, h, []int{1}, []int{0}) // [B, H]
	logits := m.LMHead(hl)
	return append(append([]*graph.Node{graph.ArgMax(logits, -1, dtypes.Int32), logits}, ks...), vs...)
}

// decodeGraph runs one cached step: token ids [B] at cache slots (= positions) slot
// [B]; cmask [B, C] marks the filled slots (including slot); ks and vs are the layers'
// caches [B, C, KVHeads, HeadDim]. Returns the next ids, the logits and the updated
// caches (keys, then values). Each row's new key and value are added into its slot,
// which is still zero (each slot is written once): a scatter of one position per row
// and layer, done in place when the caches are donated (Generate donates them), where
// a masked blend would rewrite every slot of every layer per token.
func (m *Model) decodeGraph(ids, slot, cmask *graph.Node, ks, vs []*graph.Node) []*graph.Node {
	g := ids.Graph()
	bsz := ids.Shape().Dimensions[0]
	c := cmask.Shape().Dimensions[1]
	x := toDType(m.EmbedTokens(graph.Reshape(ids, bsz, 1)), m.dtype) // [B, 1, H]
	positions := graph.Reshape(slot, bsz, 1)
	ki := graph.Iota(g, shapes.Make(dtypes.Int32, bsz, 1, c), 2)
	allowed := graph.LogicalAnd(m.causal(graph.BroadcastToDims(graph.Reshape(slot, bsz, 1, 1), bsz, 1, c), ki), graph.InsertAxes(graph.NotEqual(cmask, graph.ScalarZero(g, cmask.DType())), 1))
	// Scatter indices (row, slot) [B, 2].
	at := graph.Concatenate([]*graph.Node{graph.Iota(g, shapes.Make(dtypes.Int32, bsz, 1), 0), graph.Reshape(slot, bsz, 1)}, 1)
	outK, outV := make([]*graph.Node, len(m.layers)), make([]*graph.Node, len(m.layers))
	for i := range m.layers {
		x = m.block(&m.layers[i], x, positions, allowed, func(k, v *graph.Node) (*graph.Node, *graph.Node) {
			// k, v [B, 1, KV, D] → updates [B, KV, D] at (row, slot).
			outK[i] = graph.ScatterSum(ks[i], at, graph.Squeeze(k, 1), true, true)
			outV[i] = graph.ScatterSum(vs[i], at, graph.Squeeze(v, 1), true, true)
			return outK[i], outV[i]
		})
	}
	logits := graph.Reshape(m.LMHead(m.rmsNorm(x, m.norm)), bsz, m.cfg.VocabSize)
	return append(append([]*graph.Node{graph.ArgMax(logits, -1, dtypes.Int32), logits}, outK...), outV...)
}
