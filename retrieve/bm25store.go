package retrieve

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/graphloom/graphloom/graphio"
)

// BM25Blob is the index blob that holds the chunks' BM25 postings (StoreBM25). The
// facts', entity names' and hyperedges' postings are in the blobs of lexCorpora.
const BM25Blob = "bm25.chunks"

// bm25BlobMagic starts a blob; the digest that follows ties it to the analyzer and
// the texts it was computed from. Version 2 added the term table that lets a query
// read the postings of its own terms only; version 3 the analyzer that keeps
// combining marks in their words and reads text in NFC. A blob of an earlier version
// is ignored (its postings are rebuilt; version 1's with the same result, version 2's
// differ only in texts holding combining marks).
const bm25BlobMagic = "GLBM25\x03"

// lexCorpus is a list of texts that a retriever searches with BM25, and the blob its
// postings are stored in.
type lexCorpus struct {
	blob string
	n    int
	// text appends text i to dst.
	text func(dst []byte, i int) []byte
}

// Lexical corpora of an index: chunk contents (title and text), facts (subject and
// object), entity names and hyperedge texts.
func chunkCorpus(ix *graphio.Index) lexCorpus {
	return lexCorpus{BM25Blob, len(ix.Chunks), func(dst []byte, i int) []byte {
		c := &ix.Chunks[i]
		return append(append(append(dst, c.Title...), '\n'), c.Text...) // Chunk.Content
	}}
}

func factCorpus(ix *graphio.Index) lexCorpus {
	return lexCorpus{"bm25.facts", len(ix.Facts), func(dst []byte, i int) []byte {
		f := &ix.Facts[i]
		return append(append(append(dst, ix.Entities[f.Subject].Name...), ' '), ix.Entities[f.Object].Name...)
	}}
}

func entityCorpus(ix *graphio.Index) lexCorpus {
	return lexCorpus{"bm25.entities", len(ix.Entities), func(dst []byte, i int) []byte { return append(dst, ix.Entities[i].Name...) }}
}

func hyperedgeCorpus(ix *graphio.Index) lexCorpus {
	return lexCorpus{"bm25.hyperedges", len(ix.Hyperedges), func(dst []byte, i int) []byte { return append(dst, ix.Hyperedges[i].Text...) }}
}

// texts returns the corpus's texts.
func (c lexCorpus) texts() []string {
	out := make([]string, c.n)
	var b []byte
	for i := range out {
		b = c.text(b[:0], i)
		out[i] = string(b)
	}
	return out
}

// digest identifies the postings of the corpus under an.
func (c lexCorpus) digest(an Analyzer) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "stem=%v;docs=%d;", an.Stem, c.n)
	var b, l []byte
	for i := range c.n {
		b = c.text(b[:0], i)
		h.Write(binary.AppendUvarint(l[:0], uint64(len(b))))
		h.Write(b)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// index returns the corpus's BM25 index: the postings stored in ix when they were
// computed from these texts with this analyzer, else built from the texts.
func (c lexCorpus) index(ix *graphio.Index, an Analyzer, k1, b float64) *lexIndex {
	if blob, ok := ix.Blobs[c.blob]; ok {
		if idx, err := decodeBM25(blob, c.digest(an), c.n, an, k1, b); err == nil {
			return idx
		}
	}
	return newLexIndex(c.texts(), an, k1, b)
}

// StoreBM25 computes the BM25 postings of ix's chunks, facts, entity names and
// hyperedges with the analyzer of cfg and keeps them in the index (blob BM25Blob and
// its siblings), so that a query process reads the postings of its terms instead of
// analysing the corpus, which was most of a cold query's time. A blob names the
// analyzer and a digest of its texts: a searcher whose analyzer or texts differ (an
// index changed since) ignores it and analyses the texts itself, so a stale blob can
// cost time but never change a result. Blobs that are current are kept as they are.
func StoreBM25(ix *graphio.Index, cfg Config) {
	an := Analyzer{Stem: cfg.Stem}
	if ix.Blobs == nil {
		ix.Blobs = map[string][]byte{}
	}
	for _, c := range lexCorpora(ix) {
		digest := c.digest(an)
		if old := ix.Blobs[c.blob]; len(old) >= len(bm25BlobMagic)+32 && string(old[:len(bm25BlobMagic)]) == bm25BlobMagic && [32]byte(old[len(bm25BlobMagic):]) == digest {
			continue // current (after an augmentation, the chunks' postings are)
		}
		idx := newLexIndex(c.texts(), an, cfg.BM25K1, cfg.BM25B)
		if blob, ok := encodeBM25(idx, digest); ok {
			ix.Blobs[c.blob] = blob
		} else {
			delete(ix.Blobs, c.blob)
		}
	}
}

// lexCorpora lists the corpora whose postings StoreBM25 keeps.
func lexCorpora(ix *graphio.Index) []lexCorpus {
	return []lexCorpus{chunkCorpus(ix), factCorpus(ix), entityCorpus(ix), hyperedgeCorpus(ix)}
}

// A blob is
//
//	magic, digest (32 bytes)
//	docs (uvarint), then each document's length in terms (uvarints)
//	terms nt (uvarint)
//	nt+1 term offsets, nt+1 postings offsets (uint32, little-endian)
//	the terms' bytes, sorted, one after the other
//	each term's postings: count, then (document gap, term frequency) pairs (uvarints)
//
// The fixed-width offsets let a query find a term by binary search and decode its
// postings alone, in a blob read in place from a memory-mapped index.

// encodeBM25 writes idx's document lengths and postings, terms in sorted order (the
// bytes are a function of the postings). It reports false when a table would not fit
// its 32-bit offsets (then nothing is stored).
func encodeBM25(idx *lexIndex, digest [32]byte) ([]byte, bool) {
	out := append([]byte(bm25BlobMagic), digest[:]...)
	out = binary.AppendUvarint(out, uint64(len(idx.docLen)))
	for _, l := range idx.docLen {
		out = binary.AppendUvarint(out, uint64(l))
	}
	terms := make([]string, 0, len(idx.postings))
	for t := range idx.postings {
		terms = append(terms, t)
	}
	slices.Sort(terms)
	out = binary.AppendUvarint(out, uint64(len(terms)))
	var text, lists []byte
	termOff := make([]uint32, 0, len(terms)+1)
	listOff := make([]uint32, 0, len(terms)+1)
	for _, t := range terms {
		termOff = append(termOff, uint32(len(text)))
		listOff = append(listOff, uint32(len(lists)))
		text = append(text, t...)
		ps := idx.postings[t]
		lists = binary.AppendUvarint(lists, uint64(len(ps)))
		prev := int32(-1)
		for _, p := range ps {
			lists = binary.AppendUvarint(lists, uint64(p.doc-prev))
			lists = binary.AppendUvarint(lists, uint64(p.tf))
			prev = p.doc
		}
		if len(text) > math.MaxUint32 || len(lists) > math.MaxUint32 {
			return nil, false
		}
	}
	termOff = append(termOff, uint32(len(text)))
	listOff = append(listOff, uint32(len(lists)))
	for _, o := range termOff {
		out = binary.LittleEndian.AppendUint32(out, o)
	}
	for _, o := range listOff {
		out = binary.LittleEndian.AppendUint32(out, o)
	}
	return append(append(out, text...), lists...), true
}

var errBM25Blob = errors.New("retrieve: malformed BM25 blob")

// storedPostings are a blob's terms and postings, read in place.
type storedPostings struct {
	n                int    // terms
	termOff, listOff []byte // n+1 uint32 each
	text, lists      []byte
}

func (sp *storedPostings) termAt(i int) []byte {
	return sp.text[binary.LittleEndian.Uint32(sp.termOff[4*i:]):binary.LittleEndian.Uint32(sp.termOff[4*i+4:])]
}

func (sp *storedPostings) listAt(i int) []byte {
	return sp.lists[binary.LittleEndian.Uint32(sp.listOff[4*i:]):binary.LittleEndian.Uint32(sp.listOff[4*i+4:])]
}

// lookup returns the postings of term t (nil for a term no document has). The blob
// was checked whole by decodeBM25, so decoding cannot fail here.
func (sp *storedPostings) lookup(t string) []posting {
	i := sort.Search(sp.n, func(i int) bool { return string(sp.termAt(i)) >= t })
	if i == sp.n || string(sp.termAt(i)) != t {
		return nil
	}
	b := sp.listAt(i)
	np, k := binary.Uvarint(b)
	b = b[k:]
	ps := make([]posting, np)
	doc := int64(-1)
	for j := range ps {
		d, k1 := binary.Uvarint(b)
		tf, k2 := binary.Uvarint(b[k1:])
		b = b[k1+k2:]
		doc += int64(d)
		ps[j] = posting{int32(doc), int32(tf)}
	}
	return ps
}

// decodeBM25 reads what encodeBM25 wrote when its digest is want and it holds docs
// documents; it returns nil (and why) otherwise. The document lengths are decoded;
// the terms and postings stay in b, checked here (offsets in order and in bounds,
// terms strictly increasing, every list well-formed) without being copied.
func decodeBM25(b []byte, want [32]byte, docs int, an Analyzer, k1, bb float64) (*lexIndex, error) {
	if len(b) < len(bm25BlobMagic)+32 || string(b[:len(bm25BlobMagic)]) != bm25BlobMagic {
		return nil, errBM25Blob
	}
	b = b[len(bm25BlobMagic):]
	if [32]byte(b[:32]) != want {
		return nil, errors.New("retrieve: BM25 blob computed from other texts or another analyzer")
	}
	b = b[32:]
	next := func() (uint64, bool) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, false
		}
		b = b[n:]
		return v, true
	}
	n, ok := next()
	if !ok || n != uint64(docs) {
		return nil, errBM25Blob
	}
	idx := &lexIndex{docLen: make([]float64, docs), an: an, k1: k1, b: bb}
	var total float64
	for i := range idx.docLen {
		l, ok := next()
		if !ok {
			return nil, errBM25Blob
		}
		idx.docLen[i] = float64(l)
		total += float64(l)
	}
	if docs > 0 {
		idx.avgLen = total / float64(docs)
	}
	nt, ok := next()
	if !ok || nt >= uint64(len(b))/8 {
		return nil, errBM25Blob
	}
	sp := &storedPostings{n: int(nt), termOff: b[:4*(nt+1)], listOff: b[4*(nt+1) : 8*(nt+1)]}
	b = b[8*(nt+1):]
	textLen := uint64(binary.LittleEndian.Uint32(sp.termOff[4*nt:]))
	if textLen > uint64(len(b)) || uint64(binary.LittleEndian.Uint32(sp.listOff[4*nt:])) != uint64(len(b))-textLen {
		return nil, errBM25Blob
	}
	sp.text, sp.lists = b[:textLen], b[textLen:]
	for i := range sp.n {
		t0, t1 := binary.LittleEndian.Uint32(sp.termOff[4*i:]), binary.LittleEndian.Uint32(sp.termOff[4*i+4:])
		l0, l1 := binary.LittleEndian.Uint32(sp.listOff[4*i:]), binary.LittleEndian.Uint32(sp.listOff[4*i+4:])
		if i == 0 && (t0 != 0 || l0 != 0) || t1 < t0 || l1 < l0 || uint64(t1) > textLen || int(l1) > len(sp.lists) {
			return nil, errBM25Blob
		}
		if i > 0 && string(sp.termAt(i-1)) >= string(sp.termAt(i)) {
			return nil, errBM25Blob // unsorted or repeated
		}
		if !validList(sp.listAt(i), docs) {
			return nil, errBM25Blob
		}
	}
	idx.stored = sp
	return idx, nil
}

// validList reports whether b is one well-formed postings list over docs documents:
// a count of at least one, then that many (gap ≥ 1, tf in 1…2³¹−1) pairs with the
// documents below docs, and nothing after them.
func validList(b []byte, docs int) bool {
	np, k := binary.Uvarint(b)
	if k <= 0 || np == 0 || np > uint64(docs) {
		return false
	}
	b = b[k:]
	doc := int64(-1)
	for range np {
		d, k1 := binary.Uvarint(b)
		if k1 <= 0 {
			return false
		}
		tf, k2 := binary.Uvarint(b[k1:])
		if k2 <= 0 || d == 0 || d > uint64(docs) || tf == 0 || tf > 1<<31-1 {
			return false
		}
		b = b[k1+k2:]
		doc += int64(d)
		if doc >= int64(docs) {
			return false
		}
	}
	return len(b) == 0
}
