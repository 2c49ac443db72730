package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/encoder"
	"github.com/graphloom/graphloom/models/lm"
)

// newLMCmd is `graphloom lm`: the tools a user reaches for when a local model
// misbehaves. tokenize, detokenize and prompt need only the tokenizer files.
func newLMCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lm",
		Short: "Inspect a local Hugging Face model: info, tokenize, detokenize, prompt, generate, embed",
		Long: `Inspect a local Hugging Face model directory the way graphloom reads it (nothing is ever
downloaded). tokenize, detokenize and prompt need only tokenizer.json / tokenizer_config.json;
info reads config.json and the safetensors headers; generate loads the weights.`,
		Example: `  graphloom lm info --lm ~/models/Qwen2.5-0.5B-Instruct
  graphloom lm tokenize --lm ~/models/Qwen3-0.6B --json "Where was Tomas Brell born?"
  graphloom lm prompt --lm ~/models/Qwen2.5-0.5B-Instruct --messages chat.json --add-generation-prompt
  graphloom lm generate --lm ~/models/Qwen2.5-0.5B-Instruct --messages chat.json --max-new 64
  graphloom lm embed --lm ~/models/bge-small-en-v1.5 --query "Where was Tomas Brell born?"`,
	}
	cmd.AddCommand(newLMInfoCmd(), newLMTokenizeCmd(), newLMDetokenizeCmd(), newLMPromptCmd(), newLMGenerateCmd(), newLMEmbedCmd())
	return cmd
}

// lmDirFlag registers the required --lm DIR.
func lmDirFlag(cmd *cobra.Command, dir *string) {
	cmd.Flags().StringVar(dir, "lm", "", "local Hugging Face model directory (required)")
}

// needLMDir checks --lm before any work.
func needLMDir(cmd *cobra.Command, dir string) error {
	if err := requireFlags(cmd, "lm"); err != nil {
		return err
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return usageError{fmt.Errorf("%s: --lm %s: want a local Hugging Face model directory", cmd.Name(), dir)}
	}
	return nil
}

func newLMInfoCmd() *cobra.Command {
	var dir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "info --lm DIR",
		Short:   "Architecture, parameters, dtype, RoPE, context, vocabulary and chat template of a model (or an encoder's positions, pooling and prompts)",
		Example: "  graphloom lm info --lm ~/models/Qwen2.5-0.5B-Instruct --json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := needLMDir(cmd, dir); err != nil {
				return err
			}
			var info interface{ String() string }
			var err error
			if encoder.IsEncoderFolder(dir) { // an embedding model's encoder (BERT, MPNet, ModernBERT, …)
				info, err = encoder.Describe(dir)
			} else {
				info, err = lm.Describe(dir)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), info)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), info.String())
			return err
		},
	}
	lmDirFlag(cmd, &dir)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func newLMTokenizeCmd() *cobra.Command {
	var dir string
	var special, asJSON bool
	cmd := &cobra.Command{
		Use:   "tokenize --lm DIR [--special] [--json] TEXT",
		Short: "Print the token ids of TEXT",
		Long: `Print the token ids of TEXT, separated by spaces (with --json, one JSON array of integers).
--special adds the tokens the tokenizer adds around a sequence (BOS, …), as transformers'
add_special_tokens=True; special tokens written in TEXT are always matched.`,
		Example: `  graphloom lm tokenize --lm ~/models/Llama-3.2-1B --special "Where was Tomas Brell born?"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needLMDir(cmd, dir); err != nil {
				return err
			}
			tok, err := lm.LoadTokenizer(dir)
			if err != nil {
				return err
			}
			ids, err := tok.Encode(args[0], special)
			if err != nil {
				return err
			}
			if asJSON {
				if ids == nil {
					ids = []int32{}
				}
				return printJSON(cmd.OutOrStdout(), ids)
			}
			parts := make([]string, len(ids))
			for i, id := range ids {
				parts[i] = strconv.Itoa(int(id))
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), strings.Join(parts, " "))
			return err
		},
	}
	lmDirFlag(cmd, &dir)
	cmd.Flags().BoolVar(&special, "special", false, "add the special tokens of a sequence (BOS, …)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON array of integers")
	return cmd
}

func newLMDetokenizeCmd() *cobra.Command {
	var dir string
	var skip bool
	cmd := &cobra.Command{
		Use:     "detokenize --lm DIR IDS…",
		Short:   "Print the text of token ids",
		Example: "  graphloom lm detokenize --lm ~/models/Qwen3-0.6B 9064 572 87936",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needLMDir(cmd, dir); err != nil {
				return err
			}
			ids := make([]int32, 0, len(args))
			for i, a := range args {
				for _, f := range strings.FieldsFunc(a, func(r rune) bool { return r == ',' || r == ' ' || r == '[' || r == ']' }) {
					v, err := strconv.ParseInt(f, 10, 32)
					if err != nil || v < 0 {
						return usageError{fmt.Errorf("detokenize: argument %d: %q is not a token id (want a decimal integer ≥ 0)", i+1, f)}
					}
					ids = append(ids, int32(v))
				}
			}
			tok, err := lm.LoadTokenizer(dir)
			if err != nil {
				return err
			}
			for _, id := range ids { // Decode skips them, as transformers does; asked for, they are an error
				if !tok.HasID(id) {
					return fmt.Errorf("detokenize: id %d out of the vocabulary (%d ids)", id, tok.VocabSize())
				}
			}
			text, err := tok.Decode(ids, skip)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), text)
			return err
		},
	}
	lmDirFlag(cmd, &dir)
	cmd.Flags().BoolVar(&skip, "skip-special", false, "leave special tokens (BOS, EOS, …) out of the text")
	return cmd
}

// chatFlags are --messages, --prompt-format, --add-generation-prompt and --template-var.
type chatFlags struct {
	messages, format string
	genPrompt        bool
	vars             []string
}

func (c *chatFlags) register(cmd *cobra.Command, genDefault bool) {
	f := cmd.Flags()
	f.StringVar(&c.messages, "messages", "", `conversation file: a JSON array of {"role", "content"} objects`)
	f.StringVar(&c.format, "prompt-format", lm.PromptTemplate, "how messages become text: "+strings.Join(lm.PromptFormats, ", ")+
		" ("+lm.PromptTemplate+" = the model's own chat_template; the others for base models without one)")
	f.BoolVar(&c.genPrompt, "add-generation-prompt", genDefault, "end with the opening of the assistant's turn")
	f.StringArrayVar(&c.vars, "template-var", nil, `KEY=VALUE: a further chat-template variable, as apply_chat_template's keyword arguments (repeat for several); VALUE is read as JSON when it is JSON (true, 3, ["a"]), else as a string. E.g. enable_thinking=false: Qwen3's non-thinking mode`)
	limitChoices(cmd, "prompt-format", lm.PromptFormats...)
}

// templateVars parses --template-var.
func (c *chatFlags) templateVars() (map[string]any, error) {
	if len(c.vars) == 0 {
		return nil, nil
	}
	out := make(map[string]any, len(c.vars))
	for _, kv := range c.vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || k == "messages" || k == "add_generation_prompt" {
			return nil, usageError{fmt.Errorf("--template-var %q: want KEY=VALUE, KEY not messages or add_generation_prompt (their own flags)", kv)}
		}
		var x any
		if err := json.Unmarshal([]byte(v), &x); err != nil {
			x = v
		}
		out[k] = x
	}
	return out, nil
}

// render reads --messages and renders it with dir's chat template.
func (c *chatFlags) render(dir string) (string, error) {
	data, err := os.ReadFile(c.messages)
	if err != nil {
		return "", fmt.Errorf("--messages: %w", err)
	}
	msgs, err := lm.ParseMessages(c.messages, data)
	if err != nil {
		return "", usageError{err}
	}
	vars, err := c.templateVars()
	if err != nil {
		return "", err
	}
	chat, err := lm.LoadChatTemplate(dir, c.format)
	if err != nil {
		return "", err
	}
	return chat.Render(msgs, c.genPrompt, vars)
}

func newLMPromptCmd() *cobra.Command {
	var dir string
	var chat chatFlags
	cmd := &cobra.Command{
		Use:   "prompt --lm DIR --messages FILE [--add-generation-prompt]",
		Short: "Print exactly the prompt a conversation renders to",
		Long: `Render a conversation with the model's chat template (tokenizer_config.json's chat_template or
chat_template.jinja), as transformers' apply_chat_template(tokenize=False) does, and print it
exactly: no newline is added.`,
		Example: `  graphloom lm prompt --lm ~/models/Qwen3-0.6B --messages chat.json --add-generation-prompt`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := needLMDir(cmd, dir); err != nil {
				return err
			}
			if err := requireFlags(cmd, "messages"); err != nil {
				return err
			}
			text, err := chat.render(dir)
			if err != nil {
				return err
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), text)
			return err
		},
	}
	lmDirFlag(cmd, &dir)
	chat.register(cmd, false)
	return cmd
}

func newLMGenerateCmd() *cobra.Command {
	var dir, dtype string
	var chat chatFlags
	var opts lm.GenerateOptions
	var stops []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "generate --lm DIR [--messages FILE | PROMPT]",
		Short: "Generate a continuation (decoding as generation_config.json says; greedy without one)",
		Long: `Generate from a conversation (--messages, rendered with the chat template and the assistant's
turn opened) or from PROMPT (raw text; the tokenizer's special tokens such as BOS are added).
Decodes as the model's generation_config.json says (do_sample, temperature, top_p, top_k,
repetition_penalty), else greedily; --temperature 0 is greedy, > 0 samples (with --top-p,
--top-k and --seed). Generation stops at the
model's EOS ids (config.json and generation_config.json), a --stop string or --max-new tokens.`,
		Example: `  graphloom lm generate --lm ~/models/Qwen2.5-0.5B-Instruct --messages chat.json --max-new 64
  graphloom lm generate --lm ~/models/Llama-3.2-1B "The capital of France is" --stop "."`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needLMDir(cmd, dir); err != nil {
				return err
			}
			if (chat.messages == "") == (len(args) == 0) {
				return usageError{errors.New("generate: give either --messages FILE or a PROMPT argument")}
			}
			var text string
			special := chat.messages == ""
			if special {
				text = args[0]
			} else {
				var err error
				if text, err = chat.render(dir); err != nil {
					return err
				}
			}
			m, err := loadLM(dir, dtype)
			if err != nil {
				return err
			}
			ids, err := m.Tokenizer.Encode(text, special)
			if err != nil {
				return err
			}
			if len(ids) == 0 {
				return usageError{errors.New("generate: the prompt has no tokens")}
			}
			if note, err := decodingDefaults(cmd, dir, &opts); err != nil {
				return err
			} else if note != "" {
				cmd.PrintErrln(note)
			}
			if len(stops) > 0 {
				opts.Stop = func(_ int, out []int32) bool {
					s, err := m.Tokenizer.Decode(out, true)
					if err != nil {
						return false
					}
					for _, stop := range stops {
						if strings.Contains(s, stop) {
							return true
						}
					}
					return false
				}
			}
			eng, err := engine.New(engine.Config{})
			if err != nil {
				return err
			}
			defer eng.Close()
			outs, err := m.GenerateIDs(eng, [][]int32{ids}, opts)
			if err != nil {
				return err
			}
			answer, err := m.Tokenizer.Decode(outs[0], true)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					PromptTokens int     `json:"prompt_tokens"`
					IDs          []int32 `json:"ids"`
					Text         string  `json:"text"`
				}{len(ids), outs[0], answer})
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), answer)
			return err
		},
	}
	lmDirFlag(cmd, &dir)
	lmDTypeFlag(cmd, &dtype)
	chat.register(cmd, true)
	f := cmd.Flags()
	f.IntVar(&opts.MaxNewTokens, "max-new", 64, "at most this many new tokens")
	f.Float64Var(&opts.Temperature, "temperature", 0, "sampling temperature; 0 is greedy (default: generation_config.json's, when it sets do_sample)")
	f.Float64Var(&opts.TopP, "top-p", 1, "nucleus sampling: keep the most probable tokens up to this probability mass (default: generation_config.json's top_p when it sets do_sample and --temperature is not given, else 1)")
	f.IntVar(&opts.TopK, "top-k", 0, "sample among the k most probable tokens only; 0 = all (default: when generation_config.json sets do_sample and --temperature is not given, its top_k or transformers' 50; else 0)")
	f.Float64Var(&opts.RepetitionPenalty, "repetition-penalty", 1, "divide the logits of tokens already in the prompt or output by this (greedy or sampled); 1 = none (default: generation_config.json's)")
	f.Uint64Var(&opts.Seed, "seed", 0, "sampling seed")
	f.StringArrayVar(&stops, "stop", nil, "stop once the generated text contains this string (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print JSON: prompt_tokens, ids, text")
	limitFlag(cmd, "max-new", atLeast1(1<<20))
	limitFlag(cmd, "temperature", atLeast0(100))
	limitFlag(cmd, "top-p", flagRange{lo: 0, hi: 1, loOpen: true})
	limitFlag(cmd, "top-k", atLeast0(1<<30))
	limitFlag(cmd, "repetition-penalty", flagRange{lo: 0, hi: 100, loOpen: true})
	limitFlag(cmd, "seed", anyInt64)
	return cmd
}

// decodingDefaults fills the decoding settings the command line leaves unset from the
// model's generation_config.json, as transformers' generate() does: sampling with its
// temperature, top_p and top_k (transformers' 50 when unset) when it sets do_sample,
// and its repetition_penalty either way. It returns a line saying what was taken, or
// "" when nothing was.
func decodingDefaults(cmd *cobra.Command, dir string, opts *lm.GenerateOptions) (string, error) {
	gc, ok, err := lm.ReadGenerationConfig(dir)
	if err != nil || !ok {
		return "", err
	}
	changed := cmd.Flags().Changed
	var took []string
	if gc.DoSample != nil && *gc.DoSample && !changed("temperature") {
		opts.Temperature = 1
		if gc.Temperature != nil && *gc.Temperature > 0 {
			opts.Temperature = *gc.Temperature
		}
		took = append(took, fmt.Sprintf("sampling at temperature %g", opts.Temperature))
	}
	if opts.Temperature > 0 { // sampling, at the file's temperature or the flag's: its nucleus and top-k too, as transformers
		if gc.TopP != nil && !changed("top-p") {
			opts.TopP = *gc.TopP
			took = append(took, fmt.Sprintf("top-p %g", opts.TopP))
		}
		if !changed("top-k") {
			opts.TopK = 50
			if gc.TopK != nil {
				opts.TopK = *gc.TopK
			}
			took = append(took, fmt.Sprintf("top-k %d", opts.TopK))
		}
	}
	if gc.RepetitionPenalty != nil && *gc.RepetitionPenalty > 0 && *gc.RepetitionPenalty != 1 && !changed("repetition-penalty") {
		opts.RepetitionPenalty = *gc.RepetitionPenalty
		took = append(took, fmt.Sprintf("repetition penalty %g", opts.RepetitionPenalty))
	}
	if len(took) == 0 {
		return "", nil
	}
	hint := ""
	if !changed("temperature") || !changed("repetition-penalty") {
		hint = " (--temperature 0 --repetition-penalty 1 for plain greedy)"
	}
	return "decoding as generation_config.json says: " + strings.Join(took, ", ") + hint, nil
}
