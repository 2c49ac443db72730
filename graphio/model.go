package graphio

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"unsafe"
)

// FormatVersion is the version of the on-disk index format this package writes:
// v2 added embedding matrices in compressed rows ("embs.<kind>" sections); v3 stores
// every matrix uncompressed and aligned ("embr.<kind>"), so that a reader can use the
// file's bytes in place.
const FormatVersion = 3

// MinFormatVersion is the oldest format version this package reads. A v1 file is a
// v2 file without compressed-row matrices, and a v2 file a v3 file with compressed
// matrix sections instead of raw ones; an older reader refuses a newer file by its
// version rather than skip its embeddings.
const MinFormatVersion = 1

// NodeKind names a kind of graph node; each kind has its own embedding matrix.
type NodeKind uint8

// Node kinds. The order is the order of node blocks in a [NodeSpace].
const (
	KindEntity NodeKind = iota
	KindChunk
	KindHyperedge
	KindFact // facts are not graph nodes in HippoRAG 2, but they are embedded
	numKinds
)

// NumKinds is the number of node kinds.
const NumKinds = int(numKinds)

var kindNames = [...]string{"entity", "chunk", "hyperedge", "fact"}

func (k NodeKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseNodeKind parses a node kind name as printed by NodeKind.String.
func ParseNodeKind(s string) (NodeKind, error) {
	for i, n := range kindNames {
		if n == s {
			return NodeKind(i), nil
		}
	}
	return 0, fmt.Errorf("graphio: unknown node kind %q", s)
}

// Meta describes an index as a whole.
type Meta struct {
	Created   string `json:"created"`             // RFC 3339 time the index was first built
	Corpus    string `json:"corpus,omitempty"`    // the corpus path it was built from
	Tokenizer string `json:"tokenizer,omitempty"` // tokenizer used for chunking, e.g. "cl100k_base"
	// Chunking records the chunking settings (ingest.Config.Describe); "" in an index
	// written before it was recorded.
	Chunking  string `json:"chunking,omitempty"`
	Extractor string `json:"extractor,omitempty"` // extractor identity, e.g. "rule" or "llm:gpt-4o-mini"
	Embedder  string `json:"embedder,omitempty"`  // embedder identity; all embedding matrices share it
	// EntityFilter records the entity-hygiene settings the graph was built with.
	EntityFilter string `json:"entity_filter,omitempty"`
	// Graph records every graph setting the index was built with, by flag name
	// (kg.Config.Settings): a later add, delete, sync or merge keeps to them unless
	// told otherwise. Empty in an index written before they were recorded.
	Graph map[string]string `json:"graph,omitempty"`
	// FilteredEntities counts, per rule, the distinct names the filter kept out.
	FilteredEntities map[string]int `json:"filtered_entities,omitempty"`
	Graphloom        string         `json:"graphloom,omitempty"` // version of graphloom that built it
}

// Document is one input passage or file after duplicate passages were merged.
type Document struct {
	ID     string // "doc-"+md5(title+"\n"+text)
	Title  string
	Source string // where it came from: file path, with "#n" for the n-th record of a JSON/JSONL file
	Count  int    // how many identical copies the input held (≥ 1)
	// Key names the document stably across edits (the ID changes with its text): the
	// file's path below the corpus folder, or a corpus record's id (its title when it
	// has none); see ingest.Passage.Key. Empty in indices written before keys were
	// kept, and in imported ones (kg.DocumentKey derives one).
	Key string
}

// Chunk is a retrieval unit: a whole passage, or a piece of a long one.
type Chunk struct {
	ID     string // "chunk-"+md5(title+"\n"+text), HippoRAG's passage id
	Doc    int32  // index of its document in Index.Documents
	Order  int32  // position within the document, from 0
	Title  string // the document title, or "<title> [chunk k]" for the k-th piece (from 1)
	Text   string
	Tokens int32 // tokens of Text under Meta.Tokenizer
	// Also lists the other documents that produced this chunk (a chunk's id is its
	// title and text, so two documents of one title can share a piece), each with the
	// chunk's position in it: deleting Doc hands the chunk to one of them. Empty for
	// most chunks, and in indices written before it was kept.
	Also []ChunkRef
}

// ChunkRef is a document's piece: the document and the position in it.
type ChunkRef struct {
	Doc   int32
	Order int32
}

// Content is the passage string HippoRAG embeds and evaluates on: title, newline, text.
func (c *Chunk) Content() string { return c.Title + "\n" + c.Text }

// Entity is a node of the knowledge graph, identified by its normalised name.
type Entity struct {
	ID      string   // "entity-"+md5(Name)
	Name    string   // normalised name, see NormalizeName
	Surface []string // surface forms seen in the text, in order of first sight
	Type    string   // entity type from the extractor (e.g. PERSON, GPE) or ""
	Run     string   // run that added it; "" when extracted
}

// Mention records that an entity occurs in a chunk (an entity–chunk edge).
type Mention struct {
	Entity, Chunk int32
	Run           string // run that added it; "" when extracted
}

// Fact is a (subject, predicate, object) triple between two entities.
type Fact struct {
	ID        string  // "fact-"+md5("('s', 'p', 'o')")
	Subject   int32   // entity index
	Predicate string  // normalised predicate
	Object    int32   // entity index
	Chunks    []int32 // chunks that state it (or, for augmented facts, that it cites), ascending
	Weight    float32 // support: number of (chunk, triple) occurrences
	Run       string  // run that added it; "" when extracted
}

// Hyperedge is an n-ary fact: a verbatim text segment linking its entities.
type Hyperedge struct {
	ID       string  // "hyper-"+md5(Text)
	Text     string  // the verbatim 1–3 sentence knowledge segment
	Entities []int32 // member entities in order of appearance
	Chunks   []int32 // source chunks, ascending
	Score    float32 // extractor's importance/completeness score
	Run      string  // run that added it; "" when extracted
}

// Synonym is an undirected similarity edge between two entities (A < B).
type Synonym struct {
	A, B   int32
	Cosine float32
	Run    string // run that added it; "" when extracted
}

// Run records one job that changed an index, such as an augmentation.
type Run struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`    // e.g. "augment"
	Created string `json:"created"` // RFC 3339
	Params  string `json:"params"`  // JSON of the job's configuration
	Summary string `json:"summary"` // JSON of the job's report
}

// Index is a graphloom index: a corpus, its knowledge graph and its embeddings.
type Index struct {
	Meta       Meta
	Documents  []Document
	Chunks     []Chunk
	Entities   []Entity
	Mentions   []Mention
	Facts      []Fact
	Hyperedges []Hyperedge
	Synonyms   []Synonym
	Runs       []Run
	// Embeddings holds one matrix per embedded node kind; rows follow the order of the
	// corresponding slice (Entities, Chunks, Hyperedges, Facts).
	Embeddings map[NodeKind]*Embedding
	// Blobs holds opaque state of pipeline components keyed by name, e.g. the built-in
	// embedder's IDF table under "embedder".
	Blobs map[string][]byte

	skipped []NodeKind // embedding kinds left unread (ReadOptions), in file order
	mapping []byte     // the file's mapping when read with ReadOptions.Map and Release
}

// ReleaseMapped hands back to the system the pages of e's arrays that lie in ix's
// file mapping (an index read with ReadOptions.Map and Release), whole pages only: e stays valid (a page touched
// again faults in from the file; the mapping is private, so pages written since are
// read again as the file has them, which is why e must not have been changed in
// place). Arrays outside the mapping are left alone. A change that copies a mapped
// matrix releases it after the copy, so that the mapped pages do not stay resident
// beside the copy.
func (ix *Index) ReleaseMapped(e *Embedding) {
	if ix.mapping == nil || e == nil {
		return
	}
	if e.Sparse == nil {
		releaseIn(ix.mapping, leBytes(e.Data))
		return
	}
	releaseIn(ix.mapping, leBytes(e.Sparse.Ptr))
	releaseIn(ix.mapping, leBytes(e.Sparse.Idx))
	releaseIn(ix.mapping, leBytes(e.Sparse.Val))
}

// releaseIn releases the whole pages of b when b lies within mapping.
func releaseIn(mapping, b []byte) {
	if len(b) == 0 || !littleEndian {
		return
	}
	lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(mapping))), uintptr(unsafe.Pointer(unsafe.SliceData(mapping)))+uintptr(len(mapping))
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < lo || p+uintptr(len(b)) > hi {
		return
	}
	page := uintptr(os.Getpagesize())
	start, end := (p+page-1)/page*page, (p+uintptr(len(b)))/page*page
	if end <= start {
		return
	}
	off := int(start - lo)
	releasePages(mapping[off : off+int(end-start)])
}

// SkippedEmbeddings returns the node kinds whose embedding matrices the reader left
// out (ReadOptions.Embeddings); nil for an index read whole or built in memory.
func (ix *Index) SkippedEmbeddings() []NodeKind { return ix.skipped }

// ReplaceEmbeddings sets ix's embeddings to m, every kind computed again, so an index
// read without its matrices (ReadOptions.Embeddings) is whole again and may be
// written: kg's rebuild embeds every record of a changed index this way.
func (ix *Index) ReplaceEmbeddings(m map[NodeKind]*Embedding) {
	ix.Embeddings, ix.skipped = m, nil
}

// EmbeddingSkipped reports whether the matrix of kind k was left unread.
func (ix *Index) EmbeddingSkipped(k NodeKind) bool { return slices.Contains(ix.skipped, k) }

// count returns the number of records of a node kind.
func (ix *Index) count(k NodeKind) int {
	switch k {
	case KindEntity:
		return len(ix.Entities)
	case KindChunk:
		return len(ix.Chunks)
	case KindHyperedge:
		return len(ix.Hyperedges)
	case KindFact:
		return len(ix.Facts)
	}
	return 0
}

// Validate checks that every cross reference is in range and every embedding matrix
// has one row per record. The reader calls it, so a decoded index is always safe to use.
func (ix *Index) Validate() error {
	nd, nc, ne := int32(len(ix.Documents)), int32(len(ix.Chunks)), int32(len(ix.Entities))
	in := func(v, n int32) bool { return v >= 0 && v < n }
	for i, c := range ix.Chunks {
		if !in(c.Doc, nd) {
			return fmt.Errorf("graphio: chunk %d refers to document %d of %d", i, c.Doc, nd)
		}
		for _, a := range c.Also {
			if !in(a.Doc, nd) || a.Doc == c.Doc {
				return fmt.Errorf("graphio: chunk %d is also of document %d of %d (its own is %d)", i, a.Doc, nd, c.Doc)
			}
		}
	}
	for i, m := range ix.Mentions {
		if !in(m.Entity, ne) || !in(m.Chunk, nc) {
			return fmt.Errorf("graphio: mention %d refers to entity %d of %d, chunk %d of %d", i, m.Entity, ne, m.Chunk, nc)
		}
	}
	for i, f := range ix.Facts {
		if !in(f.Subject, ne) || !in(f.Object, ne) {
			return fmt.Errorf("graphio: fact %d refers to entities %d,%d of %d", i, f.Subject, f.Object, ne)
		}
		for _, c := range f.Chunks {
			if !in(c, nc) {
				return fmt.Errorf("graphio: fact %d refers to chunk %d of %d", i, c, nc)
			}
		}
	}
	for i, h := range ix.Hyperedges {
		for _, e := range h.Entities {
			if !in(e, ne) {
				return fmt.Errorf("graphio: hyperedge %d refers to entity %d of %d", i, e, ne)
			}
		}
		for _, c := range h.Chunks {
			if !in(c, nc) {
				return fmt.Errorf("graphio: hyperedge %d refers to chunk %d of %d", i, c, nc)
			}
		}
	}
	for i, s := range ix.Synonyms {
		if !in(s.A, ne) || !in(s.B, ne) || s.A == s.B {
			return fmt.Errorf("graphio: synonym edge %d joins entities %d,%d of %d", i, s.A, s.B, ne)
		}
	}
	for k, e := range ix.Embeddings {
		if k >= numKinds {
			return fmt.Errorf("graphio: embedding for unknown node kind %d", k)
		}
		if e == nil || e.Dim <= 0 {
			return fmt.Errorf("graphio: %s embedding has no dimension", k)
		}
		if err := e.validate(); err != nil {
			return fmt.Errorf("graphio: %s embedding: %w", k, err)
		}
		if e.Rows() != ix.count(k) {
			return fmt.Errorf("graphio: %s embedding has %d rows, want %d", k, e.Rows(), ix.count(k))
		}
	}
	return nil
}

// RemoveRun deletes every record that run added and the run itself, renumbering the
// remaining records. Because runs only append, removing the newest run restores the
// index as it was before that run, byte for byte once written. A mention the run added
// that a later run's fact or hyperedge also states is kept, as the earliest such run's
// (the one that would have recorded it, had this run not been). It
// returns an error if the run is unknown, or if a record that survives refers to one
// the run added.
func (ix *Index) RemoveRun(run string) error {
	if run == "" {
		return fmt.Errorf("graphio: remove run: empty run id")
	}
	ri := slices.IndexFunc(ix.Runs, func(r Run) bool { return r.ID == run })
	if ri < 0 {
		if len(ix.Runs) == 0 {
			return fmt.Errorf("graphio: remove run: no run %q in this index (it has no runs)", run)
		}
		ids := make([]string, len(ix.Runs))
		for i, r := range ix.Runs {
			ids[i] = r.ID
		}
		return fmt.Errorf("graphio: remove run: no run %q in this index (its runs: %s)", run, strings.Join(ids, ", "))
	}
	// Entities: keep and renumber.
	remap := make([]int32, len(ix.Entities))
	var keptEnt []Entity
	for i, e := range ix.Entities {
		if e.Run == run {
			remap[i] = -1
			continue
		}
		remap[i] = int32(len(keptEnt))
		keptEnt = append(keptEnt, e)
	}
	keepRows := func(k NodeKind, keep func(i int) bool) {
		e := ix.Embeddings[k]
		if e == nil || e.Dim == 0 {
			return
		}
		e.KeepRows(keep)
	}
	mapEnt := func(what string, i int, e int32, by string) (int32, error) {
		if remap[e] < 0 {
			if by != "" {
				return 0, fmt.Errorf("graphio: remove run %q: %s %d of the later run %q refers to entity %q the run added: roll back %q first", run, what, i, by, ix.Entities[e].Name, by)
			}
			return 0, fmt.Errorf("graphio: remove run %q: %s %d refers to entity %q the run added", run, what, i, ix.Entities[e].Name)
		}
		return remap[e], nil
	}
	// A later run does not record a mention an earlier one added (the builder keeps
	// one per entity and chunk): a mention of this run that a later run's fact or
	// hyperedge states passes to that run instead of going.
	after := map[string]int{} // a later run's position
	for i, r := range ix.Runs[ri+1:] {
		after[r.ID] = i + 1
	}
	later := map[[2]int32]string{} // the earliest later run that states the mention
	state := func(e, c int32, by string) {
		if pos := after[by]; pos > 0 {
			k := [2]int32{e, c}
			if cur, ok := later[k]; !ok || pos < after[cur] {
				later[k] = by
			}
		}
	}
	for _, f := range ix.Facts {
		for _, c := range f.Chunks {
			state(f.Subject, c, f.Run)
			state(f.Object, c, f.Run)
		}
	}
	for _, h := range ix.Hyperedges {
		for _, c := range h.Chunks {
			for _, e := range h.Entities {
				state(e, c, h.Run)
			}
		}
	}
	var err error
	var mentions []Mention
	for i, m := range ix.Mentions {
		if m.Run == run {
			by, ok := later[[2]int32{m.Entity, m.Chunk}]
			if !ok || remap[m.Entity] < 0 {
				continue
			}
			m.Run = by
		}
		if m.Entity, err = mapEnt("mention", i, m.Entity, m.Run); err != nil {
			return err
		}
		mentions = append(mentions, m)
	}
	var facts []Fact
	keepFact := make([]bool, len(ix.Facts))
	for i, f := range ix.Facts {
		if f.Run == run {
			continue
		}
		if f.Subject, err = mapEnt("fact", i, f.Subject, f.Run); err != nil {
			return err
		}
		if f.Object, err = mapEnt("fact", i, f.Object, f.Run); err != nil {
			return err
		}
		keepFact[i] = true
		facts = append(facts, f)
	}
	var hypers []Hyperedge
	keepHyper := make([]bool, len(ix.Hyperedges))
	for i, h := range ix.Hyperedges {
		if h.Run == run {
			continue
		}
		ents := make([]int32, len(h.Entities))
		for j, e := range h.Entities {
			if ents[j], err = mapEnt("hyperedge", i, e, h.Run); err != nil {
				return err
			}
		}
		h.Entities = ents
		keepHyper[i] = true
		hypers = append(hypers, h)
	}
	var syns []Synonym
	for i, s := range ix.Synonyms {
		if s.Run == run {
			continue
		}
		if s.A, err = mapEnt("synonym edge", i, s.A, s.Run); err != nil {
			return err
		}
		if s.B, err = mapEnt("synonym edge", i, s.B, s.Run); err != nil {
			return err
		}
		syns = append(syns, s)
	}
	// Every check passed: only now is the index changed, so an error leaves it whole.
	keepRows(KindEntity, func(i int) bool { return remap[i] >= 0 })
	keepRows(KindFact, func(i int) bool { return keepFact[i] })
	keepRows(KindHyperedge, func(i int) bool { return keepHyper[i] })
	ix.Entities, ix.Mentions, ix.Facts, ix.Hyperedges, ix.Synonyms = keptEnt, mentions, facts, hypers, syns
	ix.Runs = slices.Delete(ix.Runs, ri, ri+1)
	return nil
}
