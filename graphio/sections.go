package graphio

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// A section codec turns one part of an Index into bytes and back.
type section struct {
	name   string
	encode func(ix *Index, e *enc) error
	decode func(ix *Index, d *dec) error
	// pieces, set instead of encode for a matrix in its in-memory layout (see
	// rawPrefix), gives the payload as consecutive pieces that the writer streams
	// without joining them, and stores as they are even when it compresses the other
	// sections (the tests' format-v2 writer); off is the payload's file offset.
	pieces func(ix *Index, off int64) [][]byte
}

// sections lists the required sections in file order. Embedding matrices ("embr.<kind>";
// "emb.<kind>" and "embs.<kind>" in files of format v1 and v2) and blobs ("blob.<name>")
// follow them.
var sections = []section{
	{name: "meta", encode: encMeta, decode: decMeta},
	{name: "documents", encode: encDocuments, decode: decDocuments},
	{name: "chunks", encode: encChunks, decode: decChunks},
	{name: "entities", encode: encEntities, decode: decEntities},
	{name: "mentions", encode: encMentions, decode: decMentions},
	{name: "facts", encode: encFacts, decode: decFacts},
	{name: "hyperedges", encode: encHyperedges, decode: decHyperedges},
	{name: "synonyms", encode: encSynonyms, decode: decSynonyms},
	{name: "runs", encode: encRuns, decode: decRuns},
}

func encMeta(ix *Index, e *enc) error {
	b, err := json.Marshal(ix.Meta)
	e.b = append(e.b, b...)
	return err
}

func decMeta(ix *Index, d *dec) error {
	if err := json.Unmarshal(d.b, &ix.Meta); err != nil {
		d.fail("meta: %v", err)
	}
	d.b = nil
	return d.done("meta")
}

func encRuns(ix *Index, e *enc) error {
	runs := ix.Runs
	if runs == nil {
		runs = []Run{}
	}
	b, err := json.Marshal(runs)
	e.b = append(e.b, b...)
	return err
}

func decRuns(ix *Index, d *dec) error {
	if err := json.Unmarshal(d.b, &ix.Runs); err != nil {
		d.fail("runs: %v", err)
	}
	if len(ix.Runs) == 0 {
		ix.Runs = nil
	}
	d.b = nil
	return d.done("runs")
}

func encDocuments(ix *Index, e *enc) error {
	n := len(ix.Documents)
	e.uvarint(uint64(n))
	e.strs(n, func(i int) string { return ix.Documents[i].ID })
	e.strs(n, func(i int) string { return ix.Documents[i].Title })
	e.strs(n, func(i int) string { return ix.Documents[i].Source })
	for _, doc := range ix.Documents {
		e.uvarint(uint64(doc.Count))
	}
	return nil
}

func decDocuments(ix *Index, d *dec) error {
	n := d.count("documents", 4)
	ix.Documents = make([]Document, n)
	d.strs(n, func(i int, s string) { ix.Documents[i].ID = s })
	d.strs(n, func(i int, s string) { ix.Documents[i].Title = s })
	d.strs(n, func(i int, s string) { ix.Documents[i].Source = s })
	for i := range ix.Documents {
		ix.Documents[i].Count = int(d.uvarint())
	}
	return d.done("documents")
}

// docKeysSection holds the documents' keys (Document.Key), one string per document.
// It is optional, written only when some document has a key, so an index without keys
// is written as before; a reader that does not know it skips it (keys are then derived
// again), and an index written before keys were kept reads with empty keys. Being an
// addition that older readers can skip, it does not change the format version.
const docKeysSection = "dockeys"

func encDocKeys(ix *Index, e *enc) error {
	n := len(ix.Documents)
	e.uvarint(uint64(n))
	e.strs(n, func(i int) string { return ix.Documents[i].Key })
	return nil
}

func decDocKeys(ix *Index, d *dec) error {
	n := d.count("document keys", 1)
	if d.err == nil && n != len(ix.Documents) {
		d.fail("%d document keys for %d documents", n, len(ix.Documents))
	}
	if d.err != nil {
		return d.done(docKeysSection)
	}
	d.strs(n, func(i int, s string) { ix.Documents[i].Key = s })
	return d.done(docKeysSection)
}

// chunkAlsoSection holds every chunk's other documents (Chunk.Also): a count, then
// (chunk, document, order) triples in chunk order. Like docKeysSection it is optional
// (written only when some chunk has one) and skipped by readers that do not know it,
// so it does not change the format version.
const chunkAlsoSection = "chunkalso"

func encChunkAlso(ix *Index, e *enc) error {
	n := 0
	for _, c := range ix.Chunks {
		n += len(c.Also)
	}
	e.uvarint(uint64(n))
	for i, c := range ix.Chunks {
		for _, a := range c.Also {
			e.uvarint(uint64(i))
			e.uvarint(uint64(a.Doc))
			e.uvarint(uint64(a.Order))
		}
	}
	return nil
}

func decChunkAlso(ix *Index, d *dec) error {
	n := d.count("chunk documents", 3)
	last := -1
	for range n {
		c, doc, order := d.u32("chunk"), d.u32("document"), d.u32("order")
		if d.err != nil {
			break
		}
		if int(c) >= len(ix.Chunks) || int(c) < last {
			d.fail("chunk %d of %d out of order or range", c, len(ix.Chunks))
			break
		}
		last = int(c)
		ix.Chunks[c].Also = append(ix.Chunks[c].Also, ChunkRef{Doc: doc, Order: order})
	}
	return d.done(chunkAlsoSection)
}

func encChunks(ix *Index, e *enc) error {
	n := len(ix.Chunks)
	e.uvarint(uint64(n))
	for _, c := range ix.Chunks {
		e.uvarint(uint64(c.Doc))
		e.uvarint(uint64(c.Order))
		e.uvarint(uint64(c.Tokens))
	}
	e.strs(n, func(i int) string { return ix.Chunks[i].Title })
	e.strs(n, func(i int) string { return ix.Chunks[i].Text })
	return nil
}

func decChunks(ix *Index, d *dec) error {
	n := d.count("chunks", 5)
	ix.Chunks = make([]Chunk, n)
	for i := range ix.Chunks {
		c := &ix.Chunks[i]
		c.Doc, c.Order, c.Tokens = d.u32("document"), d.u32("order"), d.u32("tokens")
	}
	d.strs(n, func(i int, s string) { ix.Chunks[i].Title = s })
	d.strs(n, func(i int, s string) { ix.Chunks[i].Text = s })
	ids := idColumn(n, "chunk-", func(b []byte, i int) []byte {
		return append(append(append(b, ix.Chunks[i].Title...), '\n'), ix.Chunks[i].Text...) // ChunkID
	})
	for i := range ix.Chunks {
		ix.Chunks[i].ID = ids[i]
	}
	return d.done("chunks")
}

// u32 reads a non-negative int32 stored as a uvarint.
func (d *dec) u32(what string) int32 {
	v := d.uvarint()
	if v > 1<<31-1 {
		d.fail("%s %d out of range", what, v)
		return 0
	}
	return int32(v)
}

// surfaceSep joins an entity's surface forms; it cannot occur in text we keep.
const surfaceSep = "\x00"

func encEntities(ix *Index, e *enc) error {
	n := len(ix.Entities)
	e.uvarint(uint64(n))
	e.strs(n, func(i int) string { return ix.Entities[i].Name })
	e.strs(n, func(i int) string { return strings.Join(ix.Entities[i].Surface, surfaceSep) })
	e.strs(n, func(i int) string { return ix.Entities[i].Type })
	e.strs(n, func(i int) string { return ix.Entities[i].Run })
	return nil
}

func decEntities(ix *Index, d *dec) error {
	n := d.count("entities", 4)
	ix.Entities = make([]Entity, n)
	d.strs(n, func(i int, s string) { ix.Entities[i].Name = s })
	for i, id := range idColumn(n, "entity-", func(b []byte, i int) []byte { return append(b, ix.Entities[i].Name...) }) {
		ix.Entities[i].ID = id // EntityID
	}
	// Surface forms: one array for every entity's (a slice per entity was 41K
	// allocations on the 2Wiki index), each entity's with its own capacity.
	all, lens := d.column(n)
	forms := make([]string, 0, strings.Count(all, surfaceSep)+n)
	at := 0
	for i, l := range lens {
		s := all[at : at+l]
		at += l
		if s == "" {
			continue
		}
		start := len(forms)
		for f := range strings.SplitSeq(s, surfaceSep) {
			forms = append(forms, f)
		}
		ix.Entities[i].Surface = forms[start:len(forms):len(forms)]
	}
	d.strs(n, func(i int, s string) { ix.Entities[i].Type = s })
	d.strs(n, func(i int, s string) { ix.Entities[i].Run = s })
	return d.done("entities")
}

func encMentions(ix *Index, e *enc) error {
	n := len(ix.Mentions)
	e.uvarint(uint64(n))
	for _, m := range ix.Mentions {
		e.uvarint(uint64(m.Entity))
		e.uvarint(uint64(m.Chunk))
	}
	e.strs(n, func(i int) string { return ix.Mentions[i].Run })
	return nil
}

func decMentions(ix *Index, d *dec) error {
	n := d.count("mentions", 3)
	ix.Mentions = make([]Mention, n)
	for i := range ix.Mentions {
		ix.Mentions[i].Entity, ix.Mentions[i].Chunk = d.u32("entity"), d.u32("chunk")
	}
	d.strs(n, func(i int, s string) { ix.Mentions[i].Run = s })
	return d.done("mentions")
}

func encFacts(ix *Index, e *enc) error {
	n := len(ix.Facts)
	e.uvarint(uint64(n))
	for _, f := range ix.Facts {
		e.uvarint(uint64(f.Subject))
		e.uvarint(uint64(f.Object))
		e.f32(f.Weight)
	}
	e.strs(n, func(i int) string { return ix.Facts[i].Predicate })
	e.lists(n, func(i int) []int32 { return ix.Facts[i].Chunks })
	e.strs(n, func(i int) string { return ix.Facts[i].Run })
	return nil
}

func decFacts(ix *Index, d *dec) error {
	n := d.count("facts", 8)
	ix.Facts = make([]Fact, n)
	for i := range ix.Facts {
		f := &ix.Facts[i]
		f.Subject, f.Object = d.u32("subject"), d.u32("object")
		f.Weight = d.f32()
	}
	d.strs(n, func(i int, s string) { ix.Facts[i].Predicate = s })
	d.lists(n, func(i int, v []int32) { ix.Facts[i].Chunks = v })
	d.strs(n, func(i int, s string) { ix.Facts[i].Run = s })
	return d.done("facts")
}

func encHyperedges(ix *Index, e *enc) error {
	n := len(ix.Hyperedges)
	e.uvarint(uint64(n))
	for _, h := range ix.Hyperedges {
		e.f32(h.Score)
	}
	e.strs(n, func(i int) string { return ix.Hyperedges[i].Text })
	e.lists(n, func(i int) []int32 { return ix.Hyperedges[i].Entities })
	e.lists(n, func(i int) []int32 { return ix.Hyperedges[i].Chunks })
	e.strs(n, func(i int) string { return ix.Hyperedges[i].Run })
	return nil
}

func decHyperedges(ix *Index, d *dec) error {
	n := d.count("hyperedges", 8)
	ix.Hyperedges = make([]Hyperedge, n)
	for i := range ix.Hyperedges {
		ix.Hyperedges[i].Score = d.f32()
	}
	d.strs(n, func(i int, s string) { ix.Hyperedges[i].Text = s })
	for i, id := range idColumn(n, "hyper-", func(b []byte, i int) []byte { return append(b, ix.Hyperedges[i].Text...) }) {
		ix.Hyperedges[i].ID = id // HyperedgeID
	}
	d.lists(n, func(i int, v []int32) { ix.Hyperedges[i].Entities = v })
	d.lists(n, func(i int, v []int32) { ix.Hyperedges[i].Chunks = v })
	d.strs(n, func(i int, s string) { ix.Hyperedges[i].Run = s })
	return d.done("hyperedges")
}

func encSynonyms(ix *Index, e *enc) error {
	n := len(ix.Synonyms)
	e.uvarint(uint64(n))
	for _, s := range ix.Synonyms {
		e.uvarint(uint64(s.A))
		e.uvarint(uint64(s.B))
		e.f32(s.Cosine)
	}
	e.strs(n, func(i int) string { return ix.Synonyms[i].Run })
	return nil
}

func decSynonyms(ix *Index, d *dec) error {
	n := d.count("synonyms", 7)
	ix.Synonyms = make([]Synonym, n)
	for i := range ix.Synonyms {
		s := &ix.Synonyms[i]
		s.A, s.B = d.u32("entity"), d.u32("entity")
		s.Cosine = d.f32()
	}
	d.strs(n, func(i int, s string) { ix.Synonyms[i].Run = s })
	return d.done("synonyms")
}

// embeddingKinds returns the kinds ix has a matrix for, in increasing order.
func embeddingKinds(ix *Index) []NodeKind {
	kinds := slices.Collect(maps.Keys(ix.Embeddings))
	slices.Sort(kinds)
	return kinds
}

// optional sections: embeddings and blobs, in a deterministic order.
func optionalSections(ix *Index) []section {
	var out []section
	for _, k := range embeddingKinds(ix) {
		m := ix.Embeddings[k]
		out = append(out, section{name: rawPrefix + k.String(),
			pieces: func(_ *Index, off int64) [][]byte { return rawPieces(m, off) }})
	}
	if slices.ContainsFunc(ix.Documents, func(d Document) bool { return d.Key != "" }) {
		out = append(out, section{name: docKeysSection, encode: encDocKeys})
	}
	if slices.ContainsFunc(ix.Chunks, func(c Chunk) bool { return len(c.Also) > 0 }) {
		out = append(out, section{name: chunkAlsoSection, encode: encChunkAlso})
	}
	names := make([]string, 0, len(ix.Blobs))
	for n := range ix.Blobs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		blob := ix.Blobs[n]
		out = append(out, section{name: "blob." + n, encode: func(_ *Index, e *enc) error {
			e.b = append(e.b, blob...)
			return nil
		}})
	}
	return out
}

// parsedEmbedding is an embedding section decoded: its kind and matrix, or why it is
// malformed.
type parsedEmbedding struct {
	kind NodeKind
	emb  *Embedding
	err  error
}

// Embedding sections of earlier formats: "emb.<kind>" holds a dense matrix with its
// floats byte-shuffled (format v1 and v2), "embs.<kind>" one in compressed rows (v2),
// each zstd-compressed. Format v3 writes rawPrefix sections instead.
const (
	densePrefix  = "emb."
	sparsePrefix = "embs."
)

// decodeSparse reads what encodeSparse wrote, checking every row's coordinates.
func decodeSparse(d *dec) *Embedding {
	dim := d.uvarint()
	if d.err == nil && (dim == 0 || dim > 1<<16) {
		d.fail("sparse embedding of dimension %d (1 to 65536)", dim)
	}
	rows := d.count("sparse rows", 1)
	nnz := d.count("non-zeros", 6)
	if d.err != nil {
		return nil
	}
	m := NewSparseEmbedding(int(dim))
	s := m.Sparse
	s.Ptr = make([]int64, 1, rows+1)
	for range rows {
		n := d.uvarint()
		if d.err != nil {
			return nil
		}
		next := s.Ptr[len(s.Ptr)-1] + int64(n)
		if n > uint64(nnz) || next > int64(nnz) {
			d.fail("row lengths exceed the %d non-zeros", nnz)
			return nil
		}
		s.Ptr = append(s.Ptr, next)
	}
	if s.Ptr[rows] != int64(nnz) || len(d.b) != 6*nnz {
		d.fail("%d non-zeros in rows summing to %d with %d bytes left", nnz, s.Ptr[rows], len(d.b))
		return nil
	}
	s.Idx = make([]uint16, nnz)
	for i := range rows {
		c := 0
		for k := s.Ptr[i]; k < s.Ptr[i+1]; k++ {
			gap := int(binary.LittleEndian.Uint16(d.b[2*k:]))
			if k > s.Ptr[i] && gap == 0 || c+gap >= int(dim) {
				d.fail("row %d: coordinates not increasing below %d", i, dim)
				return nil
			}
			c += gap
			s.Idx[k] = uint16(c)
		}
	}
	s.Val = unshuffle4(d.b[2*nnz:])
	d.b = nil
	return m
}

// parseEmbedding decodes an "embr.<kind>", "emb.<kind>" or "embs.<kind>" section's
// matrix, or returns nil for any other section (and for an unknown kind, which is
// skipped).
func parseEmbedding(name string, payload []byte) *parsedEmbedding {
	for _, form := range []struct {
		prefix string
		parse  func(d *dec) *Embedding
	}{{rawPrefix, parseRaw}, {sparsePrefix, decodeSparse}} {
		if !strings.HasPrefix(name, form.prefix) {
			continue
		}
		k, err := ParseNodeKind(strings.TrimPrefix(name, form.prefix))
		if err != nil {
			return nil
		}
		d := &dec{b: payload}
		m := form.parse(d)
		if err := d.done(name); err != nil {
			return &parsedEmbedding{kind: k, err: err}
		}
		return &parsedEmbedding{kind: k, emb: m}
	}
	if !strings.HasPrefix(name, densePrefix) {
		return nil
	}
	k, err := ParseNodeKind(strings.TrimPrefix(name, densePrefix))
	if err != nil {
		return nil
	}
	d := &dec{b: payload}
	dim := d.uvarint()
	if d.err == nil && (dim == 0 || dim > 1<<20 || len(d.b)%(4*int(dim)) != 0) {
		d.fail("embedding of dimension %d cannot hold %d bytes", dim, len(d.b))
	}
	if d.err != nil {
		return &parsedEmbedding{kind: k, err: d.done(name)}
	}
	return &parsedEmbedding{kind: k, emb: &Embedding{Dim: int(dim), Data: unshuffle4(d.b)}}
}

// decodeOptional adds an optional section to ix; pe is the section's embedding as
// parseEmbedding decoded it (nil: decoded here).
func decodeOptional(ix *Index, name string, payload []byte, pe *parsedEmbedding) (bool, error) {
	if pe == nil {
		pe = parseEmbedding(name, payload)
	}
	switch {
	case pe != nil:
		if pe.err != nil {
			return true, pe.err
		}
		if ix.Embeddings == nil {
			ix.Embeddings = map[NodeKind]*Embedding{}
		}
		if _, dup := ix.Embeddings[pe.kind]; dup {
			return true, fmt.Errorf("section %q appears twice", name)
		}
		ix.Embeddings[pe.kind] = pe.emb
		return true, nil
	case strings.HasPrefix(name, densePrefix) || strings.HasPrefix(name, sparsePrefix) || strings.HasPrefix(name, rawPrefix):
		return false, nil // an unknown kind
	case name == docKeysSection:
		return true, decDocKeys(ix, &dec{b: payload})
	case name == chunkAlsoSection:
		return true, decChunkAlso(ix, &dec{b: payload})
	case strings.HasPrefix(name, "blob."):
		if ix.Blobs == nil {
			ix.Blobs = map[string][]byte{}
		}
		key := strings.TrimPrefix(name, "blob.")
		if _, dup := ix.Blobs[key]; dup {
			return true, fmt.Errorf("section %q appears twice", name)
		}
		ix.Blobs[key] = payload
		return true, nil
	}
	return false, nil
}
