package lmtest

import (
	"encoding/json"
	"strings"
)

// Qwen2Pattern is Qwen2's pre-tokenizer split regex (it needs look-ahead).
const Qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

// Merges are the tiny tokenizer's BPE merges in rank order; merge i creates id 256+i.
var Merges = []string{"Ġ t", "h e", "Ġt he", "i n", "Ġ a", "a t", "o n", "Ġ c", "Ġc at", "e r"}

// Special token ids of the tiny tokenizer.
const (
	EndOfText = 266 // "<|endoftext|>", the EOS
	ImStart   = 267 // "<|im_start|>", added before every sequence (the BOS)
)

// TokenizerVocab returns the tiny tokenizer's vocabulary size, BOS and EOS ids.
func TokenizerVocab() (vocab, bos, eos int) { return 268, ImStart, EndOfText }

// byteRune is GPT-2's byte → printable rune mapping.
func byteRune(b int) rune {
	n := 0
	for c := range 256 {
		printable := (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF)
		if c == b {
			if printable {
				return rune(c)
			}
			return rune(256 + n)
		}
		if !printable {
			n++
		}
	}
	return 0
}

// TokenizerJSON returns a Qwen2-style byte-level BPE tokenizer.json: ids 0–255 are
// the bytes (id = byte value), then Merges, then the two special tokens; NFC
// normaliser, Split on Qwen2Pattern then ByteLevel without regex, ByteLevel decoder,
// "<|im_start|>" prepended by the post-processor.
func TokenizerJSON() string {
	vocab := map[string]int{}
	for b := range 256 {
		vocab[string(byteRune(b))] = b
	}
	for i, m := range Merges {
		vocab[strings.ReplaceAll(m, " ", "")] = 256 + i
	}
	doc := map[string]any{
		"version": "1.0",
		"added_tokens": []map[string]any{
			{"id": EndOfText, "content": "<|endoftext|>", "special": true, "normalized": false},
			{"id": ImStart, "content": "<|im_start|>", "special": true, "normalized": false},
		},
		"normalizer": map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": Qwen2Pattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"post_processor": map[string]any{"type": "TemplateProcessing",
			"single":         []any{map[string]any{"SpecialToken": map[string]any{"id": "<|im_start|>", "type_id": 0}}, map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}}},
			"special_tokens": map[string]any{"<|im_start|>": map[string]any{"id": "<|im_start|>", "ids": []int{ImStart}, "tokens": []string{"<|im_start|>"}}},
		},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": Merges},
	}
	data, err := json.MarshalIndent(doc, "", " ")
	if err != nil {
		panic(err) // static document
	}
	return string(data)
}
