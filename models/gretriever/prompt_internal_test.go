package gretriever

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// TestPromptFromChatTemplate checks the tokens around the graph token: the LM's chat
// template when it has one (the user turn's opening before, its end and the
// assistant's opening after, the template's EOS as label end), G-Retriever's
// "<s>[INST]" … "[/INST]" for a base model.
func TestPromptFromChatTemplate(t *testing.T) {
	chatml := `{% for m in messages %}{{ '<|im_start|>' + m.role + '\n' + m.content + '<|im_end|>\n' }}{% endfor %}` +
		`{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}`
	cases := []struct {
		name, tokConfig, format string
		head, tail              string
		headIDs                 []int32 // before head's text
		wantFormat              string
		eos                     int32
	}{
		{name: "base model: G-Retriever's llama2", head: "[INST]", tail: "[/INST]", headIDs: []int32{lmtest.ImStart},
			wantFormat: lm.PromptLlama2, eos: lmtest.EndOfText},
		{name: "chat template", tokConfig: `{"chat_template": ` + quote(chatml) + `, "eos_token": "<|im_start|>"}`,
			head: "<|im_start|>user\n", tail: "<|im_end|>\n<|im_start|>assistant\n", wantFormat: lm.PromptTemplate, eos: lmtest.ImStart},
		{name: "explicit llama2 over a template", tokConfig: `{"chat_template": ` + quote(chatml) + `}`, format: lm.PromptLlama2,
			head: "[INST]", tail: "[/INST]", headIDs: []int32{lmtest.ImStart}, wantFormat: lm.PromptLlama2, eos: lmtest.EndOfText},
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
			cfg.PromptFormat = c.format
			m, err := New(l, cfg)
			require.NoError(t, err)
			head, err := l.Tokenizer.Encode(c.head, false)
			require.NoError(t, err)
			tail, err := l.Tokenizer.Encode(c.tail, false)
			require.NoError(t, err)
			assert.Equal(t, append(c.headIDs, head...), m.head)
			assert.Equal(t, tail, m.tail)
			assert.Equal(t, c.wantFormat, m.Config().PromptFormat)
			assert.Equal(t, c.eos, m.eos)
			e, err := m.encode(Example{Question: "q", Answer: "a", Text: "t"}, true)
			require.NoError(t, err)
			assert.Equal(t, tail, e.rest[len(e.rest)-len(tail):], "the prompt's tail closes the user turn")
			assert.Equal(t, c.eos, e.label[len(e.label)-1], "the label ends with the EOS")
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
