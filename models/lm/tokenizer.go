package lm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"
)

// Tokenizer encodes and decodes text with a Hugging Face tokenizer.json BPE, WordPiece
// or Unigram model: byte-level BPE (GPT-2, RoBERTa, Llama 3, Qwen2), SentencePiece-style
// BPE with byte fallback (Llama 2), BERT's WordPiece (tokenizer_wordpiece.go) or
// SentencePiece's Unigram (XLM-RoBERTa, ALBERT, T5; tokenizer_unigram.go).
// Pre-tokenizer split patterns run on a regex engine with look-ahead (regexp2), as
// Qwen2's and Llama 3's need.
//
// Supported components: normalizers NFC, NFKC, NFD, NFKD, Lowercase, Prepend, Replace,
// BertNormalizer, StripAccents, Precompiled, Strip and Sequence; pre-tokenizers ByteLevel, Split,
// Metaspace, Digits, BertPreTokenizer, WhitespaceSplit and Sequence; the BPE model
// (byte_fallback, ignore_merges, fuse_unk, unk_token) and the WordPiece model
// (continuing_subword_prefix, max_input_chars_per_word, unk_token), the Unigram model
// (unk_id, byte_fallback); post-processors
// TemplateProcessing (single sequences), BertProcessing, RobertaProcessing and
// ByteLevel; decoders ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip,
// WordPiece and Sequence. Anything else is a load error.
type Tokenizer struct {
	vocab   map[string]int32
	inv     []string
	ranks   map[[2]string]int
	unk     string
	byteFB  bool
	ignoreM bool
	fuseUnk bool
	added   []addedToken // longest first
	// addedRaw and addedNorm are added's tokens matched in the raw and in the
	// normalised text (normalized=false / true), longest first.
	addedRaw, addedNorm []*addedToken
	special             map[int32]bool
	norms               []normalizer
	pres                []preTokenizer
	decs                []decoder
	prefix              []int32 // post-processor ids before the sequence
	suffix              []int32 // and after it
	byteEnc             [256]rune
	byteDec             map[rune]byte
	wp                  *wordPiece // the WordPiece model; nil for BPE and Unigram
	uni                 *unigram   // the Unigram model; nil for BPE and WordPiece
	cleanUp             bool       // tokenizer_config.json's clean_up_tokenization_spaces
}

// addedToken is an entry of tokenizer.json's added_tokens with the flags Hugging Face
// tokenizers' AddedVocabulary honours: lstrip/rstrip absorb the white space on that
// side of a match, singleWord matches only between non-word characters, normalized
// matches the token in the normalised text rather than the raw input.
type addedToken struct {
	content    string
	id         int32
	special    bool
	lstrip     bool
	rstrip     bool
	singleWord bool
	normalized bool
}

type normalizer func(string) string

// preTokenizer splits each piece further; first reports whether a piece is the
// first of the input (Metaspace's prepend_scheme "first").
type preTokenizer func(pieces []string, first bool) ([]string, error)

type decoder func(tokens []string) []string

// LoadTokenizer reads dir/tokenizer.json (and the add_bos_token / add_eos_token of
// dir's tokenizer_config.json).
func LoadTokenizer(dir string) (*Tokenizer, error) {
	tc, err := ReadTokenizerConfig(dir)
	if err != nil {
		return nil, err
	}
	return loadTokenizer(dir, tc)
}

// loadTokenizer is LoadTokenizer with dir's tokenizer configuration already read.
func loadTokenizer(dir string, tc TokenizerConfig) (*Tokenizer, error) {
	path := filepath.Join(dir, "tokenizer.json")
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("lm: %s not found: the model directory needs a Hugging Face tokenizer.json", path)
		}
		return nil, fmt.Errorf("lm: reading %s: %w", path, err)
	}
	t, err := ParseTokenizer(data)
	if err != nil {
		return nil, fmt.Errorf("lm: %s: %w", path, err)
	}
	t.applyConfig(tc)
	return t, nil
}

// applyConfig honours tokenizer_config.json's add_bos_token / add_eos_token where the
// file sets them, as transformers' Llama-family fast tokenizers rebuild their
// post-processor from them: the BOS (EOS) token is added before (after) a sequence
// encoded with special tokens exactly when the flag is true.
func (t *Tokenizer) applyConfig(tc TokenizerConfig) {
	t.cleanUp = tc.CleanUpSpaces != nil && *tc.CleanUpSpaces
	set := func(ids []int32, flag *bool, tokenField string, front bool) []int32 {
		id, ok := t.vocab[tc.Tokens[tokenField]]
		if flag == nil || !ok {
			return ids
		}
		has := slices.Contains(ids, id)
		switch {
		case *flag && !has && front:
			return append([]int32{id}, ids...)
		case *flag && !has:
			return append(ids, id)
		case !*flag && has:
			return slices.DeleteFunc(slices.Clone(ids), func(x int32) bool { return x == id })
		}
		return ids
	}
	t.prefix = set(t.prefix, tc.AddBOS, "bos_token", true)
	t.suffix = set(t.suffix, tc.AddEOS, "eos_token", false)
}

// component is a tokenizer.json pipeline element.
type component struct {
	Type string `json:"type"`
	// normalizers / pre-tokenizers / decoders
	Normalizers   []component     `json:"normalizers"`
	PreTokenizers []component     `json:"pretokenizers"`
	Decoders      []component     `json:"decoders"`
	Prepend       string          `json:"prepend"`
	Pattern       json.RawMessage `json:"pattern"`
	Content       string          `json:"content"`
	Behavior      string          `json:"behavior"`
	Invert        bool            `json:"invert"`
	AddPrefixPtr  *bool           `json:"add_prefix_space"`
	UseRegex      *bool           `json:"use_regex"`
	Replacement   string          `json:"replacement"`
	PrependScheme string          `json:"prepend_scheme"`
	Split         *bool           `json:"split"`
	Individual    bool            `json:"individual_digits"`
	Start         int             `json:"start"`
	Stop          int             `json:"stop"`
	// Precompiled (base64; null = no rules), Strip normalizer
	Charsmap   *string `json:"precompiled_charsmap"`
	StripLeft  bool    `json:"strip_left"`
	StripRight bool    `json:"strip_right"`
	// BertNormalizer (nil = the tokenizers default), WordPiece decoder
	CleanText     *bool  `json:"clean_text"`
	HandleChinese *bool  `json:"handle_chinese_chars"`
	StripAccents  *bool  `json:"strip_accents"`
	Lowercase     *bool  `json:"lowercase"`
	Prefix        string `json:"prefix"`
	Cleanup       *bool  `json:"cleanup"`
	// BertProcessing / RobertaProcessing: [token, id]
	Sep json.RawMessage `json:"sep"`
	Cls json.RawMessage `json:"cls"`
	// post-processor
	Processors []component `json:"processors"`
	Single     []map[string]struct {
		ID string `json:"id"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int32 `json:"ids"`
	} `json:"special_tokens"`
}

type tokenizerFile struct {
	AddedTokens []struct {
		ID         int32  `json:"id"`
		Content    string `json:"content"`
		Special    bool   `json:"special"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		SingleWord bool   `json:"single_word"`
		Normalized *bool  `json:"normalized"`
	} `json:"added_tokens"`
	Normalizer    *component `json:"normalizer"`
	PreTokenizer  *component `json:"pre_tokenizer"`
	PostProcessor *component `json:"post_processor"`
	Decoder       *component `json:"decoder"`
	Model         struct {
		Type          string          `json:"type"`
		Vocab         json.RawMessage `json:"vocab"` // map for BPE and WordPiece (Unigram: a list)
		Merges        json.RawMessage `json:"merges"`
		UnkToken      *string         `json:"unk_token"`
		ByteFallback  bool            `json:"byte_fallback"`
		IgnoreMerges  bool            `json:"ignore_merges"`
		FuseUnk       bool            `json:"fuse_unk"`
		ContinuingPfx *string         `json:"continuing_subword_prefix"`
		EndOfWordSufx *string         `json:"end_of_word_suffix"`
		Dropout       *float64        `json:"dropout"`
		MaxInputChars *int            `json:"max_input_chars_per_word"`
		UnkID         *int            `json:"unk_id"` // Unigram
	} `json:"model"`
}

// gpt2Pattern is the ByteLevel pre-tokenizer's split regex (with look-ahead).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// ParseTokenizer decodes the contents of a tokenizer.json.
func ParseTokenizer(data []byte) (*Tokenizer, error) {
	var f tokenizerFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	m := f.Model
	wordPieceModel, unigramModel := m.Type == "WordPiece", m.Type == "Unigram"
	if m.Type != "BPE" && !wordPieceModel && !unigramModel && !(m.Type == "" && m.Vocab != nil) {
		return nil, fmt.Errorf("tokenizer: model type %q not supported (want BPE, WordPiece or Unigram)", m.Type)
	}
	var vocab map[string]int32
	var uni *unigram
	if unigramModel {
		var pieces []string
		var err error
		if uni, pieces, err = newUnigram(m.Vocab, m.UnkID, m.ByteFallback); err != nil {
			return nil, err
		}
		vocab = make(map[string]int32, len(pieces))
		for i, p := range pieces {
			vocab[p] = int32(i)
		}
	} else if len(m.Vocab) > 0 {
		if err := json.Unmarshal(m.Vocab, &vocab); err != nil {
			return nil, fmt.Errorf("tokenizer: model.vocab: want an object of token → id: %w", err)
		}
	}
	if !wordPieceModel && (m.ContinuingPfx != nil && *m.ContinuingPfx != "") || (m.EndOfWordSufx != nil && *m.EndOfWordSufx != "") {
		return nil, errors.New("tokenizer: BPE continuing_subword_prefix / end_of_word_suffix not supported")
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, errors.New("tokenizer: BPE dropout not supported")
	}
	var err error
	t := &Tokenizer{vocab: map[string]int32{}, ranks: map[[2]string]int{}, byteFB: m.ByteFallback,
		ignoreM: m.IgnoreMerges, fuseUnk: m.FuseUnk, special: map[int32]bool{}, uni: uni}
	if m.UnkToken != nil {
		t.unk = *m.UnkToken
	}
	maxID := int32(-1)
	for s, id := range vocab {
		if id < 0 {
			return nil, fmt.Errorf("tokenizer: negative id %d for %q", id, s)
		}
		t.vocab[s] = id
		maxID = max(maxID, id)
	}
	for _, a := range f.AddedTokens {
		if a.Content == "" {
			return nil, fmt.Errorf("tokenizer: added token %d is empty", a.ID)
		}
		t.vocab[a.Content] = a.ID
		maxID = max(maxID, a.ID)
		normalized := !a.Special // AddedToken's default
		if a.Normalized != nil {
			normalized = *a.Normalized
		}
		t.added = append(t.added, addedToken{content: a.Content, id: a.ID, special: a.Special,
			lstrip: a.LStrip, rstrip: a.RStrip, singleWord: a.SingleWord, normalized: normalized})
		if a.Special {
			t.special[a.ID] = true
		}
	}
	sort.SliceStable(t.added, func(i, j int) bool { return len(t.added[i].content) > len(t.added[j].content) })
	for i := range t.added {
		if t.added[i].normalized {
			t.addedNorm = append(t.addedNorm, &t.added[i])
		} else {
			t.addedRaw = append(t.addedRaw, &t.added[i])
		}
	}
	t.inv = make([]string, maxID+1)
	for s, id := range t.vocab {
		t.inv[id] = s
	}
	switch {
	case wordPieceModel:
		if t.wp, err = newWordPiece(t, m.ContinuingPfx, m.MaxInputChars); err != nil {
			return nil, err
		}
	case unigramModel: // built above, with the vocabulary
	default:
		if err := t.parseMerges(m.Merges); err != nil {
			return nil, err
		}
	}
	t.byteEnc, t.byteDec = byteLevelTables()
	if f.Normalizer != nil {
		if t.norms, err = t.normalizers(*f.Normalizer); err != nil {
			return nil, err
		}
	}
	if f.PreTokenizer != nil {
		if t.pres, err = t.preTokenizers(*f.PreTokenizer); err != nil {
			return nil, err
		}
	}
	if f.Decoder != nil {
		if t.decs, err = t.decoders(*f.Decoder); err != nil {
			return nil, err
		}
	}
	if f.PostProcessor != nil {
		if err := t.postProcessor(*f.PostProcessor); err != nil {
			return nil, err
		}
	}
	return t, nil
}

func (t *Tokenizer) parseMerges(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return fmt.Errorf("tokenizer: merge %d %q is not two symbols", i, s)
			}
			t.ranks[[2]string{a, b}] = i
		}
		return nil
	}
	var pairs [][2]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return fmt.Errorf("tokenizer: merges: want \"a b\" strings or [a, b] pairs: %w", err)
	}
	for i, p := range pairs {
		t.ranks[p] = i
	}
	return nil
}

// pattern compiles a tokenizer.json pattern ({"String": s} or {"Regex": r}).
func pattern(raw json.RawMessage) (*regexp2.Regexp, error) {
	var p struct {
		String *string `json:"String"`
		Regex  *string `json:"Regex"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("tokenizer: pattern %s: %w", raw, err)
	}
	var expr string
	switch {
	case p.String != nil:
		expr = regexp2.Escape(*p.String)
	case p.Regex != nil:
		expr = *p.Regex
	default:
		return nil, fmt.Errorf("tokenizer: pattern %s: want String or Regex", raw)
	}
	re, err := regexp2.Compile(expr, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: pattern %q: %w", expr, err)
	}
	return re, nil
}

// sequence builds a "Sequence" component: each part built by build, in order.
func sequence[T any](parts []component, build func(component) ([]T, error)) ([]T, error) {
	var out []T
	for _, p := range parts {
		xs, err := build(p)
		if err != nil {
			return nil, err
		}
		out = append(out, xs...)
	}
	return out, nil
}

func (t *Tokenizer) normalizers(c component) ([]normalizer, error) {
	switch c.Type {
	case "Sequence":
		return sequence(c.Normalizers, t.normalizers)
	case "NFC":
		return []normalizer{norm.NFC.String}, nil
	case "NFKC":
		return []normalizer{norm.NFKC.String}, nil
	case "NFD":
		return []normalizer{norm.NFD.String}, nil
	case "Lowercase":
		return []normalizer{strings.ToLower}, nil
	case "Precompiled":
		if c.Charsmap == nil || *c.Charsmap == "" {
			return nil, nil
		}
		m, err := parsePrecompiled(*c.Charsmap)
		if err != nil {
			return nil, err
		}
		return []normalizer{m.normalize}, nil
	case "Strip":
		left, right := c.StripLeft, c.StripRight
		return []normalizer{func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, unicode.IsSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, unicode.IsSpace)
			}
			return s
		}}, nil
	case "Prepend":
		p := c.Prepend
		return []normalizer{func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}}, nil
	case "Replace":
		re, err := pattern(c.Pattern)
		if err != nil {
			return nil, err
		}
		content := c.Content
		return []normalizer{func(s string) string {
			out, err := re.Replace(s, strings.ReplaceAll(content, "$", "$$"), -1, -1)
			if err != nil {
				return s
			}
			return out
		}}, nil
	}
	if n, ok := bertNormalizer(c); ok {
		return n, nil
	}
	return nil, fmt.Errorf("tokenizer: normalizer %q not supported", c.Type)
}

func (t *Tokenizer) preTokenizers(c component) ([]preTokenizer, error) {
	switch c.Type {
	case "Sequence":
		return sequence(c.PreTokenizers, t.preTokenizers)
	case "ByteLevel":
		useRegex := c.UseRegex == nil || *c.UseRegex
		re := regexp2.MustCompile(gpt2Pattern, regexp2.None)
		addPrefix := c.AddPrefixPtr != nil && *c.AddPrefixPtr
		return []preTokenizer{func(pieces []string, first bool) ([]string, error) {
			var out []string
			for i, p := range pieces {
				if addPrefix && i == 0 && !strings.HasPrefix(p, " ") {
					p = " " + p
				}
				parts := []string{p}
				if useRegex {
					var err error
					if parts, err = splitRegex(re, p, "Isolated", false); err != nil {
						return nil, err
					}
				}
				for _, s := range parts {
					out = append(out, t.byteLevel(s))
				}
			}
			return out, nil
		}}, nil
	case "Split":
		re, err := pattern(c.Pattern)
		if err != nil {
			return nil, err
		}
		switch c.Behavior {
		case "Isolated", "Removed", "MergedWithPrevious", "MergedWithNext":
		default:
			return nil, fmt.Errorf("tokenizer: Split behavior %q not supported", c.Behavior)
		}
		behavior, invert := c.Behavior, c.Invert
		return []preTokenizer{func(pieces []string, first bool) ([]string, error) {
			var out []string
			for _, p := range pieces {
				parts, err := splitRegex(re, p, behavior, invert)
				if err != nil {
					return nil, err
				}
				out = append(out, parts...)
			}
			return out, nil
		}}, nil
	case "Metaspace":
		repl := c.Replacement
		if repl == "" {
			repl = "▁"
		}
		scheme := c.PrependScheme
		if scheme == "" { // legacy files: add_prefix_space (default true)
			scheme = "always"
			if c.AddPrefixPtr != nil && !*c.AddPrefixPtr {
				scheme = "never"
			}
		}
		split := c.Split == nil || *c.Split
		return []preTokenizer{func(pieces []string, first bool) ([]string, error) {
			var out []string
			for i, p := range pieces {
				p = strings.ReplaceAll(p, " ", repl)
				if (scheme == "always" || (scheme == "first" && first && i == 0)) && !strings.HasPrefix(p, repl) {
					p = repl + p
				}
				if !split {
					out = append(out, p)
					continue
				}
				// MergedWithNext on the replacement character.
				start := 0
				for j := 1; j < len(p); j++ {
					if strings.HasPrefix(p[j:], repl) {
						out = append(out, p[start:j])
						start = j
					}
				}
				out = append(out, p[start:])
			}
			return out, nil
		}}, nil
	case "Digits":
		expr := `\p{N}+`
		if c.Individual {
			expr = `\p{N}`
		}
		re := regexp2.MustCompile(expr, regexp2.None)
		return []preTokenizer{func(pieces []string, first bool) ([]string, error) {
			var out []string
			for _, p := range pieces {
				parts, err := splitRegex(re, p, "Isolated", false)
				if err != nil {
					return nil, err
				}
				out = append(out, parts...)
			}
			return out, nil
		}}, nil
	}
	if p, ok := bertPreTokenizer(c); ok {
		return p, nil
	}
	return nil, fmt.Errorf("tokenizer: pre-tokenizer %q not supported", c.Type)
}

// splitRegex splits s around the matches of re as Hugging Face's Split does.
func splitRegex(re *regexp2.Regexp, s, behavior string, invert bool) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	rs := []rune(s)
	type span struct {
		a, b  int
		match bool
	}
	var spans []span
	last := 0
	m, err := re.FindRunesMatch(rs)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		a, b := m.Index, m.Index+m.Length
		if a == b {
			continue
		}
		if a > last {
			spans = append(spans, span{last, a, false})
		}
		spans = append(spans, span{a, b, true})
		last = b
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer: split: %w", err)
	}
	if last < len(rs) {
		spans = append(spans, span{last, len(rs), false})
	}
	if invert {
		for i := range spans {
			spans[i].match = !spans[i].match
		}
	}
	var out []string
	pending := ""
	for i, sp := range spans {
		txt := string(rs[sp.a:sp.b])
		switch {
		case !sp.match:
			if behavior == "MergedWithNext" && i > 0 && spans[i-1].match {
				out[len(out)-1] += txt
				continue
			}
			out = append(out, pending+txt)
			pending = ""
		case behavior == "Isolated":
			out = append(out, txt)
		case behavior == "Removed":
		case behavior == "MergedWithPrevious":
			if len(out) > 0 && i > 0 && !spans[i-1].match {
				out[len(out)-1] += txt
			} else {
				out = append(out, txt)
			}
		case behavior == "MergedWithNext":
			out = append(out, pending+txt)
			pending = ""
		}
	}
	return out, nil
}

func (t *Tokenizer) decoders(c component) ([]decoder, error) {
	switch c.Type {
	case "Sequence":
		return sequence(c.Decoders, t.decoders)
	case "ByteLevel":
		return []decoder{func(toks []string) []string {
			var b []byte
			for _, tok := range toks {
				for _, r := range tok {
					if c, ok := t.byteDec[r]; ok {
						b = append(b, c)
					} else {
						b = utf8.AppendRune(b, r)
					}
				}
			}
			return []string{strings.ToValidUTF8(string(b), "\uFFFD")}
		}}, nil
	case "Replace":
		re, err := pattern(c.Pattern)
		if err != nil {
			return nil, err
		}
		content := c.Content
		return []decoder{func(toks []string) []string {
			out := make([]string, len(toks))
			for i, s := range toks {
				r, err := re.Replace(s, strings.ReplaceAll(content, "$", "$$"), -1, -1)
				if err != nil {
					r = s
				}
				out[i] = r
			}
			return out
		}}, nil
	case "ByteFallback":
		return []decoder{func(toks []string) []string {
			var out []string
			var pend []byte
			flush := func() {
				if len(pend) == 0 {
					return
				}
				if utf8.Valid(pend) {
					out = append(out, string(pend))
				} else {
					out = append(out, strings.Repeat("\uFFFD", len(pend)))
				}
				pend = nil
			}
			for _, s := range toks {
				if b, ok := byteToken(s); ok {
					pend = append(pend, b)
					continue
				}
				flush()
				out = append(out, s)
			}
			flush()
			return out
		}}, nil
	case "Fuse":
		return []decoder{func(toks []string) []string { return []string{strings.Join(toks, "")} }}, nil
	case "Strip":
		content, start, stop := c.Content, c.Start, c.Stop
		return []decoder{func(toks []string) []string {
			out := make([]string, len(toks))
			for i, s := range toks {
				for range start {
					s = strings.TrimPrefix(s, content)
				}
				for range stop {
					s = strings.TrimSuffix(s, content)
				}
				out[i] = s
			}
			return out
		}}, nil
	case "Metaspace":
		repl := c.Replacement
		if repl == "" {
			repl = "▁"
		}
		strip := c.PrependScheme != "never"
		return []decoder{func(toks []string) []string {
			out := make([]string, len(toks))
			for i, s := range toks {
				s = strings.ReplaceAll(s, repl, " ")
				if i == 0 && strip {
					s = strings.TrimPrefix(s, " ")
				}
				out[i] = s
			}
			return out
		}}, nil
	}
	if d, ok := wordPieceDecoder(c); ok {
		return d, nil
	}
	return nil, fmt.Errorf("tokenizer: decoder %q not supported", c.Type)
}

func (t *Tokenizer) postProcessor(c component) error {
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence": // e.g. [ByteLevel, TemplateProcessing] (Llama 3)
		for _, p := range c.Processors {
			if err := t.postProcessor(p); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		seen := false
		for _, item := range c.Single {
			if sp, ok := item["SpecialToken"]; ok {
				ids, ok := c.SpecialTokens[sp.ID]
				if !ok {
					return fmt.Errorf("tokenizer: TemplateProcessing: special token %q not defined", sp.ID)
				}
				if seen {
					t.suffix = append(t.suffix, ids.IDs...)
				} else {
					t.prefix = append(t.prefix, ids.IDs...)
				}
				continue
			}
			if _, ok := item["Sequence"]; ok {
				seen = true
				continue
			}
			return fmt.Errorf("tokenizer: TemplateProcessing: unknown item %v", item)
		}
		return nil
	}
	if ok, err := t.pairProcessor(c); ok {
		return err
	}
	return fmt.Errorf("tokenizer: post-processor %q not supported", c.Type)
}

// byteToken parses "<0xAB>".
func byteToken(s string) (byte, bool) {
	if len(s) != 6 || !strings.HasPrefix(s, "<0x") || s[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(s[3:5], 16, 8)
	return byte(v), err == nil
}

// byteLevelTables returns GPT-2's byte ↔ printable-rune mapping.
func byteLevelTables() ([256]rune, map[rune]byte) {
	var enc [256]rune
	dec := map[rune]byte{}
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			enc[b] = rune(b)
		} else {
			enc[b] = rune(256 + n)
			n++
		}
		dec[enc[b]] = byte(b)
	}
	return enc, dec
}

// byteLevel maps s's UTF-8 bytes to GPT-2's printable runes.
func (t *Tokenizer) byteLevel(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		sb.WriteRune(t.byteEnc[s[i]])
	}
	return sb.String()
}

// VocabSize returns one more than the largest token id.
func (t *Tokenizer) VocabSize() int { return len(t.inv) }

// TokenID returns the id of a token string (e.g. "<s>") and whether it exists.
func (t *Tokenizer) TokenID(tok string) (int32, bool) {
	id, ok := t.vocab[tok]
	return id, ok
}

// HasID reports whether id is one of the tokenizer's tokens.
func (t *Tokenizer) HasID(id int32) bool {
	return id >= 0 && int(id) < len(t.inv) && t.inv[id] != ""
}

// IsSpecial reports whether id is a special added token (BOS, EOS, a chat turn's
// markers): one Decode drops when asked to skip special tokens.
func (t *Tokenizer) IsSpecial(id int32) bool { return t.special[id] }

// Token returns the string of an id ("" when out of range).
func (t *Tokenizer) Token(id int32) string {
	if id < 0 || int(id) >= len(t.inv) {
		return ""
	}
	return t.inv[id]
}

// Encode returns the token ids of text. Added tokens (e.g. "<s>", "<|im_start|>")
// written in the text are matched first, as Hugging Face tokenizers match them:
// tokens with normalized=false in the raw text, then the rest of the text is
// normalised and tokens with normalized=true are matched in it; lstrip, rstrip and
// single_word are honoured. With addSpecial the post-processor's tokens (e.g. BOS)
// are added around the sequence.
func (t *Tokenizer) Encode(text string, addSpecial bool) ([]int32, error) {
	var ids []int32
	if addSpecial {
		ids = append(ids, t.prefix...)
	}
	first := true
	for _, raw := range t.splitAdded(text, false) {
		if raw.tok != nil {
			ids = append(ids, raw.tok.id)
			first = false
			continue
		}
		s := raw.text
		for _, n := range t.norms {
			s = n(s)
		}
		for _, sp := range t.splitAdded(s, true) {
			if sp.tok != nil {
				ids = append(ids, sp.tok.id)
				first = false
				continue
			}
			if sp.text == "" {
				continue
			}
			got, err := t.encodeSegment(sp.text, first)
			if err != nil {
				return nil, err
			}
			ids = append(ids, got...)
			first = false
		}
	}
	if addSpecial {
		ids = append(ids, t.suffix...)
	}
	return ids, nil
}

// split is a piece of the input: an added token, or text between added tokens.
type split struct {
	text string
	tok  *addedToken
}

// splitAdded cuts s at the added tokens whose normalized flag is normalized: matches
// are leftmost, longest at a position and non-overlapping (Aho-Corasick
// LeftmostLongest, as tokenizers finds them); a single_word match touching a word
// character is dropped (its span is not searched again), and lstrip/rstrip widen a
// match over the white space beside it (never into the previous match).
func (t *Tokenizer) splitAdded(s string, normalized bool) []split {
	var out []split
	textFrom, searchFrom := 0, 0
	for searchFrom < len(s) {
		pos, tok := t.nextAdded(s[searchFrom:], normalized)
		if tok == nil {
			break
		}
		start, stop := searchFrom+pos, searchFrom+pos+len(tok.content)
		searchFrom = stop
		if tok.singleWord && (endsWithWordChar(s[:start]) || startsWithWordChar(s[stop:])) {
			continue
		}
		if tok.lstrip {
			start = max(textFrom, len(strings.TrimRightFunc(s[:start], unicode.IsSpace)))
		}
		if tok.rstrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
			searchFrom = stop
		}
		if start > textFrom {
			out = append(out, split{text: s[textFrom:start]})
		}
		out = append(out, split{tok: tok})
		textFrom = stop
	}
	if textFrom < len(s) {
		out = append(out, split{text: s[textFrom:]})
	}
	return out
}

// isWordChar is Rust's char::is_alphanumeric, which tokenizers' single_word test uses.
func isWordChar(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

func endsWithWordChar(s string) bool {
	r, n := utf8.DecodeLastRuneInString(s)
	return n > 0 && isWordChar(r)
}

func startsWithWordChar(s string) bool {
	r, n := utf8.DecodeRuneInString(s)
	return n > 0 && isWordChar(r)
}

// nextAdded finds the first (longest at that position) added token in s among those
// whose normalized flag is normalized.
func (t *Tokenizer) nextAdded(s string, normalized bool) (int, *addedToken) {
	best, bestTok := len(s), (*addedToken)(nil)
	cands := t.addedRaw
	if normalized {
		cands = t.addedNorm
	}
	for _, a := range cands {
		if j := strings.Index(s[:min(len(s), best+len(a.content))], a.content); j >= 0 && (j < best || (j == best && bestTok != nil && len(a.content) > len(bestTok.content))) {
			best, bestTok = j, a
		}
	}
	return best, bestTok
}

// encodeSegment pre-tokenises and BPE- (or WordPiece-) encodes normalised text free of added tokens.
func (t *Tokenizer) encodeSegment(s string, first bool) ([]int32, error) {
	pieces := []string{s}
	for _, p := range t.pres {
		var err error
		if pieces, err = p(pieces, first); err != nil {
			return nil, err
		}
	}
	var ids []int32
	for _, p := range pieces {
		if p == "" {
			continue
		}
		var got []int32
		var err error
		switch {
		case t.wp != nil:
			got, err = t.wp.encode(p)
		case t.uni != nil:
			got, err = t.uni.encode(p)
		default:
			got, err = t.bpe(p)
		}
		if err != nil {
			return nil, err
		}
		ids = append(ids, got...)
	}
	return ids, nil
}

// bpe encodes one pre-token: characters (or byte-fallback tokens), then merges by
// rank, lowest first, leftmost on ties.
func (t *Tokenizer) bpe(word string) ([]int32, error) {
	if t.ignoreM {
		if id, ok := t.vocab[word]; ok {
			return []int32{id}, nil
		}
	}
	var syms []string
	unk := make([]bool, 0, len(word))
	for _, r := range word {
		c := string(r)
		if _, ok := t.vocab[c]; ok {
			syms = append(syms, c)
			unk = append(unk, false)
			continue
		}
		if t.byteFB {
			ok := true
			var bs []string
			for _, b := range []byte(c) {
				bt := fmt.Sprintf("<0x%02X>", b)
				if _, have := t.vocab[bt]; !have {
					ok = false
					break
				}
				bs = append(bs, bt)
			}
			if ok {
				syms = append(syms, bs...)
				for range bs {
					unk = append(unk, false)
				}
				continue
			}
		}
		if t.unk == "" {
			return nil, fmt.Errorf("tokenizer: character %q is not in the vocabulary and there is no unk token", c)
		}
		if t.fuseUnk && len(unk) > 0 && unk[len(unk)-1] {
			continue
		}
		syms = append(syms, t.unk)
		unk = append(unk, true)
	}
	for len(syms) > 1 {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := t.ranks[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		merged := syms[at] + syms[at+1]
		syms = append(syms[:at+1], syms[at+2:]...)
		syms[at] = merged
	}
	ids := make([]int32, len(syms))
	for i, s := range syms {
		id, ok := t.vocab[s]
		if !ok {
			return nil, fmt.Errorf("tokenizer: merged symbol %q is not in the vocabulary", s)
		}
		ids[i] = id
	}
	return ids, nil
}

// Decode returns the text of ids; skipSpecial drops special added tokens (BOS, EOS, …).
// Ids the tokenizer does not have are skipped, as Hugging Face tokenizers' decode
// skips them: a model's vocab_size may exceed its tokenizer's ids (Qwen2.5 and Qwen3:
// 151936 rows, 151669 tokens), so sampling can give one. HasID checks ids first.
func (t *Tokenizer) Decode(ids []int32, skipSpecial bool) (string, error) {
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if !t.HasID(id) {
			continue
		}
		if skipSpecial && t.special[id] {
			continue
		}
		toks = append(toks, t.inv[id])
	}
	for _, d := range t.decs {
		toks = d(toks)
	}
	text := strings.Join(toks, "")
	if t.cleanUp {
		text = cleanUpSpaces(text)
	}
	return text, nil
}

// cleanUpSpaces is transformers' clean_up_tokenization: one replacement over the whole
// text after another, in its order (a single-pass strings.Replacer differs: "a ' ,"
// is "a '," there, "a'," in one pass).
func cleanUpSpaces(text string) string {
	for _, r := range [...][2]string{{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
		{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}} {
		text = strings.ReplaceAll(text, r[0], r[1])
	}
	return text
}
