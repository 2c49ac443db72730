package retrieve

import (
	"encoding/binary"
	"math"
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
		if blob, ok := carryPostings(ix.Blobs[c.blob], maps[i], c, an, cfg.BM25K1, cfg.BM25B); ok {
			ix.Blobs[c.blob] = blob
			continue
		}
		idx := newLexIndex(c.texts(), an, cfg.BM25K1, cfg.BM25B)
		if blob, ok := encodeBM25(idx, c.digest(an)); ok {
			ix.Blobs[c.blob] = blob
		} else {
			delete(ix.Blobs, c.blob)
		}
	}
}

// carryPostings returns the blob of c's postings built from the old blob's,
// renumbered by m (old document → new, -1 gone), and the new documents' own, written
// term by term as encodeBM25 writes them (the same bytes); false when the blob cannot
// be used.
func carryPostings(blob []byte, m []int32, c lexCorpus, an Analyzer, k1, b float64) ([]byte, bool) {
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
	docLen := make([]float64, c.n)
	for i, d := range m {
		if d >= 0 {
			docLen[d] = old.docLen[i]
		}
	}
	var add *lexIndex
	var addTerms []string
	if len(fresh) > 0 {
		texts := make([]string, len(fresh))
		var buf []byte
		for j, d := range fresh {
			buf = c.text(buf[:0], int(d))
			texts[j] = string(buf)
		}
		add = newLexIndex(texts, an, k1, b)
		for j, d := range fresh {
			docLen[d] = add.docLen[j]
		}
		for t := range add.postings {
			addTerms = append(addTerms, t)
		}
		slices.Sort(addTerms)
	}
	sp := old.stored
	var text, lists, pairs []byte
	var termOff, listOff []uint32
	emit := func(term []byte, oldList []byte, ps []posting) bool {
		pairs = pairs[:0]
		n, prev := 0, int32(-1)
		if oldList != nil {
			np, k := binary.Uvarint(oldList)
			l := oldList[k:]
			doc := int64(-1)
			for range np {
				g, k1 := binary.Uvarint(l)
				tf, k2 := binary.Uvarint(l[k1:])
				l = l[k1+k2:]
				doc += int64(g)
				if d := m[doc]; d >= 0 {
					pairs = binary.AppendUvarint(binary.AppendUvarint(pairs, uint64(d-prev)), tf)
					prev, n = d, n+1
				}
			}
		}
		for _, p := range ps {
			d := fresh[p.doc]
			pairs = binary.AppendUvarint(binary.AppendUvarint(pairs, uint64(d-prev)), uint64(p.tf))
			prev, n = d, n+1
		}
		if n == 0 {
			return true
		}
		termOff, listOff = append(termOff, uint32(len(text))), append(listOff, uint32(len(lists)))
		text = append(text, term...)
		lists = append(binary.AppendUvarint(lists, uint64(n)), pairs...)
		return len(text) <= math.MaxUint32 && len(lists) <= math.MaxUint32
	}
	i, j := 0, 0
	for i < sp.n || j < len(addTerms) {
		var ok bool
		switch {
		case j == len(addTerms) || i < sp.n && string(sp.termAt(i)) < addTerms[j]:
			ok = emit(sp.termAt(i), sp.listAt(i), nil)
			i++
		case i == sp.n || addTerms[j] < string(sp.termAt(i)):
			ok = emit([]byte(addTerms[j]), nil, add.postings[addTerms[j]])
			j++
		default:
			ok = emit(sp.termAt(i), sp.listAt(i), add.postings[addTerms[j]])
			i, j = i+1, j+1
		}
		if !ok {
			return nil, false
		}
	}
	termOff, listOff = append(termOff, uint32(len(text))), append(listOff, uint32(len(lists)))
	digest := c.digest(an)
	out := make([]byte, 0, len(bm25BlobMagic)+32+2*binary.MaxVarintLen64+3*len(docLen)+8*len(termOff)+len(text)+len(lists))
	out = append(append(out, bm25BlobMagic...), digest[:]...)
	out = binary.AppendUvarint(out, uint64(len(docLen)))
	for _, l := range docLen {
		out = binary.AppendUvarint(out, uint64(l))
	}
	out = binary.AppendUvarint(out, uint64(len(termOff)-1))
	for _, o := range termOff {
		out = binary.LittleEndian.AppendUint32(out, o)
	}
	for _, o := range listOff {
		out = binary.LittleEndian.AppendUint32(out, o)
	}
	return append(append(out, text...), lists...), true
}
