package graphio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIDsMatchHippoRAG(t *testing.T) {
	// Expected values computed with Python's hashlib exactly as HippoRAG does.
	assert.Equal(t, "fact-41aa94f494fd93512b16fa920ed78266", FactID("barack obama", "born in", "hawaii"))
	assert.Equal(t, "entity-2714c0b860afae126a17b13d9483a758", EntityID("barack obama"))
	assert.Equal(t, "chunk-a8b6377a3f4b7623b94881b3bff76c8a", ChunkID("Title", "Some text."))
	assert.Equal(t, `("o'brien", 'x', 'y')`, FactString("o'brien", "x", "y"))
	assert.Equal(t, `('a\\b', 'say "hi"\'s', 'x\ny\tz\r')`, FactString(`a\b`, `say "hi"'s`, "x\ny\tz\r"))
	assert.Equal(t, "('\uFFFD', 'zürich', '')", FactString("\xff", "zürich", ""), "invalid UTF-8 as Python's replacement")
}

// TestIDColumnsMatchIDs checks the reader's bulk ids (one allocation per column)
// against the one-at-a-time functions, on tricky text.
func TestIDColumnsMatchIDs(t *testing.T) {
	texts := []string{"", "barack obama", "o'brien", `say "hi"'s`, "a\\b\nc", "zürich", "\xff\xfe", strings.Repeat("long ", 1000)}
	at := func(b []byte, i int) []byte { return append(b, texts[i]...) }
	for i, id := range idColumn(len(texts), "entity-", at) {
		assert.Equal(t, EntityID(texts[i]), id)
	}
	for i, id := range idColumn(len(texts), "fact-", func(b []byte, i int) []byte {
		return appendFactString(b, texts[i], texts[len(texts)-1-i], texts[(i+3)%len(texts)])
	}) {
		assert.Equal(t, FactID(texts[i], texts[len(texts)-1-i], texts[(i+3)%len(texts)]), id)
	}
	assert.Empty(t, idColumn(0, "chunk-", at))
}

func TestNormalizeName(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Barack Obama", "barack obama"},
		{"  New   York City! ", "new york city"},
		{"O'Brien-Smith", "o brien smith"},
		{"Zürich", "zürich"},
		{"Zu\u0308rich", "zürich"}, // decomposed: the same node
		{"राम", "राम"},             // Ram and Reema: vowel signs stay in the word,
		{"रीमा", "रीमा"},           // so they are two nodes (cut at the signs, both read "र म")
		{"ภาษาไทย", "ภาษาไทย"},
		{"!!!", ""},
		{"1843", "1843"},
	} {
		assert.Equal(t, tc.want, NormalizeName(tc.in), tc.in)
	}
}

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"New York, 1843!", []string{"New", "York", "1843"}},
		{"Zu\u0308rich und Su\u0308dhof", []string{"Zu\u0308rich", "und", "Su\u0308dhof"}},
		{"राम और रीमा", []string{"राम", "और", "रीमा"}},
		{"می\u200cخواهم", []string{"می\u200cخواهم"}},
		{"\u0301a \u0301 b\u0301", []string{"a", "b\u0301"}},
		{"", nil},
	} {
		assert.Equal(t, tc.want, Words(tc.in), "%q", tc.in)
	}
	assert.Equal(t, "a b\u0301", NormalizeName("\u0301A \u0301 B\u0301"), "NormalizeName drops the same marks")
}

// sampleIndex builds a small index with every record kind.
func sampleIndex(t testing.TB) *Index {
	ix := &Index{Meta: Meta{Created: "2026-01-01T00:00:00Z", Corpus: "x.json", Tokenizer: "cl100k_base", Embedder: "test"}}
	b := NewBuilder(ix, "")
	d, _ := b.AddDocument("Alpha", "Alice met Bob in Paris.", "x.json#0")
	c0, _ := b.AddChunk(d, 0, "Alpha", "Alice met Bob in Paris.", 7)
	d1, _ := b.AddDocument("Beta", "Bob lives in Paris. Carol is Bob's sister.", "x.json#1")
	c1, _ := b.AddChunk(d1, 0, "Beta", "Bob lives in Paris. Carol is Bob's sister.", 11)
	_, _, err := b.AddFact("Alice", "met", "Bob", c0)
	require.NoError(t, err)
	_, _, err = b.AddFact("Bob", "lives in", "Paris", c1)
	require.NoError(t, err)
	_, _, err = b.AddFact("Carol", "sister of", "Bob", c1)
	require.NoError(t, err)
	b.AddMention(b.Entity("Paris", "GPE"), c0)
	b.AddHyperedge("Alice met Bob in Paris.", []int32{b.Entity("Alice", ""), b.Entity("Bob", ""), b.Entity("Paris", "")}, c0, 8)
	b.AddSynonym(b.Entity("Alice", ""), b.Entity("Carol", ""), 0.85)
	ix.Embeddings = map[NodeKind]*Embedding{}
	for _, k := range []NodeKind{KindEntity, KindChunk, KindFact, KindHyperedge} {
		m := &Embedding{Dim: 3, Data: make([]float32, 3*ix.count(k))}
		for i := range m.Data {
			m.Data[i] = float32(i) * 0.25
		}
		ix.Embeddings[k] = m
	}
	ix.Blobs = map[string][]byte{"embedder": []byte("idf-table")}
	return ix
}

func encode(t testing.TB, ix *Index) []byte {
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, ix))
	return buf.Bytes()
}

func TestBuilderMergesDuplicates(t *testing.T) {
	ix := &Index{}
	b := NewBuilder(ix, "")
	d, isNew := b.AddDocument("T", "x", "a#0")
	assert.True(t, isNew)
	d2, isNew := b.AddDocument("T", "x", "a#1")
	assert.False(t, isNew)
	assert.Equal(t, d, d2)
	assert.Equal(t, 2, ix.Documents[0].Count)
	c0, _ := b.AddChunk(d, 0, "T", "x", 1)
	c1, _ := b.AddChunk(d, 1, "T", "y", 1)
	f, isNew, err := b.AddFact("Barack  Obama", "born in", "Hawaii", c0)
	require.NoError(t, err)
	assert.True(t, isNew)
	f2, isNew, err := b.AddFact("barack obama", "Born in", "HAWAII", c1)
	require.NoError(t, err)
	assert.False(t, isNew)
	assert.Equal(t, f, f2)
	assert.Equal(t, []int32{c0, c1}, ix.Facts[f].Chunks)
	assert.Equal(t, float32(2), ix.Facts[f].Weight)
	// The same chunk stating it again adds no support.
	_, _, _ = b.AddFact("Barack Obama", "born in", "Hawaii", c1)
	assert.Equal(t, float32(2), ix.Facts[f].Weight)
	assert.Len(t, ix.Entities, 2)
	assert.Equal(t, []string{"Barack  Obama", "barack obama", "Barack Obama"}, ix.Entities[0].Surface)
	_, _, err = b.AddFact("X", "is", "x", c0)
	assert.Error(t, err, "subject = object")
	_, _, err = b.AddFact("X", "!!", "Y", c0)
	assert.Error(t, err, "empty predicate")
	// AddFactIDs checks what AddFact does, and that both entities exist.
	x, y := b.Entity("X", ""), b.Entity("Y", "")
	for _, tc := range []struct {
		name string
		s, o int32
		p    string
		want string
	}{
		{"no subject", -1, y, "is", "no such entity"},
		{"object past the end", x, int32(len(ix.Entities)), "is", "no such entity"},
		{"empty predicate", x, y, "", "empty predicate"},
		{"subject = object", x, x, "is", "subject = object"},
	} {
		n := len(ix.Facts)
		_, _, err := b.AddFactIDs(tc.s, tc.p, tc.o, []int32{c0})
		assert.ErrorContains(t, err, tc.want, tc.name)
		assert.Len(t, ix.Facts, n, tc.name)
	}
}

func TestTypedEdges(t *testing.T) {
	ix := sampleIndex(t)
	edges, ns := ix.TypedEdges(HippoGraph)
	assert.Equal(t, NodeSpace{Entities: len(ix.Entities), Chunks: 2}, ns)
	var facts, syns, ec int
	for _, e := range edges {
		switch e.Type {
		case EdgeFact:
			facts++
		case EdgeSynonym:
			syns++
			assert.InDelta(t, 0.85, e.Weight, 1e-6)
		case EdgeEntityChunk:
			ec++
			k, _ := ns.Kind(e.V)
			assert.Equal(t, KindChunk, k)
		}
	}
	assert.Equal(t, 3, facts)
	assert.Equal(t, 1, syns)
	// alice,bob,paris in c0; bob,paris,carol in c1.
	assert.Equal(t, 6, ec)
	csr, ns2, err := ix.Adjacency(HyperGraph, nil)
	require.NoError(t, err)
	require.NoError(t, csr.Validate())
	assert.Equal(t, len(ix.Entities)+2+1, ns2.N())
	h := ns2.Hyperedge(0)
	assert.Equal(t, int32(4), csr.RowPtr[h+1]-csr.RowPtr[h], "hyperedge joins 3 entities and 1 chunk")
}

func TestRoundTripAndDeterminism(t *testing.T) {
	ix := sampleIndex(t)
	data := encode(t, ix)
	got, err := Read(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Equal(t, ix, got)
	assert.Equal(t, data, encode(t, got), "re-encoding a decoded index gives the same bytes")
}

// TestDocumentKeys: document keys survive a round trip; an index without any is
// written without the key section (as before keys were kept) and reads with empty
// keys; a key section of the wrong length is corrupt.
func TestDocumentKeys(t *testing.T) {
	ix := sampleIndex(t)
	require.NotEmpty(t, ix.Documents)
	plain := encode(t, ix)
	assert.NotContains(t, string(plain), docKeysSection)
	for i := range ix.Documents {
		ix.Documents[i].Key = fmt.Sprintf("dir/doc%d.md", i)
	}
	keyed := encode(t, ix)
	got, err := Read(bytes.NewReader(keyed))
	require.NoError(t, err)
	assert.Equal(t, ix.Documents, got.Documents)
	got, err = Read(bytes.NewReader(plain))
	require.NoError(t, err)
	for _, d := range got.Documents {
		assert.Empty(t, d.Key)
	}
	bad := &Index{Documents: ix.Documents[:1]}
	e := &enc{}
	require.NoError(t, encDocKeys(ix, e))
	assert.ErrorContains(t, decDocKeys(bad, &dec{b: e.b}), "document keys for 1 documents")
}

// TestChunkAlso: a chunk two documents produce records the second (Builder), the
// optional section carries it through a file (streamed and mapped), an index without
// one writes no section, and a record naming a document out of range is refused.
func TestChunkAlso(t *testing.T) {
	ix := sampleIndex(t)
	plain := encode(t, ix)
	assert.NotContains(t, string(plain), chunkAlsoSection)
	b := NewBuilder(ix, "")
	d, _ := b.AddDocument("Alpha", "Alice met Bob in Paris. Then she left.", "x.json#2")
	c, isNew := b.AddChunk(d, 0, "Alpha", "Alice met Bob in Paris.", 7)
	require.False(t, isNew)
	_, _ = b.AddChunk(d, 0, "Alpha", "Alice met Bob in Paris.", 7) // the same again: recorded once
	b.AddChunk(ix.Chunks[c].Doc, 0, "Alpha", "Alice met Bob in Paris.", 7)
	require.Equal(t, []ChunkRef{{Doc: d, Order: 0}}, ix.Chunks[c].Also)
	ix.Embeddings = nil
	path := filepath.Join(t.TempDir(), "x.gl")
	require.NoError(t, WriteFile(path, ix))
	for _, mapped := range []bool{false, true} {
		got, err := ReadFileWith(path, ReadOptions{Map: mapped})
		require.NoError(t, err)
		assert.Equal(t, ix.Chunks, got.Chunks, "mapped=%v", mapped)
	}
	ix.Chunks[c].Also[0].Doc = int32(len(ix.Documents))
	assert.ErrorContains(t, ix.Validate(), "is also of document")
	e := &enc{}
	require.NoError(t, encChunkAlso(ix, e))
	assert.ErrorContains(t, decChunkAlso(&Index{Chunks: ix.Chunks[:c]}, &dec{b: e.b}), "out of order or range")
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "i.gl")
	ix := sampleIndex(t)
	require.NoError(t, WriteFile(path, ix))
	got, err := ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, ix, got)
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temporary file left behind")
	// A failing write leaves the old file in place.
	bad := sampleIndex(t)
	bad.Facts[0].Subject = 99
	require.Error(t, WriteFile(path, bad))
	got, err = ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, ix, got)
	entries, _ = os.ReadDir(dir)
	assert.Len(t, entries, 1)
}

func TestReadErrors(t *testing.T) {
	data := encode(t, sampleIndex(t))
	wrongVersion := bytes.Clone(data)
	wrongVersion[8] = 7
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrTruncated},
		{"wrong magic", append([]byte("PK\x03\x04"), data[4:]...), ErrNotIndex},
		{"json file", []byte(`[{"title":"x"}]`), ErrNotIndex},
		{"wrong version", wrongVersion, ErrVersion},
		{"truncated header", data[:10], ErrTruncated},
		{"truncated mid section", data[:len(data)/2], ErrTruncated},
		{"end section missing", data[:len(data)-4], ErrTruncated},
		{"trailing garbage", append(bytes.Clone(data), 0), ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.data))
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.want), "got %v", err)
		})
	}
}

func TestEveryFlippedByteIsDetected(t *testing.T) {
	data := encode(t, sampleIndex(t))
	for i := 12; i < len(data); i++ {
		bad := bytes.Clone(data)
		bad[i] ^= 0x10
		_, err := Read(bytes.NewReader(bad))
		require.Error(t, err, "flipping byte %d went unnoticed", i)
	}
	// A byte inside a payload is caught by its checksum.
	bad := bytes.Clone(data)
	bad[len(data)/2] ^= 0xff
	_, err := Read(bytes.NewReader(bad))
	assert.ErrorIs(t, err, ErrChecksum)
}

func TestEveryTruncationIsDetected(t *testing.T) {
	data := encode(t, sampleIndex(t))
	for n := 0; n < len(data); n++ {
		_, err := Read(bytes.NewReader(data[:n]))
		require.Error(t, err, "truncation at %d went unnoticed", n)
		assert.True(t, errors.Is(err, ErrTruncated) || errors.Is(err, ErrNotIndex), "truncation at %d: %v", n, err)
	}
}

func TestRemoveRunRestoresBytes(t *testing.T) {
	ix := sampleIndex(t)
	before := encode(t, ix)
	ix.Runs = append(ix.Runs, Run{ID: "aug-1", Kind: "augment"})
	b := NewBuilder(ix, "aug-1")
	carol, _ := b.EntityIndex("carol")
	dave := b.Entity("Dave", "")
	b.AddMention(dave, 1)
	_, isNew, err := b.AddFactIDs(carol, "friend of", dave, []int32{0, 1})
	require.NoError(t, err)
	require.True(t, isNew)
	alice, _ := b.EntityIndex("alice")
	_, isNew, err = b.AddFactIDs(alice, "met", carol, []int32{1})
	require.NoError(t, err)
	require.True(t, isNew)
	b.Entity("Alice", "PERSON") // must not modify an extracted entity
	b.AddSynonym(dave, carol, 0.9)
	b.AddMention(alice, 1)
	for _, k := range []NodeKind{KindEntity, KindFact} {
		m := ix.Embeddings[k]
		for m.Rows() < ix.count(k) {
			m.Data = append(m.Data, 9, 9, 9)
		}
	}
	require.NoError(t, ix.Validate())
	assert.NotEqual(t, before, encode(t, ix))

	require.NoError(t, ix.RemoveRun("aug-1"))
	assert.Equal(t, before, encode(t, ix))
	assert.Error(t, ix.RemoveRun("aug-1"), "unknown run")
}

func TestRandomIndexRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 20; trial++ {
		ix := &Index{}
		b := NewBuilder(ix, "")
		d, _ := b.AddDocument("doc", "text", "src")
		nc := 1 + rng.IntN(20)
		for c := 0; c < nc; c++ {
			b.AddChunk(d, int32(c), "doc", string(rune('a'+c)), int32(c))
		}
		for f := 0; f < rng.IntN(50); f++ {
			_, _, _ = b.AddFact(string(rune('A'+rng.IntN(10))), "p", string(rune('K'+rng.IntN(10))), int32(rng.IntN(nc)))
		}
		data := encode(t, ix)
		got, err := Read(bytes.NewReader(data))
		require.NoError(t, err)
		assert.Equal(t, data, encode(t, got))
	}
}

// TestRemoveRunNamesTheLaterRun: a run whose entity a later run uses cannot be
// removed first, and the error says which run to remove before it; an unknown run
// lists the index's runs.
func TestRemoveRunNamesTheLaterRun(t *testing.T) {
	ix := sampleIndex(t)
	assert.ErrorContains(t, ix.RemoveRun("aug-x"), "it has no runs")
	ix.Runs = append(ix.Runs, Run{ID: "aug-1", Kind: "augment"}, Run{ID: "aug-2", Kind: "augment"})
	carol, _ := NewBuilder(ix, "").EntityIndex("carol")
	dave := NewBuilder(ix, "aug-1").Entity("Dave", "")
	_, _, err := NewBuilder(ix, "aug-2").AddFactIDs(carol, "friend of", dave, []int32{0})
	require.NoError(t, err)
	for _, k := range []NodeKind{KindEntity, KindFact} { // the runs' vectors
		ix.Embeddings[k].Append(&Embedding{Dim: 3, Data: []float32{1, 0, 0}})
	}
	assert.ErrorContains(t, ix.RemoveRun("aug-x"), `no run "aug-x" in this index (its runs: aug-1, aug-2)`)
	rows := func() (n [3]int) {
		for i, k := range []NodeKind{KindEntity, KindFact, KindHyperedge} {
			n[i] = ix.Embeddings[k].Rows()
		}
		return n
	}
	before, entities := rows(), len(ix.Entities)
	assert.ErrorContains(t, ix.RemoveRun("aug-1"), `of the later run "aug-2" refers to entity "dave" the run added: roll back "aug-2" first`)
	assert.Equal(t, before, rows(), "a refused removal leaves the vectors as they were")
	assert.Len(t, ix.Entities, entities)
	require.NoError(t, ix.RemoveRun("aug-2"))
	require.NoError(t, ix.RemoveRun("aug-1"))
}

// failingWriter fails its n-th Write.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n--; w.n == 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestReadsSectionsOfSeveralFrames(t *testing.T) {
	ix := sampleIndex(t)
	ix.Embeddings[KindFact] = ix.Embeddings[KindFact].Compact()
	ix.Blobs = map[string][]byte{"a": []byte("first blob"), "b": bytes.Repeat([]byte("xy"), 5000)}
	// Frames of 64 bytes: every section of some size is several, as v2 wrote sections
	// over 8 MiB.
	one, several := encodeV2(t, ix), encodeV2Frames(t, ix, 64)
	assert.Greater(t, len(several), len(one))
	for _, data := range [][]byte{one, several} {
		got, err := Read(bytes.NewReader(data))
		require.NoError(t, err)
		assert.Equal(t, ix, got)
	}
	// A writer that fails part-way: the error comes back.
	for n := 1; n <= 6; n++ {
		err := Write(&failingWriter{n: n}, ix)
		require.Error(t, err, "failing write %d", n)
		assert.Contains(t, err.Error(), "disk full")
	}
}

func TestReadWithSkipsEmbeddingKinds(t *testing.T) {
	ix := sampleIndex(t)
	ix.Embeddings[KindFact] = ix.Embeddings[KindFact].Compact() // one sparse, the rest dense
	data := encode(t, ix)
	keep := func(k NodeKind) bool { return k == KindChunk || k == KindFact }
	got, err := ReadWith(bytes.NewReader(data), ReadOptions{Embeddings: keep})
	require.NoError(t, err)
	assert.Equal(t, ix.Embeddings[KindChunk], got.Embeddings[KindChunk])
	assert.Equal(t, ix.Embeddings[KindFact], got.Embeddings[KindFact])
	assert.NotContains(t, got.Embeddings, KindEntity)
	assert.NotContains(t, got.Embeddings, KindHyperedge)
	assert.ElementsMatch(t, []NodeKind{KindEntity, KindHyperedge}, got.SkippedEmbeddings())
	assert.True(t, got.EmbeddingSkipped(KindEntity))
	assert.False(t, got.EmbeddingSkipped(KindChunk))
	assert.Equal(t, ix.Entities, got.Entities)
	assert.Equal(t, ix.Blobs, got.Blobs)
	err = Write(io.Discard, got)
	require.Error(t, err, "an index read in part is never written")
	assert.Contains(t, err.Error(), "read without")
	// A section left out is still checksummed: a flipped byte in it, or a file cut
	// short inside it, is an error, as for a whole read.
	i := bytes.Index(data, []byte(rawPrefix+"entity"))
	require.Positive(t, i)
	bad := bytes.Clone(data)
	bad[i+40] ^= 0xff
	_, err = ReadWith(bytes.NewReader(bad), ReadOptions{Embeddings: keep})
	require.ErrorIs(t, err, ErrChecksum)
	_, err = ReadWith(bytes.NewReader(data[:i+40]), ReadOptions{Embeddings: keep})
	require.ErrorIs(t, err, ErrTruncated)
	// Options that keep every kind read the index whole.
	whole, err := ReadWith(bytes.NewReader(data), ReadOptions{Embeddings: func(NodeKind) bool { return true }})
	require.NoError(t, err)
	assert.Empty(t, whole.SkippedEmbeddings())
	assert.Equal(t, ix, whole)
}

// TestEntityChunks checks the flat, counted build against appending per entity.
func TestEntityChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	ix := &Index{Entities: make([]Entity, 50)}
	for range 200 {
		ix.Mentions = append(ix.Mentions, Mention{Entity: int32(rng.IntN(40)), Chunk: int32(rng.IntN(30))})
	}
	for range 100 {
		f := Fact{Subject: int32(rng.IntN(45)), Object: int32(rng.IntN(45))}
		for range rng.IntN(4) {
			f.Chunks = append(f.Chunks, int32(rng.IntN(30)))
		}
		ix.Facts = append(ix.Facts, f)
	}
	want := make([][]int32, len(ix.Entities))
	for _, m := range ix.Mentions {
		want[m.Entity] = append(want[m.Entity], m.Chunk)
	}
	for _, f := range ix.Facts {
		want[f.Subject] = append(want[f.Subject], f.Chunks...)
		want[f.Object] = append(want[f.Object], f.Chunks...)
	}
	for e := range want {
		slices.Sort(want[e])
		want[e] = slices.Compact(want[e])
	}
	got := ix.EntityChunks()
	assert.Equal(t, want, got)
	assert.Nil(t, got[49], "an entity in no chunk has no list")
	// Appending to one list leaves the next as it was.
	next := slices.Clone(got[1])
	_ = append(got[0], 99)
	assert.Equal(t, next, got[1])
}

// TestDecodedListsDoNotShareCapacity: the reader decodes each list column (a fact's
// chunks, an entity's surface forms) into one array; appending
// to one record's list must leave the next record's as it was.
func TestDecodedListsDoNotShareCapacity(t *testing.T) {
	ix := sampleIndex(t)
	ix.Entities[0].Surface = []string{"Alice", "ALICE"}
	ix.Entities[1].Surface = []string{"Bob"}
	got, err := Read(bytes.NewReader(encode(t, ix)))
	require.NoError(t, err)
	require.Equal(t, ix, got)
	require.GreaterOrEqual(t, len(got.Facts), 2)
	_ = append(got.Facts[0].Chunks, 99)
	_ = append(got.Entities[0].Surface, "x")
	assert.Equal(t, ix.Facts[1].Chunks, got.Facts[1].Chunks)
	assert.Equal(t, ix.Entities[1].Surface, got.Entities[1].Surface)
}

// TestLongBlobName: a blob whose section name would not fit the header's length byte
// is refused when written, and the file on disk is kept.
func TestLongBlobName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.gl")
	ix := sampleIndex(t)
	require.NoError(t, WriteFile(path, ix))
	before, err := os.ReadFile(path)
	require.NoError(t, err)
	ix.Blobs[strings.Repeat("k", 251)] = []byte("v") // "blob." + 251 bytes = 256
	err = WriteFile(path, ix)
	assert.ErrorContains(t, err, "name of 256 bytes, at most 255")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after)
	delete(ix.Blobs, strings.Repeat("k", 251))
	ix.Blobs[strings.Repeat("k", 250)] = []byte("v")
	require.NoError(t, WriteFile(path, ix))
	got, err := ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, []byte("v"), got.Blobs[strings.Repeat("k", 250)])
}

// TestRemoveRunKeepsALaterRunsMention: a later run's fact about an entity of the
// index, citing a chunk where an earlier run recorded the entity's mention, keeps
// that mention when the earlier run is rolled back (as the later run's), and loses it
// with the later run.
func TestRemoveRunKeepsALaterRunsMention(t *testing.T) {
	ix := sampleIndex(t)
	ix.Runs = append(ix.Runs, Run{ID: "aug-1", Kind: "augment"}, Run{ID: "aug-2", Kind: "augment"})
	carol, _ := NewBuilder(ix, "").EntityIndex("carol")
	b1 := NewBuilder(ix, "aug-1")
	erin := b1.Entity("Erin", "")
	chunk := int32(0) // "Alice met Bob in Paris.": no mention of Carol
	has := func(e, c int32) string {
		for _, m := range ix.Mentions {
			if m.Entity == e && m.Chunk == c {
				return "run " + m.Run
			}
		}
		return "none"
	}
	require.Equal(t, "none", has(carol, chunk), "the sample index has no such mention")
	b1.AddMention(carol, chunk)
	_, _, err := b1.AddFactIDs(carol, "met", erin, []int32{chunk})
	require.NoError(t, err)
	b2 := NewBuilder(ix, "aug-2")
	dave := b2.Entity("Dave", "")
	b2.AddMention(carol, chunk) // recorded already, by aug-1: not again
	b2.AddMention(dave, chunk)
	_, _, err = b2.AddFactIDs(carol, "friend of", dave, []int32{chunk})
	require.NoError(t, err)
	for _, k := range []NodeKind{KindEntity, KindFact} {
		for range 2 {
			ix.Embeddings[k].Append(&Embedding{Dim: 3, Data: []float32{1, 0, 0}})
		}
	}
	require.NoError(t, ix.Validate())
	require.Equal(t, "run aug-1", has(carol, chunk))

	require.NoError(t, ix.RemoveRun("aug-1"))
	carol, _ = NewBuilder(ix, "").EntityIndex("carol")
	assert.Equal(t, "run aug-2", has(carol, chunk), "aug-2's fact still states it")
	require.NoError(t, ix.Validate())
	require.NoError(t, ix.RemoveRun("aug-2"))
	assert.Equal(t, "none", has(carol, chunk))
}

// TestRemoveRunHandsAMentionToTheEarliestLaterRun: of two later runs stating a mention
// (the first by a hyperedge, the second by a fact), the earlier keeps it, so that
// rolling back the last one leaves it.
func TestRemoveRunHandsAMentionToTheEarliestLaterRun(t *testing.T) {
	ix := sampleIndex(t)
	ix.Runs = append(ix.Runs, Run{ID: "aug-1", Kind: "augment"}, Run{ID: "aug-2", Kind: "augment"}, Run{ID: "aug-3", Kind: "augment"})
	carol, _ := NewBuilder(ix, "").EntityIndex("carol")
	alice, _ := NewBuilder(ix, "").EntityIndex("alice")
	const chunk = 0 // "Alice met Bob in Paris.": no mention of Carol
	NewBuilder(ix, "aug-1").AddMention(carol, chunk)
	_, isNew := NewBuilder(ix, "aug-2").AddHyperedge("Carol and Alice sailed together.", []int32{carol, alice}, chunk, 1)
	require.True(t, isNew)
	_, _, err := NewBuilder(ix, "aug-3").AddFactIDs(carol, "sailed with", alice, []int32{chunk})
	require.NoError(t, err)
	ix.Embeddings[KindHyperedge].Append(&Embedding{Dim: 3, Data: []float32{1, 0, 0}})
	ix.Embeddings[KindFact].Append(&Embedding{Dim: 3, Data: []float32{1, 0, 0}})
	require.NoError(t, ix.Validate())
	owner := func() string {
		c, _ := NewBuilder(ix, "").EntityIndex("carol")
		for _, m := range ix.Mentions {
			if m.Entity == c && m.Chunk == chunk {
				return m.Run
			}
		}
		return "none"
	}
	require.Equal(t, "aug-1", owner())
	require.NoError(t, ix.RemoveRun("aug-1"))
	assert.Equal(t, "aug-2", owner())
	require.NoError(t, ix.RemoveRun("aug-3"))
	assert.Equal(t, "aug-2", owner(), "aug-2's hyperedge still states it")
	require.NoError(t, ix.Validate())
}
