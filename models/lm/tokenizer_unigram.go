package lm

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// This file holds SentencePiece's Unigram tokenizer as Hugging Face tokenizers reads it
// from a tokenizer.json (models/unigram, normalizers/precompiled.rs and the
// spm_precompiled crate): the Unigram model's Viterbi segmentation and the
// Precompiled normaliser's double-array trie of normalisation rules (XLM-RoBERTa,
// ALBERT, T5, multilingual-e5, bge-m3).

// unkPenalty is subtracted from the lowest piece score to score an unknown character
// (SentencePiece's kUnkPenalty).
const unkPenalty = 10.0

// unigram is the Unigram model: each pre-token is segmented into the sequence of
// vocabulary pieces with the highest total log-probability (Viterbi over the lattice of
// pieces that match at each character). A character that starts no single-character
// piece is the unknown token scored min score − 10; runs of unknown characters are
// fused into one unknown token (tokenizers always fuses them for Unigram), which with
// byte_fallback becomes the <0xXX> tokens of its bytes when they all exist.
type unigram struct {
	ids      map[string]int32 // the model's pieces (not the added tokens)
	scores   []float64
	trie     pieceTrie
	unk      int32 // -1 when the model has no unk_id
	unkScore float64
	byteFB   bool
}

// newUnigram builds the model from tokenizer.json's model.vocab ([[piece, score], …],
// the id is the position) and unk_id.
func newUnigram(raw json.RawMessage, unkID *int, byteFallback bool) (*unigram, []string, error) {
	var entries [][2]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil {
		return nil, nil, fmt.Errorf("tokenizer: Unigram model.vocab: want a list of [piece, score]: %w", err)
	}
	if len(entries) == 0 {
		return nil, nil, errors.New("tokenizer: Unigram model.vocab is empty")
	}
	u := &unigram{ids: make(map[string]int32, len(entries)), scores: make([]float64, len(entries)),
		unk: -1, byteFB: byteFallback, trie: pieceTrie{}}
	pieces := make([]string, len(entries))
	minScore := math.Inf(1)
	for i, e := range entries {
		if err := json.Unmarshal(e[0], &pieces[i]); err != nil {
			return nil, nil, fmt.Errorf("tokenizer: Unigram vocab entry %d: piece: %w", i, err)
		}
		if err := json.Unmarshal(e[1], &u.scores[i]); err != nil {
			return nil, nil, fmt.Errorf("tokenizer: Unigram vocab entry %d (%q): score: %w", i, pieces[i], err)
		}
		if pieces[i] == "" {
			return nil, nil, fmt.Errorf("tokenizer: Unigram vocab entry %d is empty", i)
		}
		u.ids[pieces[i]] = int32(i)
		u.trie.insert(pieces[i])
		minScore = min(minScore, u.scores[i])
	}
	u.unkScore = minScore - unkPenalty
	if unkID != nil {
		if *unkID < 0 || *unkID >= len(entries) {
			return nil, nil, fmt.Errorf("tokenizer: Unigram unk_id %d outside the vocabulary of %d pieces", *unkID, len(entries))
		}
		u.unk = int32(*unkID)
	}
	return u, pieces, nil
}

// encode segments one pre-token.
func (u *unigram) encode(s string) ([]int32, error) {
	var ids []int32
	for _, piece := range u.viterbi(s) {
		if id, ok := u.ids[piece]; ok {
			ids = append(ids, id)
			continue
		}
		if u.byteFB {
			if bs, ok := u.byteTokens(piece); ok {
				ids = append(ids, bs...)
				continue
			}
		}
		if u.unk < 0 {
			return nil, fmt.Errorf("tokenizer: %q matches no Unigram piece and the model has no unk_id", piece)
		}
		ids = append(ids, u.unk)
	}
	return ids, nil
}

func (u *unigram) byteTokens(s string) ([]int32, bool) {
	out := make([]int32, 0, len(s))
	for i := 0; i < len(s); i++ {
		id, ok := u.ids[fmt.Sprintf("<0x%02X>", s[i])]
		if !ok {
			return nil, false
		}
		out = append(out, id)
	}
	return out, true
}

// viterbi returns the best segmentation of s as strings, unknown runs fused. best[e]
// is the best path over s[:e]: its score, where its last piece starts and that piece's
// id. Positions are taken in order and a path replaces another only when strictly
// better, so among equal scores the path whose last piece starts first wins, as in
// tokenizers' encode_optimized.
func (u *unigram) viterbi(s string) []string {
	type node struct {
		score float64
		start int
		id    int32
		set   bool
	}
	best := make([]node, len(s)+1)
	best[0].set = true
	relax := func(end int, score float64, start int, id int32) {
		if n := &best[end]; !n.set || score > n.score {
			*n = node{score: score, start: start, id: id, set: true}
		}
	}
	for start := 0; start < len(s); {
		_, charLen := utf8.DecodeRuneInString(s[start:])
		here := best[start].score
		single := false
		u.trie.prefixes(s[start:], func(n int) {
			id := u.ids[s[start:start+n]]
			relax(start+n, here+u.scores[id], start, id)
			single = single || n == charLen
		})
		if !single {
			relax(start+charLen, here+u.unkScore, start, u.unk)
		}
		start += charLen
	}
	var out []string
	unkEnd := -1 // end of the unknown run being fused, -1 when none
	for end := len(s); end > 0; {
		n := best[end]
		isUnk := u.unk >= 0 && n.id == u.unk
		switch {
		case isUnk && unkEnd < 0:
			unkEnd = end
		case !isUnk && unkEnd >= 0:
			out = append(out, s[end:unkEnd])
			unkEnd = -1
		}
		if !isUnk {
			out = append(out, s[n.start:end])
		}
		end = n.start
	}
	if unkEnd >= 0 {
		out = append(out, s[:unkEnd])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// pieceTrie is a byte trie of the vocabulary for common-prefix search.
type pieceTrie struct {
	next map[byte]*pieceTrie
	leaf bool
}

func (t *pieceTrie) insert(s string) {
	for i := 0; i < len(s); i++ {
		if t.next == nil {
			t.next = map[byte]*pieceTrie{}
		}
		c, ok := t.next[s[i]]
		if !ok {
			c = &pieceTrie{}
			t.next[s[i]] = c
		}
		t = c
	}
	t.leaf = true
}

// prefixes calls f with the length of every piece that is a prefix of s, shortest first.
func (t *pieceTrie) prefixes(s string, f func(n int)) {
	for i := 0; i < len(s); i++ {
		c, ok := t.next[s[i]]
		if !ok {
			return
		}
		t = c
		if t.leaf {
			f(i + 1)
		}
	}
}

// precompiledMap is SentencePiece's precompiled_charsmap: a little-endian uint32 trie
// size in bytes, a darts-clone double array of that many bytes mapping UTF-8 inputs to
// offsets, and the NUL-terminated replacement strings the offsets point into.
type precompiledMap struct {
	array      []uint32
	normalized string
}

func parsePrecompiled(b64 string) (*precompiledMap, error) {
	blob, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: Precompiled precompiled_charsmap: not base64: %w", err)
	}
	if len(blob) < 4 {
		return nil, errors.New("tokenizer: Precompiled precompiled_charsmap: shorter than its header")
	}
	size := binary.LittleEndian.Uint32(blob)
	if size%4 != 0 || uint64(size) > uint64(len(blob)-4) || size == 0 {
		return nil, fmt.Errorf("tokenizer: Precompiled precompiled_charsmap: trie size %d does not fit the %d-byte blob", size, len(blob))
	}
	m := &precompiledMap{array: make([]uint32, size/4), normalized: string(blob[4+size:])}
	for i := range m.array {
		m.array[i] = binary.LittleEndian.Uint32(blob[4+4*i:])
	}
	return m, nil
}

// transform returns the replacement of the first (shortest) rule whose key is a prefix
// of chunk, as spm_precompiled's transform does.
func (m *precompiledMap) transform(chunk string) (string, bool) {
	unit := func(i uint32) (uint32, bool) {
		if int(i) >= len(m.array) {
			return 0, false
		}
		return m.array[i], true
	}
	offset := func(u uint32) uint32 { return (u >> 10) << ((u & (1 << 9)) >> 6) }
	u, ok := unit(0)
	if !ok {
		return "", false
	}
	pos := offset(u)
	for i := 0; i < len(chunk); i++ {
		c := chunk[i]
		if c == 0 {
			return "", false
		}
		pos ^= uint32(c)
		if u, ok = unit(pos); !ok || u&((1<<31)|0xFF) != uint32(c) {
			return "", false
		}
		pos ^= offset(u)
		if (u>>8)&1 == 1 { // has a leaf: the value sits at pos
			v, ok := unit(pos)
			if !ok {
				return "", false
			}
			at := int(v & (1<<31 - 1))
			if at >= len(m.normalized) {
				return "", false
			}
			rest := m.normalized[at:]
			if end := strings.IndexByte(rest, 0); end >= 0 {
				rest = rest[:end]
			}
			return rest, true
		}
	}
	return "", false
}

// normalize applies the rules grapheme by grapheme as tokenizers' Precompiled does: a
// grapheme cluster shorter than 6 bytes with a rule is replaced whole; otherwise each
// of its characters is replaced by its rule or kept.
func (m *precompiledMap) normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	state := -1
	for rest := s; rest != ""; {
		var g string
		g, rest, _, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if len(g) < 6 {
			if r, ok := m.transform(g); ok {
				b.WriteString(r)
				continue
			}
		}
		for i := 0; i < len(g); {
			_, n := utf8.DecodeRuneInString(g[i:])
			part := g[i : i+n]
			i += n
			if r, ok := m.transform(part); ok {
				b.WriteString(r)
			} else {
				b.WriteString(part)
			}
		}
	}
	return b.String()
}
