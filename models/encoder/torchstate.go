package encoder

// The pickle itself is run by github.com/nlpodyssey/gopickle's unpickler; what is
// written here is the PyTorch layer above it, which gopickle's own pytorch.Load also
// has: that one allocates each storage at the element count the pickle claims before
// it reads the archive, so a corrupt or crafted file can make it ask for any amount
// of memory, and it panics on some old formats. Here every storage is checked against
// its archive entry (stored, not compressed, as torch.save writes them) before
// anything is allocated, and only what a state dict of float tensors holds is
// accepted.

import (
	"archive/zip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/nlpodyssey/gopickle/pickle"
	"github.com/nlpodyssey/gopickle/types"
	"github.com/x448/float16"

	"github.com/graphloom/graphloom/models/lm"
)

// maxPickle bounds a state dict's data.pkl: it holds names and shapes, the values
// are in the archive's other entries.
const maxPickle = 16 << 20

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
	if st.skipped {
		return skippedTensor{}, nil
	}
	n := 1 // elements, and the stride a contiguous tensor has at each axis
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] < 0 {
			return nil, fmt.Errorf("tensor of size %v", shape)
		}
		if shape[i] > 1 && stride[i] != n {
			return nil, fmt.Errorf("tensor of size %v with stride %v is not contiguous", shape, stride)
		}
		n *= shape[i]
		if n > len(st.data) {
			return nil, fmt.Errorf("tensor of size %v does not fit its storage of %d values", shape, len(st.data))
		}
	}
	if off < 0 || off > len(st.data)-n {
		return nil, fmt.Errorf("tensor of size %v at offset %d does not fit its storage of %d values", shape, off, len(st.data))
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
	rc, err := pkl.Open()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer rc.Close()
	u := pickle.NewUnpickler(io.LimitReader(rc, maxPickle))
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
		if f.Method != zip.Store {
			return nil, fmt.Errorf("storage %s is compressed: torch.save stores them as they are", key)
		}
		if numel < 0 || uint64(numel)*uint64(kind.size) > f.UncompressedSize64 {
			return nil, fmt.Errorf("storage %s claims %d %s values, its entry holds %d bytes", key, numel, kind.name, f.UncompressedSize64)
		}
		if kind.get == nil {
			st := &torchStorage{n: numel, skipped: true}
			loaded[key] = st
			return st, nil
		}
		r, err := f.Open()
		if err != nil {
			return nil, err
		}
		defer r.Close()
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
