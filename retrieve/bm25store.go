package retrieve

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/graphloom/graphloom/graphio"
)

// BM25Blob is the index blob that holds the chunks' BM25 postings (StoreBM25).
const BM25Blob = "bm25.chunks"

// bm25BlobMagic starts the blob; the digest that follows ties it to the analyzer and
// the chunks it was computed from.
const bm25BlobMagic = "GLBM25\x01"

// StoreBM25 computes the BM25 postings of ix's chunks with the analyzer of cfg and
// keeps them in the index (blob BM25Blob), so that a query process reads them
// instead of analysing the corpus, which is most of a cold query's time. The blob
// names the analyzer and a digest of the chunks' contents: a searcher whose analyzer
// or chunks differ (an index whose chunks changed since) ignores it and analyses the
// chunks itself, so a stale blob can cost time but never change a result.
func StoreBM25(ix *graphio.Index, cfg Config) {
	texts := chunkTexts(ix)
	an := Analyzer{Stem: cfg.Stem}
	idx := newLexIndex(texts, an, cfg.BM25K1, cfg.BM25B)
	if ix.Blobs == nil {
		ix.Blobs = map[string][]byte{}
	}
	ix.Blobs[BM25Blob] = encodeBM25(idx, bm25Digest(texts, an))
}

// chunkTexts returns what BM25 indexes of each chunk: its title and text.
func chunkTexts(ix *graphio.Index) []string {
	texts := make([]string, len(ix.Chunks))
	for i := range ix.Chunks {
		texts[i] = ix.Chunks[i].Content()
	}
	return texts
}

// bm25Digest identifies the postings of texts under an.
func bm25Digest(texts []string, an Analyzer) [32]byte {
	h := sha256.New()
	var b [binary.MaxVarintLen64]byte
	h.Write([]byte(fmt.Sprintf("stem=%v;docs=%d;", an.Stem, len(texts))))
	for _, t := range texts {
		h.Write(b[:binary.PutUvarint(b[:], uint64(len(t)))])
		h.Write([]byte(t))
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// encodeBM25 writes idx's document lengths and postings, terms in sorted order (the
// bytes are a function of the postings).
func encodeBM25(idx *lexIndex, digest [32]byte) []byte {
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
	for _, t := range terms {
		ps := idx.postings[t]
		out = binary.AppendUvarint(out, uint64(len(t)))
		out = append(out, t...)
		out = binary.AppendUvarint(out, uint64(len(ps)))
		prev := int32(-1)
		for _, p := range ps {
			out = binary.AppendUvarint(out, uint64(p.doc-prev))
			out = binary.AppendUvarint(out, uint64(p.tf))
			prev = p.doc
		}
	}
	return out
}

var errBM25Blob = errors.New("retrieve: malformed BM25 blob")

// decodeBM25 reads what encodeBM25 wrote when its digest is want and it holds docs
// documents; it returns nil (and why) otherwise.
func decodeBM25(b []byte, want [32]byte, docs int, an Analyzer, k1, bb float64) (*lexIndex, error) {
	if len(b) < len(bm25BlobMagic)+32 || string(b[:len(bm25BlobMagic)]) != bm25BlobMagic {
		return nil, errBM25Blob
	}
	b = b[len(bm25BlobMagic):]
	if [32]byte(b[:32]) != want {
		return nil, errors.New("retrieve: BM25 blob computed from other chunks or another analyzer")
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
	if !ok || nt > uint64(len(b)) {
		return nil, errBM25Blob
	}
	idx.postings = make(map[string][]posting, nt)
	for range nt {
		tl, ok := next()
		if !ok || tl > uint64(len(b)) {
			return nil, errBM25Blob
		}
		t := string(b[:tl])
		b = b[tl:]
		np, ok := next()
		if !ok || np == 0 || np > uint64(docs) {
			return nil, errBM25Blob
		}
		ps := make([]posting, np)
		doc := int64(-1)
		for k := range ps {
			d, ok1 := next()
			tf, ok2 := next()
			doc += int64(d)
			if !ok1 || !ok2 || d == 0 || doc >= int64(docs) || tf == 0 || tf > 1<<31-1 {
				return nil, errBM25Blob
			}
			ps[k] = posting{int32(doc), int32(tf)}
		}
		if _, dup := idx.postings[t]; dup {
			return nil, errBM25Blob
		}
		idx.postings[t] = ps
	}
	if len(b) != 0 {
		return nil, errBM25Blob
	}
	return idx, nil
}
