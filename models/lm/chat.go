package lm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ardanlabs/jinja"

	"github.com/graphloom/graphloom/internal/jsonmsg"
)

// Message is one turn of a conversation, as apply_chat_template takes it.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// TokenizerConfig is what a model directory's tokenizer_config.json (and a
// chat_template.jinja or chat_template.json beside it) says about prompting.
type TokenizerConfig struct {
	// ChatTemplate is the default chat template; "" when the model has none (a base
	// model). A chat_template.jinja file (transformers ≥ 4.43 saves it there) takes
	// precedence over tokenizer_config.json's field, as in transformers.
	ChatTemplate string
	// Templates are the named templates when chat_template is a list of
	// {name, template} (e.g. "tool_use"); the one named "default" is ChatTemplate.
	Templates map[string]string
	// Tokens are the special-token fields (bos_token, eos_token, pad_token,
	// unk_token, …) as strings: the template sees them as variables.
	Tokens map[string]string
	// AddBOS and AddEOS are add_bos_token / add_eos_token when the file sets them.
	AddBOS, AddEOS *bool
	// CleanUpSpaces is clean_up_tokenization_spaces when the file sets it (Llama 3:
	// true; Qwen3: false): Decode then removes the space before . ? ! , and
	// contractions, as transformers' decode does.
	CleanUpSpaces *bool
	// Path is the file the template came from ("" when none).
	Path string
}

// ReadTokenizerConfig reads dir's tokenizer_config.json and chat template files. A
// directory without them gives the zero TokenizerConfig: only malformed files are
// errors.
func ReadTokenizerConfig(dir string) (TokenizerConfig, error) {
	tc := TokenizerConfig{Tokens: map[string]string{}, Templates: map[string]string{}}
	path := filepath.Join(dir, "tokenizer_config.json")
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return tc, fmt.Errorf("lm: reading %s: %w", path, err)
	default:
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(data, &raw); err != nil {
			return tc, fmt.Errorf("lm: %s: %w", path, err)
		}
		for k, v := range raw {
			var err error
			switch {
			case k == "chat_template":
				err = tc.setTemplates(v)
				tc.Path = path
			case k == "add_bos_token":
				tc.AddBOS, err = optBool(v)
			case k == "add_eos_token":
				tc.AddEOS, err = optBool(v)
			case k == "clean_up_tokenization_spaces":
				tc.CleanUpSpaces, err = optBool(v)
			case strings.HasSuffix(k, "_token"):
				var s string
				if s, err = tokenString(v); err == nil && s != "" {
					tc.Tokens[k] = s
				}
			}
			if err != nil {
				return tc, fmt.Errorf("lm: %s: field %q: %w", path, k, err)
			}
		}
	}
	jpath := filepath.Join(dir, "chat_template.jinja")
	if data, err := os.ReadFile(jpath); err == nil {
		tc.ChatTemplate, tc.Path = string(data), jpath
	} else if !errors.Is(err, fs.ErrNotExist) {
		return tc, fmt.Errorf("lm: reading %s: %w", jpath, err)
	} else if tc.ChatTemplate == "" {
		jpath = filepath.Join(dir, "chat_template.json")
		if data, err := os.ReadFile(jpath); err == nil {
			var f struct {
				ChatTemplate json.RawMessage `json:"chat_template"`
			}
			if err := json.Unmarshal(data, &f); err != nil {
				return tc, fmt.Errorf("lm: %s: %w", jpath, err)
			}
			if err := tc.setTemplates(f.ChatTemplate); err != nil {
				return tc, fmt.Errorf("lm: %s: field \"chat_template\": %w", jpath, err)
			}
			tc.Path = jpath
		}
	}
	return tc, nil
}

// setTemplates reads chat_template: a string, or a list of {name, template}.
func (tc *TokenizerConfig) setTemplates(v json.RawMessage) error {
	if string(v) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		tc.ChatTemplate = s
		return nil
	}
	var list []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(v, &list); err != nil {
		return errors.New("want a template string or a list of {name, template}")
	}
	for _, t := range list {
		tc.Templates[t.Name] = t.Template
	}
	tc.ChatTemplate = tc.Templates["default"]
	return nil
}

func optBool(v json.RawMessage) (*bool, error) {
	if string(v) == "null" {
		return nil, nil
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return nil, errors.New("want true or false")
	}
	return &b, nil
}

// tokenString reads a special-token field: a string, an AddedToken object
// ({"content": …}) or null. Lists (additional_special_tokens) are not tokens.
func tokenString(v json.RawMessage) (string, error) {
	if string(v) == "null" || strings.HasPrefix(strings.TrimSpace(string(v)), "[") {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(v, &obj); err != nil || obj.Content == nil {
		return "", errors.New("want a token string or an AddedToken object with \"content\"")
	}
	return *obj.Content, nil
}

// Prompt formats (PromptFormats): how a conversation becomes the LM's input text.
const (
	// PromptTemplate renders the model's own chat_template (an error when it has none).
	PromptTemplate = "template"
	// PromptLlama2 is Llama-2-chat's "<s>[INST] … [/INST]" as G-Retriever writes it
	// (BOS, "[INST]", the user turn, "[/INST]"; a system turn in <<SYS>> markers).
	PromptLlama2 = "llama2"
	// PromptChatML is "<|im_start|>role\n…<|im_end|>\n" turns (Qwen, many others).
	PromptChatML = "chatml"
	// PromptPlain is the turns' contents joined by blank lines after BOS: for base
	// models trained on no chat format.
	PromptPlain = "plain"
)

// PromptFormats lists the accepted prompt formats.
var PromptFormats = []string{PromptTemplate, PromptLlama2, PromptChatML, PromptPlain}

// builtinTemplates are the prompt formats for models without a chat template, written
// as chat templates so that one renderer serves them all.
var builtinTemplates = map[string]string{
	PromptLlama2: "{{ bos_token }}{% set ns = namespace(sys='') %}{% for m in messages %}" +
		"{% if m.role == 'system' %}{% set ns.sys = '<<SYS>>\n' + m.content + '\n<</SYS>>\n\n' %}" +
		"{% elif m.role == 'user' %}[INST]{{ ns.sys }}{{ m.content }}[/INST]{% set ns.sys = '' %}" +
		"{% elif m.role == 'assistant' %}{{ m.content }}{{ eos_token }}{% endif %}{% endfor %}",
	PromptChatML: "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}{% endfor %}" +
		"{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
	PromptPlain: "{{ bos_token }}{% for m in messages %}{{ m.content }}{% if not loop.last %}{{ '\\n\\n' }}{% endif %}{% endfor %}" +
		"{% if add_generation_prompt and messages %}{{ '\\n\\n' }}{% endif %}",
}

// ChatTemplate renders conversations into prompt text the way transformers'
// apply_chat_template does: a Jinja2 template (github.com/ardanlabs/jinja, which
// renders with trim_blocks and lstrip_blocks, loop controls, tojson without ASCII
// escaping and raise_exception, as Hugging Face's sandboxed environment does), with
// messages, add_generation_prompt and the tokenizer's *_token fields as variables.
type ChatTemplate struct {
	Format string // one of PromptFormats
	Source string // the template text
	tpl    *jinja.Template
	vars   map[string]any
}

// NewChatTemplate compiles a template; tokens are the *_token variables it sees.
func NewChatTemplate(format, source string, tokens map[string]string) (*ChatTemplate, error) {
	tpl, err := jinja.Compile(source)
	if err != nil {
		return nil, fmt.Errorf("lm: chat template (%s): %w", format, err)
	}
	vars := map[string]any{"bos_token": "", "eos_token": ""}
	for k, v := range tokens {
		vars[k] = v
	}
	return &ChatTemplate{Format: format, Source: source, tpl: tpl, vars: vars}, nil
}

// LoadChatTemplate returns dir's prompt format: format "" or PromptTemplate is the
// model's own chat template (an error naming the alternatives when it has none); the
// other PromptFormats are built in and use the model's BOS/EOS token text.
func LoadChatTemplate(dir, format string) (*ChatTemplate, error) {
	tc, err := ReadTokenizerConfig(dir)
	if err != nil {
		return nil, err
	}
	return tc.Chat(dir, format)
}

// Chat is LoadChatTemplate on an already read configuration (dir names the model in
// messages).
func (tc TokenizerConfig) Chat(dir, format string) (*ChatTemplate, error) {
	if format == "" {
		format = PromptTemplate
	}
	if format == PromptTemplate {
		if tc.ChatTemplate == "" {
			return nil, fmt.Errorf("lm: %s has no chat template (tokenizer_config.json \"chat_template\" or chat_template.jinja): for a base model choose a prompt format, one of %s",
				dir, strings.Join(PromptFormats[1:], ", "))
		}
		return NewChatTemplate(format, tc.ChatTemplate, tc.Tokens)
	}
	src, ok := builtinTemplates[format]
	if !ok {
		return nil, fmt.Errorf("lm: prompt format %q: want one of %s", format, strings.Join(PromptFormats, ", "))
	}
	return NewChatTemplate(format, src, tc.Tokens)
}

// Render returns the prompt text of msgs; addGenerationPrompt appends the opening of
// the assistant's turn. extra holds further template variables (e.g. enable_thinking,
// tools); they override nothing of msgs or add_generation_prompt.
func (c *ChatTemplate) Render(msgs []Message, addGenerationPrompt bool, extra map[string]any) (string, error) {
	list := make([]any, len(msgs))
	for i, m := range msgs {
		if m.Role == "" {
			return "", fmt.Errorf("lm: chat message %d has no role", i)
		}
		list[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	data := make(map[string]any, len(c.vars)+len(extra)+2)
	for k, v := range c.vars {
		data[k] = v
	}
	for k, v := range extra {
		data[k] = v
	}
	data["messages"], data["add_generation_prompt"] = list, addGenerationPrompt
	out, err := c.tpl.Render(data)
	if err != nil {
		return "", fmt.Errorf("lm: rendering the %s chat template: %w", c.Format, err)
	}
	return out, nil
}

// Turn is the prompt of a single user turn split around its content, and how the
// template ends the assistant's answer to it.
type Turn struct {
	// Before is the rendered text up to the content (BOS and the turn's opening);
	// After is what follows it through the opening of the assistant's turn (the
	// generation prompt). G-Retriever puts its graph token at the start of the user
	// turn: Before + graph token + content + After.
	Before, After string
	// End is what the template writes right after an assistant's answer (Llama 3's
	// <|eot_id|>, Qwen's <|im_end|>\n), with whatever follows it: the first tokens of
	// a training label's end.
	End string
	// Trims says the template strips the content's surrounding white space (Llama
	// 3's | trim): content spliced in must be trimmed to match what it renders.
	Trims bool
}

// UserTurn renders a single user turn (after an optional system message) with the
// template variables extra (e.g. enable_thinking) and splits it around its content;
// see Turn.
func (c *ChatTemplate) UserTurn(system string, extra map[string]any) (Turn, error) {
	const mark, answer = "\x00graphloom-content\x00", "\x00graphloom-answer\x00"
	var msgs []Message
	if system != "" {
		msgs = append(msgs, Message{Role: "system", Content: system})
	}
	user := append(msgs, Message{Role: "user", Content: mark})
	out, err := c.Render(user, true, extra)
	if err != nil {
		return Turn{}, err
	}
	i := strings.Index(out, mark)
	if i < 0 || strings.Count(out, mark) != 1 {
		return Turn{}, fmt.Errorf("lm: the %s chat template does not write the user's message once (cannot place the graph token)", c.Format)
	}
	t := Turn{Before: out[:i], After: out[i+len(mark):]}
	// A template that cannot end on an assistant's answer leaves End empty (a label
	// then ends with EOS): the generation prompt above is what must render.
	if done, err := c.Render(append(user, Message{Role: "assistant", Content: answer}), false, extra); err == nil {
		if j := strings.Index(done, answer); j >= 0 && strings.Count(done, answer) == 1 {
			t.End = done[j+len(answer):]
		}
	}
	padded, err := c.Render(append(msgs, Message{Role: "user", Content: " " + mark + " "}), true, extra)
	if err != nil {
		return Turn{}, err
	}
	t.Trims = !strings.Contains(padded, " "+mark+" ")
	return t, nil
}

// GenerationConfig is what generation_config.json says that graphloom uses.
type GenerationConfig struct {
	EOS []int // eos_token_id: one id or a list; generation stops at any of them
	BOS int   // bos_token_id; -1 when absent
	PAD int   // pad_token_id; -1 when absent
	// The model's decoding defaults, as transformers' generate() applies them; nil
	// when the file does not set them (transformers then: greedy, temperature 1,
	// top_p 1, top_k 50, repetition_penalty 1).
	DoSample          *bool    // do_sample
	Temperature       *float64 // temperature
	TopP              *float64 // top_p
	TopK              *int     // top_k
	RepetitionPenalty *float64 // repetition_penalty
}

// ReadGenerationConfig reads dir/generation_config.json; a missing file gives
// (GenerationConfig{BOS: -1, PAD: -1}, false, nil).
func ReadGenerationConfig(dir string) (GenerationConfig, bool, error) {
	gc := GenerationConfig{BOS: -1, PAD: -1}
	path := filepath.Join(dir, "generation_config.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return gc, false, nil
	} else if err != nil {
		return gc, false, fmt.Errorf("lm: reading %s: %w", path, err)
	}
	var raw struct {
		EOS               json.RawMessage `json:"eos_token_id"`
		BOS               json.RawMessage `json:"bos_token_id"`
		PAD               json.RawMessage `json:"pad_token_id"`
		DoSample          json.RawMessage `json:"do_sample"`
		Temperature       json.RawMessage `json:"temperature"`
		TopP              json.RawMessage `json:"top_p"`
		TopK              json.RawMessage `json:"top_k"`
		RepetitionPenalty json.RawMessage `json:"repetition_penalty"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return gc, false, fmt.Errorf("lm: %s: %s", path, jsonmsg.Describe(err))
	}
	// The decoding defaults are read leniently: a value of another type (a string
	// "true", a top_k of 50.0) is as if absent, not a model that cannot load.
	set := func(r json.RawMessage) bool { return len(r) > 0 && string(r) != "null" }
	var b bool
	if set(raw.DoSample) && json.Unmarshal(raw.DoSample, &b) == nil {
		gc.DoSample = &b
	}
	for _, f := range []struct {
		raw json.RawMessage
		dst **float64
	}{{raw.Temperature, &gc.Temperature}, {raw.TopP, &gc.TopP}, {raw.RepetitionPenalty, &gc.RepetitionPenalty}} {
		var v float64
		if set(f.raw) && json.Unmarshal(f.raw, &v) == nil {
			*f.dst = &v
		}
	}
	var k float64
	if set(raw.TopK) && json.Unmarshal(raw.TopK, &k) == nil && k >= 0 && k == math.Trunc(k) {
		n := int(k)
		gc.TopK = &n
	}
	if gc.EOS, err = optIDs(raw.EOS); err != nil {
		return gc, false, fmt.Errorf("lm: %s: field \"eos_token_id\": %w", path, err)
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *int
	}{{"bos_token_id", raw.BOS, &gc.BOS}, {"pad_token_id", raw.PAD, &gc.PAD}} {
		ids, err := optIDs(f.raw)
		if err != nil {
			return gc, false, fmt.Errorf("lm: %s: field %q: %w", path, f.name, err)
		}
		if len(ids) > 0 {
			*f.dst = ids[0]
		}
	}
	return gc, true, nil
}

// optIDs is parseIDs for a field that may be absent or null (no ids).
func optIDs(raw json.RawMessage) ([]int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	return parseIDs(raw)
}

// mergeEOS returns the generation config's EOS ids (transformers' generate stops on
// them) followed by config.json's that it lacks.
func mergeEOS(gen, cfg []int) []int {
	out := slices.Clone(gen)
	for _, id := range cfg {
		if !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// ParseMessages reads a conversation: a JSON array of {"role", "content"} objects
// with string values. Errors name the message (from 1) and the field; name is the
// source in messages.
func ParseMessages(name string, data []byte) ([]Message, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of {\"role\", \"content\"} messages: %s", name, jsonmsg.Describe(err))
	}
	msgs := make([]Message, len(raw))
	for i, r := range raw {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r, &obj); err != nil {
			return nil, fmt.Errorf("%s: message %d: want an object with \"role\" and \"content\" strings, got %s", name, i+1, jsonmsg.Kind(r))
		}
		for _, f := range []struct {
			key string
			dst *string
		}{{"role", &msgs[i].Role}, {"content", &msgs[i].Content}} {
			v, ok := obj[f.key]
			if !ok {
				return nil, fmt.Errorf("%s: message %d: field %q missing", name, i+1, f.key)
			}
			if err := json.Unmarshal(v, f.dst); err != nil || string(v) == "null" {
				return nil, fmt.Errorf("%s: message %d: field %q: want a string, got %s", name, i+1, f.key, jsonmsg.Kind(v))
			}
		}
		if msgs[i].Role == "" {
			return nil, fmt.Errorf("%s: message %d: field \"role\" is empty", name, i+1)
		}
	}
	return msgs, nil
}
