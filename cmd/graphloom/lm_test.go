package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/encoder"
	"github.com/graphloom/graphloom/models/encoder/encodertest"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// sharedTokenizers holds real tokenizer files with transformers' outputs on them.
const sharedTokenizers = "../../../shared/data/models/tokenizers"

func sharedTokenizerDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(sharedTokenizers, name)
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		t.Skipf("%s absent (needs ../shared beside the checkout): %v", dir, err)
	}
	return dir
}

// TestLMTokenizeMatchesTransformers runs `lm tokenize` on texts of expected.json and
// compares with the ids transformers.js produces from the same files.
func TestLMTokenizeMatchesTransformers(t *testing.T) {
	for _, name := range []string{"llama3", "qwen3", "mistral-sp", "bert-minilm"} {
		t.Run(name, func(t *testing.T) {
			dir := sharedTokenizerDir(t, name)
			var cases []struct {
				Text    string  `json:"text"`
				IDs     []int32 `json:"ids"`
				Special []int32 `json:"ids_with_special_tokens"`
			}
			data, err := os.ReadFile(filepath.Join(dir, "expected.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &cases))
			picks := []int{0, 4, 19, 29} // plain, newlines, special markers, emoji
			if name == "bert-minilm" {   // every case: WordPiece is new and its normaliser has the most rules
				picks = picks[:0]
				for i := range cases {
					picks = append(picks, i)
				}
			}
			for _, i := range picks {
				c := cases[i]
				r := run(t, nil, "lm", "tokenize", "--lm", dir, "--json", c.Text)
				require.Equal(t, 0, r.code, r.stderr)
				got := []int32{}
				require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
				assert.Equal(t, c.IDs, got, "%q", c.Text)
				r = run(t, nil, "lm", "tokenize", "--lm", dir, "--special", c.Text)
				require.Equal(t, 0, r.code, r.stderr)
				var want []string
				for _, id := range c.Special {
					want = append(want, strconv.Itoa(int(id)))
				}
				assert.Equal(t, strings.Join(want, " ")+"\n", r.stdout, "%q with special tokens", c.Text)
			}
		})
	}
}

// TestLMTokenizeUnigram runs `lm tokenize` on a committed Unigram fixture (XLM-R's
// layout, Precompiled charsmap) and compares with transformers.js's ids for the text
// that exercises the charsmap most (full-width forms, ligatures, circled digits).
func TestLMTokenizeUnigram(t *testing.T) {
	dir := filepath.Join("..", "..", "models", "lm", "testdata", "unigram", "xlmr")
	type unigramCase struct {
		Text    string  `json:"text"`
		IDs     []int32 `json:"ids"`
		Special []int32 `json:"ids_with_special_tokens"`
	}
	var cases []unigramCase
	data, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &cases))
	i := slices.IndexFunc(cases, func(c unigramCase) bool { return strings.HasPrefix(c.Text, "Ｆｕｌｌｗｉｄｔｈ") })
	require.GreaterOrEqual(t, i, 0, "the full-width case of expected.json")
	c := cases[i]
	r := run(t, nil, "lm", "tokenize", "--lm", dir, "--json", c.Text)
	require.Equal(t, 0, r.code, r.stderr)
	got := []int32{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, c.IDs, got)
	r = run(t, nil, "lm", "tokenize", "--lm", dir, "--special", "--json", c.Text)
	require.Equal(t, 0, r.code, r.stderr)
	got = []int32{}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got), r.stdout)
	assert.Equal(t, c.Special, got)
}

// TestLMPromptMatchesApplyChatTemplate prints every conversation of chat.json with
// `lm prompt` and compares it byte for byte with apply_chat_template's rendering.
func TestLMPromptMatchesApplyChatTemplate(t *testing.T) {
	for _, name := range []string{"llama3", "qwen3"} {
		t.Run(name, func(t *testing.T) {
			dir := sharedTokenizerDir(t, name)
			var cases []struct {
				Messages json.RawMessage `json:"messages"`
				Gen      bool            `json:"add_generation_prompt"`
				Prompt   string          `json:"prompt"`
			}
			data, err := os.ReadFile(filepath.Join(dir, "chat.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &cases))
			for i, c := range cases {
				path := filepath.Join(t.TempDir(), "m.json")
				require.NoError(t, os.WriteFile(path, c.Messages, 0o644))
				r := run(t, nil, "lm", "prompt", "--lm", dir, "--messages", path, "--add-generation-prompt="+strconv.FormatBool(c.Gen))
				require.Equal(t, 0, r.code, r.stderr)
				assert.Equal(t, c.Prompt, r.stdout, "conversation %d", i)
			}
		})
	}
}

// TestLMPromptTemplateVars: --template-var passes apply_chat_template's keyword
// arguments; Qwen3's enable_thinking=false opens the answer with an empty think
// block (its documented non-thinking mode), and a malformed one is a usage error.
func TestLMPromptTemplateVars(t *testing.T) {
	dir := sharedTokenizerDir(t, "qwen3")
	path := filepath.Join(t.TempDir(), "m.json")
	require.NoError(t, os.WriteFile(path, []byte(`[{"role":"user","content":"Who bought the Meridian in 1801?"}]`), 0o644))
	want := "<|im_start|>user\nWho bought the Meridian in 1801?<|im_end|>\n<|im_start|>assistant\n"
	r := run(t, nil, "lm", "prompt", "--lm", dir, "--messages", path, "--add-generation-prompt")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, want, r.stdout)
	r = run(t, nil, "lm", "prompt", "--lm", dir, "--messages", path, "--add-generation-prompt", "--template-var", "enable_thinking=false")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, want+"<think>\n\n</think>\n\n", r.stdout)
	r = run(t, nil, "lm", "prompt", "--lm", dir, "--messages", path, "--template-var", "enable_thinking")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, `--template-var "enable_thinking": want KEY=VALUE`)
}

func TestLMCommandErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := lmtest.Write(dir, lmtest.Spec{Seed: 3})
	require.NoError(t, err)
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`[{"role":"user","content":"hi"},{"role":"user","content":7}]`), 0o644))
	good := filepath.Join(t.TempDir(), "good.json")
	require.NoError(t, os.WriteFile(good, []byte(`[{"role":"user","content":"hi"}]`), 0o644))
	cases := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no --lm", []string{"lm", "tokenize", "x"}, 2, "--lm is required"},
		{"--lm not a directory", []string{"lm", "tokenize", "--lm", good, "x"}, 2, "want a local Hugging Face model directory"},
		{"bad message", []string{"lm", "prompt", "--lm", dir, "--messages", bad}, 2, `bad.json: message 2: field "content": want a string, got a number`},
		{"base model without a template", []string{"lm", "prompt", "--lm", dir, "--messages", good}, 1, "has no chat template"},
		{"unknown prompt format", []string{"lm", "prompt", "--lm", dir, "--messages", good, "--prompt-format", "alpaca"}, 2, "want one of template, llama2, chatml, plain"},
		{"both messages and prompt", []string{"lm", "generate", "--lm", dir, "--messages", good, "the cat"}, 2, "either --messages FILE or a PROMPT"},
		{"top-p zero", []string{"lm", "generate", "--lm", dir, "--temperature", "1", "--top-p", "0", "the"}, 2, "--top-p"},
		{"bad id", []string{"lm", "detokenize", "--lm", dir, "12", "x7"}, 2, `argument 2: "x7" is not a token id`},
		{"id out of the vocabulary", []string{"lm", "detokenize", "--lm", dir, "99999"}, 1, "id 99999 out of the vocabulary"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := run(t, nil, c.args...)
			assert.Equal(t, c.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, c.msg)
		})
	}
}

// TestLMInfoAndGenerate checks `lm info` against the weights the test wrote and `lm
// generate`'s greedy tokens against the argmax of a full forward pass over the prompt
// and the tokens generated so far (no cache).
func TestLMInfoAndGenerate(t *testing.T) {
	dir := t.TempDir()
	tiny, err := lmtest.Write(dir, lmtest.Spec{ModelType: "qwen3", HeadDim: 32, BF16: true, Shards: 2, Seed: 5})
	require.NoError(t, err)
	var params int64
	for _, w := range tiny.Weights {
		n := int64(1)
		for _, d := range w.Shape {
			n *= int64(d)
		}
		params += n
	}
	r := run(t, nil, "lm", "info", "--lm", dir, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var info lm.Info
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	assert.Equal(t, params, info.Parameters)
	assert.Equal(t, map[string]int{"BF16": len(tiny.Weights)}, info.StoredDTypes)
	assert.Equal(t, "qwen3", info.ModelType)
	assert.Equal(t, 32, info.HeadDim)
	assert.Equal(t, tiny.Vocab, info.TokenizerVoc)
	assert.Equal(t, []int{tiny.EOS}, info.EOS)

	const prompt = "the cat at the"
	r = run(t, nil, "lm", "generate", "--lm", dir, "--max-new", "6", "--json", prompt)
	require.Equal(t, 0, r.code, r.stderr)
	var out struct {
		PromptTokens int     `json:"prompt_tokens"`
		IDs          []int32 `json:"ids"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	m, ids, eng := loadForGenerate(t, dir, prompt)
	require.Equal(t, len(ids), out.PromptTokens)
	seq := append([]int32(nil), ids...)
	for k := 0; k <= len(out.IDs); k++ {
		logits, err := m.ForwardIDs(eng, [][]int32{seq})
		require.NoError(t, err)
		last := logits[0][len(seq)-1]
		best := 0
		for v := range last {
			if last[v] > last[best] {
				best = v
			}
		}
		if k == len(out.IDs) {
			if k < 6 {
				assert.Equal(t, tiny.EOS, best, "generation stopped early: the next greedy token must be EOS")
			}
			break
		}
		require.Equal(t, int(out.IDs[k]), best, "token %d", k)
		seq = append(seq, out.IDs[k])
	}

	// --lm-dtype bfloat16 generates what the library's model with bf16 weights
	// generates, computing as the backend's choice (float32 on the pure-Go backend:
	// this checkpoint is bf16, so the float32 model's tokens).
	r = run(t, nil, "lm", "generate", "--lm", dir, "--lm-dtype", "bfloat16", "--max-new", "6", "--json", prompt)
	require.Equal(t, 0, r.code, r.stderr)
	var bf struct {
		IDs []int32 `json:"ids"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &bf))
	mb, err := lm.Load(dir, model.NewStore(), lm.Options{DType: dtypes.BFloat16, ComputeDType: lm.ComputeFor(engine.ResolveBackend(""))})
	require.NoError(t, err)
	want, err := mb.GenerateIDs(eng, [][]int32{ids}, lm.GenerateOptions{MaxNewTokens: 6})
	require.NoError(t, err)
	assert.Equal(t, want[0], bf.IDs, "bf16 generation through the CLI")
	if engine.ResolveBackend("") == "go" {
		assert.Equal(t, out.IDs, bf.IDs, "bf16 weights of a bf16 checkpoint, float32 compute: the float32 model's tokens")
	}
	r = run(t, nil, "lm", "generate", "--lm", dir, "--lm-dtype", "float16", prompt)
	assert.Equal(t, 2, r.code, "unsupported --lm-dtype is a usage error")

	// Sampling: a seed fixes the tokens.
	a := run(t, nil, "lm", "generate", "--lm", dir, "--max-new", "6", "--temperature", "1.5", "--seed", "7", "--json", prompt)
	b := run(t, nil, "lm", "generate", "--lm", dir, "--max-new", "6", "--temperature", "1.5", "--seed", "7", "--json", prompt)
	require.Equal(t, 0, a.code, a.stderr)
	assert.Equal(t, a.stdout, b.stdout)
}

// TestLMGenerateUsesGenerationConfig: lm generate decodes as the model's
// generation_config.json says (sampling with its temperature, top-p and top-k, its
// repetition penalty), says so, and the command line overrides it: --temperature 0
// --repetition-penalty 1 gives the library's greedy tokens.
func TestLMGenerateUsesGenerationConfig(t *testing.T) {
	dir := t.TempDir()
	_, err := lmtest.Write(dir, lmtest.Spec{Seed: 6})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "generation_config.json"),
		[]byte(`{"do_sample": true, "temperature": 0.6, "top_p": 0.95, "top_k": 20, "repetition_penalty": 1.1}`), 0o644))
	const prompt = "the cat at the"
	r := run(t, nil, "lm", "generate", "--lm", dir, "--max-new", "5", prompt)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "decoding as generation_config.json says: sampling at temperature 0.6, top-p 0.95, top-k 20, repetition penalty 1.1")

	r = run(t, nil, "lm", "generate", "--lm", dir, "--max-new", "5", "--temperature", "0", "--repetition-penalty", "1", "--json", prompt)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "generation_config.json says")
	var out struct {
		IDs []int32 `json:"ids"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	m, ids, eng := loadForGenerate(t, dir, prompt)
	want, err := m.GenerateIDs(eng, [][]int32{ids}, lm.GenerateOptions{MaxNewTokens: 5})
	require.NoError(t, err)
	assert.Equal(t, want[0], out.IDs)

	r = run(t, nil, "lm", "generate", "--lm", dir, "--max-new", "5", "--temperature", "0", "--json", prompt)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "decoding as generation_config.json says: repetition penalty 1.1")
	penalized, err := m.GenerateIDs(eng, [][]int32{ids}, lm.GenerateOptions{MaxNewTokens: 5, RepetitionPenalty: 1.1})
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Equal(t, penalized[0], out.IDs)
}

// loadForGenerate loads the model of dir as the library does, with the ids `lm
// generate` encodes prompt to and an engine (closed with the test).
func loadForGenerate(t *testing.T, dir, prompt string) (*lm.Model, []int32, *engine.Engine) {
	t.Helper()
	m, err := lm.Load(dir, model.NewStore(), lm.Options{})
	require.NoError(t, err)
	ids, err := m.Tokenizer.Encode(prompt, true)
	require.NoError(t, err)
	eng, err := engine.New(engine.Config{})
	require.NoError(t, err)
	t.Cleanup(eng.Close)
	return m, ids, eng
}

// TestLMInfoEncoder: `lm info` on an embedding model's folder describes the encoder
// (its architecture, positions, pooling), not a refusal as a decoder LM.
func TestLMInfoEncoder(t *testing.T) {
	dir := t.TempDir()
	_, err := encodertest.Write(dir, encodertest.Spec{ModelType: "mpnet", SentenceTransformers: true, Normalize: true})
	require.NoError(t, err)
	r := run(t, nil, "lm", "info", "--lm", dir)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "architecture mpnet (encoder): 2 layers, hidden 32, 4 heads, intermediate 64")
	assert.Contains(t, r.stdout, "positions    absolute, from 2, and a relative attention bias (32 buckets)")
	assert.Contains(t, r.stdout, "pooling      mean; normalised: true")
	r = run(t, nil, "lm", "info", "--lm", dir, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var info encoder.Info
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &info))
	assert.Equal(t, 32, info.Dim)
}
