package graphio

import (
	"fmt"
	"slices"
	"strings"
)

// Builder adds records to an index, merging duplicates: a chunk by id, an entity by
// normalised name, a fact by its normalised triple, a hyperedge by its text, a mention
// and a synonym edge by their endpoints.
//
// A Builder made with a non-empty run id appends records tagged with that run and
// never changes a record that already exists, so [Index.RemoveRun] can undo it.
// A Builder is not safe for concurrent use.
type Builder struct {
	ix       *Index
	run      string
	docs     map[string]int32
	chunks   map[string]int32
	ents     map[string]int32
	facts    map[string]int32
	hypers   map[string]int32
	mentions map[[2]int32]struct{}
	syns     map[[2]int32]struct{}
}

// NewBuilder returns a Builder that appends to ix (which may be empty), tagging new
// records with run ("" for extraction).
func NewBuilder(ix *Index, run string) *Builder {
	b := NewChunkBuilder(ix, run)
	b.docs = positions(ix.Documents, func(d Document) string { return d.ID })
	b.chunks = positions(ix.Chunks, func(c Chunk) string { return c.ID })
	b.mentions = make(map[[2]int32]struct{}, len(ix.Mentions))
	for _, m := range ix.Mentions {
		b.mentions[[2]int32{m.Entity, m.Chunk}] = struct{}{}
	}
	return b
}

// NewChunkBuilder returns a Builder that merges the records of chunks that have no
// mention in ix yet (new chunks, or chunks whose records were just removed): it indexes
// the entities, facts, hyperedges and synonym edges as NewBuilder does, but not the
// documents, chunks and mentions (most of a large index's), so AddDocument and
// AddChunk must not be called, and a mention of any other chunk is not deduplicated.
func NewChunkBuilder(ix *Index, run string) *Builder {
	b := &Builder{
		ix: ix, run: run,
		ents:     positions(ix.Entities, func(e Entity) string { return e.Name }),
		facts:    positions(ix.Facts, func(f Fact) string { return f.ID }),
		hypers:   positions(ix.Hyperedges, func(h Hyperedge) string { return h.ID }),
		mentions: map[[2]int32]struct{}{},
		syns:     make(map[[2]int32]struct{}, len(ix.Synonyms)),
	}
	for _, s := range ix.Synonyms {
		b.syns[[2]int32{s.A, s.B}] = struct{}{}
	}
	return b
}

// positions maps each record's key to its position in records.
func positions[T any](records []T, key func(T) string) map[string]int32 {
	m := make(map[string]int32, len(records))
	for i, r := range records {
		m[key(r)] = int32(i)
	}
	return m
}

// NewSynonymBuilder returns a Builder for AddSynonym alone: it indexes ix's synonym
// edges only, not every record as NewBuilder does (a synonym search that finds a
// few edges in a large index spent most of its time indexing it). Its other methods
// must not be called.
func NewSynonymBuilder(ix *Index, run string) *Builder {
	b := &Builder{ix: ix, run: run, syns: make(map[[2]int32]struct{}, len(ix.Synonyms))}
	for _, s := range ix.Synonyms {
		b.syns[[2]int32{s.A, s.B}] = struct{}{}
	}
	return b
}

// Index returns the index being built.
func (b *Builder) Index() *Index { return b.ix }

// AddDocument adds a document, or counts one more copy of an identical one.
// It reports the document's position and whether it was new.
func (b *Builder) AddDocument(title, text, source string) (int32, bool) {
	id := DocumentID(title, text)
	if i, ok := b.docs[id]; ok {
		b.ix.Documents[i].Count++
		return i, false
	}
	i := int32(len(b.ix.Documents))
	b.ix.Documents = append(b.ix.Documents, Document{ID: id, Title: title, Source: source, Count: 1})
	b.docs[id] = i
	return i, true
}

// AddChunk adds a chunk of document doc unless an identical chunk exists, in which
// case doc is recorded among the chunk's other documents (Chunk.Also). Its id is
// computed from title and text. It reports the chunk's position and whether it was new.
func (b *Builder) AddChunk(doc, order int32, title, text string, tokens int32) (int32, bool) {
	id := ChunkID(title, text)
	if i, ok := b.chunks[id]; ok {
		c := &b.ix.Chunks[i]
		if c.Doc != doc && !slices.ContainsFunc(c.Also, func(r ChunkRef) bool { return r.Doc == doc }) {
			c.Also = append(c.Also, ChunkRef{Doc: doc, Order: order})
		}
		return i, false
	}
	i := int32(len(b.ix.Chunks))
	b.ix.Chunks = append(b.ix.Chunks, Chunk{ID: id, Doc: doc, Order: order, Title: title, Text: text, Tokens: tokens})
	b.chunks[id] = i
	return i, true
}

// ChunkIndex returns the position of the chunk with the given id.
func (b *Builder) ChunkIndex(id string) (int32, bool) {
	i, ok := b.chunks[id]
	return i, ok
}

// EntityIndex returns the position of the entity with the given normalised name.
func (b *Builder) EntityIndex(name string) (int32, bool) {
	i, ok := b.ents[name]
	return i, ok
}

// Entity returns the entity whose normalised name equals that of surface, adding it
// if needed. The surface form is recorded, and typ fills an empty type, on entities this
// Builder's run owns. It returns -1 when surface normalises to the empty string.
func (b *Builder) Entity(surface, typ string) int32 {
	name := NormalizeName(surface)
	if name == "" {
		return -1
	}
	surface = strings.TrimSpace(surface)
	if i, ok := b.ents[name]; ok {
		e := &b.ix.Entities[i]
		if e.Run == b.run {
			if !slices.Contains(e.Surface, surface) {
				e.Surface = append(e.Surface, surface)
			}
			if e.Type == "" {
				e.Type = typ
			}
		}
		return i
	}
	i := int32(len(b.ix.Entities))
	b.ix.Entities = append(b.ix.Entities, Entity{ID: EntityID(name), Name: name, Surface: []string{surface}, Type: typ, Run: b.run})
	b.ents[name] = i
	return i
}

// AddMention records that entity occurs in chunk.
func (b *Builder) AddMention(entity, chunk int32) {
	key := [2]int32{entity, chunk}
	if _, ok := b.mentions[key]; ok {
		return
	}
	b.mentions[key] = struct{}{}
	b.ix.Mentions = append(b.ix.Mentions, Mention{Entity: entity, Chunk: chunk, Run: b.run})
}

// AddFact adds the triple (subject, predicate, object) stated by chunk, creating the
// entities (and their mentions in chunk) as needed. A triple already known gains the
// chunk and one unit of support, unless it belongs to another run. It returns the
// fact's position and whether the fact was new, or an error when a part normalises to
// the empty string or subject and object are the same entity.
func (b *Builder) AddFact(subject, predicate, object string, chunk int32) (int32, bool, error) {
	p := NormalizeName(predicate)
	s, o := b.Entity(subject, ""), b.Entity(object, "")
	if s < 0 || o < 0 || p == "" {
		return -1, false, fmt.Errorf("graphio: triple (%q, %q, %q) has an empty part", subject, predicate, object)
	}
	if s == o {
		return -1, false, fmt.Errorf("graphio: triple (%q, %q, %q) has subject = object", subject, predicate, object)
	}
	b.AddMention(s, chunk)
	b.AddMention(o, chunk)
	return b.AddFactIDs(s, p, o, []int32{chunk})
}

// AddFactIDs adds a fact between existing entities, predicate already normalised,
// supported by chunks. See AddFact.
func (b *Builder) AddFactIDs(s int32, p string, o int32, chunks []int32) (int32, bool, error) {
	n := int32(len(b.ix.Entities))
	switch {
	case s < 0 || s >= n || o < 0 || o >= n:
		return -1, false, fmt.Errorf("graphio: fact (%d, %q, %d): no such entity (the index has %d)", s, p, o, n)
	case p == "":
		return -1, false, fmt.Errorf("graphio: fact between %q and %q has an empty predicate", b.ix.Entities[s].Name, b.ix.Entities[o].Name)
	case s == o:
		return -1, false, fmt.Errorf("graphio: fact (%q, %q, %q) has subject = object", b.ix.Entities[s].Name, p, b.ix.Entities[o].Name)
	}
	id := FactID(b.ix.Entities[s].Name, p, b.ix.Entities[o].Name)
	if i, ok := b.facts[id]; ok {
		f := &b.ix.Facts[i]
		if f.Run != b.run {
			return i, false, nil
		}
		for _, c := range chunks {
			if j, found := slices.BinarySearch(f.Chunks, c); !found {
				f.Chunks = slices.Insert(f.Chunks, j, c)
				f.Weight++
			}
		}
		return i, false, nil
	}
	cs := slices.Clone(chunks)
	slices.Sort(cs)
	cs = slices.Compact(cs)
	i := int32(len(b.ix.Facts))
	b.ix.Facts = append(b.ix.Facts, Fact{ID: id, Subject: s, Predicate: p, Object: o, Chunks: cs, Weight: float32(len(cs)), Run: b.run})
	b.facts[id] = i
	return i, true, nil
}

// AddHyperedge adds a hyperedge over entities from chunk, or merges it into the one
// with the same text (union of chunks, highest score).
func (b *Builder) AddHyperedge(text string, entities []int32, chunk int32, score float32) (int32, bool) {
	text = strings.TrimSpace(text)
	id := HyperedgeID(text)
	for _, e := range entities {
		b.AddMention(e, chunk)
	}
	if i, ok := b.hypers[id]; ok {
		h := &b.ix.Hyperedges[i]
		if h.Run != b.run {
			return i, false
		}
		if j, found := slices.BinarySearch(h.Chunks, chunk); !found {
			h.Chunks = slices.Insert(h.Chunks, j, chunk)
		}
		for _, e := range entities {
			if !slices.Contains(h.Entities, e) {
				h.Entities = append(h.Entities, e)
			}
		}
		h.Score = max(h.Score, score)
		return i, false
	}
	var ents []int32
	for _, e := range entities {
		if !slices.Contains(ents, e) {
			ents = append(ents, e)
		}
	}
	i := int32(len(b.ix.Hyperedges))
	b.ix.Hyperedges = append(b.ix.Hyperedges, Hyperedge{ID: id, Text: text, Entities: ents, Chunks: []int32{chunk}, Score: score, Run: b.run})
	b.hypers[id] = i
	return i, true
}

// AddSynonym adds an undirected synonym edge between two distinct entities, keeping
// the first cosine seen for a pair. It reports whether the edge was new.
func (b *Builder) AddSynonym(x, y int32, cosine float32) bool {
	if x == y {
		return false
	}
	if x > y {
		x, y = y, x
	}
	key := [2]int32{x, y}
	if _, ok := b.syns[key]; ok {
		return false
	}
	b.syns[key] = struct{}{}
	b.ix.Synonyms = append(b.ix.Synonyms, Synonym{A: x, B: y, Cosine: cosine, Run: b.run})
	return true
}
