package lm_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// TestByteLevelBPE checks the tiny Qwen2-style tokenizer against ids worked out by
// hand (ids 0–255 are bytes; 256+ the merges "Ġ t", "h e", "Ġt he", "i n", "Ġ a",
// "a t", "o n", "Ġ c", "Ġc at", "e r"; 266 <|endoftext|>, 267 <|im_start|>).
func TestByteLevelBPE(t *testing.T) {
	tok, err := lm.ParseTokenizer([]byte(lmtest.TokenizerJSON()))
	require.NoError(t, err)
	cases := []struct {
		name    string
		text    string
		special bool
		want    []int32
	}{
		// Pieces "the" " cat" " " " the": `\s+(?!\S)` takes one of the two spaces, the
		// other leads " the" (without look-ahead, "  " and "the" would give 32 32 116
		// 257). "the" → t + he; " cat" → "a t" (rank 5) before "Ġ c" (rank 7), then
		// "Ġc at"; " the" → "Ġ t", "h e", "Ġt he".
		{"look-ahead whitespace", "the cat  the", false, []int32{116, 257, 264, 32, 258}},
		{"two spaces before a word", "at  sat", false, []int32{261, 32, 32, 115, 261}},
		{"post-processor BOS", "the cat", true, []int32{267, 116, 257, 264}},
		{"trailing spaces", "at  ", false, []int32{261, 32, 32}},            // "at", then `\s+` at the end (no \S follows)
		{"digits one by one", "2024", false, []int32{50, 48, 50, 52}},       // \p{N} matches single digits
		{"contraction", "it's", false, []int32{105, 116, 39, 115}},          // "it" + "'s"
		{"newline run", "on\n\nthe", false, []int32{262, 10, 10, 116, 257}}, // \s*[\r\n]+
		{"special tokens in text", "<|im_start|>the<|endoftext|>", false, []int32{267, 116, 257, 266}},
		{"multi-byte", "é", false, []int32{195, 169}}, // UTF-8 C3 A9, both printable in GPT-2's map
		{"space before word", " the", false, []int32{258}},
		{"NFC", "e\u0301", false, []int32{195, 169}}, // e + combining acute → é
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := tok.Encode(c.text, c.special)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			text, err := tok.Decode(got, true)
			require.NoError(t, err)
			if c.name != "special tokens in text" && c.name != "NFC" {
				assert.Equal(t, c.text, text)
			}
		})
	}
	s, err := tok.Decode([]int32{267, 116, 257, 266}, false)
	require.NoError(t, err)
	assert.Equal(t, "<|im_start|>the<|endoftext|>", s)
	id, ok := tok.TokenID("<|endoftext|>")
	assert.True(t, ok)
	assert.Equal(t, int32(lmtest.EndOfText), id)
	// An id past the tokenizer's (a model's vocab_size may be larger) is skipped, as
	// transformers' decode skips it.
	assert.False(t, tok.HasID(999))
	s, err = tok.Decode([]int32{116, 999, 257}, false)
	require.NoError(t, err)
	want, err := tok.Decode([]int32{116, 257}, false)
	require.NoError(t, err)
	assert.Equal(t, want, s)
}

// sentencePieceJSON is a Llama-2-style tokenizer.json: Prepend/Replace normaliser, no
// pre-tokenizer, BPE with byte fallback, and the Replace/ByteFallback/Fuse/Strip decoder.
func sentencePieceJSON() string {
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := range 256 {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 3 + b
	}
	for i, s := range []string{"▁", "h", "i", "▁h", "▁hi", "e", "l", "o", "lo"} {
		vocab[s] = 259 + i
	}
	doc := map[string]any{
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true},
			{"id": 2, "content": "</s>", "special": true},
		},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		"pre_tokenizer": nil,
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{"<s>": map[string]any{"id": "<s>", "ids": []int{1}, "tokens": []string{"<s>"}}},
		},
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"}, map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": map[string]any{"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
			"vocab": vocab, "merges": [][2]string{{"▁", "h"}, {"▁h", "i"}, {"l", "o"}}},
	}
	data, _ := json.Marshal(doc)
	return string(data)
}

// TestSentencePieceBPE: "hi hello" → "▁hi▁hello"; "▁ h" merges at both places
// (leftmost first), then "▁h i", then "l o": ▁hi ▁h e l lo. "€" is not in the
// vocabulary: bytes E2 82 AC → <0xE2> <0x82> <0xAC> = 3 + byte.
func TestSentencePieceBPE(t *testing.T) {
	tok, err := lm.ParseTokenizer([]byte(sentencePieceJSON()))
	require.NoError(t, err)
	got, err := tok.Encode("hi hello", true)
	require.NoError(t, err)
	assert.Equal(t, []int32{1, 263, 262, 264, 265, 267}, got)
	got, err = tok.Encode("hi€", false)
	require.NoError(t, err)
	assert.Equal(t, []int32{263, 3 + 0xE2, 3 + 0x82, 3 + 0xAC}, got)
	text, err := tok.Decode(append([]int32{1}, got...), true)
	require.NoError(t, err)
	assert.Equal(t, "hi€", text)
	text, err = tok.Decode([]int32{262, 264, 265, 267}, true)
	require.NoError(t, err)
	assert.Equal(t, "hello", text)
	text, err = tok.Decode([]int32{263, 3 + 0xE2, 3 + 0x82}, true) // truncated UTF-8
	require.NoError(t, err)
	assert.Equal(t, "hi\uFFFD\uFFFD", text)
}

func TestTokenizerErrors(t *testing.T) {
	cases := []struct {
		name, json, want string
	}{
		{"not json", "{", "tokenizer:"},
		{"unknown model", `{"model":{"type":"WordLevel","vocab":{}}}`, `model type "WordLevel" not supported (want BPE, WordPiece or Unigram)`},
		{"empty unigram", `{"model":{"type":"Unigram","vocab":[]}}`, `Unigram model.vocab is empty`},
		{"unigram vocab as a map", `{"model":{"type":"Unigram","vocab":{"a":0}}}`, `want a list of [piece, score]`},
		{"wordpiece without unk", `{"model":{"type":"WordPiece","vocab":{"a":0}}}`, `WordPiece unk_token "[UNK]" is not in the vocabulary`},
		{"unknown pre-tokenizer", `{"pre_tokenizer":{"type":"UnicodeScripts"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, `pre-tokenizer "UnicodeScripts" not supported`},
		{"bert processing id mismatch", `{"post_processor":{"type":"BertProcessing","cls":["a",3],"sep":["a",0]},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, `BertProcessing.cls: token "a" has id 0 in the vocabulary, 3 here`},
		{"bad regex", `{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(("},"behavior":"Isolated"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`, "pattern"},
		{"bad merge", `{"model":{"type":"BPE","vocab":{"a":0},"merges":["ab"]}}`, "is not two symbols"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := lm.ParseTokenizer([]byte(c.json))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	tok, err := lm.ParseTokenizer([]byte(`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`))
	require.NoError(t, err)
	_, err = tok.Encode("b", false)
	assert.ErrorContains(t, err, "no unk token")

	dir := t.TempDir()
	_, err = lm.LoadTokenizer(dir)
	assert.ErrorContains(t, err, "tokenizer.json not found")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(lmtest.TokenizerJSON()), 0o644))
	_, err = lm.LoadTokenizer(dir)
	assert.NoError(t, err)
}

// flaggedTokenizer is the tiny tokenizer with added tokens carrying each of Hugging
// Face's AddedToken flags.
func flaggedTokenizer(t *testing.T, extra ...map[string]any) *lm.Tokenizer {
	t.Helper()
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(lmtest.TokenizerJSON()), &doc))
	added := doc["added_tokens"].([]any)
	for _, e := range extra {
		added = append(added, e)
	}
	doc["added_tokens"] = added
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	tok, err := lm.ParseTokenizer(data)
	require.NoError(t, err)
	return tok
}

// TestAddedTokenFlags checks lstrip, rstrip, single_word and normalized as the
// tokenizers library applies them. Expected ids come from the plain tokenizer (no
// flagged tokens) on the text that the flag leaves around the token.
func TestAddedTokenFlags(t *testing.T) {
	plain := flaggedTokenizer(t)
	enc := func(s string) []int32 {
		ids, err := plain.Encode(s, false)
		require.NoError(t, err)
		return ids
	}
	cat := func(parts ...any) []int32 {
		var out []int32
		for _, p := range parts {
			switch v := p.(type) {
			case string:
				out = append(out, enc(v)...)
			case int:
				out = append(out, int32(v))
			}
		}
		return out
	}
	tok := func(id int, content string, flags ...string) map[string]any {
		m := map[string]any{"id": id, "content": content, "special": true, "normalized": false}
		for _, f := range flags {
			m[f] = true
		}
		return m
	}
	cases := []struct {
		name  string
		token map[string]any
		text  string
		want  []int32
	}{
		{"verbatim keeps the space", tok(268, "<mask>"), "the <mask> cat", cat("the ", 268, " cat")},
		{"lstrip absorbs the space before", tok(268, "<mask>", "lstrip"), "the  <mask> cat", cat("the", 268, " cat")},
		{"rstrip absorbs the space after", tok(268, "<mask>", "rstrip"), "the <mask>  cat", cat("the ", 268, "cat")},
		{"lstrip and rstrip", tok(268, "<mask>", "lstrip", "rstrip"), "the \t<mask>\n cat", cat("the", 268, "cat")},
		{"lstrip never takes the previous token", tok(268, "<mask>", "lstrip"), "<|endoftext|> <mask>", cat(lmtest.EndOfText, 268)},
		{"single word between spaces", tok(268, "zz", "single_word"), "the zz cat", cat("the ", 268, " cat")},
		{"single word inside a word is text", tok(268, "zz", "single_word"), "jazz zz", cat("jazz ", 268)},
		{"single word beside punctuation", tok(268, "zz", "single_word"), "(zz)", cat("(", 268, ")")},
		{"not single word matches inside", tok(268, "zz"), "jazz", cat("ja", 268)},
		{"normalized matches after NFC", tok(268, "é", "normalized"), "the e\u0301", cat("the ", 268)},
		{"raw does not match a decomposed form", tok(268, "é"), "the e\u0301", cat("the é")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := flaggedTokenizer(t, c.token).Encode(c.text, false)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}
