package graphio

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// inside reports whether the first element of v lies in the memory of b.
func inside[T any](v []T, b []byte) bool {
	if len(v) == 0 || len(b) == 0 {
		return false
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(v)))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return p >= lo && p < lo+uintptr(len(b))
}

// sectionOffsets walks an index file and returns each section's payload offset.
func sectionOffsets(t *testing.T, data []byte) map[string]int {
	t.Helper()
	out := map[string]int{}
	for p := 12; p < len(data); {
		name := string(data[p+1 : p+1+int(data[p])])
		stored := int(binary.LittleEndian.Uint64(data[p+1+len(name)+1+8:]))
		p += int(sectionHeader(name))
		out[name] = p
		p += stored
	}
	return out
}

func TestRawEmbeddingLayout(t *testing.T) {
	// A 3 × 8 matrix with non-zeros (0,1)=1, (0,7)=2, (2,0)=3.
	dense := &Embedding{Dim: 8, Data: []float32{0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}}
	sparse := dense.Compact()
	require.NotNil(t, sparse.Sparse)
	for off := range int64(rawAlign) {
		e := enc{b: rawPayload(sparse, off)}
		p := int(e.b[0])
		assert.Zero(t, (off+1+int64(p))%rawAlign, "offset %d: the header is aligned in the file", off)
		le := binary.LittleEndian
		h := e.b[1+p:]
		assert.Equal(t, []uint64{rawSparse, 8, 3, 3}, []uint64{le.Uint64(h), le.Uint64(h[8:]), le.Uint64(h[16:]), le.Uint64(h[24:])})
		arrays := h[rawHeader:]
		require.Len(t, arrays, 8*4+4*3+2*3)
		assert.Equal(t, uint64(2), le.Uint64(arrays[8:]), "row pointers 0 2 2 3")
		assert.Equal(t, uint32(0x40000000), le.Uint32(arrays[32+4:]), "values 1 2 3")
		assert.Equal(t, []byte{1, 0, 7, 0, 0, 0}, arrays[44:], "coordinates 1 7 0")
	}

	for _, m := range []*Embedding{dense, sparse, {Dim: 4, Data: []float32{}}, NewSparseEmbedding(5)} {
		e := enc{b: rawPayload(m, 5)}
		// Where the file's alignment holds, the matrix is the payload itself.
		at := alignedBytes(len(e.b), len(e.b), 5)
		copy(at, e.b)
		d := &dec{b: at}
		got := parseRaw(d)
		require.NoError(t, d.done("embr.entity"))
		require.NoError(t, got.validate())
		assert.Equal(t, m.Rows(), got.Rows())
		assert.Equal(t, m.Dense(), got.Dense())
		assert.Equal(t, m.Sparse != nil, got.Sparse != nil)
		if littleEndian && m.Rows() > 0 {
			if m.Sparse != nil {
				assert.True(t, inside(got.Sparse.Ptr, at) && inside(got.Sparse.Val, at) && inside(got.Sparse.Idx, at), "aliases the payload")
			} else {
				assert.True(t, inside(got.Data, at), "aliases the payload")
			}
		}
		// Anywhere else, the same values are copied out.
		mis := alignedBytes(len(e.b), len(e.b), 6)
		copy(mis, e.b)
		d = &dec{b: mis}
		cp := parseRaw(d)
		require.NoError(t, d.done("embr.entity"))
		assert.Equal(t, got, cp)
		if cp.Sparse != nil && len(cp.Sparse.Val) > 0 {
			assert.False(t, inside(cp.Sparse.Val, mis), "a misaligned payload is copied")
		}
	}
}

func TestRawSectionErrors(t *testing.T) {
	m := (&Embedding{Dim: 8, Data: []float32{0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}}).Compact()
	e := enc{b: rawPayload(m, 7)} // no padding: the header follows the pad byte
	require.Zero(t, e.b[0])
	good := e.b
	put := func(b []byte, at int, v uint64) []byte { binary.LittleEndian.PutUint64(b[1+at:], v); return b }
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"empty", func(b []byte) []byte { return nil }},
		{"header cut short", func(b []byte) []byte { return b[:20] }},
		{"padding of 8", func(b []byte) []byte { b[0] = 8; return b }},
		{"dimension 0", func(b []byte) []byte { return put(b, 8, 0) }},
		{"dimension past 65536 in compressed rows", func(b []byte) []byte { return put(b, 8, 1<<17) }},
		{"unknown form", func(b []byte) []byte { return put(b, 0, 2) }},
		{"rows beyond the bytes", func(b []byte) []byte { return put(b, 16, 1<<62) }},
		{"non-zeros beyond the bytes", func(b []byte) []byte { return put(b, 24, 1<<62) }},
		{"truncated values", func(b []byte) []byte { return b[:len(b)-1] }},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0, 0, 0, 0, 0, 0) }},
		{"dense with non-zeros", func(b []byte) []byte { return put(b, 0, rawDense) }},
	} {
		pe := parseEmbedding(rawPrefix+"entity", tc.edit(bytes.Clone(good)))
		require.NotNil(t, pe, tc.name)
		assert.ErrorIs(t, pe.err, errCorrupt, tc.name)
	}
	// Row pointers and coordinates are the matrix's own invariants: a file with them
	// broken decodes to a matrix that Read's validation refuses.
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"row pointers decreasing", func(b []byte) []byte { return put(b, rawHeader+8, 4) }},
		{"repeated coordinate", func(b []byte) []byte { b[len(b)-6+2] = 1; return b }},
		{"coordinate past the dimension", func(b []byte) []byte { b[len(b)-2] = 8; return b }},
	} {
		pe := parseEmbedding(rawPrefix+"entity", tc.edit(bytes.Clone(good)))
		require.NoError(t, pe.err, tc.name)
		assert.Error(t, pe.emb.validate(), tc.name)
	}
	assert.Nil(t, parseEmbedding(rawPrefix+"nosuchkind", good), "an unknown kind is skipped")
}

// mixedIndex is sampleIndex with a matrix in compressed rows beside dense ones.
func mixedIndex(t testing.TB) *Index {
	ix := sampleIndex(t)
	ix.Embeddings[KindEntity] = sparseMatrix(rand.New(rand.NewPCG(7, 8)), ix.count(KindEntity), 768, 0.04).Compact()
	require.NotNil(t, ix.Embeddings[KindEntity].Sparse)
	return ix
}

func TestWriterAlignsRawMatrices(t *testing.T) {
	data := encode(t, mixedIndex(t))
	n := 0
	for name, off := range sectionOffsets(t, data) {
		if len(name) > len(rawPrefix) && name[:len(rawPrefix)] == rawPrefix {
			assert.Zero(t, (off+1+int(data[off]))%rawAlign, name)
			n++
		}
	}
	assert.Equal(t, NumKinds, n, "every matrix is a raw section")
}

func TestReadMappedIndex(t *testing.T) {
	ix := mixedIndex(t)
	data := encode(t, ix)

	// A mapped file's matrices are its bytes.
	buf := alignedBytes(len(data), len(data), 0)
	copy(buf, data)
	got, err := ReadWith(&mappedReader{b: buf}, ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, ix, got)
	if littleEndian {
		assert.True(t, inside(got.Embeddings[KindEntity].Sparse.Val, buf))
		assert.True(t, inside(got.Embeddings[KindChunk].Data, buf))
	}
	// Appending to a matrix never writes into the file's bytes.
	got.Embeddings[KindEntity].AppendDense(make([]float32, 768))
	got.Embeddings[KindChunk].Data = append(got.Embeddings[KindChunk].Data, make([]float32, got.Embeddings[KindChunk].Dim)...)
	assert.Equal(t, data, buf)

	// Through ReadFileWith: the same index as read from a stream, with and without
	// matrices left out; writes to the index in memory do not reach the file.
	dir := t.TempDir()
	path := filepath.Join(dir, "x.gl")
	require.NoError(t, WriteFile(path, ix))
	mapped, err := ReadFileWith(path, ReadOptions{Map: true})
	require.NoError(t, err)
	assert.Equal(t, ix, mapped)
	mapped.Embeddings[KindChunk].Data[0] = 42
	again, err := ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, ix, again)
	keep := ReadOptions{Map: true, Embeddings: func(k NodeKind) bool { return k == KindChunk }}
	part, err := ReadFileWith(path, keep)
	require.NoError(t, err)
	assert.ElementsMatch(t, []NodeKind{KindEntity, KindHyperedge, KindFact}, part.SkippedEmbeddings())
	assert.Equal(t, ix.Embeddings[KindChunk], part.Embeddings[KindChunk])

	// Bad files fail as they do when streamed: a flipped byte in a section read, a
	// file cut short, an empty file. A matrix left out is never touched, so a flipped
	// byte in it goes unseen until the file is read whole.
	offs := sectionOffsets(t, data)
	for _, name := range []string{"chunks", rawPrefix + "chunk", "end"} {
		bad := bytes.Clone(data)
		bad[offs[name]] ^= 0xff
		require.NoError(t, os.WriteFile(path, bad, 0o644))
		_, err = ReadFileWith(path, keep)
		assert.ErrorIs(t, err, ErrChecksum, name)
	}
	i := offs[rawPrefix+"entity"]
	bad := bytes.Clone(data)
	bad[i+40] ^= 0xff
	require.NoError(t, os.WriteFile(path, bad, 0o644))
	_, err = ReadFileWith(path, keep)
	assert.NoError(t, err, "a matrix left out is not read")
	_, err = ReadFileWith(path, ReadOptions{Map: true})
	assert.ErrorIs(t, err, ErrChecksum, "read whole, it is")
	require.NoError(t, os.WriteFile(path, data[:i+40], 0o644))
	_, err = ReadFileWith(path, keep)
	assert.ErrorIs(t, err, ErrTruncated)
	require.NoError(t, os.WriteFile(path, nil, 0o644))
	_, err = ReadFileWith(path, keep)
	assert.ErrorIs(t, err, ErrTruncated)
}

// The writer streams a matrix from its own arrays (rawPieces): the same bytes as
// encoding every section into one buffer, and the matrix's memory is not copied.
func TestWriterStreamsMatrices(t *testing.T) {
	ix := mixedIndex(t)
	streamed := encode(t, ix)
	all := append(append([]section{}, sections...), optionalSections(ix)...)
	joined := 0
	for i := range all {
		if all[i].pieces != nil {
			all[i] = joinedSection(all[i], ix)
			joined++
		}
	}
	require.Positive(t, joined)
	var buf bytes.Buffer
	require.NoError(t, writeSections(&buf, ix, FormatVersion, all, nil))
	assert.Equal(t, buf.Bytes(), streamed)

	m := ix.Embeddings[KindEntity]
	pieces := rawPieces(m, 3)
	if littleEndian {
		assert.Same(t, &m.Sparse.Val[0], (*float32)(unsafe.Pointer(&pieces[2][0])), "values streamed in place")
	}
}

// rawPayload is m's raw section payload at file offset off, in one buffer.
func rawPayload(m *Embedding, off int64) []byte {
	return bytes.Join(rawPieces(m, off), nil)
}

// joinedSection is s with its pieces encoded into one buffer instead.
func joinedSection(s section, ix *Index) section {
	pieces := s.pieces
	s.pieces = nil
	s.encode = func(_ *Index, e *enc) error {
		e.b = append(e.b, bytes.Join(pieces(ix, e.off), nil)...)
		return nil
	}
	return s
}

// TestReleaseMappedAndKeepAppend: a mapped index whose matrices' pages were handed
// back reads as the file has them (they fault in again), and KeepAppend copies the
// kept rows and the new ones into fresh arrays, leaving the mapped matrix as it was.
func TestReleaseMappedAndKeepAppend(t *testing.T) {
	ix := mixedIndex(t)
	path := filepath.Join(t.TempDir(), "x.gl")
	require.NoError(t, WriteFile(path, ix))
	mapped, err := ReadFileWith(path, ReadOptions{Map: true, Release: true})
	require.NoError(t, err)
	for k, e := range mapped.Embeddings {
		mapped.ReleaseMapped(e) // again: harmless
		assert.Equal(t, ix.Embeddings[k], e, "%s: read back after its pages were released", k)
	}
	for k, e := range ix.Embeddings {
		add := &Embedding{Dim: e.Dim, Data: make([]float32, e.Dim)}
		add.Data[1] = 1
		if e.Sparse != nil {
			add = NewSparseEmbedding(e.Dim)
			add.AppendDense(make([]float32, e.Dim))
		}
		got := mapped.Embeddings[k].KeepAppend(func(i int) bool { return i%2 == 1 }, add)
		var want [][]float32
		for i := 1; i < e.Rows(); i += 2 {
			want = append(want, e.RowInto(i, make([]float32, e.Dim)))
		}
		want = append(want, add.RowInto(0, make([]float32, e.Dim)))
		require.Equal(t, len(want), got.Rows(), "%s", k)
		for i, w := range want {
			assert.Equal(t, w, got.RowInto(i, make([]float32, e.Dim)), "%s row %d", k, i)
		}
		assert.Equal(t, ix.Embeddings[k], mapped.Embeddings[k], "%s: the mapped matrix is left as it was", k)
	}
}
