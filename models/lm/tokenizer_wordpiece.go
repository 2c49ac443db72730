package lm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// This file holds BERT's tokenizer pieces as Hugging Face tokenizers implements them
// (normalizers/bert.rs, pre_tokenizers/bert.rs, models/wordpiece, decoders/wordpiece.rs,
// processors/bert.rs and roberta.rs): the BertNormalizer, the BertPreTokenizer, the
// WordPiece model and decoder, and the BERT / RoBERTa post-processors.

// wordPiece is the WordPiece model: greedy longest-match-first segmentation of each
// pre-token into vocabulary pieces, the pieces after the first written with the
// continuing-subword prefix ("##"); a word with a part that matches no piece, or
// longer than maxChars characters, is the unknown token.
type wordPiece struct {
	vocab    map[string]int32
	prefix   string
	maxChars int
	unk      int32
}

// newWordPiece builds the model over t's vocabulary. tokenizers' defaults: prefix
// "##", max_input_chars_per_word 100, unk_token "[UNK]".
func newWordPiece(t *Tokenizer, prefix *string, maxChars *int) (*wordPiece, error) {
	w := &wordPiece{vocab: t.vocab, prefix: "##", maxChars: 100}
	if prefix != nil {
		w.prefix = *prefix
	}
	if maxChars != nil {
		if *maxChars < 1 {
			return nil, fmt.Errorf("tokenizer: WordPiece max_input_chars_per_word %d: want ≥ 1", *maxChars)
		}
		w.maxChars = *maxChars
	}
	if t.unk == "" {
		t.unk = "[UNK]"
	}
	id, ok := t.vocab[t.unk]
	if !ok {
		return nil, fmt.Errorf("tokenizer: WordPiece unk_token %q is not in the vocabulary", t.unk)
	}
	w.unk = id
	return w, nil
}

// encode segments one pre-token.
func (w *wordPiece) encode(word string) ([]int32, error) {
	if utf8.RuneCountInString(word) > w.maxChars {
		return []int32{w.unk}, nil
	}
	var ids []int32
	for start := 0; start < len(word); {
		end := len(word)
		found := false
		for start < end {
			sub := word[start:end]
			if start > 0 {
				sub = w.prefix + sub
			}
			if id, ok := w.vocab[sub]; ok {
				ids = append(ids, id)
				found = true
				break
			}
			_, n := utf8.DecodeLastRuneInString(word[start:end])
			end -= n
		}
		if !found {
			return []int32{w.unk}, nil
		}
		start = end
	}
	return ids, nil
}

// bertNormalizer builds the BertNormalizer and StripAccents normalizers.
func bertNormalizer(c component) ([]normalizer, bool) {
	switch c.Type {
	case "BertNormalizer":
	case "StripAccents":
		return []normalizer{stripAccents}, true
	case "NFKD":
		return []normalizer{norm.NFKD.String}, true
	default:
		return nil, false
	}
	flag := func(p *bool, def bool) bool {
		if p == nil {
			return def
		}
		return *p
	}
	clean, chinese, lower := flag(c.CleanText, true), flag(c.HandleChinese, true), flag(c.Lowercase, true)
	strip := flag(c.StripAccents, lower) // strip_accents null follows lowercase
	return []normalizer{func(s string) string {
		if clean {
			s = cleanText(s)
		}
		if chinese {
			s = spaceChineseChars(s)
		}
		if strip {
			s = stripAccents(s)
		}
		if lower {
			s = strings.ToLower(s)
		}
		return s
	}}, true
}

// cleanText drops NUL, U+FFFD and control characters (Unicode categories Cc, Cf, Co,
// Cs and unassigned, except tab, newline and carriage return) and turns every white
// space character into a space.
func cleanText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == 0 || r == utf8.RuneError || isBertControl(r):
		case r == '\t' || r == '\n' || r == '\r' || unicode.IsSpace(r):
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isBertControl is tokenizers' is_control: the "Other" categories (Cc, Cf, Cs, Co, Cn)
// without tab, newline and carriage return.
func isBertControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	if unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs) {
		return true
	}
	return !isAssigned(r)
}

// isAssigned reports whether r has a general category other than Cn.
func isAssigned(r rune) bool {
	for _, t := range unicode.Categories {
		if unicode.Is(t, r) {
			return true
		}
	}
	return false
}

// isChineseChar is BERT's CJK test: the CJK Unified Ideographs blocks and their
// extensions and compatibility blocks (not Hangul, Hiragana or Katakana).
func isChineseChar(r rune) bool {
	switch {
	case r >= 0x4E00 && r <= 0x9FFF, r >= 0x3400 && r <= 0x4DBF, r >= 0x20000 && r <= 0x2A6DF,
		r >= 0x2A700 && r <= 0x2B73F, r >= 0x2B740 && r <= 0x2B81F, r >= 0x2B920 && r <= 0x2CEAF,
		r >= 0xF900 && r <= 0xFAFF, r >= 0x2F800 && r <= 0x2FA1F:
		return true
	}
	return false
}

// spaceChineseChars puts a space on each side of every CJK ideograph.
func spaceChineseChars(s string) string {
	if !strings.ContainsFunc(s, isChineseChar) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if isChineseChar(r) {
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// stripAccents decomposes (NFD) and drops non-spacing marks (category Mn).
func stripAccents(s string) string {
	d := norm.NFD.String(s)
	if !strings.ContainsFunc(d, isMn) {
		return d
	}
	return strings.Map(func(r rune) rune {
		if isMn(r) {
			return -1
		}
		return r
	}, d)
}

func isMn(r rune) bool { return unicode.Is(unicode.Mn, r) }

// isBertPunct is BERT's punctuation: ASCII punctuation (which includes symbols such
// as $ + < = > ^ ` | ~) and Unicode category P.
func isBertPunct(r rune) bool {
	if r < 0x80 {
		return r > ' ' && r < 0x7F && !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}
	return unicode.IsPunct(r)
}

// bertPreTokenizer builds the BertPreTokenizer (split on white space, which is
// removed, then every punctuation character on its own) and WhitespaceSplit.
func bertPreTokenizer(c component) ([]preTokenizer, bool) {
	switch c.Type {
	case "BertPreTokenizer", "WhitespaceSplit":
	default:
		return nil, false
	}
	punct := c.Type == "BertPreTokenizer"
	return []preTokenizer{func(pieces []string, first bool) ([]string, error) {
		var out []string
		for _, p := range pieces {
			start := -1
			for i, r := range p {
				switch {
				case unicode.IsSpace(r):
					if start >= 0 {
						out = append(out, p[start:i])
						start = -1
					}
				case punct && isBertPunct(r):
					if start >= 0 {
						out = append(out, p[start:i])
						start = -1
					}
					out = append(out, string(r))
				case start < 0:
					start = i
				}
			}
			if start >= 0 {
				out = append(out, p[start:])
			}
		}
		return out, nil
	}}, true
}

// wordPieceDecoder builds the WordPiece decoder: a token starting with the prefix
// ("##") joins the previous one, any other is preceded by a space; with cleanup
// (default on) the spaces BERT's tokenisation puts before punctuation and
// contractions are removed from each token as tokenizers' cleanup does.
func wordPieceDecoder(c component) ([]decoder, bool) {
	if c.Type != "WordPiece" {
		return nil, false
	}
	prefix := c.Prefix
	if prefix == "" {
		prefix = "##"
	}
	cleanup := c.Cleanup == nil || *c.Cleanup
	return []decoder{func(toks []string) []string {
		out := make([]string, len(toks))
		for i, s := range toks {
			if i > 0 {
				if strings.HasPrefix(s, prefix) {
					s = strings.Replace(s, prefix, "", 1)
				} else {
					s = " " + s
				}
			}
			if cleanup {
				s = cleanupSpaces.Replace(s)
			}
			out[i] = s
		}
		return out
	}}, true
}

// cleanupSpaces is tokenizers' decoders::wordpiece::cleanup, its replacements applied
// in order (a strings.Replacer would pick the first matching pattern at each position,
// which is the same here: no pattern is a prefix of an earlier one's match).
var cleanupSpaces = sequentialReplacer{
	{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
	{" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"},
}

type sequentialReplacer [][2]string

func (r sequentialReplacer) Replace(s string) string {
	for _, p := range r {
		s = strings.ReplaceAll(s, p[0], p[1])
	}
	return s
}

// pairProcessor builds BertProcessing ([CLS] … [SEP]) and RobertaProcessing (<s> …
// </s>) for single sequences: cls before, sep after, each given as [token, id].
func (t *Tokenizer) pairProcessor(c component) (bool, error) {
	if c.Type != "BertProcessing" && c.Type != "RobertaProcessing" {
		return false, nil
	}
	read := func(field string, raw json.RawMessage) (int32, error) {
		var pair []json.RawMessage
		if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
			return 0, fmt.Errorf("tokenizer: %s.%s %s: want [token, id]", c.Type, field, raw)
		}
		var tok string
		var id int32
		if json.Unmarshal(pair[0], &tok) != nil || json.Unmarshal(pair[1], &id) != nil {
			return 0, fmt.Errorf("tokenizer: %s.%s %s: want [token, id]", c.Type, field, raw)
		}
		if got, ok := t.vocab[tok]; ok && got != id {
			return 0, fmt.Errorf("tokenizer: %s.%s: token %q has id %d in the vocabulary, %d here", c.Type, field, tok, got, id)
		}
		return id, nil
	}
	if len(c.Cls) == 0 || len(c.Sep) == 0 {
		return true, fmt.Errorf("tokenizer: %s needs cls and sep", c.Type)
	}
	cls, err := read("cls", c.Cls)
	if err != nil {
		return true, err
	}
	sep, err := read("sep", c.Sep)
	if err != nil {
		return true, err
	}
	t.prefix = append(t.prefix, cls)
	t.suffix = append(t.suffix, sep)
	return true, nil
}

// SpecialCounts returns how many tokens Encode(…, true) adds before and after a
// sequence ([CLS] and [SEP] for BERT, <s> and </s> for RoBERTa, BOS for Llama).
func (t *Tokenizer) SpecialCounts() (before, after int) { return len(t.prefix), len(t.suffix) }

// EncodeTruncated is Encode with the result cut to at most maxLen ids, as
// transformers' truncation=True (strategy longest_first, side right) cuts a single
// sequence: the text's ids are cut at the end and, with addSpecial, the special
// tokens are kept around what remains. truncated reports whether ids were dropped.
// maxLen ≤ 0 means no limit.
func (t *Tokenizer) EncodeTruncated(text string, addSpecial bool, maxLen int) (ids []int32, truncated bool, err error) {
	ids, err = t.Encode(text, false)
	if err != nil {
		return nil, false, err
	}
	room := maxLen
	if addSpecial {
		room -= len(t.prefix) + len(t.suffix)
	}
	if maxLen > 0 {
		if room < 0 {
			return nil, false, errors.New("tokenizer: maximum length is shorter than the special tokens of a sequence")
		}
		if len(ids) > room {
			ids, truncated = ids[:room], true
		}
	}
	if addSpecial {
		out := make([]int32, 0, len(t.prefix)+len(ids)+len(t.suffix))
		out = append(append(append(out, t.prefix...), ids...), t.suffix...)
		ids = out
	}
	return ids, truncated, nil
}
