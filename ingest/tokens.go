package ingest

import (
	"fmt"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
	"gopkg.in/neurosnap/sentences.v1"
	"gopkg.in/neurosnap/sentences.v1/english"
)

// tiktoken-go looks up BPE ranks through a package-level loader; point it at the
// embedded offline tables once, before the first encoding is built, so nothing is
// ever downloaded.
var offlineOnce sync.Once

// Tokenizer counts BPE tokens and maps them to byte offsets. It is safe for
// concurrent use.
type Tokenizer struct {
	name string
	enc  *tiktoken.Tiktoken
}

// NewTokenizer returns the named tiktoken encoding (e.g. "cl100k_base", "o200k_base")
// from the tables built into the binary.
func NewTokenizer(encoding string) (*Tokenizer, error) {
	offlineOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("ingest: tokenizer %q: %w", encoding, err)
	}
	return &Tokenizer{name: encoding, enc: enc}, nil
}

// Name returns the encoding's name.
func (t *Tokenizer) Name() string { return t.name }

// Encode returns the tokens of text (special-token text is encoded as ordinary text).
func (t *Tokenizer) Encode(text string) []int { return t.enc.EncodeOrdinary(text) }

// Count returns the number of tokens of text.
func (t *Tokenizer) Count(text string) int { return len(t.Encode(text)) }

// Offsets returns the byte offset at which each token of toks starts in the text they
// encode, plus the text's length as a final entry.
func (t *Tokenizer) Offsets(toks []int) []int {
	off := make([]int, len(toks)+1)
	for i, tok := range toks {
		off[i+1] = off[i] + len(t.enc.Decode([]int{tok}))
	}
	return off
}

// Segmenter splits English text into sentences with the Punkt model of
// neurosnap/sentences (the one prose uses). It is safe for concurrent use.
type Segmenter struct {
	tok *sentences.DefaultSentenceTokenizer
}

// NewSegmenter loads the built-in English Punkt model.
func NewSegmenter() (*Segmenter, error) {
	tok, err := english.NewSentenceTokenizer(nil)
	if err != nil {
		return nil, fmt.Errorf("ingest: sentence model: %w", err)
	}
	return &Segmenter{tok: tok}, nil
}

// Span is a half-open byte range [Start, End) of a text.
type Span struct{ Start, End int }

// Sentences returns contiguous spans that cover text from its first to its last byte;
// each span ends after a sentence and the whitespace that follows it.
func (s *Segmenter) Sentences(text string) []Span {
	var out []Span
	for _, sent := range s.tok.Tokenize(text) {
		if sent.End > sent.Start {
			out = append(out, Span{sent.Start, sent.End})
		}
	}
	if len(out) == 0 && text != "" {
		out = append(out, Span{0, len(text)})
	}
	return out
}
