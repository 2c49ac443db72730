package retrieve

import (
	"encoding/binary"
	"slices"

	"github.com/graphloom/graphloom/graphio"
)

// UpdateBM25 brings the stored BM25 postings of ix up to date after a change that
// moved its records as remap says (nil: unknown, then it is StoreBM25): an old blob's postings are carried over (documents
// renumbered, those that went dropped) and only the new records are analysed. The
// blobs equal those StoreBM25 computes on the changed index (postings hold term
// frequencies and document lengths only; BM25's corpus statistics are computed when
// the blob is read). A corpus whose blob is missing or malformed, or whose map does
// not keep the old records' order ahead of the new ones, is computed whole.
func UpdateBM25(ix *graphio.Index, cfg Config, remap *graphio.Remap) {
	if remap == nil {
		StoreBM25(ix, cfg)
		return
	}
	an := Analyzer{Stem: cfg.Stem}
	if ix.Blobs == nil {
		ix.Blobs = map[string][]byte{}
	}
	maps := [][]int32{remap.Chunks, remap.Facts, remap.Entities, remap.Hyperedges}
	for i, c := range lexCorpora(ix) {
		idx, ok := carryPostings(ix.Blobs[c.blob], maps[i], c, an, cfg.BM25K1, cfg.BM25B)
		if !ok {
			idx = newLexIndex(c.texts(), an, cfg.BM25K1, cfg.BM25B)
		}
		if blob, ok := encodeBM25(idx, c.digest(an)); ok {
			ix.Blobs[c.blob] = blob
		} else {
			delete(ix.Blobs, c.blob)
		}
	}
}

// carryPostings returns the postings of c built from the old blob's, renumbered by m
// (old document → new, -1 gone), and the new documents' own; false when the blob
// cannot be used.
func carryPostings(blob []byte, m []int32, c lexCorpus, an Analyzer, k1, b float64) (*lexIndex, bool) {
	if blob == nil || len(blob) < len(bm25BlobMagic)+32 {
		return nil, false
	}
	old, err := decodeBM25(blob, [32]byte(blob[len(bm25BlobMagic):]), len(m), an, k1, b)
	if err != nil || old.stored == nil {
		return nil, false
	}
	// The old documents, renumbered, must stay in order and come before the new ones.
	taken := make([]bool, c.n)
	last := int32(-1)
	for _, d := range m {
		if d < 0 {
			continue
		}
		if d <= last || int(d) >= c.n {
			return nil, false
		}
		taken[d], last = true, d
	}
	var fresh []int32
	for d := range c.n {
		if !taken[d] {
			if int32(d) <= last {
				return nil, false
			}
			fresh = append(fresh, int32(d))
		}
	}
	idx := &lexIndex{docLen: make([]float64, c.n), an: an, k1: k1, b: b, postings: map[string][]posting{}}
	for i, d := range m {
		if d >= 0 {
			idx.docLen[d] = old.docLen[i]
		}
	}
	sp := old.stored
	for i := range sp.n {
		l := sp.listAt(i)
		np, k := binary.Uvarint(l)
		l = l[k:]
		var ps []posting
		doc := int64(-1)
		for range np {
			g, k1 := binary.Uvarint(l)
			tf, k2 := binary.Uvarint(l[k1:])
			l = l[k1+k2:]
			doc += int64(g)
			if d := m[doc]; d >= 0 {
				ps = append(ps, posting{d, int32(tf)})
			}
		}
		if len(ps) > 0 {
			idx.postings[string(sp.termAt(i))] = ps
		}
	}
	if len(fresh) > 0 {
		texts := make([]string, len(fresh))
		var buf []byte
		for j, d := range fresh {
			buf = c.text(buf[:0], int(d))
			texts[j] = string(buf)
		}
		add := newLexIndex(texts, an, k1, b)
		for j, d := range fresh {
			idx.docLen[d] = add.docLen[j]
		}
		for t, ps := range add.postings {
			out := slices.Grow(idx.postings[t], len(ps))
			for _, p := range ps {
				out = append(out, posting{fresh[p.doc], p.tf})
			}
			idx.postings[t] = out
		}
	}
	var total float64
	for _, l := range idx.docLen {
		total += l
	}
	if c.n > 0 {
		idx.avgLen = total / float64(c.n)
	}
	return idx, true
}
