// Package checkpoint reads and writes graphloom model checkpoints: the weights, the
// model kind and its configuration (JSON), and free-form metadata, in one file that is
// written atomically and verified on load.
//
// File layout (little-endian):
//
//	magic      8 bytes  "GLCKPT\x00\x00"
//	version    uint32   FormatVersion
//	headerLen  uint32   length of the JSON header
//	header     JSON     {"kind", "config", "meta", "tensors": [{"name","dtype","dims","offset","size"}]}
//	payload    bytes    tensor data, raw little-endian, at the header's offsets
//	crc        uint32   CRC-32C (Castagnoli) of everything before it
//
// Values round-trip bit-exactly. A truncated, corrupted or newer-version file is an
// error naming what is wrong.
package checkpoint

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/graphio"
)

// FormatVersion is the checkpoint format this build writes and reads.
const FormatVersion = 1

const magic = "GLCKPT\x00\x00"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt wraps every error about a damaged or truncated file.
var ErrCorrupt = errors.New("checkpoint corrupt or truncated")

// ErrVersion is returned for files of another format version.
var ErrVersion = errors.New("unsupported checkpoint format version")

// Tensor is one named array.
type Tensor struct {
	Name  string
	DType dtypes.DType
	Dims  []int
	Data  []byte // raw little-endian values
}

// File is a checkpoint's content.
type File struct {
	Kind    string            // model kind, e.g. "rgcn_classifier"
	Config  json.RawMessage   // model configuration
	Meta    map[string]string // free-form: step, metrics, …
	Tensors []Tensor
}

type header struct {
	Kind    string            `json:"kind"`
	Config  json.RawMessage   `json:"config,omitempty"`
	Meta    map[string]string `json:"meta,omitempty"`
	Tensors []tensorEntry     `json:"tensors"`
}

type tensorEntry struct {
	Name   string `json:"name"`
	DType  string `json:"dtype"`
	Dims   []int  `json:"dims"`
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
}

// Encode serialises f.
func Encode(f *File) ([]byte, error) {
	h := header{Kind: f.Kind, Config: f.Config, Meta: f.Meta}
	var payload int64
	seen := map[string]bool{}
	for _, t := range f.Tensors {
		if seen[t.Name] {
			return nil, fmt.Errorf("checkpoint: duplicate tensor %q", t.Name)
		}
		seen[t.Name] = true
		want, err := byteSize(t.DType, t.Dims)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: tensor %q: %w", t.Name, err)
		}
		if int64(len(t.Data)) != want {
			return nil, fmt.Errorf("checkpoint: tensor %q: %d bytes for %s%v (want %d)", t.Name, len(t.Data), t.DType, t.Dims, want)
		}
		h.Tensors = append(h.Tensors, tensorEntry{Name: t.Name, DType: t.DType.String(), Dims: t.Dims, Offset: payload, Size: want})
		payload += want
	}
	hj, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: encoding header: %w", err)
	}
	if len(hj) > math.MaxUint32 {
		return nil, errors.New("checkpoint: header too large")
	}
	var buf bytes.Buffer
	buf.Grow(len(magic) + 8 + len(hj) + int(payload) + 4)
	buf.WriteString(magic)
	_ = binary.Write(&buf, binary.LittleEndian, uint32(FormatVersion))
	_ = binary.Write(&buf, binary.LittleEndian, uint32(len(hj)))
	buf.Write(hj)
	for _, t := range f.Tensors {
		buf.Write(t.Data)
	}
	_ = binary.Write(&buf, binary.LittleEndian, crc32.Checksum(buf.Bytes(), castagnoli))
	return buf.Bytes(), nil
}

// Decode parses a checkpoint produced by Encode.
func Decode(data []byte) (*File, error) {
	const fixed = len(magic) + 8
	if len(data) < fixed+4 {
		return nil, fmt.Errorf("%w: %d bytes", ErrCorrupt, len(data))
	}
	if string(data[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a graphloom checkpoint (bad magic)", ErrCorrupt)
	}
	version := binary.LittleEndian.Uint32(data[len(magic):])
	if version != FormatVersion {
		return nil, fmt.Errorf("%w: file has version %d, this build reads %d", ErrVersion, version, FormatVersion)
	}
	body := data[:len(data)-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(data[len(data)-4:]); got != want {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	hlen := int64(binary.LittleEndian.Uint32(data[len(magic)+4:]))
	if int64(fixed)+hlen > int64(len(body)) {
		return nil, fmt.Errorf("%w: header length %d exceeds file", ErrCorrupt, hlen)
	}
	var h header
	if err := json.Unmarshal(body[fixed:int64(fixed)+hlen], &h); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	payload := body[int64(fixed)+hlen:]
	f := &File{Kind: h.Kind, Config: h.Config, Meta: h.Meta}
	for _, e := range h.Tensors {
		dt, err := dtypes.DTypeString(e.DType)
		if err != nil {
			return nil, fmt.Errorf("%w: tensor %q: dtype %q", ErrCorrupt, e.Name, e.DType)
		}
		want, err := byteSize(dt, e.Dims)
		if err != nil || want != e.Size || e.Offset < 0 || e.Size > int64(len(payload)) || e.Offset > int64(len(payload))-e.Size {
			return nil, fmt.Errorf("%w: tensor %q: bad extent (offset %d, size %d, payload %d)", ErrCorrupt, e.Name, e.Offset, e.Size, len(payload))
		}
		f.Tensors = append(f.Tensors, Tensor{Name: e.Name, DType: dt, Dims: e.Dims,
			Data: bytes.Clone(payload[e.Offset : e.Offset+e.Size])})
	}
	return f, nil
}

func byteSize(dt dtypes.DType, dims []int) (int64, error) {
	if dt.Size() <= 0 || dt.Bits()%8 != 0 {
		return 0, fmt.Errorf("unsupported dtype %s", dt)
	}
	n := int64(dt.Size())
	for _, d := range dims {
		if d < 0 || (d > 0 && n > math.MaxInt64/int64(d)) {
			return 0, fmt.Errorf("bad dimensions %v", dims)
		}
		n *= int64(d)
	}
	return n, nil
}

// Save writes f to path atomically (graphio.AtomicWrite: a temporary file in the same
// directory, fsync, rename over path, fsync the directory; a replaced file keeps its
// permissions, a symbolic link is written through). A crash leaves either the old or
// the new file.
func Save(path string, f *File) error {
	data, err := Encode(f)
	if err != nil {
		return err
	}
	if err := graphio.AtomicWrite(path, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// IsFile reports whether the file at path starts with the checkpoint magic, so that a
// trainer replaces only a checkpoint and never another file.
func IsFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, len(magic))
	n, _ := f.Read(head)
	return n == len(magic) && string(head) == magic
}

// ReadHeader reads a checkpoint's kind, configuration and metadata from its header
// alone, without its tensors and unverified (Load checks the whole file).
func ReadHeader(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	fixed := make([]byte, len(magic)+8)
	if _, err := io.ReadFull(f, fixed); err != nil || string(fixed[:len(magic)]) != magic {
		return nil, fmt.Errorf("checkpoint: %s: %w: not a graphloom checkpoint", path, ErrCorrupt)
	}
	hlen := int64(binary.LittleEndian.Uint32(fixed[len(magic)+4:]))
	var h header
	if err := json.NewDecoder(io.LimitReader(f, hlen)).Decode(&h); err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w: header: %v", path, ErrCorrupt, err)
	}
	return &File{Kind: h.Kind, Config: h.Config, Meta: h.Meta}, nil
}

// KindOf returns the model kind a checkpoint file names in its header (ReadHeader);
// "" when path is not a checkpoint or cannot be read.
func KindOf(path string) string {
	h, err := ReadHeader(path)
	if err != nil {
		return ""
	}
	return h.Kind
}

// IsKind returns a recogniser of checkpoints of kind (for output guards: a file a
// command may replace is a checkpoint of what it writes, not of another model).
func IsKind(kind string) func(path string) bool {
	return func(path string) bool { return KindOf(path) == kind }
}

// Load reads and verifies the checkpoint at path.
func Load(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	f, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", path, err)
	}
	return f, nil
}

// FromVariables captures variable values as tensors named by their path relative to
// the common scope prefix (e.g. "/rgcn/conv0/root" → "conv0/root" with prefix "/rgcn/").
func FromVariables(vars []*model.Variable, prefix string) ([]Tensor, error) {
	out := make([]Tensor, 0, len(vars))
	for _, v := range vars {
		val, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("checkpoint: variable %s: %w", v.Path(), err)
		}
		var data []byte
		if err := val.ConstBytes(func(b []byte) { data = bytes.Clone(b) }); err != nil {
			return nil, fmt.Errorf("checkpoint: variable %s: %w", v.Path(), err)
		}
		name, err := relName(v.Path(), prefix)
		if err != nil {
			return nil, err
		}
		out = append(out, Tensor{Name: name, DType: val.DType(), Dims: append([]int{}, val.Shape().Dimensions...), Data: data})
	}
	return out, nil
}

// Assign sets each variable to the tensor of the same relative name, checking dtype
// and shape; every variable must be present.
func (f *File) Assign(vars []*model.Variable, prefix string) error {
	byName := make(map[string]*Tensor, len(f.Tensors))
	for i := range f.Tensors {
		byName[f.Tensors[i].Name] = &f.Tensors[i]
	}
	for _, v := range vars {
		name, err := relName(v.Path(), prefix)
		if err != nil {
			return err
		}
		t, ok := byName[name]
		if !ok {
			return fmt.Errorf("checkpoint: no tensor %q for variable %s", name, v.Path())
		}
		shape := v.Shape()
		if t.DType != shape.DType || !equalDims(t.Dims, shape.Dimensions) {
			return fmt.Errorf("checkpoint: tensor %q is %s%v, variable %s is %s", name, t.DType, t.Dims, v.Path(), shape)
		}
		val := tensors.FromShape(shape)
		if err := val.MutableBytes(func(b []byte) { copy(b, t.Data) }); err != nil {
			return fmt.Errorf("checkpoint: tensor %q: %w", name, err)
		}
		if err := v.SetValue(val); err != nil {
			return fmt.Errorf("checkpoint: setting %s: %w", v.Path(), err)
		}
	}
	return nil
}

func relName(path, prefix string) (string, error) {
	if len(path) < len(prefix) || path[:len(prefix)] != prefix {
		return "", fmt.Errorf("checkpoint: variable %s outside scope %q", path, prefix)
	}
	return path[len(prefix):], nil
}

func equalDims(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
