package graphio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// enc appends the column encodings used inside sections.
type enc struct {
	b   []byte
	off int64 // file offset of the payload's first byte (for alignment)
}

func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) f32(v float32)    { e.b = binary.LittleEndian.AppendUint32(e.b, math.Float32bits(v)) }

// strs writes a string column: every length, then every byte. Grouping lengths and
// text compresses better than interleaving them.
func (e *enc) strs(n int, at func(i int) string) {
	for i := 0; i < n; i++ {
		e.uvarint(uint64(len(at(i))))
	}
	for i := 0; i < n; i++ {
		e.b = append(e.b, at(i)...)
	}
}

// lists writes an int32-list column: every length, then every value as a signed delta
// from its predecessor in the list (small for the sorted lists of chunk ids).
func (e *enc) lists(n int, at func(i int) []int32) {
	for i := 0; i < n; i++ {
		e.uvarint(uint64(len(at(i))))
	}
	for i := 0; i < n; i++ {
		prev := int64(0)
		for _, v := range at(i) {
			e.varint(int64(v) - prev)
			prev = int64(v)
		}
	}
}

// errCorrupt marks a section whose payload passed its checksum but does not decode.
var errCorrupt = errors.New("malformed payload")

// dec reads what enc wrote. The first error sticks; every count is checked against the
// bytes left so a corrupt length cannot make it allocate more than the input holds.
// The strings it decodes alias b, so b must never be written once decoding starts:
// the reader's payloads are its own buffers, inflated sections or the mapped file.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail(format string, a ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errCorrupt, fmt.Sprintf(format, a...))
	}
}

func (d *dec) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a length of items that each take at least minBytes encoded bytes.
func (d *dec) count(what string, minBytes int) int {
	v := d.uvarint()
	if d.err != nil {
		return 0
	}
	if minBytes > 0 && v > uint64(len(d.b)/minBytes) || v > math.MaxInt32 {
		d.fail("%s count %d exceeds the %d bytes left", what, v, len(d.b))
		return 0
	}
	return int(v)
}

func (d *dec) i32(what string) int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("%s %d out of int32 range", what, v)
		return 0
	}
	return int32(v)
}

func (d *dec) f32() float32 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 4 {
		d.fail("short float")
		return 0
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(d.b))
	d.b = d.b[4:]
	return v
}

func (d *dec) strs(n int, set func(i int, s string)) {
	all, lens := d.column(n)
	at := 0
	for i, l := range lens {
		set(i, all[at:at+l])
		at += l
	}
}

// column reads a string column of n strings: their bytes, one after the other, and
// their lengths (nil after an error). The bytes alias the payload: one column is one
// run of bytes, and copying it string by string cost a cold query more than everything
// else in decoding.
func (d *dec) column(n int) (string, []int) {
	lens := make([]int, n)
	total := 0
	for i := range lens {
		l := d.uvarint()
		if l > uint64(len(d.b)) {
			d.fail("string length %d exceeds the %d bytes left", l, len(d.b))
		}
		if d.err != nil {
			return "", nil
		}
		lens[i] = int(l)
		total += int(l)
		if total > len(d.b) {
			d.fail("strings need %d bytes, %d left", total, len(d.b))
			return "", nil
		}
	}
	all := ""
	if total > 0 {
		all = unsafe.String(unsafe.SliceData(d.b), total)
	}
	d.b = d.b[total:]
	return all, lens
}

// lists reads an int32-list column. The lists share one array (a cold query decodes
// tens of thousands of them); each has its own capacity, so appending to one never
// writes into the next.
func (d *dec) lists(n int, set func(i int, v []int32)) {
	lens := make([]int, n)
	total := 0
	for i := range lens {
		lens[i] = d.count("list", 0)
		total += lens[i]
		if total > len(d.b) {
			d.fail("lists need %d values, %d bytes left", total, len(d.b))
		}
		if d.err != nil {
			return
		}
	}
	flat := make([]int32, total)
	for i, l := range lens {
		if l == 0 {
			set(i, nil)
			continue
		}
		v := flat[:l:l]
		flat = flat[l:]
		prev := int64(0)
		for j := range v {
			prev += d.varint()
			if prev < math.MinInt32 || prev > math.MaxInt32 {
				d.fail("list value %d out of int32 range", prev)
			}
			if d.err != nil {
				return
			}
			v[j] = int32(prev)
		}
		set(i, v)
	}
}

func (d *dec) done(section string) error {
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d unread bytes", len(d.b))
	}
	if d.err != nil {
		return fmt.Errorf("section %q: %w", section, d.err)
	}
	return nil
}

// unshuffle4 reverses the byte-plane transposition of the float32 matrices of format
// v1 and v2 (all first bytes, then all second bytes, …, which let zstd find the
// redundancy in exponents and zeros).
func unshuffle4(b []byte) []float32 {
	n := len(b) / 4
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(uint32(b[i]) | uint32(b[n+i])<<8 | uint32(b[2*n+i])<<16 | uint32(b[3*n+i])<<24)
	}
	return out
}
