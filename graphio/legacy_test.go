package graphio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// encodeV2 writes ix as format v2 wrote it: embedding matrices as zstd-compressed
// "emb.<kind>" (dense, byte-shuffled) and "embs.<kind>" (compressed rows) sections.
// It is how the tests make the files older graphloom versions wrote.
func encodeV2(t testing.TB, ix *Index) []byte { return encodeV2Frames(t, ix, 8<<20) }

// encodeV2Frames is encodeV2 with sections compressed as frames of block bytes (v2
// wrote 8 MiB frames, so large sections had several).
func encodeV2Frames(t testing.TB, ix *Index, block int) []byte {
	t.Helper()
	all := append([]section{}, sections...)
	for _, k := range embeddingKinds(ix) {
		m := ix.Embeddings[k]
		if m.Sparse != nil {
			all = append(all, section{name: sparsePrefix + k.String(), encode: func(_ *Index, e *enc) error {
				encodeSparse(m, e)
				return nil
			}})
			continue
		}
		all = append(all, section{name: densePrefix + k.String(), encode: func(_ *Index, e *enc) error {
			e.uvarint(uint64(m.Dim))
			e.b = appendShuffle4(e.b, m.Data)
			return nil
		}})
	}
	for _, s := range optionalSections(ix) {
		if s.pieces == nil {
			all = append(all, s) // blobs
		}
	}
	var buf bytes.Buffer
	if err := writeSections(&buf, ix, 2, all, zstdFrames(t, block)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// zstdFrames compresses a section as v2 did: zstd frames of block raw bytes each,
// stored one after the other.
func zstdFrames(t testing.TB, block int) func(raw []byte) (byte, [][]byte) {
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zw.Close() })
	return func(raw []byte) (byte, [][]byte) {
		var frames [][]byte
		for at := 0; at == 0 || at < len(raw); at += block {
			frames = append(frames, zw.EncodeAll(raw[at:min(len(raw), at+block)], nil))
		}
		return codecZstd, frames
	}
}

// encodeSparse writes a compressed-row matrix: dimension, rows and non-zeros
// (uvarints), each row's length (uvarints), each coordinate as the gap from the
// previous one in its row (uint16, the first one absolute), and the values byte-shuffled.
func encodeSparse(m *Embedding, e *enc) {
	s := m.Sparse
	// The section's size is known up to its varints: grow the buffer once (a 120K-passage
	// index has sections of half a gigabyte, which doubling would copy repeatedly).
	e.b = slices.Grow(e.b, 3*binary.MaxVarintLen64+2*m.Rows()+6*len(s.Idx))
	e.uvarint(uint64(m.Dim))
	e.uvarint(uint64(m.Rows()))
	e.uvarint(uint64(len(s.Idx)))
	for i := range m.Rows() {
		e.uvarint(uint64(s.Ptr[i+1] - s.Ptr[i]))
	}
	for i := range m.Rows() {
		prev := uint16(0)
		for k := s.Ptr[i]; k < s.Ptr[i+1]; k++ {
			e.b = binary.LittleEndian.AppendUint16(e.b, s.Idx[k]-prev)
			prev = s.Idx[k]
		}
	}
	e.b = appendShuffle4(e.b, s.Val)
}

// shuffle4 transposes float32 data into four byte planes (all first bytes, then all
// second bytes, …), which lets zstd find the redundancy in exponents and zeros.
func shuffle4(v []float32) []byte { return appendShuffle4(nil, v) }

// appendShuffle4 appends shuffle4(v) to dst, growing it once.
func appendShuffle4(dst []byte, v []float32) []byte {
	n := len(v)
	at := len(dst)
	dst = slices.Grow(dst, 4*n)[:at+4*n]
	out := dst[at:]
	for i, f := range v {
		u := math.Float32bits(f)
		out[i] = byte(u)
		out[n+i] = byte(u >> 8)
		out[2*n+i] = byte(u >> 16)
		out[3*n+i] = byte(u >> 24)
	}
	return dst
}

// TestCompressedSectionBounds: a zstd section inflates no further than its header
// declares, declares no more than maxInflation times its stored size (past a floor),
// and appears only in the versions that wrote compressed sections.
func TestCompressedSectionBounds(t *testing.T) {
	zw, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer zw.Close()
	zeros := zw.EncodeAll(make([]byte, 16<<20), nil) // 16 MiB of zeros in a few kilobytes
	file := func(version uint32, codec byte, payload []byte, rawLen uint64) []byte {
		var buf bytes.Buffer
		buf.WriteString(Magic)
		_ = binary.Write(&buf, binary.LittleEndian, version)
		if _, err := writeSection(&buf, sections[0].name, codec, [][]byte{payload}, rawLen); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"inflates past its header", file(2, codecZstd, zeros, 1<<20), "zstd"},
		{"declares a bomb", file(2, codecZstd, zeros, maxInflationFloor+1+maxInflation*uint64(len(zeros))), "claims to inflate"},
		{"compressed in version 3", file(3, codecZstd, zeros, 16<<20), "which a version 3 file never is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.data))
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrCorrupt with %q", err, tc.want)
			}
		})
	}
	// Within its declared length a version 2 section is read as before: its payload is
	// then decoded (and here found not to be that section).
	_, err = Read(bytes.NewReader(file(2, codecZstd, zeros, 16<<20)))
	if err == nil || strings.Contains(err.Error(), "zstd") || strings.Contains(err.Error(), "inflate") {
		t.Fatalf("a section within its bounds is inflated and decoded: %v", err)
	}
}
