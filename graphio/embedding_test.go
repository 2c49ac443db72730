package graphio

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sparseMatrix returns a dense matrix with about density non-zeros, some rows empty.
func sparseMatrix(rng *rand.Rand, rows, dim int, density float64) *Embedding {
	m := &Embedding{Dim: dim, Data: make([]float32, rows*dim)}
	for i := range rows {
		if i%5 == 3 {
			continue // an empty row
		}
		for d := range dim {
			if rng.Float64() < density {
				m.Data[i*dim+d] = float32(rng.NormFloat64())
			}
		}
	}
	return m
}

func TestEmbeddingFormsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	dense := sparseMatrix(rng, 23, 40, 0.1)
	sp := dense.Compact()
	require.NotNil(t, sp.Sparse, "10% non-zeros is compacted")
	require.Nil(t, sp.Data)
	require.NoError(t, sp.validate())
	assert.Equal(t, dense.Rows(), sp.Rows())
	assert.Equal(t, dense.Data, sp.Dense())
	buf := make([]float32, 64)
	for i := range dense.Rows() {
		assert.Equal(t, dense.Row(i), sp.Row(i), "row %d", i)
		assert.Equal(t, dense.Row(i), sp.RowInto(i, buf), "row %d into a dirty buffer", i)
		assert.Equal(t, append([]float32{7}, dense.Row(i)...), sp.AppendRow([]float32{7}, i), "row %d appended", i)
		assert.Equal(t, append([]float32{7}, dense.Row(i)...), dense.AppendRow([]float32{7}, i), "row %d appended", i)
	}
	// A matrix with more non-zeros stays dense.
	full := sparseMatrix(rng, 5, 40, 0.9)
	assert.Same(t, full, full.Compact())

	// Append in every combination of forms gives the dense concatenation.
	other := sparseMatrix(rng, 7, 40, 0.1)
	want := append(append([]float32{}, dense.Data...), other.Data...)
	for _, tc := range []struct {
		name string
		a, b func() *Embedding
	}{
		{"dense+dense", func() *Embedding { return &Embedding{Dim: 40, Data: append([]float32{}, dense.Data...)} }, func() *Embedding { return other }},
		{"sparse+sparse", func() *Embedding { return dense.Compact() }, func() *Embedding { return other.Compact() }},
		{"sparse+dense", func() *Embedding { return dense.Compact() }, func() *Embedding { return other }},
		{"dense+sparse", func() *Embedding { return &Embedding{Dim: 40, Data: append([]float32{}, dense.Data...)} }, func() *Embedding { return other.Compact() }},
	} {
		a := tc.a()
		sparse := a.Sparse != nil
		a.Append(tc.b())
		assert.Equal(t, want, a.Dense(), tc.name)
		assert.Equal(t, sparse, a.Sparse != nil, "%s keeps the receiver's form", tc.name)
		require.NoError(t, a.validate(), tc.name)
	}

	// KeepRows drops the same rows in both forms.
	keep := func(i int) bool { return i%3 != 1 }
	d2 := &Embedding{Dim: 40, Data: append([]float32{}, dense.Data...)}
	s2 := dense.Compact()
	d2.KeepRows(keep)
	s2.KeepRows(keep)
	assert.Equal(t, 15, d2.Rows())
	assert.Equal(t, d2.Data, s2.Dense())
	require.NoError(t, s2.validate())
}

func TestSparseEmbeddingRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ix := sampleIndex(t)
	ent := sparseMatrix(rng, ix.count(KindEntity), 768, 0.04)
	ix.Embeddings[KindEntity] = ent.Compact()
	require.NotNil(t, ix.Embeddings[KindEntity].Sparse)
	data := encode(t, ix)
	assert.Equal(t, uint32(FormatVersion), binary.LittleEndian.Uint32(data[8:]))
	got, err := Read(bytes.NewReader(data))
	require.NoError(t, err)
	require.NotNil(t, got.Embeddings[KindEntity].Sparse, "read back in compressed rows")
	assert.Equal(t, ix.Embeddings[KindEntity], got.Embeddings[KindEntity])
	assert.Equal(t, ent.Data, got.Embeddings[KindEntity].Dense())
	assert.Equal(t, ix.Embeddings[KindChunk], got.Embeddings[KindChunk], "dense matrices stay dense")
	assert.Equal(t, data, encode(t, got), "writing is deterministic")

	// The compressed matrix costs far less than the dense one on disk.
	dense := sampleIndex(t)
	dense.Embeddings[KindEntity] = ent
	assert.Less(t, len(data), len(encode(t, dense)))
}

// TestReadsOlderFormats reads files of versions 1 and 2, whose matrices are
// zstd-compressed sections: v1 is v2 with dense matrices only.
func TestReadsOlderFormats(t *testing.T) {
	ix := sampleIndex(t)
	v1 := encodeV2(t, ix)
	binary.LittleEndian.PutUint32(v1[8:], 1)
	got, err := Read(bytes.NewReader(v1))
	require.NoError(t, err)
	assert.Equal(t, ix, got)

	rng := rand.New(rand.NewPCG(5, 6))
	ix.Embeddings[KindEntity] = sparseMatrix(rng, ix.count(KindEntity), 768, 0.04).Compact()
	require.NotNil(t, ix.Embeddings[KindEntity].Sparse)
	v2 := encodeV2(t, ix)
	assert.Contains(t, string(v2), sparsePrefix+"entity")
	assert.NotContains(t, string(v2), rawPrefix)
	got, err = Read(bytes.NewReader(v2))
	require.NoError(t, err)
	assert.Equal(t, ix, got)
	// Written again, it is a v3 file with the same contents.
	v3 := encode(t, got)
	assert.Equal(t, uint32(3), binary.LittleEndian.Uint32(v3[8:]))
	again, err := Read(bytes.NewReader(v3))
	require.NoError(t, err)
	assert.Equal(t, ix, again)

	binary.LittleEndian.PutUint32(v3[8:], FormatVersion+1)
	_, err = Read(bytes.NewReader(v3))
	assert.ErrorIs(t, err, ErrVersion)
	assert.ErrorContains(t, err, "reads versions 1 to 3")
}

func TestSparseSectionErrors(t *testing.T) {
	ent := &Embedding{Dim: 8, Data: []float32{0, 1, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0}}
	var e enc
	encodeSparse(ent.Compact(), &e)
	good := e.b
	pe := parseEmbedding("embs.entity", good)
	require.NotNil(t, pe)
	require.NoError(t, pe.err)
	assert.Equal(t, ent.Data, pe.emb.Dense())
	// Layout: dim 8, rows 3, nnz 3, lengths 2 0 1, gaps (uint16) 1 6 0, values.
	require.Equal(t, []byte{8, 3, 3, 2, 0, 1, 1, 0, 6, 0, 0, 0}, good[:12])
	for _, tc := range []struct {
		name string
		edit func(b []byte) []byte
	}{
		{"dimension 0", func(b []byte) []byte { b[0] = 0; return b }},
		{"rows longer than the non-zeros", func(b []byte) []byte { b[3] = 3; return b }},
		{"row lengths short of the non-zeros", func(b []byte) []byte { b[3] = 1; return b }},
		{"repeated coordinate", func(b []byte) []byte { b[8] = 0; return b }},
		{"coordinate past the dimension", func(b []byte) []byte { b[8] = 7; return b }},
		{"truncated values", func(b []byte) []byte { return b[:len(b)-1] }},
		{"trailing bytes", func(b []byte) []byte { return append(b, 0) }},
		{"huge count", func(b []byte) []byte { return append([]byte{8, 3, 0xff, 0xff, 0xff, 0xff, 0x0f}, b[3:]...) }},
	} {
		pe := parseEmbedding("embs.entity", tc.edit(bytes.Clone(good)))
		require.NotNil(t, pe, tc.name)
		assert.ErrorIs(t, pe.err, errCorrupt, tc.name)
	}
	assert.Nil(t, parseEmbedding("embs.nosuchkind", good), "an unknown kind is skipped")
}

func TestConcatSparse(t *testing.T) {
	rows := [][]float32{{0, 1, 0}, {2, 0, 3}, {0, 0, 0}, {4, 5, 6}, {0, 0, 7}}
	whole := NewSparseEmbedding(3)
	for _, r := range rows {
		whole.AppendDense(r)
	}
	for _, split := range [][]int{{5}, {1, 4}, {2, 0, 3}, {1, 1, 1, 1, 1}} {
		var parts []*Embedding
		at := 0
		for _, n := range split {
			p := NewSparseEmbedding(3)
			for _, r := range rows[at : at+n] {
				p.AppendDense(r)
			}
			parts = append(parts, p)
			at += n
		}
		got := ConcatSparse(3, parts)
		assert.Equal(t, whole, got, "split %v", split)
		assert.Equal(t, len(got.Sparse.Idx), cap(got.Sparse.Idx), "allocated once at its size")
		for _, p := range parts {
			assert.Nil(t, p, "parts are released")
		}
	}
	assert.Equal(t, 0, ConcatSparse(3, nil).Rows())
}
