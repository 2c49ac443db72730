package gretriever

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// TestPromptFromChatTemplate checks the tokens around the graph token: the LM's chat
// template when it has one (the user turn's opening before, its end and the
// assistant's opening after, the template's end of an answer as the label's end,
// rendered with enable_thinking false, the question trimmed where the template trims),
// G-Retriever's "<s>[INST]" … "[/INST]" for a base model; a checkpoint written before
// ChatTurn keeps eos_token as the label's end and no template variables.
func TestPromptFromChatTemplate(t *testing.T) {
	// A ChatML-like template whose turns end with <|endoftext|> (a special token of the
	// test tokenizer) and whose eos_token is another one, <|im_start|>: the label must
	// end as the template ends an answer, not with eos_token. Like Qwen3's, it opens
	// the answer with an empty think block when enable_thinking is false.
	chatml := `{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|endoftext|>\n' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% if enable_thinking is defined and enable_thinking is false %}{{ '<think></think>' }}{% endif %}{% endif %}`
	trims := `{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + (m.content | trim) + '<|endoftext|>' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`
	cases := []struct {
		name, tokConfig, format, chatTurn string
		head, tail                        string
		headIDs                           []int32 // before head's text
		wantFormat                        string
		end                               int32
		question                          string // the question's encoded text
	}{
		{name: "base model: G-Retriever's llama2", head: "[INST]", tail: "[/INST]", headIDs: []int32{lmtest.ImStart},
			wantFormat: lm.PromptLlama2, end: lmtest.EndOfText, chatTurn: ChatTurnAnswer, question: "Question: q\nAnswer: "},
		{name: "chat template", tokConfig: `{"chat_template": ` + quote(chatml) + `, "eos_token": "<|im_start|>"}`, chatTurn: ChatTurnAnswer,
			head: "<|im_start|>user\n", tail: "<|endoftext|>\n<|im_start|>assistant\n<think></think>", wantFormat: lm.PromptTemplate, end: lmtest.EndOfText,
			question: "Question: q\nAnswer: "},
		{name: "chat template, checkpoint before ChatTurn", tokConfig: `{"chat_template": ` + quote(chatml) + `, "eos_token": "<|im_start|>"}`,
			head: "<|im_start|>user\n", tail: "<|endoftext|>\n<|im_start|>assistant\n", wantFormat: lm.PromptTemplate, end: lmtest.ImStart,
			question: "Question: q\nAnswer: "},
		{name: "a template that trims", tokConfig: `{"chat_template": ` + quote(trims) + `}`, chatTurn: ChatTurnAnswer,
			head: "<|im_start|>user\n", tail: "<|endoftext|><|im_start|>assistant\n", wantFormat: lm.PromptTemplate, end: lmtest.EndOfText,
			question: "Question: q\nAnswer:"},
		{name: "explicit llama2 over a template", tokConfig: `{"chat_template": ` + quote(chatml) + `}`, format: lm.PromptLlama2, chatTurn: ChatTurnAnswer,
			head: "[INST]", tail: "[/INST]", headIDs: []int32{lmtest.ImStart}, wantFormat: lm.PromptLlama2, end: lmtest.EndOfText,
			question: "Question: q\nAnswer: "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := lmtest.Write(dir, lmtest.Spec{Seed: 1})
			require.NoError(t, err)
			if c.tokConfig != "" {
				require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(c.tokConfig), 0o644))
			}
			l, err := lm.Load(dir, model.NewStore(), lm.Options{})
			require.NoError(t, err)
			cfg := DefaultConfig(8)
			cfg.PromptFormat, cfg.ChatTurn = c.format, c.chatTurn
			m, err := New(l, cfg)
			require.NoError(t, err)
			head, err := l.Tokenizer.Encode(c.head, false)
			require.NoError(t, err)
			tail, err := l.Tokenizer.Encode(c.tail, false)
			require.NoError(t, err)
			assert.Equal(t, append(c.headIDs, head...), m.head)
			assert.Equal(t, tail, m.tail)
			assert.Equal(t, c.wantFormat, m.Config().PromptFormat)
			assert.Equal(t, []int32{c.end}, m.end)
			assert.Contains(t, m.stop, c.end, "generation stops where the label ends")
			e, err := m.encode(Example{Question: "q", Answer: "a"}, true)
			require.NoError(t, err)
			question, err := l.Tokenizer.Encode(c.question, false)
			require.NoError(t, err)
			assert.Equal(t, append(question, tail...), e.rest, "the question, then the prompt's tail closes the user turn")
			answer, err := l.Tokenizer.Encode("a", false)
			require.NoError(t, err)
			assert.Equal(t, append(answer, c.end), e.label, "the label is the answer and the end")
		})
	}
	dir := t.TempDir()
	_, err := lmtest.Write(dir, lmtest.Spec{Seed: 1})
	require.NoError(t, err)
	l, err := lm.Load(dir, model.NewStore(), lm.Options{})
	require.NoError(t, err)
	cfg := DefaultConfig(8)
	cfg.PromptFormat = lm.PromptTemplate
	_, err = New(l, cfg)
	require.ErrorContains(t, err, "has no chat template")
}

func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestLossScoresOnlyAnswerPositions builds the training graph (loss and a gradient)
// and checks that no tensor holds logits of every position ([B, T, V]): the hidden
// states of the answer positions are gathered before the LM head. The loss equals a
// float64 cross-entropy over the full logits of the same batch.
func TestLossScoresOnlyAnswerPositions(t *testing.T) {
	dir := t.TempDir()
	_, err := lmtest.Write(dir, lmtest.Spec{Seed: 2})
	require.NoError(t, err)
	l, err := lm.Load(dir, model.NewStore(), lm.Options{})
	require.NoError(t, err)
	cfg := DefaultConfig(8)
	cfg.ProjectorHidden = 16
	m, err := New(l, cfg)
	require.NoError(t, err)
	graphOf := func(seed float32) *kernels.Graph {
		x := make([]float32, 3*8)
		for i := range x {
			x[i] = seed * float32(i%5-2)
		}
		return &kernels.Graph{NumNodes: 3, Src: []int32{1, 2}, Dst: []int32{0, 0}, X: x, EdgeAttr: make([]float32, 2*8)}
	}
	exs := []Example{
		{Question: "who?", Answer: "the cat", Text: strings.Repeat("the cat at the inn ", 12), Graph: graphOf(0.3)},
		{Question: "what?", Answer: "in", Text: "at", Graph: graphOf(-0.2)},
	}
	x, err := m.makeBatch(exs)
	require.NoError(t, err)
	fn, err := m.LossFn(x)
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{})
	require.NoError(t, err)
	defer eng.Close()
	var dims [][]int
	exe, err := eng.Exec(engine.Key{Name: "test/answer-positions", Bucket: x.ShapeKey()}, m.store,
		func(scope *model.Scope, in []*graph.Node) []*graph.Node {
			scope.Store().SetTraining(in[0].Graph(), false) // BatchNorm's running statistics, as GraphTokens
			loss := fn(scope, in, false)
			grad := graph.Gradient(loss, m.vars[0].NodeValue(loss.Graph()))[0]
			for _, n := range loss.Graph().Nodes() {
				if n.Shape().Ok() {
					dims = append(dims, n.Shape().Dimensions)
				}
			}
			return []*graph.Node{loss, graph.ReduceAllSum(grad)}
		})
	require.NoError(t, err)
	in, err := x.Inputs()
	require.NoError(t, err)
	outs, err := exe.Call(in...)
	require.NoError(t, err)
	loss := float64(tensors.MustCopyFlatData[float32](outs[0])[0])

	v := l.Config().VocabSize
	require.Greater(t, x.b*x.t, len(x.at), "the test needs more positions than labels")
	sawHead := false
	for _, d := range dims {
		size := 1
		for _, n := range d {
			size *= n
		}
		sawHead = sawHead || slices.Equal(d, []int{len(x.at), v})
		if slices.Contains(d, v) && size > v*v { // beyond the [V, H] head and [P, V] logits
			assert.LessOrEqual(t, size, len(x.at)*v, "a tensor of shape %v holds more than the answer positions' logits", d)
		}
		assert.NotEqual(t, x.b*x.t*v, size, "a tensor of shape %v has the size of [B, T, V]", d)
	}
	assert.True(t, sawHead, "the [P, V] logits of the answer positions are in the graph")

	// Reference: every position's logits from the LM, the cross-entropy of the
	// answer positions in float64.
	seqs := make([][][]float32, len(exs))
	toks, err := m.GraphTokens(eng, exs)
	require.NoError(t, err)
	for i, ex := range exs {
		e, err := m.encode(ex, true)
		require.NoError(t, err)
		seqs[i], err = l.Splice(lm.Piece{IDs: m.head}, lm.Piece{Embeds: [][]float32{toks[i]}}, lm.Piece{IDs: e.rest}, lm.Piece{IDs: e.label})
		require.NoError(t, err)
	}
	logits, err := l.ForwardEmbeds(eng, seqs)
	require.NoError(t, err)
	var sum float64
	n := 0
	for k, at := range x.at {
		if x.labels[k] == -100 {
			continue
		}
		row := logits[int(at)/x.t][int(at)%x.t]
		mx := math.Inf(-1)
		for _, z := range row {
			mx = max(mx, float64(z))
		}
		z := 0.0
		for _, q := range row {
			z += math.Exp(float64(q) - mx)
		}
		sum += mx + math.Log(z) - float64(row[x.labels[k]])
		n++
	}
	assert.Equal(t, x.tokens, n)
	assert.InDelta(t, sum/float64(n), loss, 1e-4*math.Max(1, sum/float64(n)))
}
