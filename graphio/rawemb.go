package graphio

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Embedding sections of format v3 ("embr.<kind>") hold a matrix uncompressed, in its
// in-memory layout, so that a reader uses the stored bytes as the matrix itself: no
// inflation, no decoding, no copy. Read from a memory-mapped file (ReadOptions.Map),
// a matrix costs nothing until its pages are touched, and then only page-cache pages,
// not fresh memory. The payload is
//
//	pad     1 byte p (0 to 7), then p zero bytes, so that what follows starts at a
//	        file offset that is a multiple of 8
//	form    uint64: 0 dense, 1 compressed rows
//	dim     uint64
//	rows    uint64
//	nnz     uint64: non-zeros (compressed rows), 0 (dense)
//	dense:  rows × dim float32
//	sparse: rows+1 int64 row pointers, nnz float32 values, nnz uint16 coordinates
//
// all little-endian. The arrays are in decreasing order of alignment, so each starts
// aligned. The matrix costs 4 bytes an entry dense and 6 a non-zero in compressed rows
// on disk, as in memory: about twice the zstd-compressed v2 sections.
const rawPrefix = "embr."

// rawAlign is the file-offset alignment of a raw matrix's header and arrays.
const rawAlign = 8

const (
	rawDense  = 0
	rawSparse = 1
)

// rawHeader is the size of the form, dim, rows and nnz fields.
const rawHeader = 32

// rawPad returns the pad byte count that aligns the header of a payload starting at
// file offset off+1 (after the pad byte).
func rawPad(off int64) int {
	return int((rawAlign - (off+1)%rawAlign) % rawAlign)
}

// rawPieces returns m's raw section payload (off is its file offset) as consecutive
// pieces: the pad and header, then the matrix's arrays — on a little-endian host the
// arrays' own memory, so that the writer streams a matrix of hundreds of megabytes
// without copying it (a copy held the largest matrix twice while a 120K-passage index
// was written: its peak memory).
func rawPieces(m *Embedding, off int64) [][]byte {
	p := rawPad(off)
	head := make([]byte, 0, 1+p+rawHeader)
	head = append(head, byte(p))
	head = append(head, make([]byte, p)...)
	form, nnz := uint64(rawDense), uint64(0)
	if m.Sparse != nil {
		form, nnz = rawSparse, uint64(len(m.Sparse.Idx))
	}
	for _, v := range []uint64{form, uint64(m.Dim), uint64(m.Rows()), nnz} {
		head = binary.LittleEndian.AppendUint64(head, v)
	}
	if m.Sparse == nil {
		return [][]byte{head, leBytes(m.Data)}
	}
	return [][]byte{head, leBytes(m.Sparse.Ptr), leBytes(m.Sparse.Val), leBytes(m.Sparse.Idx)}
}

// leBytes returns v as little-endian bytes: v's own memory on a little-endian host, a
// copy otherwise.
func leBytes[T word](v []T) []byte {
	if littleEndian {
		var zero T
		return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), int(unsafe.Sizeof(zero))*len(v))
	}
	return appendLE(nil, v)
}

// parseRaw decodes a raw section payload. The matrix's arrays alias payload when the
// host is little-endian and payload is aligned as the file was (always, for the
// reader's own buffers and for a mapped file); otherwise they are copies. Structural
// checks of the rows (coordinates, row pointers) are Embedding.validate's.
func parseRaw(d *dec) *Embedding {
	if len(d.b) < 1 || len(d.b) < 1+int(d.b[0])+rawHeader || d.b[0] >= rawAlign {
		d.fail("raw embedding header cut short")
		return nil
	}
	b := d.b[1+int(d.b[0]):]
	d.b = nil
	form := binary.LittleEndian.Uint64(b)
	dim := binary.LittleEndian.Uint64(b[8:])
	rows := binary.LittleEndian.Uint64(b[16:])
	nnz := binary.LittleEndian.Uint64(b[24:])
	b = b[rawHeader:]
	n := uint64(len(b))
	switch {
	case dim == 0 || dim > 1<<20:
		d.fail("raw embedding of dimension %d (1 to 1048576)", dim)
	case form == rawDense && (nnz != 0 || rows > n/4/dim || 4*rows*dim != n):
		d.fail("raw dense embedding of %d × %d cannot hold %d bytes", rows, dim, n)
	case form == rawSparse && (rows >= n/8 || nnz > n/6 || 8*(rows+1)+6*nnz != n):
		d.fail("raw sparse embedding of %d rows and %d non-zeros cannot hold %d bytes", rows, nnz, n)
	case form != rawDense && form != rawSparse:
		d.fail("raw embedding of unknown form %d", form)
	}
	if d.err != nil {
		return nil
	}
	if form == rawDense {
		return &Embedding{Dim: int(dim), Data: leSlice[float32](b, int(rows*dim))}
	}
	if dim > 1<<16 {
		d.fail("sparse embedding of dimension %d (1 to 65536)", dim)
		return nil
	}
	ptrEnd := 8 * (rows + 1)
	return &Embedding{Dim: int(dim), Sparse: &SparseRows{
		Ptr: leSlice[int64](b, int(rows+1)),
		Val: leSlice[float32](b[ptrEnd:], int(nnz)),
		Idx: leSlice[uint16](b[ptrEnd+4*nnz:], int(nnz)),
	}}
}

// word is a fixed-size number a raw matrix stores.
type word interface{ int64 | float32 | uint16 }

// littleEndian reports whether the host stores numbers little-endian, as the file does.
var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// leSlice returns the first n little-endian words of b: b itself, reinterpreted, when
// the host is little-endian and b is aligned for T; a decoded copy otherwise. The
// result has capacity n, so appending to it never writes into b.
func leSlice[T word](b []byte, n int) []T {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if n == 0 {
		return []T{}
	}
	b = b[:n*size]
	if littleEndian && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%unsafe.Alignof(zero) == 0 {
		return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
	}
	out := make([]T, n)
	for i := range out {
		switch p := any(&out[i]).(type) {
		case *int64:
			*p = int64(binary.LittleEndian.Uint64(b[8*i:]))
		case *float32:
			*p = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		case *uint16:
			*p = binary.LittleEndian.Uint16(b[2*i:])
		}
	}
	return out
}

// appendLE appends v to dst as little-endian words.
func appendLE[T word](dst []byte, v []T) []byte {
	var zero T
	size := int(unsafe.Sizeof(zero))
	if littleEndian {
		if len(v) == 0 {
			return dst
		}
		return append(dst, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), size*len(v))...)
	}
	for _, x := range v {
		switch x := any(x).(type) {
		case int64:
			dst = binary.LittleEndian.AppendUint64(dst, uint64(x))
		case float32:
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
		case uint16:
			dst = binary.LittleEndian.AppendUint16(dst, x)
		}
	}
	return dst
}
