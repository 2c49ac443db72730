package lm_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// wordPieceVocab is a tiny BERT vocabulary: ids 0–4 the special tokens, then pieces.
var wordPieceVocab = []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
	"un", "##aff", "##able", "the", "cafe", ",", ".", "中", "文", "a", "##a", "do", "n", "'", "t"}

// wordPieceJSON is a BERT-style tokenizer.json with the given BertNormalizer fields,
// max_input_chars_per_word 9 and the BertProcessing post-processor.
func wordPieceJSON(t *testing.T, normalizer map[string]any) []byte {
	t.Helper()
	vocab := map[string]int{}
	for i, s := range wordPieceVocab {
		vocab[s] = i
	}
	var added []map[string]any
	for i := range 5 {
		added = append(added, map[string]any{"id": i, "content": wordPieceVocab[i], "special": true, "normalized": false})
	}
	normalizer["type"] = "BertNormalizer"
	data, err := json.Marshal(map[string]any{
		"added_tokens":   added,
		"normalizer":     normalizer,
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": map[string]any{"type": "BertProcessing", "sep": []any{"[SEP]", 3}, "cls": []any{"[CLS]", 2}},
		"decoder":        map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
			"max_input_chars_per_word": 9, "vocab": vocab},
	})
	require.NoError(t, err)
	return data
}

// TestWordPiece checks BERT's normaliser, pre-tokenizer and greedy longest-match
// segmentation against ids worked out by hand from wordPieceVocab.
func TestWordPiece(t *testing.T) {
	lower := map[string]any{"clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": true}
	cased := map[string]any{"clean_text": true, "handle_chinese_chars": true, "strip_accents": nil, "lowercase": false}
	stripCased := map[string]any{"clean_text": true, "handle_chinese_chars": false, "strip_accents": true, "lowercase": false}
	cases := []struct {
		name       string
		normalizer map[string]any
		text       string
		special    bool
		want       []int32
	}{
		{"longest match first, then ## pieces", lower, "unaffable", false, []int32{5, 6, 7}},
		{"lowercased", lower, "UnAffable the", false, []int32{5, 6, 7, 8}},
		{"accents follow lowercase (null)", lower, "Café,", false, []int32{9, 10}},
		{"cased keeps accents: unknown word", cased, "café", false, []int32{1}},
		{"strip_accents true without lowercase", stripCased, "café", false, []int32{9}},
		{"a word with an unknown part is [UNK] whole", lower, "unx the", false, []int32{1, 8}},
		{"max_input_chars_per_word", lower, "aaa aaaaaaaaa aaaaaaaaaa", false, []int32{14, 15, 15, 14, 15, 15, 15, 15, 15, 15, 15, 15, 1}},
		{"CJK ideographs split", lower, "中文", false, []int32{12, 13}},
		{"CJK kept whole without handle_chinese_chars", stripCased, "中文", false, []int32{1}},
		{"clean_text drops format characters", lower, "th\u200be\tthe\x00", false, []int32{8, 8}},
		{"punctuation isolated, white space removed", lower, "  the,the.  ", false, []int32{8, 10, 8, 11}},
		{"special tokens in the raw text", lower, "[CLS] the[SEP]", false, []int32{2, 8, 3}},
		{"BertProcessing", lower, "the", true, []int32{2, 8, 3}},
		{"empty text with special tokens", lower, "   ", true, []int32{2, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tok, err := lm.ParseTokenizer(wordPieceJSON(t, c.normalizer))
			require.NoError(t, err)
			got, err := tok.Encode(c.text, c.special)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}

	tok, err := lm.ParseTokenizer(wordPieceJSON(t, lower))
	require.NoError(t, err)
	// Decoder: "##" pieces join, others get a space, cleanup removes " ," and " .".
	text, err := tok.Decode([]int32{2, 5, 6, 7, 10, 8, 11, 3}, true)
	require.NoError(t, err)
	assert.Equal(t, "unaffable, the.", text)
	text, err = tok.Decode([]int32{2, 8, 3}, false)
	require.NoError(t, err)
	assert.Equal(t, "[CLS] the [SEP]", text)
	before, after := tok.SpecialCounts()
	assert.Equal(t, [2]int{1, 1}, [2]int{before, after})
}

// TestEncodeTruncated cuts the text's ids at the end and keeps [CLS] … [SEP].
func TestEncodeTruncated(t *testing.T) {
	tok, err := lm.ParseTokenizer(wordPieceJSON(t, map[string]any{"lowercase": true}))
	require.NoError(t, err)
	for _, c := range []struct {
		name      string
		special   bool
		max       int
		want      []int32
		truncated bool
	}{
		{"fits", true, 6, []int32{2, 8, 8, 8, 8, 3}, false},
		{"cut with specials kept", true, 4, []int32{2, 8, 8, 3}, true},
		{"cut without specials", false, 3, []int32{8, 8, 8}, true},
		{"no limit", false, 0, []int32{8, 8, 8, 8}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, truncated, err := tok.EncodeTruncated("the the the the", c.special, c.max)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.truncated, truncated)
		})
	}
	_, _, err = tok.EncodeTruncated("the", true, 1)
	assert.ErrorContains(t, err, "shorter than the special tokens")
}

// TestRobertaProcessing: RoBERTa's byte-level BPE with <s> … </s> around a sequence
// (here the tiny tokenizer's <|im_start|> 267 and <|endoftext|> 266; "the cat" is
// 116 257 264 as in TestByteLevelBPE).
func TestRobertaProcessing(t *testing.T) {
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(lmtest.TokenizerJSON()), &doc))
	doc["post_processor"] = map[string]any{"type": "RobertaProcessing", "sep": []any{"<|endoftext|>", 266},
		"cls": []any{"<|im_start|>", 267}, "trim_offsets": true, "add_prefix_space": false}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	tok, err := lm.ParseTokenizer(data)
	require.NoError(t, err)
	got, err := tok.Encode("the cat", true)
	require.NoError(t, err)
	assert.Equal(t, []int32{267, 116, 257, 264, 266}, got)
	got, truncated, err := tok.EncodeTruncated("the cat", true, 4)
	require.NoError(t, err)
	assert.True(t, truncated)
	assert.Equal(t, []int32{267, 116, 257, 266}, got)
	text, err := tok.Decode([]int32{267, 116, 257, 264, 266}, true)
	require.NoError(t, err)
	assert.Equal(t, "the cat", text)
}
