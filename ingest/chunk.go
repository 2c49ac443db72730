package ingest

import (
	"fmt"
	"unicode/utf8"
)

// Piece is one chunk of a passage.
type Piece struct {
	Title  string
	Text   string // an exact substring of the passage text
	Tokens int
}

// Chunker splits passages into token-bounded chunks. Use one per goroutine.
type Chunker struct {
	cfg Config
	tok *Tokenizer
	seg *Segmenter
}

// NewChunker returns a Chunker for cfg.
func NewChunker(cfg Config, tok *Tokenizer) (*Chunker, error) {
	if cfg.ChunkTokens <= 0 || cfg.OverlapTokens < 0 || cfg.OverlapTokens >= cfg.ChunkTokens {
		return nil, fmt.Errorf("ingest: chunk size %d with overlap %d: need 0 ≤ overlap < size", cfg.ChunkTokens, cfg.OverlapTokens)
	}
	seg, err := NewSegmenter()
	if err != nil {
		return nil, err
	}
	return &Chunker{cfg: cfg, tok: tok, seg: seg}, nil
}

// Split returns the chunks of a passage. A passage of at most ChunkTokens tokens is one
// chunk with the passage's title. A longer one becomes chunks of at most ChunkTokens
// tokens that start and end on sentence boundaries, each starting with the trailing
// sentences of the previous chunk that fit in OverlapTokens, titled "<title> [chunk k]"
// (k from 1). A single sentence longer than ChunkTokens is cut at token boundaries.
func (c *Chunker) Split(title, text string) []Piece {
	toks := c.tok.Encode(text)
	if len(toks) <= c.cfg.ChunkTokens {
		return []Piece{{Title: title, Text: text, Tokens: len(toks)}}
	}
	off := c.tok.Offsets(toks)
	if off[len(toks)] != len(text) {
		// Token bytes do not add up to the text (cannot happen for valid UTF-8 input);
		// fall back to cutting at token boundaries mapped proportionally.
		off = proportional(len(toks), len(text))
	}
	// Sentence boundaries as token positions: boundary b is the first token starting at
	// or after the sentence end.
	tokAt := func(byteOff int) int {
		lo, hi := 0, len(toks)
		for lo < hi {
			m := (lo + hi) / 2
			if off[m] < byteOff {
				lo = m + 1
			} else {
				hi = m
			}
		}
		return lo
	}
	bounds := []int{0}
	for _, s := range c.seg.Sentences(text) {
		if b := tokAt(s.End); b > bounds[len(bounds)-1] {
			bounds = append(bounds, b)
		}
	}
	if bounds[len(bounds)-1] != len(toks) {
		bounds = append(bounds, len(toks))
	}
	// Cut sentences longer than a chunk at token boundaries that are also character
	// boundaries (byte-level BPE can split a multi-byte character).
	var units []int
	for i, b := range bounds {
		if i > 0 {
			for p := bounds[i-1] + c.cfg.ChunkTokens; p < b; p += c.cfg.ChunkTokens {
				q := p
				for q > units[len(units)-1]+1 && !utf8.RuneStart(text[off[q]]) {
					q--
				}
				units = append(units, q)
				p = q
			}
		}
		units = append(units, b)
	}
	var pieces []Piece
	start := 0 // index into units of the chunk's first boundary
	for {
		end := start + 1
		for end+1 < len(units) && units[end+1]-units[start] <= c.cfg.ChunkTokens {
			end++
		}
		seg := text[off[units[start]]:off[units[end]]]
		pieces = append(pieces, Piece{Title: fmt.Sprintf("%s [chunk %d]", title, len(pieces)+1), Text: seg, Tokens: c.tok.Count(seg)})
		if end == len(units)-1 {
			return pieces
		}
		// Next chunk starts at the earliest boundary whose tail fits in the overlap,
		// but always after this chunk's start so every chunk makes progress.
		next := end
		for next-1 > start && units[end]-units[next-1] <= c.cfg.OverlapTokens {
			next--
		}
		// The next chunk must reach past this one's end: after a long unit (a table, a
		// cut run-on sentence) the overlap would leave no room for it, and the chunk
		// would hold nothing but overlap. Units are at most a chunk long, so next = end
		// always fits.
		for next < end && units[end+1]-units[next] > c.cfg.ChunkTokens {
			next++
		}
		start = next
	}
}

func proportional(ntok, nbytes int) []int {
	off := make([]int, ntok+1)
	for i := range off {
		off[i] = i * nbytes / ntok
	}
	return off
}
