package encoder

// The pickle itself is run by github.com/nlpodyssey/gopickle's unpickler; what is
// written here is the PyTorch layer above it, which gopickle's own pytorch.Load also
// has: that one allocates each storage at the element count the pickle claims before
// it reads the archive, so a corrupt or crafted file can make it ask for any amount
// of memory, and it panics on some old formats. Here every storage is checked against
// its archive entry (stored, not compressed, as torch.save writes them, and within
// the file) before anything is allocated, and only what a state dict of tensors holds
// is accepted. gopickle's unpickler also allocates each opcode's argument at the
// length the opcode states before reading it, so the pickle is first scanned
// (scanPickle, as torch's weights-only loader walks it with pickletools): every
// stated length must lie within the bytes left.

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
	"github.com/x448/float16"

	"github.com/graphloom/graphloom/models/lm"
)

// maxPickle bounds a state dict's data.pkl: it holds names and shapes (about 30 KB
// for a BERT-base), the values are in the archive's other entries. maxMarks bounds
// its MARK opcodes (about four a tensor), each of which costs the unpickler a stack.
// maxLine bounds a protocol-0 argument's line (a GLOBAL's module or name; a decimal
// INT or LONG, which gopickle parses in time quadratic in its length).
const (
	maxPickle = 8 << 20
	maxMarks  = 1 << 18
	maxLine   = 4096
)

// torchStorage is one storage of the archive, converted to float32; skipped (nil
// data, n values) for an integer or boolean storage.
type torchStorage struct {
	data    []float32
	n       int
	skipped bool
}

// storageKind is a torch.*Storage class a pickle names: its element size and decoder
// (nil for the integer and boolean storages, whose tensors — buffers such as the
// position_ids older transformers saved — are skipped).
type storageKind struct {
	name string
	size int
	get  func(b []byte) float32
}

// skippedTensor stands for a tensor of a skipped storage.
type skippedTensor struct{}

var storageKinds = map[string]storageKind{
	"FloatStorage": {"FloatStorage", 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }},
	"HalfStorage":  {"HalfStorage", 2, func(b []byte) float32 { return float16.Frombits(binary.LittleEndian.Uint16(b)).Float32() }},
	"BFloat16Storage": {"BFloat16Storage", 2, func(b []byte) float32 {
		return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16)
	}},
	"DoubleStorage": {"DoubleStorage", 8, func(b []byte) float32 { return float32(math.Float64frombits(binary.LittleEndian.Uint64(b))) }},
	"LongStorage":   {"LongStorage", 8, nil},
	"IntStorage":    {"IntStorage", 4, nil},
	"ShortStorage":  {"ShortStorage", 2, nil},
	"CharStorage":   {"CharStorage", 1, nil},
	"ByteStorage":   {"ByteStorage", 1, nil},
	"BoolStorage":   {"BoolStorage", 1, nil},
	"UInt16Storage": {"UInt16Storage", 2, nil},
	"UInt32Storage": {"UInt32Storage", 4, nil},
	"UInt64Storage": {"UInt64Storage", 8, nil},
}

// rebuildTensor is torch._utils._rebuild_tensor_v2 (and _rebuild_parameter, which
// wraps such a tensor): a view of a storage.
type rebuildTensor struct{ parameter bool }

// Call implements types.Callable.
func (r rebuildTensor) Call(args ...any) (any, error) {
	if r.parameter { // _rebuild_parameter(data, requires_grad, backward_hooks)
		if len(args) < 1 {
			return nil, errors.New("_rebuild_parameter without its tensor")
		}
		switch w := args[0].(type) {
		case lm.Weight, skippedTensor:
			return w, nil
		}
		return nil, fmt.Errorf("_rebuild_parameter of %T, want a tensor", args[0])
	}
	// _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
	if len(args) < 4 {
		return nil, fmt.Errorf("_rebuild_tensor_v2 with %d arguments", len(args))
	}
	st, ok := args[0].(*torchStorage)
	off, ok2 := args[1].(int)
	if !ok || !ok2 {
		return nil, fmt.Errorf("_rebuild_tensor_v2(%T, %T, …): want a storage and an offset", args[0], args[1])
	}
	shape, err := intTuple(args[2], "size")
	if err != nil {
		return nil, err
	}
	stride, err := intTuple(args[3], "stride")
	if err != nil {
		return nil, err
	}
	if len(stride) != len(shape) {
		return nil, fmt.Errorf("tensor of size %v with stride %v", shape, stride)
	}
	size := len(st.data)
	if st.skipped {
		size = st.n
	}
	if slices.ContainsFunc(shape, func(d int) bool { return d < 0 }) {
		return nil, fmt.Errorf("tensor of size %v", shape)
	}
	if slices.Contains(shape, 0) { // empty: nothing to read, whatever the strides
		if st.skipped {
			return skippedTensor{}, nil
		}
		return lm.Weight{Shape: shape}, nil
	}
	n := 1 // elements, and the stride a contiguous tensor has at each axis
	for i := len(shape) - 1; i >= 0; i-- {
		if n > size/shape[i] {
			return nil, fmt.Errorf("tensor of size %v does not fit its storage of %d values", shape, size)
		}
		if shape[i] > 1 && stride[i] != n {
			return nil, fmt.Errorf("tensor of size %v with stride %v is not contiguous", shape, stride)
		}
		n *= shape[i]
	}
	if off < 0 || off > size-n {
		return nil, fmt.Errorf("tensor of size %v at offset %d does not fit its storage of %d values", shape, off, size)
	}
	if st.skipped {
		return skippedTensor{}, nil
	}
	return lm.Weight{Shape: shape, Data: st.data[off : off+n]}, nil
}

// intTuple reads a tuple of ints.
func intTuple(v any, what string) ([]int, error) {
	t, ok := v.(*types.Tuple)
	if !ok {
		return nil, fmt.Errorf("tensor %s is a %T, want a tuple", what, v)
	}
	out := make([]int, t.Len())
	for i := range out {
		x, ok := t.Get(i).(int)
		if !ok {
			return nil, fmt.Errorf("tensor %s %v: want ints", what, *t)
		}
		out[i] = x
	}
	return out, nil
}

// readTorchState reads a state dict written by torch.save (PyTorch 1.6 or later:
// a zip archive of data.pkl and one entry per storage): tensor name → float32
// values, for contiguous float32, float16, bfloat16 and float64 tensors; integer and
// boolean tensors (buffers such as position_ids) are left out. Anything else — an
// older format, another class in the pickle, a storage larger than its entry — is an
// error naming the file.
func readTorchState(path string) (lm.Weights, error) {
	v, err := unpickleTorch(path)
	if err != nil {
		return nil, err
	}
	ws := lm.Weights{}
	add := func(k, v any) error {
		if _, ok := v.(skippedTensor); ok {
			return nil // an integer or boolean buffer
		}
		name, ok := k.(string)
		w, ok2 := v.(lm.Weight)
		if !ok || !ok2 {
			return fmt.Errorf("%s: entry %v is a %T, want a tensor named by a string", path, k, v)
		}
		ws[name] = w
		return nil
	}
	switch d := v.(type) {
	case *types.OrderedDict:
		for e := d.List.Front(); e != nil; e = e.Next() {
			entry := e.Value.(*types.OrderedDictEntry)
			if err := add(entry.Key, entry.Value); err != nil {
				return nil, err
			}
		}
	case *types.Dict:
		for _, e := range *d {
			if err := add(e.Key, e.Value); err != nil {
				return nil, err
			}
		}
	default:
		return nil, fmt.Errorf("%s holds a %T, want a state dict", path, v)
	}
	return ws, nil
}

// openWeights opens a model folder's weights: its safetensors files, or, in a folder
// saved by transformers before 4.35 that has none, its pytorch_model.bin (read
// whole into memory: encoders are small). release frees them.
func openWeights(dir string) (ws lm.WeightSource, release func(), err error) {
	bin := filepath.Join(dir, torchWeights)
	if !exists(filepath.Join(dir, lm.SingleFile)) && !exists(filepath.Join(dir, lm.IndexFile)) && exists(bin) {
		w, err := readTorchState(bin)
		return w, func() {}, err
	}
	ckpt, err := lm.OpenCheckpoint(dir)
	if err != nil {
		if exists(filepath.Join(dir, torchWeights+".index.json")) {
			return nil, nil, fmt.Errorf("%w (sharded pytorch_model-*.bin files are not read: save the model with safe_serialization)", err)
		}
		return nil, nil, err
	}
	return ckpt, func() { ckpt.Close() }, nil
}

// exists reports whether path names a file.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// unpickleTorch loads what torch.save wrote to path, tensors as lm.Weight.
func unpickleTorch(path string) (v any, err error) {
	defer func() { // the unpickler panics on some malformed input
		if r := recover(); r != nil {
			v, err = nil, fmt.Errorf("%s: malformed PyTorch file (%v)", path, r)
		}
	}()
	z, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("%s: not a zip archive (%v): only torch.save's format of PyTorch 1.6 and later is read", path, err)
	}
	defer z.Close()
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	fileSize := uint64(st.Size())
	var pkl *zip.File
	entries := map[string]*zip.File{}
	for _, f := range z.File {
		entries[f.Name] = f
		if strings.HasSuffix(f.Name, "/data.pkl") && strings.Count(f.Name, "/") == 1 {
			pkl = f
		}
	}
	if pkl == nil {
		return nil, fmt.Errorf("%s: no data.pkl in the archive", path)
	}
	prefix := strings.TrimSuffix(pkl.Name, "data.pkl")
	// stored opens an entry torch.save wrote as it is: not compressed, within the file.
	stored := func(f *zip.File, what string) (io.ReadCloser, error) {
		off, err := f.DataOffset()
		if err != nil {
			return nil, err
		}
		if f.Method != zip.Store || f.CompressedSize64 != f.UncompressedSize64 {
			return nil, fmt.Errorf("%s is compressed: torch.save stores its records as they are", what)
		}
		if off < 0 || uint64(off) > fileSize || f.UncompressedSize64 > fileSize-uint64(off) {
			return nil, fmt.Errorf("%s claims %d bytes past the end of the file", what, f.UncompressedSize64)
		}
		return f.Open()
	}
	if f, ok := entries[prefix+"byteorder"]; ok {
		rc, err := stored(f, "byteorder")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		b, err := io.ReadAll(io.LimitReader(rc, 16))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if string(b) != "little" {
			return nil, fmt.Errorf("%s: byte order %q: only little-endian archives are read", path, b)
		}
	}
	if pkl.UncompressedSize64 > maxPickle {
		return nil, fmt.Errorf("%s: data.pkl of %d bytes: a state dict's is far smaller (at most %d read)", path, pkl.UncompressedSize64, maxPickle)
	}
	rc, err := stored(pkl, "data.pkl")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	code, err := io.ReadAll(io.LimitReader(rc, maxPickle))
	rc.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: data.pkl: %w", path, err)
	}
	if err := scanPickle(code); err != nil {
		return nil, fmt.Errorf("%s: data.pkl: %w", path, err)
	}
	var read uint64 // storage bytes read: at most the file's size, however the entries overlap
	u := pickle.NewUnpickler(bytes.NewReader(code))
	u.FindClass = func(module, name string) (any, error) {
		switch module + "." + name {
		case "torch._utils._rebuild_tensor_v2":
			return rebuildTensor{}, nil
		case "torch._utils._rebuild_parameter":
			return rebuildTensor{parameter: true}, nil
		}
		if k, ok := storageKinds[name]; ok && module == "torch" {
			return k, nil
		}
		return nil, fmt.Errorf("class %s.%s is not part of a state dict of tensors", module, name)
	}
	loaded := map[string]*torchStorage{}
	u.PersistentLoad = func(id any) (any, error) {
		t, ok := id.(*types.Tuple)
		if !ok || t.Len() < 5 || t.Get(0) != "storage" {
			return nil, fmt.Errorf("persistent id %v: want (\"storage\", class, key, location, size)", id)
		}
		kind, ok1 := t.Get(1).(storageKind)
		key, ok2 := t.Get(2).(string)
		numel, ok3 := t.Get(4).(int)
		if !ok1 || !ok2 || !ok3 {
			return nil, fmt.Errorf("persistent id %v: want a float storage class, a key and a size", *t)
		}
		if st, ok := loaded[key]; ok {
			return st, nil
		}
		f, ok := entries[prefix+"data/"+key]
		if !ok {
			return nil, fmt.Errorf("storage %s: no entry data/%s in the archive", key, key)
		}
		if numel < 0 || uint64(numel) > f.UncompressedSize64/uint64(kind.size) {
			return nil, fmt.Errorf("storage %s claims %d %s values, its entry holds %d bytes", key, numel, kind.name, f.UncompressedSize64)
		}
		r, err := stored(f, "storage "+key)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		if kind.get == nil {
			st := &torchStorage{n: numel, skipped: true}
			loaded[key] = st
			return st, nil
		}
		if read += uint64(numel * kind.size); read > fileSize {
			return nil, fmt.Errorf("storage %s: the storages read exceed the file's %d bytes", key, fileSize)
		}
		raw := make([]byte, numel*kind.size)
		if _, err := io.ReadFull(r, raw); err != nil {
			return nil, fmt.Errorf("storage %s: %w", key, err)
		}
		st := &torchStorage{data: make([]float32, numel)}
		for i := range st.data {
			st.data[i] = kind.get(raw[i*kind.size:])
		}
		loaded[key] = st
		return st, nil
	}
	v, err = u.Load()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// scanPickle walks a pickle's opcodes (protocols 0 to 5) without running them and
// checks that every length an opcode states lies within the bytes left, that at most
// maxMarks MARKs occur, and that the pickle ends with STOP. gopickle's unpickler
// allocates each argument at its stated length before reading it.
func scanPickle(code []byte) error {
	marks := 0
	for i := 0; i < len(code); {
		op := code[i]
		i++
		left := len(code) - i
		fixed := func(n int) error {
			if n > left {
				return fmt.Errorf("opcode %#x at byte %d needs %d bytes, %d are left", op, i-1, n, left)
			}
			i += n
			return nil
		}
		counted := func(width int) error { // a length of width bytes, then that many bytes
			if width > left {
				return fmt.Errorf("opcode %#x at byte %d: its length is cut off", op, i-1)
			}
			var n uint64
			for j := width - 1; j >= 0; j-- {
				n = n<<8 | uint64(code[i+j])
			}
			if n > uint64(left-width) {
				return fmt.Errorf("opcode %#x at byte %d states %d bytes, %d are left", op, i-1, n, left-width)
			}
			i += width + int(n)
			return nil
		}
		line := func(lines int) error { // newline-terminated arguments (protocol 0)
			for range lines {
				j := bytes.IndexByte(code[i:min(len(code), i+maxLine+1)], '\n')
				if j < 0 {
					return fmt.Errorf("opcode %#x at byte %d: its line is not terminated within %d bytes", op, i-1, maxLine)
				}
				i += j + 1
			}
			return nil
		}
		var err error
		switch op {
		case '.': // STOP
			if i != len(code) {
				return fmt.Errorf("STOP at byte %d, %d bytes before the end", i-1, len(code)-i)
			}
			return nil
		case '(': // MARK
			if marks++; marks > maxMarks {
				return fmt.Errorf("more than %d MARK opcodes", maxMarks)
			}
		case 0x95: // FRAME: an 8-byte length of the frame that follows, inside the pickle
			if err = fixed(8); err == nil && binary.LittleEndian.Uint64(code[i-8:i]) > uint64(len(code)-i) {
				err = fmt.Errorf("FRAME at byte %d is longer than the pickle", i-9)
			}
		case 'J', 'j', 'r': // BININT, LONG_BINGET, LONG_BINPUT
			err = fixed(4)
		case 'K', 'h', 'q', 0x80, 0x82: // BININT1, BINGET, BINPUT, PROTO, EXT1
			err = fixed(1)
		case 'M', 0x83: // BININT2, EXT2
			err = fixed(2)
		case 0x84: // EXT4
			err = fixed(4)
		case 'G': // BINFLOAT
			err = fixed(8)
		case 0x8a, 'U', 'C', 0x8c: // LONG1, SHORT_BINSTRING, SHORT_BINBYTES, SHORT_BINUNICODE
			err = counted(1)
		case 0x8b, 'T', 'X', 'B': // LONG4, BINSTRING, BINUNICODE, BINBYTES
			err = counted(4)
		case 0x8d, 0x8e, 0x96: // BINUNICODE8, BINBYTES8, BYTEARRAY8
			err = counted(8)
		case 'I', 'L', 'S', 'V', 'F', 'P', 'g', 'p': // INT, LONG, STRING, UNICODE, FLOAT, PERSID, GET, PUT
			err = line(1)
		case 'c', 'i': // GLOBAL, INST
			err = line(2)
		case ')', ']', '}', 0x8f, 'N', 0x88, 0x89, 'a', 'e', 'l', 't', 0x85, 0x86, 0x87, 'd', 's', 'u',
			'b', 'R', 0x81, 0x92, 0x93, 0x94, 'Q', 0x90, 0x91, 'o', '0', '1', '2', 0x97, 0x98:
			// no argument: EMPTY_TUPLE/LIST/DICT/SET, NONE, NEWTRUE/FALSE, APPEND(S), LIST,
			// TUPLE(1-3), DICT, SETITEM(S), BUILD, REDUCE, NEWOBJ(_EX), STACK_GLOBAL,
			// MEMOIZE, BINPERSID, ADDITEMS, FROZENSET, OBJ, POP, DUP, POP_MARK,
			// NEXT_BUFFER, READONLY_BUFFER
		default:
			return fmt.Errorf("unknown opcode %#x at byte %d", op, i-1)
		}
		if err != nil {
			return err
		}
	}
	return errors.New("no STOP opcode: the pickle is cut short")
}
