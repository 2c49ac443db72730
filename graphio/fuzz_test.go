package graphio

import (
	"bytes"
	"reflect"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the reader: it must return an index or an error,
// never panic, hang or allocate without bound.
func FuzzRead(f *testing.F) {
	valid := encode(f, sampleIndex(f))
	f.Add(valid)
	f.Add(valid[:len(valid)/2])
	f.Add([]byte(Magic))
	f.Add(encode(f, &Index{}))
	sparse := sampleIndex(f)
	for k, m := range sparse.Embeddings {
		c := NewSparseEmbedding(m.Dim)
		for i := range m.Rows() {
			c.AppendDense(m.Row(i))
		}
		sparse.Embeddings[k] = c
	}
	f.Add(encode(f, sparse))
	f.Add(encodeV2(f, sparse))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The mapped reader (sections in place, checksummed by the workers) accepts
		// exactly what the streaming one does.
		mapped := alignedBytes(len(data), len(data), 0)
		copy(mapped, data)
		mix, merr := ReadWith(&mappedReader{b: mapped}, ReadOptions{})
		ix, err := Read(bytes.NewReader(data))
		if (err == nil) != (merr == nil) {
			t.Fatalf("streamed: %v; mapped: %v", err, merr)
		}
		if err != nil {
			return
		}
		if !reflect.DeepEqual(ix, mix) {
			t.Fatalf("the mapped read differs from the streamed one")
		}
		// Whatever decodes must be usable and re-encode.
		if _, _, err := ix.Adjacency(HippoGraph|HyperGraph, nil); err != nil {
			t.Fatalf("decoded index has a broken graph: %v", err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, ix); err != nil {
			t.Fatalf("decoded index does not re-encode: %v", err)
		}
	})
}

// FuzzSections feeds arbitrary payloads straight to the section decoders, past the
// checksums that keep FuzzRead's mutations out of them.
func FuzzSections(f *testing.F) {
	ix := sampleIndex(f)
	for _, s := range sections {
		var e enc
		if err := s.encode(ix, &e); err != nil {
			f.Fatal(err)
		}
		f.Add(e.b)
	}
	for _, s := range optionalSections(mixedIndex(f)) {
		if s.pieces != nil {
			s = joinedSection(s, ix)
		}
		e := enc{off: 7}
		if err := s.encode(ix, &e); err != nil {
			f.Fatal(err)
		}
		f.Add(e.b)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		for _, s := range sections {
			got := &Index{}
			if err := s.decode(got, &dec{b: payload}); err != nil {
				continue
			}
			if got.Validate() == nil {
				var buf bytes.Buffer
				if err := Write(&buf, got); err != nil {
					t.Fatalf("section %q decoded to an index that does not encode: %v", s.name, err)
				}
			}
		}
		_, _ = decodeOptional(&Index{}, "emb.entity", payload, nil)
		_, _ = decodeOptional(&Index{}, "embs.entity", payload, nil)
		raw := &Index{}
		if _, err := decodeOptional(raw, "embr.entity", payload, nil); err == nil {
			if m := raw.Embeddings[KindEntity]; m.validate() == nil {
				_ = m.Dense() // a valid matrix is usable
			}
		}
	})
}
