package lm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	return dir
}

func TestReadTokenizerConfig(t *testing.T) {
	cases := []struct {
		name     string
		files    map[string]string
		template string
		tokens   map[string]string
		addBOS   *bool
		err      string
	}{
		{name: "none", files: map[string]string{}, tokens: map[string]string{}},
		{name: "strings and AddedToken objects",
			files: map[string]string{"tokenizer_config.json": `{"chat_template": "T", "add_bos_token": false,
				"bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false}, "eos_token": "</s>", "pad_token": null,
				"additional_special_tokens": ["<x>"]}`},
			template: "T", tokens: map[string]string{"bos_token": "<s>", "eos_token": "</s>"}, addBOS: new(false)},
		{name: "named templates",
			files:    map[string]string{"tokenizer_config.json": `{"chat_template": [{"name": "tool_use", "template": "U"}, {"name": "default", "template": "D"}]}`},
			template: "D", tokens: map[string]string{}},
		{name: "chat_template.jinja wins",
			files:    map[string]string{"tokenizer_config.json": `{"chat_template": "old"}`, "chat_template.jinja": "new"},
			template: "new", tokens: map[string]string{}},
		{name: "chat_template.json",
			files:    map[string]string{"chat_template.json": `{"chat_template": "J"}`},
			template: "J", tokens: map[string]string{}},
		{name: "malformed", files: map[string]string{"tokenizer_config.json": `{"chat_template": 7}`}, err: `field "chat_template"`},
		{name: "bad flag", files: map[string]string{"tokenizer_config.json": `{"add_bos_token": "yes"}`}, err: `field "add_bos_token": want true or false`},
		{name: "truncated", files: map[string]string{"tokenizer_config.json": `{"chat_template": "T"`}, err: "tokenizer_config.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tc, err := ReadTokenizerConfig(writeFiles(t, c.files))
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.template, tc.ChatTemplate)
			assert.Equal(t, c.tokens, tc.Tokens)
			assert.Equal(t, c.addBOS, tc.AddBOS)
		})
	}
}

// TestBuiltinPromptFormats pins the built-in formats to the strings their sources
// write: G-Retriever's Llama-2 "<s>[INST]…[/INST]" (src/model/graph_llm.py) and ChatML.
func TestBuiltinPromptFormats(t *testing.T) {
	tokens := map[string]string{"bos_token": "<s>", "eos_token": "</s>"}
	msgs := []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "Q"}, {Role: "assistant", Content: "A"}, {Role: "user", Content: "Q2"}}
	cases := []struct {
		format, want string
		gen          bool
	}{
		{PromptLlama2, "<s>[INST]<<SYS>>\nS\n<</SYS>>\n\nQ[/INST]A</s>[INST]Q2[/INST]", true},
		{PromptChatML, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n", true},
		{PromptChatML, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\nA<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n", false},
		{PromptPlain, "<s>S\n\nQ\n\nA\n\nQ2\n\n", true},
	}
	for _, c := range cases {
		t.Run(c.format, func(t *testing.T) {
			tc := TokenizerConfig{Tokens: tokens}
			chat, err := tc.Chat("m", c.format)
			require.NoError(t, err)
			got, err := chat.Render(msgs, c.gen, nil)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	_, err := TokenizerConfig{}.Chat("base-model", "")
	require.ErrorContains(t, err, "base-model has no chat template")
	require.ErrorContains(t, err, "llama2, chatml, plain")
	_, err = TokenizerConfig{}.Chat("m", "alpaca")
	require.ErrorContains(t, err, `prompt format "alpaca"`)
}

func TestUserTurn(t *testing.T) {
	tc := TokenizerConfig{Tokens: map[string]string{"bos_token": "<s>", "eos_token": "</s>"}}
	chat, err := tc.Chat("m", PromptLlama2)
	require.NoError(t, err)
	turn, err := chat.UserTurn("", nil)
	require.NoError(t, err)
	assert.Equal(t, "<s>[INST]", turn.Before)
	assert.Equal(t, "[/INST]", turn.After)
	chat, err = tc.Chat("m", PromptChatML)
	require.NoError(t, err)
	turn, err = chat.UserTurn("sys", nil)
	require.NoError(t, err)
	assert.Equal(t, "<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\n", turn.Before)
	assert.Equal(t, "<|im_end|>\n<|im_start|>assistant\n", turn.After)
	assert.Equal(t, "<|im_end|>\n", turn.End)
	assert.False(t, turn.Trims)
	dup, err := NewChatTemplate(PromptTemplate, "{% for m in messages %}{{ m.content }}{{ m.content }}{% endfor %}", nil)
	require.NoError(t, err)
	_, err = dup.UserTurn("", nil)
	require.ErrorContains(t, err, "does not write the user's message once")
	bad, err := NewChatTemplate(PromptTemplate, "{{ raise_exception('Conversation roles must alternate') }}", nil)
	require.NoError(t, err)
	_, err = bad.Render([]Message{{Role: "user", Content: "x"}}, true, nil)
	require.ErrorContains(t, err, "Conversation roles must alternate")
}

// TestUserTurnOfRealTemplates splits the shared Llama 3 and Qwen3 templates' turns and
// checks them against the prompts transformers rendered (chat.json): Qwen3 with
// enable_thinking false opens the answer with an empty think block, as its template
// writes a finished assistant turn; Llama 3 trims the content and ends an answer with
// <|eot_id|>.
func TestUserTurnOfRealTemplates(t *testing.T) {
	for _, c := range []struct {
		model         string
		extra         map[string]any
		before, after string
		endPrefix     string
		trims         bool
	}{
		{"qwen3", map[string]any{"enable_thinking": false}, "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", "<|im_end|>", false},
		{"qwen3", nil, "<|im_start|>user\n", "<|im_end|>\n<|im_start|>assistant\n", "<|im_end|>", false},
		{"llama3", nil, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n", "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n", "<|eot_id|>", true},
	} {
		t.Run(fmt.Sprintf("%s %v", c.model, c.extra), func(t *testing.T) {
			dir := sharedModelDir(t, c.model)
			chat, err := LoadChatTemplate(dir, PromptTemplate)
			require.NoError(t, err)
			turn, err := chat.UserTurn("", c.extra)
			require.NoError(t, err)
			assert.Equal(t, c.before, turn.Before)
			assert.Equal(t, c.after, turn.After)
			assert.True(t, strings.HasPrefix(turn.End, c.endPrefix), "%q", turn.End)
			assert.Equal(t, c.trims, turn.Trims)
			// The split agrees with transformers' rendering of a real message.
			var cases []struct {
				Messages            []Message `json:"messages"`
				AddGenerationPrompt bool      `json:"add_generation_prompt"`
				Prompt              string    `json:"prompt"`
			}
			raw, err := os.ReadFile(filepath.Join(dir, "chat.json"))
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &cases))
			q := cases[0]
			require.Len(t, q.Messages, 1)
			if c.extra == nil {
				assert.Equal(t, q.Prompt, turn.Before+strings.TrimSpace(q.Messages[0].Content)+turn.After)
			}
		})
	}
}

func TestReadGenerationConfig(t *testing.T) {
	gc, ok, err := ReadGenerationConfig(writeFiles(t, map[string]string{"generation_config.json": `{"bos_token_id": 1, "eos_token_id": [7, 2], "pad_token_id": null}`}))
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, GenerationConfig{EOS: []int{7, 2}, BOS: 1, PAD: -1}, gc)
	assert.Equal(t, []int{7, 2, 9}, mergeEOS(gc.EOS, []int{2, 9}))
	_, ok, err = ReadGenerationConfig(t.TempDir())
	require.NoError(t, err)
	require.False(t, ok)
	_, _, err = ReadGenerationConfig(writeFiles(t, map[string]string{"generation_config.json": `{"eos_token_id": "x"}`}))
	require.ErrorContains(t, err, `field "eos_token_id"`)

	// The decoding defaults, read leniently: a value of another type is as if absent.
	gc, _, err = ReadGenerationConfig(writeFiles(t, map[string]string{"generation_config.json": `{"eos_token_id": 2, "do_sample": true, "temperature": 0.6, "top_p": 0.9, "top_k": 20.0, "repetition_penalty": 1.05}`}))
	require.NoError(t, err)
	require.NotNil(t, gc.DoSample)
	assert.True(t, *gc.DoSample)
	assert.Equal(t, 0.6, *gc.Temperature)
	assert.Equal(t, 0.9, *gc.TopP)
	assert.Equal(t, 20, *gc.TopK)
	assert.Equal(t, 1.05, *gc.RepetitionPenalty)
	gc, _, err = ReadGenerationConfig(writeFiles(t, map[string]string{"generation_config.json": `{"eos_token_id": 2, "do_sample": "true", "top_k": 2.5, "temperature": null}`}))
	require.NoError(t, err, "an odd decoding value does not stop the model loading")
	assert.Nil(t, gc.DoSample)
	assert.Nil(t, gc.TopK)
	assert.Nil(t, gc.Temperature)
}

func TestParseMessages(t *testing.T) {
	cases := []struct {
		name, in, err string
		want          []Message
	}{
		{name: "ok", in: `[{"role":"system","content":"s"},{"role":"user","content":""}]`, want: []Message{{"system", "s"}, {"user", ""}}},
		{name: "empty list", in: `[]`, want: []Message{}},
		{name: "not an array", in: `{"role":"user"}`, err: "m.json: want a JSON array"},
		{name: "truncated", in: `[{"role":"user","content":"x"}`, err: "m.json: want a JSON array"},
		{name: "element not an object", in: `[{"role":"user","content":"x"}, 42]`, err: "m.json: message 2: want an object with \"role\" and \"content\" strings, got a number"},
		{name: "content missing", in: `[{"role":"user"}]`, err: `m.json: message 1: field "content" missing`},
		{name: "content not a string", in: `[{"role":"user","content":["a"]}]`, err: `m.json: message 1: field "content": want a string, got an array`},
		{name: "role null", in: `[{"role":null,"content":"x"}]`, err: `m.json: message 1: field "role": want a string, got null`},
		{name: "role empty", in: `[{"role":"","content":"x"}]`, err: `m.json: message 1: field "role" is empty`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseMessages("m.json", []byte(c.in))
			if c.err != "" {
				require.ErrorContains(t, err, c.err)
				assert.NotContains(t, err.Error(), "Go value")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}
