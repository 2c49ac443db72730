package lm_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/models/lm"
)

// unigramVocab is a tiny Unigram vocabulary: [piece, log-probability], the id is the
// position. <sep> (9) is an added special token.
var unigramVocab = [][2]any{
	{"<unk>", 0.0}, {"▁", -1.0}, {"a", -2.0}, {"b", -2.0}, {"ab", -3.0}, {"▁ab", -2.5},
	{"<0xC3>", -5.0}, {"<0xA9>", -5.0}, {"▁a", -1.0}, {"<sep>", 0.0}, {"B", -1.0},
}

// unigramJSON is an XLM-R-style tokenizer.json over unigramVocab: Metaspace with the
// given prepend scheme, the given normalizer (nil for none), "<s>"-less template.
func unigramJSON(t *testing.T, scheme string, byteFallback bool, unkID any, normalizer map[string]any) []byte {
	t.Helper()
	doc := map[string]any{
		"added_tokens":  []any{map[string]any{"id": 9, "content": "<sep>", "special": true, "normalized": false}},
		"pre_tokenizer": map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": true},
		"decoder":       map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": true},
		"model":         map[string]any{"type": "Unigram", "unk_id": unkID, "vocab": unigramVocab, "byte_fallback": byteFallback},
	}
	if normalizer != nil {
		doc["normalizer"] = normalizer
	}
	data, err := json.Marshal(doc)
	require.NoError(t, err)
	return data
}

// TestUnigram checks the Viterbi segmentation, unknown-run fusing, byte fallback and
// Metaspace's prepend schemes against ids worked out by hand from unigramVocab.
func TestUnigram(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scheme   string
		fallback bool
		text     string
		want     []int32
	}{
		// ▁ab: -2.5 beats ▁+ab (-4), ▁a+b (-3) and ▁+a+b (-5).
		{"best total log-probability", "always", false, "ab", []int32{5}},
		// ▁ab+ab (-5.5) beats ▁a+b+ab (-6), ▁ab+a+b (-6.5) and ▁a+b+a+b (-7).
		{"longer text", "always", false, "abab", []int32{5, 4}},
		{"unknown character", "always", false, "é", []int32{1, 0}},
		{"unknown run fused into one unk", "always", false, "ééx", []int32{1, 0}},
		{"byte fallback", "always", true, "é", []int32{1, 6, 7}},
		// é é x fuse into one run; 0x78 has no <0x78> piece, so the whole run is unk.
		{"byte fallback needs every byte", "always", true, "ééx", []int32{1, 0}},
		{"unknown between known pieces", "always", true, "aéb", []int32{8, 6, 7, 3}},
		{"prepend always", "always", false, "ab<sep>ab", []int32{5, 9, 5}},
		{"prepend first: first section only", "first", false, "ab<sep>ab", []int32{5, 9, 4}},
		{"prepend never", "never", false, "ab<sep>ab", []int32{4, 9, 4}},
		{"spaces become ▁ and split", "never", false, "ab ab", []int32{4, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok, err := lm.ParseTokenizer(unigramJSON(t, tc.scheme, tc.fallback, 0, nil))
			require.NoError(t, err)
			got, err := tok.Encode(tc.text, false)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("decode", func(t *testing.T) {
		tok, err := lm.ParseTokenizer(unigramJSON(t, "always", false, 0, nil))
		require.NoError(t, err)
		text, err := tok.Decode([]int32{5, 4, 8}, false)
		require.NoError(t, err)
		assert.Equal(t, "abab a", text)
	})
	t.Run("no unk_id", func(t *testing.T) {
		tok, err := lm.ParseTokenizer(unigramJSON(t, "always", false, nil, nil))
		require.NoError(t, err)
		_, err = tok.Encode("é", false)
		require.ErrorContains(t, err, "no unk_id")
	})
	t.Run("unk_id outside the vocabulary", func(t *testing.T) {
		_, err := lm.ParseTokenizer(unigramJSON(t, "always", false, 99, nil))
		require.ErrorContains(t, err, "unk_id 99")
	})
}

// charsmapUpperA is a precompiled_charsmap with one rule, "A" → "a", written out as
// darts-clone lays a double array: unit 0 the root with offset 1; 'A' leads to unit
// 1^0x41 = 64, whose label is 'A', has a leaf and offset 1; the leaf's value unit
// 64^1 = 65 (bit 31 set) points at byte 0 of the replacement strings "a\x00".
func charsmapUpperA() string {
	units := make([]uint32, 66)
	units[0] = 1 << 10
	units[64] = 0x41 | 1<<8 | 1<<10
	units[65] = 1 << 31
	blob := binary.LittleEndian.AppendUint32(nil, uint32(4*len(units)))
	for _, u := range units {
		blob = binary.LittleEndian.AppendUint32(blob, u)
	}
	blob = append(blob, 'a', 0)
	return base64.StdEncoding.EncodeToString(blob)
}

// TestPrecompiled checks the Precompiled normaliser's reading of a double-array trie
// and its grapheme rule: a cluster shorter than 6 bytes whose start has a rule is
// replaced whole (tokenizers' precompiled.rs; "A" + U+0301 becomes "a"), else each
// character is mapped on its own.
func TestPrecompiled(t *testing.T) {
	pre := map[string]any{"type": "Precompiled", "precompiled_charsmap": charsmapUpperA()}
	tok, err := lm.ParseTokenizer(unigramJSON(t, "always", false, 0, pre))
	require.NoError(t, err)
	for _, tc := range []struct {
		text string
		want []int32
	}{
		{"AB", []int32{8, 10}},       // aB: ▁a B
		{"aB", []int32{8, 10}},       // no rule for a
		{"A\u0301B", []int32{8, 10}}, // the cluster Á (3 bytes) goes whole to a
		{"BA", []int32{1, 10, 2}},    // ▁ B a
		{"AAA", []int32{8, 2, 2}},    // ▁a a a
		// A + three acutes is 7 bytes: mapped per character, A → a and the accents kept
		// (unknown, fused into one unk).
		{"A\u0301\u0301\u0301", []int32{8, 0}},
	} {
		got, err := tok.Encode(tc.text, false)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%q", tc.text)
	}
	for _, bad := range []string{"not base64!", base64.StdEncoding.EncodeToString([]byte{0xFF, 0, 0, 0, 1})} {
		_, err := lm.ParseTokenizer(unigramJSON(t, "always", false, 0, map[string]any{"type": "Precompiled", "precompiled_charsmap": bad}))
		require.ErrorContains(t, err, "precompiled_charsmap")
	}
}

// TestStripNormalizer checks the Strip normaliser's sides.
func TestStripNormalizer(t *testing.T) {
	for _, tc := range []struct {
		left, right bool
		want        []int32
	}{
		{true, true, []int32{5}},
		{false, true, []int32{5}},       // " ab" → "▁ab": already starts with ▁
		{true, false, []int32{5, 1, 1}}, // "ab  " → "▁ab▁▁", split before each ▁
	} {
		strip := map[string]any{"type": "Strip", "strip_left": tc.left, "strip_right": tc.right}
		tok, err := lm.ParseTokenizer(unigramJSON(t, "always", false, 0, strip))
		require.NoError(t, err)
		got, err := tok.Encode(" ab  ", false)
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "left %v right %v", tc.left, tc.right)
	}
}
