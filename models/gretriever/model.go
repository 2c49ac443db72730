package gretriever

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/train"
)

// Example is one question with its retrieved subgraph.
type Example struct {
	Question string
	Answer   string         // training label (Label of the gold answers); unused when answering
	Graph    *kernels.Graph // node features = node-text embeddings, edge features = edge-text embeddings
	Text     string         // the subgraph textualised (CSV by default), used by the variants WithText
}

// Label is G-Retriever's training label of a question's gold answers: joined with
// "|" and lower-cased.
func Label(answers []string) string { return strings.ToLower(strings.Join(answers, "|")) }

// Model is G-Retriever over a frozen LM. Its trainable variables live in the LM's
// store (the encoder under /gt, the projector under /gretriever); it is a train.Task.
type Model struct {
	cfg   Config
	lm    *lm.Model
	store *model.Store
	gt    *models.GraphTransformer // nil in the linear variants
	proj1 *models.Linear           // d → ProjectorHidden (nil in the linear variants)
	proj2 *models.Linear           // ProjectorHidden → LM hidden; the linear variants' only layer (d → LM hidden)
	vars  []*model.Variable
	bk    *kernels.Bucketer
	head  []int32 // the prompt before the user's content: the graph token follows
	tail  []int32 // the prompt after it (the turn's end, the assistant's opening)
	end   []int32 // what ends a label: the template's end of an answer, or EOS
	stop  []int32 // generation stops at any of these: the LM's EOS ids and end's last
	trim  bool    // the template trims the user's content: so is the spliced question
}

// New creates a G-Retriever model in the LM's store (which must not already hold
// one). cfg.LMHidden is set from the LM.
func New(l *lm.Model, cfg Config) (*Model, error) {
	if l == nil || l.Tokenizer == nil {
		return nil, errors.New("gretriever: need an LM with its tokenizer")
	}
	if !l.HasHead() {
		return nil, errors.New("gretriever: the LM has no lm_head.weight (a bare decoder, such as an embedding model): it cannot read or answer")
	}
	lc := l.Config()
	if cfg.LMHidden != 0 && cfg.LMHidden != lc.Hidden {
		return nil, fmt.Errorf("gretriever: the projector was built for an LM of width %d; this LM has %d", cfg.LMHidden, lc.Hidden)
	}
	cfg.LMHidden = lc.Hidden
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(lc.EOS) == 0 {
		return nil, errors.New("gretriever: the LM's config names no EOS token")
	}
	m := &Model{cfg: cfg, lm: l, store: l.Store()}
	d := cfg.GT.InputDim
	p := models.NewParams(m.store.RootScope().In("gretriever"), cfg.Seed)
	if cfg.encoder() {
		gt, err := models.NewGraphTransformer(m.store, cfg.GT)
		if err != nil {
			return nil, fmt.Errorf("gretriever: %w", err)
		}
		m.gt = gt
		m.vars = append(m.vars, gt.Variables()...)
		m.proj1 = models.NewLinear(p.Sub("projector0"), cfg.GT.Out, cfg.ProjectorHidden, true)
		m.proj2 = models.NewLinear(p.Sub("projector2"), cfg.ProjectorHidden, lc.Hidden, true)
	} else {
		m.proj2 = models.NewLinear(p.Sub("linear"), d, lc.Hidden, true)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	m.vars = append(m.vars, p.Variables()...)
	if cfg.LoRA > 0 {
		if _, has := l.LoRA(); has {
			return nil, errors.New("gretriever: the LM already carries LoRA adapters; load a fresh LM")
		}
		if err := l.AddLoRA(lm.DefaultLoRA(cfg.LoRA), cfg.Seed); err != nil {
			return nil, fmt.Errorf("gretriever: %w", err)
		}
		m.vars = append(m.vars, l.LoRAVariables()...)
	}
	if err := m.prompt(l); err != nil {
		return nil, err
	}
	var err error
	// The linear variants ignore edge features but take the same graphs.
	spec := kernels.Spec{FeatDim: d, EdgeDim: cfg.GT.EdgeDim, NumRelations: 1, NumNodeTypes: 1}
	if m.bk, err = newBucketer(spec, max(cfg.BatchSize, cfg.EvalBatchSize)); err != nil {
		return nil, err
	}
	return m, nil
}

// prompt resolves cfg.PromptFormat and encodes the user turn around its content:
// head = the rendered text before it (BOS and the turn's opening), tail = after it.
func (m *Model) prompt(l *lm.Model) error {
	format := m.cfg.PromptFormat
	if format == "" {
		format = lm.PromptLlama2
		if l.TokConfig.ChatTemplate != "" {
			format = lm.PromptTemplate
		}
	}
	chat, err := l.ChatTemplate(format)
	if err != nil {
		return fmt.Errorf("gretriever: %w", err)
	}
	var extra map[string]any
	answerTurn := format == lm.PromptTemplate && m.cfg.ChatTurn == ChatTurnAnswer
	if answerTurn {
		extra = map[string]any{"enable_thinking": false}
	}
	turn, err := chat.UserTurn("", extra)
	if err != nil {
		return fmt.Errorf("gretriever: %w", err)
	}
	before, after := turn.Before, turn.After
	if err := m.labelEnd(l, turn, answerTurn); err != nil {
		return err
	}
	m.trim = answerTurn && turn.Trims
	if m.head, err = l.Tokenizer.Encode(before, false); err != nil {
		return fmt.Errorf("gretriever: prompt: %w", err)
	}
	if len(m.head) == 0 {
		return fmt.Errorf("gretriever: the %s prompt writes nothing before the user's message and the LM has no BOS token: the graph token needs something before it", format)
	}
	if m.tail, err = l.Tokenizer.Encode(after, false); err != nil {
		return fmt.Errorf("gretriever: prompt: %w", err)
	}
	m.cfg.PromptFormat = format
	return nil
}

// newBucketer pads graph batches to power-of-two node and edge counts (from 16) and
// graph slots (1 … the larger batch size), so compiles stay few.
func newBucketer(spec kernels.Spec, maxGraphs int) (*kernels.Bucketer, error) {
	var bs []kernels.Bucket
	for g := 1; ; g *= 2 {
		for n := 16; n <= 1<<17; n *= 2 {
			for e := 16; e <= 1<<19; e *= 2 {
				bs = append(bs, kernels.Bucket{Nodes: n, Edges: e, Graphs: g})
			}
		}
		if g >= maxGraphs {
			break
		}
	}
	return kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Buckets: bs})
}

// Kind implements train.Task.
func (m *Model) Kind() string { return Kind }

// Config returns the configuration.
func (m *Model) Config() Config { return m.cfg }

// ConfigValue implements models.Checkpointable.
func (m *Model) ConfigValue() any { return m.cfg }

// Store returns the store holding the LM's and the model's variables.
func (m *Model) Store() *model.Store { return m.store }

// Variables returns the trainable variables: the encoder's (with its BatchNorm
// statistics) and the projector's. The LM's are frozen and not among them.
func (m *Model) Variables() []*model.Variable { return m.vars }

// LM returns the frozen language model.
func (m *Model) LM() *lm.Model { return m.lm }

// Save writes the encoder and projector weights and the configuration to path
// atomically (the LM is not saved: it is loaded from its directory).
func (m *Model) Save(path string, meta map[string]string) error {
	return models.SaveVariables(path, Kind, m.cfg, m.store, m.vars, meta)
}

// SaveLoRA writes the LM's adapters alone in PEFT's layout into dir (LoRA variant).
func (m *Model) SaveLoRA(dir string) error { return m.lm.SaveLoRA(dir) }

// Load rebuilds a model saved by Save over the frozen LM l (which must have the
// width the model was trained for) and returns it with the checkpoint's metadata.
func Load(path string, l *lm.Model) (*Model, map[string]string, error) {
	var cfg Config
	if err := models.ConfigOf(path, Kind, &cfg); err != nil {
		return nil, nil, err
	}
	if cfg.PromptFormat == "" {
		cfg.PromptFormat = lm.PromptLlama2 // written before the field: G-Retriever's [INST] prompt
	}
	m, err := New(l, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("gretriever: %s: %w", path, err)
	}
	meta, err := models.LoadVariables(path, Kind, m.store, m.vars, nil)
	if err != nil {
		return nil, nil, err
	}
	return m, meta, nil
}

// LoadInto reads the weights of a checkpoint of the same configuration into m (to
// resume training) and returns its metadata.
func (m *Model) LoadInto(path string) (map[string]string, error) {
	var cfg Config
	if err := models.ConfigOf(path, Kind, &cfg); err != nil {
		return nil, err
	}
	if cfg.Variant != m.cfg.Variant || cfg.GT != m.cfg.GT || cfg.ProjectorHidden != m.cfg.ProjectorHidden || cfg.LMHidden != m.cfg.LMHidden || cfg.LoRA != m.cfg.LoRA {
		return nil, fmt.Errorf("gretriever: %s holds a %s model (encoder %+v, projector %d, LM width %d); this run builds %s (%+v, %d, %d)",
			path, cfg.Variant, cfg.GT, cfg.ProjectorHidden, cfg.LMHidden, m.cfg.Variant, m.cfg.GT, m.cfg.ProjectorHidden, m.cfg.LMHidden)
	}
	if cfg.PromptFormat == "" {
		cfg.PromptFormat = lm.PromptLlama2 // written before the field (as Load)
	}
	if cfg.TextForm == "" {
		cfg.TextForm = TextCSV
	}
	// What the model reads and the batches it trains on must be the run's own.
	for _, d := range []struct{ name, was, now string }{
		{"prompt format", cfg.PromptFormat, m.cfg.PromptFormat}, {"chat turn", cfg.ChatTurn, m.cfg.ChatTurn},
		{"subgraph text form", cfg.TextForm, m.cfg.TextForm}, {"question format", cfg.Question, m.cfg.Question},
		{"batch size", fmt.Sprint(cfg.BatchSize), fmt.Sprint(m.cfg.BatchSize)},
		{"subgraph text tokens (--max-text-tokens)", fmt.Sprint(cfg.MaxTextTokens), fmt.Sprint(m.cfg.MaxTextTokens)},
		{"answer tokens (--max-new-tokens)", fmt.Sprint(cfg.MaxNewTokens), fmt.Sprint(m.cfg.MaxNewTokens)},
	} {
		if d.was != d.now {
			return nil, fmt.Errorf("gretriever: %s was trained with %s %q; this run has %q", path, d.name, d.was, d.now)
		}
	}
	return models.LoadVariables(path, Kind, m.store, m.vars, nil)
}

// graphTokens returns each sequence row's graph token [B, LMHidden]: the readout of
// the graph in slot[b], projected.
func (m *Model) graphTokens(bn *kernels.BatchNodes, slot *graph.Node, training bool) *graph.Node {
	var h *graph.Node
	if m.gt != nil {
		h = m.proj2.Apply(graph.Sigmoid(m.proj1.Apply(m.gt.Readout(bn, training))))
	} else {
		h = m.proj2.Apply(kernels.MeanPool(bn, bn.X))
	}
	return graph.Gather(h, graph.InsertAxes(slot, -1)) // [B, H]
}

// splice replaces position p of embeds [B, T, H] by tok [B, H].
func splice(embeds, tok *graph.Node, p int) *graph.Node {
	g := embeds.Graph()
	dims := embeds.Shape().Dimensions
	at := graph.Equal(graph.Iota(g, embeds.Shape(), 1), graph.Scalar(g, embeds.DType(), float64(p)))
	t := graph.BroadcastToDims(graph.InsertAxes(tok, 1), dims...)
	return graph.Where(at, t, embeds)
}

// batch is one padded training batch: the graphs and the right-padded token rows.
type batch struct {
	g         *kernels.Batch
	ids, mask []int32 // [B, T]
	// at [P] are the flat positions b·T + t whose logits are scored, against
	// labels [P] (the next token; IgnoreIndex on the padding of P's bucket).
	at, labels []int32
	slot       []int32 // [B]
	b, t, pos  int     // rows, length, graph-token position
	tokens     int     // label tokens (for weighting losses)
}

func (x *batch) Inputs() ([]*tensors.Tensor, error) {
	return append(x.g.Tensors(),
		tensors.FromFlatDataAndDimensions(x.ids, x.b, x.t),
		tensors.FromFlatDataAndDimensions(x.mask, x.b, x.t),
		tensors.FromFlatDataAndDimensions(x.at, len(x.at)),
		tensors.FromFlatDataAndDimensions(x.labels, len(x.labels)),
		tensors.FromFlatDataAndDimensions(x.slot, x.b)), nil
}

func (x *batch) ShapeKey() string {
	return fmt.Sprintf("%s/%dx%dp%dl%d", x.g.ShapeKey(), x.b, x.t, x.pos, len(x.at))
}

// labelBucket pads the number of scored positions to a power of two from 8, so that
// compiles stay few.
func labelBucket(n int) int {
	b := 8
	for b < n {
		b *= 2
	}
	return b
}

// LossFn implements train.Task: the mean next-token cross-entropy over the answer and
// EOS tokens, the graph token spliced at the start of the user turn.
func (m *Model) LossFn(b train.Batch) (func(*model.Scope, []*graph.Node, bool) *graph.Node, error) {
	x, ok := b.(*batch)
	if !ok {
		return nil, fmt.Errorf("gretriever: want a gretriever batch, got %T", b)
	}
	spec, layout, pos := x.g.Spec, x.g.Layout, x.pos
	nb := kernels.NumInputs(spec, layout)
	return func(_ *model.Scope, in []*graph.Node, training bool) *graph.Node {
		bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
		if err != nil {
			panic(err)
		}
		ids, mask, at, labels, slot := in[nb], in[nb+1], in[nb+2], in[nb+3], in[nb+4]
		emb := splice(m.lm.EmbedTokens(ids), m.graphTokens(bn, slot, training), pos)
		// Only the answer positions reach the LM head: [P, V] logits, never [B, T, V].
		hidden := m.lm.Hidden
		if m.cfg.GradientCheckpointing {
			hidden = m.lm.HiddenCheckpointed
		}
		h := hidden(emb, mask)
		dims := h.Shape().Dimensions
		h = graph.Gather(graph.Reshape(h, dims[0]*dims[1], dims[2]), graph.InsertAxes(at, -1)) // [P, H]
		return train.TokenCE(m.lm.LMHead(h), labels)
	}, nil
}

// encoded is an example's token pieces around the graph token.
type encoded struct {
	rest  []int32 // text tokens (truncated) + question + the prompt's tail
	label []int32 // answer (truncated to MaxNewTokens) + EOS
}

func (m *Model) encode(ex Example, withLabel bool) (encoded, error) {
	var e encoded
	tok := m.lm.Tokenizer
	if m.cfg.WithText() && ex.Text != "" {
		ids, err := tok.Encode(ex.Text, false)
		if err != nil {
			return e, fmt.Errorf("gretriever: subgraph text: %w", err)
		}
		e.rest = append(e.rest, ids[:min(len(ids), m.cfg.MaxTextTokens)]...)
	}
	question := fmt.Sprintf(m.cfg.Question, ex.Question)
	if m.trim { // the template would have trimmed it ("Answer: " loses its space)
		question = strings.TrimRightFunc(question, unicode.IsSpace)
	}
	q, err := tok.Encode(question, false)
	if err != nil {
		return e, fmt.Errorf("gretriever: question: %w", err)
	}
	e.rest = append(append(e.rest, q...), m.tail...)
	if withLabel {
		a, err := tok.Encode(ex.Answer, false)
		if err != nil {
			return e, fmt.Errorf("gretriever: answer: %w", err)
		}
		e.label = append(a[:min(len(a), m.cfg.MaxNewTokens):min(len(a), m.cfg.MaxNewTokens)], m.end...)
	}
	return e, nil
}

// labelEnd sets what ends a label and where generation stops. G-Retriever's label
// is the answer and EOS (eos_token, else the config's first EOS id); with an answer
// turn of the LM's chat template, it ends as the template ends an assistant's answer:
// its tokens through the first that stops generation (an EOS id of the config or
// eos_token), or the first special token when none does (which then stops too).
func (m *Model) labelEnd(l *lm.Model, turn lm.Turn, answerTurn bool) error {
	lc := l.Config()
	stops := map[int32]bool{}
	for _, e := range lc.EOS {
		stops[int32(e)] = true
	}
	eos := int32(lc.EOS[0])
	if id, ok := l.Tokenizer.TokenID(l.TokConfig.Tokens["eos_token"]); ok {
		eos = id
	}
	m.end = []int32{eos}
	if answerTurn && turn.End != "" {
		ids, err := l.Tokenizer.Encode(turn.End, false)
		if err != nil {
			return fmt.Errorf("gretriever: prompt: %w", err)
		}
		stops[eos] = true
		for i, id := range ids {
			if stops[id] || l.Tokenizer.IsSpecial(id) {
				m.end = ids[:i+1]
				break
			}
		}
	}
	m.stop = m.stop[:0]
	for _, e := range lc.EOS {
		m.stop = append(m.stop, int32(e))
	}
	m.stop = append(m.stop, m.end[len(m.end)-1])
	return nil
}

// makeBatch packs examples into one padded batch.
func (m *Model) makeBatch(exs []Example) (*batch, error) {
	if len(exs) == 0 {
		return nil, errors.New("gretriever: empty batch")
	}
	gs := make([]*kernels.Graph, len(exs))
	encs := make([]encoded, len(exs))
	n := 0
	for i, ex := range exs {
		if ex.Graph == nil {
			return nil, fmt.Errorf("gretriever: example %d (%q) has no graph", i, ex.Question)
		}
		gs[i] = ex.Graph
		var err error
		if encs[i], err = m.encode(ex, true); err != nil {
			return nil, err
		}
		n = max(n, len(m.head)+1+len(encs[i].rest)+len(encs[i].label))
	}
	g, err := m.bk.Batch(gs)
	if err != nil {
		return nil, fmt.Errorf("gretriever: %w", err)
	}
	x := &batch{g: g, b: lm.BatchBucket(len(exs)), t: lm.SeqBucket(n), pos: len(m.head)}
	x.ids, x.mask, x.slot = make([]int32, x.b*x.t), make([]int32, x.b*x.t), make([]int32, x.b)
	for i, e := range encs {
		row := append(append(append(append([]int32(nil), m.head...), 0), e.rest...), e.label...)
		first := len(row) - len(e.label) // first label position
		for j, id := range row {
			x.ids[i*x.t+j], x.mask[i*x.t+j] = id, 1
			if j+1 >= first && j+1 < len(row) {
				x.at, x.labels = append(x.at, int32(i*x.t+j)), append(x.labels, row[j+1]) // logits at j predict token j+1
			}
		}
		x.tokens += len(e.label)
		x.slot[i] = g.GraphSlot[i]
	}
	for len(x.at) < labelBucket(x.tokens) {
		x.at, x.labels = append(x.at, 0), append(x.labels, train.IgnoreIndex)
	}
	return x, nil
}

// Loss returns the mean answer-token cross-entropy over examples (batches of
// EvalBatchSize, weighted by their answer tokens), the model in evaluation mode.
func (m *Model) Loss(eng *engine.Engine, exs []Example) (float64, error) {
	var sum float64
	var count int
	for lo := 0; lo < len(exs); lo += m.cfg.EvalBatchSize {
		x, err := m.makeBatch(exs[lo:min(lo+m.cfg.EvalBatchSize, len(exs))])
		if err != nil {
			return 0, err
		}
		fn, _ := m.LossFn(x)
		exe, err := eng.Exec(engine.Key{Name: Kind + "/loss", Bucket: x.ShapeKey()}, m.store,
			func(scope *model.Scope, in []*graph.Node) []*graph.Node {
				scope.Store().SetTraining(in[0].Graph(), false)
				return []*graph.Node{fn(scope, in, false)}
			})
		if err != nil {
			return 0, err
		}
		in, _ := x.Inputs()
		outs, err := exe.Call(in...)
		engine.Finalize(in...)
		if err != nil {
			return 0, fmt.Errorf("gretriever: loss: %w", err)
		}
		sum += float64(tensors.MustCopyFlatData[float32](outs[0])[0]) * float64(x.tokens)
		count += x.tokens
		engine.Finalize(outs...)
	}
	if count == 0 {
		return 0, errors.New("gretriever: no examples")
	}
	return sum / float64(count), nil
}

// GraphTokens returns the graph token of each example's graph, [len(exs)][LMHidden].
func (m *Model) GraphTokens(eng *engine.Engine, exs []Example) ([][]float32, error) {
	gs := make([]*kernels.Graph, len(exs))
	for i, ex := range exs {
		if ex.Graph == nil {
			return nil, fmt.Errorf("gretriever: example %d (%q) has no graph", i, ex.Question)
		}
		gs[i] = ex.Graph
	}
	g, err := m.bk.Batch(gs)
	if err != nil {
		return nil, fmt.Errorf("gretriever: %w", err)
	}
	b := lm.BatchBucket(len(exs))
	slot := make([]int32, b)
	copy(slot, g.GraphSlot)
	spec, layout := g.Spec, g.Layout
	nb := kernels.NumInputs(spec, layout)
	exe, err := eng.Exec(engine.Key{Name: Kind + "/token", Bucket: fmt.Sprintf("%s/%d", g.ShapeKey(), b)}, m.store,
		func(scope *model.Scope, in []*graph.Node) []*graph.Node {
			scope.Store().SetTraining(in[0].Graph(), false)
			bn, err := kernels.NewBatchNodes(spec, layout, in[:nb])
			if err != nil {
				panic(err)
			}
			return []*graph.Node{graph.ConvertDType(m.graphTokens(bn, in[nb], false), dtypes.Float32)}
		})
	if err != nil {
		return nil, err
	}
	in := append(g.Tensors(), tensors.FromFlatDataAndDimensions(slot, b))
	outs, err := exe.Call(in...)
	engine.Finalize(in...)
	if err != nil {
		return nil, fmt.Errorf("gretriever: graph token: %w", err)
	}
	defer engine.Finalize(outs...)
	flat := tensors.MustCopyFlatData[float32](outs[0])
	h := m.cfg.LMHidden
	res := make([][]float32, len(exs))
	for i := range exs {
		res[i] = flat[i*h : (i+1)*h]
	}
	return res, nil
}

// Answer generates each example's answer greedily (at most MaxNewTokens tokens, in
// batches of EvalBatchSize): the prompt's head, the graph token, the textualised
// subgraph (variants WithText), the question, the prompt's tail.
func (m *Model) Answer(eng *engine.Engine, exs []Example) ([]string, error) {
	return m.answer(eng, exs, true)
}

// AnswerWithoutGraphToken generates answers from the same prompts with the graph
// token left out: the frozen LM alone (seed 004's "PCST as plain text" ablation for
// the variants WithText, the bare LM otherwise).
func (m *Model) AnswerWithoutGraphToken(eng *engine.Engine, exs []Example) ([]string, error) {
	return m.answer(eng, exs, false)
}

func (m *Model) answer(eng *engine.Engine, exs []Example, withToken bool) ([]string, error) {
	out := make([]string, 0, len(exs))
	for lo := 0; lo < len(exs); lo += m.cfg.EvalBatchSize {
		part := exs[lo:min(lo+m.cfg.EvalBatchSize, len(exs))]
		var toks [][]float32
		if withToken {
			var err error
			if toks, err = m.GraphTokens(eng, part); err != nil {
				return nil, err
			}
		}
		prompts := make([][][]float32, len(part))
		for i, ex := range part {
			e, err := m.encode(ex, false)
			if err != nil {
				return nil, err
			}
			pieces := []lm.Piece{{IDs: m.head}}
			if withToken {
				pieces = append(pieces, lm.Piece{Embeds: [][]float32{toks[i]}})
			}
			if prompts[i], err = m.lm.Splice(append(pieces, lm.Piece{IDs: e.rest})...); err != nil {
				return nil, err
			}
		}
		ids, err := m.lm.Generate(eng, prompts, lm.GenerateOptions{MaxNewTokens: m.cfg.MaxNewTokens, EOS: m.stop})
		if err != nil {
			return nil, fmt.Errorf("gretriever: %w", err)
		}
		for _, s := range ids {
			text, err := m.lm.Tokenizer.Decode(s, true)
			if err != nil {
				return nil, fmt.Errorf("gretriever: decoding an answer: %w", err)
			}
			out = append(out, strings.TrimSpace(text))
		}
	}
	return out, nil
}
