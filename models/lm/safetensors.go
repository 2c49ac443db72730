package lm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/gomlx/compute/dtypes/bfloat16"
	"github.com/nlpodyssey/safetensors"
	"github.com/x448/float16"
)

// Weight is one tensor converted to float32, row-major.
type Weight struct {
	Shape []int
	Data  []float32
}

// WeightSource gives tensors by Hugging Face name, converted to float32 into a
// buffer the caller owns, so that a model is built tensor by tensor without a second
// copy of the checkpoint.
type WeightSource interface {
	// Shape returns the tensor's dimensions, false when there is no such tensor.
	Shape(name string) ([]int, bool)
	// ReadFloat32 converts the tensor into dst (len = the number of elements).
	ReadFloat32(name string, dst []float32) error
}

// Weights is an in-memory WeightSource.
type Weights map[string]Weight

// Shape implements WeightSource.
func (ws Weights) Shape(name string) ([]int, bool) {
	w, ok := ws[name]
	return w.Shape, ok
}

// ReadFloat32 implements WeightSource.
func (ws Weights) ReadFloat32(name string, dst []float32) error {
	w, ok := ws[name]
	if !ok {
		return fmt.Errorf("tensor %s missing", name)
	}
	if len(dst) != len(w.Data) {
		return fmt.Errorf("tensor %s has %d elements, buffer %d", name, len(w.Data), len(dst))
	}
	copy(dst, w.Data)
	return nil
}

// IndexFile is the index of a sharded Hugging Face checkpoint.
const IndexFile = "model.safetensors.index.json"

// SingleFile is the weights file of an unsharded Hugging Face checkpoint.
const SingleFile = "model.safetensors"

// Checkpoint is a Hugging Face checkpoint's safetensors files, memory-mapped: the
// header of each is validated when it is opened (offsets contiguous, in bounds,
// matching the shapes and the file length), and a tensor's bytes are read from the
// map only when it is converted. Close unmaps the files.
type Checkpoint struct {
	files []*mapped
	sts   []safetensors.SafeTensors
	where map[string]int // tensor name → file
}

// mapped is one memory-mapped (or, where mmap is unavailable, read) file.
type mapped struct {
	path  string
	data  []byte
	unmap func() error
}

// OpenCheckpoint maps dir's weights: the shards listed by model.safetensors.index.json
// when it exists, else model.safetensors. Every tensor the index names must be in
// its shard.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	idxPath := filepath.Join(dir, IndexFile)
	data, err := os.ReadFile(idxPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		path := filepath.Join(dir, SingleFile)
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("lm: %s has neither %s nor %s: the weights must be local safetensors files", dir, SingleFile, IndexFile)
		}
		c := &Checkpoint{where: map[string]int{}}
		if err := c.add(path, nil); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	case err != nil:
		return nil, fmt.Errorf("lm: reading %s: %w", idxPath, err)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("lm: %s: %w", idxPath, err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, fmt.Errorf("lm: %s: empty weight_map", idxPath)
	}
	shards := map[string][]string{}
	for name, file := range idx.WeightMap {
		if file == "" || filepath.Base(file) != file {
			return nil, fmt.Errorf("lm: %s: tensor %s: bad shard file name %q", idxPath, name, file)
		}
		shards[file] = append(shards[file], name)
	}
	files := make([]string, 0, len(shards))
	for f := range shards {
		files = append(files, f)
	}
	sort.Strings(files)
	c := &Checkpoint{where: map[string]int{}}
	for _, f := range files {
		if err := c.add(filepath.Join(dir, f), shards[f]); err != nil {
			c.Close()
			if errors.Is(err, errNotInShard) {
				return nil, fmt.Errorf("lm: %s: %w", idxPath, err)
			}
			return nil, err
		}
	}
	return c, nil
}

var errNotInShard = errors.New("tensor not in the shard the index names")

// add maps path; names (nil = all) are the tensors it must provide.
func (c *Checkpoint) add(path string, names []string) error {
	m, err := mapFile(path)
	if err != nil {
		return fmt.Errorf("lm: reading %s: %w", path, err)
	}
	c.files = append(c.files, m)
	st, err := safetensors.Deserialize(m.data)
	if err != nil {
		return fmt.Errorf("lm: %s is not a valid safetensors file (8-byte header length, JSON header, data): %w", path, err)
	}
	i := len(c.sts)
	c.sts = append(c.sts, st)
	if names == nil {
		names = st.Names()
	}
	for _, n := range names {
		if _, ok := st.Tensor(n); !ok {
			return fmt.Errorf("%w: %s lists tensor %s in %s, which does not hold it", errNotInShard, IndexFile, n, filepath.Base(path))
		}
		c.where[n] = i
	}
	return nil
}

// Close unmaps the files.
func (c *Checkpoint) Close() error {
	var errs []error
	for _, m := range c.files {
		if m.unmap != nil {
			errs = append(errs, m.unmap())
		}
	}
	c.files, c.sts, c.where = nil, nil, nil
	return errors.Join(errs...)
}

// Names returns the tensor names, sorted.
func (c *Checkpoint) Names() []string {
	out := make([]string, 0, len(c.where))
	for n := range c.where {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (c *Checkpoint) view(name string) (safetensors.TensorView, string, bool) {
	i, ok := c.where[name]
	if !ok {
		return safetensors.TensorView{}, "", false
	}
	v, ok := c.sts[i].Tensor(name)
	return v, c.files[i].path, ok
}

// Shape implements WeightSource.
func (c *Checkpoint) Shape(name string) ([]int, bool) {
	v, _, ok := c.view(name)
	if !ok {
		return nil, false
	}
	shape := make([]int, len(v.Shape()))
	for i, d := range v.Shape() {
		shape[i] = int(d)
	}
	return shape, true
}

// DType returns the stored dtype of a tensor ("BF16", "F16", "F32", …).
func (c *Checkpoint) DType(name string) string {
	v, _, ok := c.view(name)
	if !ok {
		return ""
	}
	return v.DType().String()
}

// ReadFloat32 implements WeightSource: the tensor is converted from the map into dst.
func (c *Checkpoint) ReadFloat32(name string, dst []float32) error {
	v, path, ok := c.view(name)
	if !ok {
		return fmt.Errorf("tensor %s missing", name)
	}
	if err := convert(v, dst); err != nil {
		return fmt.Errorf("%s: tensor %s: %w", path, name, err)
	}
	return nil
}

// ReadBFloat16 writes the tensor into dst as bfloat16: a BF16 tensor's values as
// they are, F32 and F16 converted (as ReadFloat32 does) and rounded to nearest even.
func (c *Checkpoint) ReadBFloat16(name string, dst []bfloat16.BFloat16) error {
	v, path, ok := c.view(name)
	if !ok {
		return fmt.Errorf("tensor %s missing", name)
	}
	if n := numel(c.mustShape(v)); len(dst) != n {
		return fmt.Errorf("%s: tensor %s: %d elements, buffer %d", path, name, n, len(dst))
	}
	if v.DType() != safetensors.BF16 {
		tmp := make([]float32, len(dst))
		if err := convert(v, tmp); err != nil {
			return fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		for i, f := range tmp {
			dst[i] = bfloat16.FromFloat32(f)
		}
		return nil
	}
	data := v.Data()
	for i := range dst {
		dst[i] = bfloat16.FromBits(binary.LittleEndian.Uint16(data[2*i:]))
	}
	return nil
}

func (c *Checkpoint) mustShape(v safetensors.TensorView) []int {
	shape := make([]int, len(v.Shape()))
	for i, d := range v.Shape() {
		shape[i] = int(d)
	}
	return shape
}

// readBFloat16 reads tensor name of ws into dst as bfloat16: directly where ws can
// (Checkpoint), else through a float32 copy rounded to nearest even.
func readBFloat16(ws WeightSource, name string, dst []bfloat16.BFloat16) error {
	if r, ok := ws.(interface {
		ReadBFloat16(string, []bfloat16.BFloat16) error
	}); ok {
		return r.ReadBFloat16(name, dst)
	}
	tmp := make([]float32, len(dst))
	if err := ws.ReadFloat32(name, tmp); err != nil {
		return err
	}
	for i, f := range tmp {
		dst[i] = bfloat16.FromFloat32(f)
	}
	return nil
}

// Tensor returns one tensor as a float32 Weight.
func (c *Checkpoint) Tensor(name string) (Weight, error) {
	shape, ok := c.Shape(name)
	if !ok {
		return Weight{}, fmt.Errorf("lm: tensor %s missing", name)
	}
	w := Weight{Shape: shape, Data: make([]float32, numel(shape))}
	return w, c.ReadFloat32(name, w.Data)
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// convert writes a tensor view's values into dst as float32.
func convert(v safetensors.TensorView, dst []float32) error {
	n := 1
	for _, d := range v.Shape() {
		n *= int(d)
	}
	if len(dst) != n {
		return fmt.Errorf("%d elements, buffer %d", n, len(dst))
	}
	data := v.Data()
	switch v.DType() {
	case safetensors.F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case safetensors.BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16)
		}
	case safetensors.F16:
		for i := range dst {
			dst[i] = float16.Frombits(binary.LittleEndian.Uint16(data[2*i:])).Float32()
		}
	default:
		return fmt.Errorf("dtype %s not supported (want BF16, F16 or F32)", v.DType())
	}
	return nil
}

// ReadSafetensors reads every tensor of one .safetensors file as float32 (a
// convenience for tools and tests; models load through OpenCheckpoint).
func ReadSafetensors(path string) (Weights, error) {
	c := &Checkpoint{where: map[string]int{}}
	defer c.Close()
	if err := c.add(path, nil); err != nil {
		return nil, err
	}
	return c.all()
}

// ReadWeights reads all of a directory's weights as float32 (see OpenCheckpoint).
func ReadWeights(dir string) (Weights, error) {
	c, err := OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.all()
}

func (c *Checkpoint) all() (Weights, error) {
	out := Weights{}
	for _, n := range c.Names() {
		w, err := c.Tensor(n)
		if err != nil {
			return nil, fmt.Errorf("lm: %w", err)
		}
		out[n] = w
	}
	return out, nil
}

// WriteSafetensors writes float32 tensors as one safetensors file to w (tensor names
// sorted, as safetensors.Serialize orders them).
func WriteSafetensors(w io.Writer, ws Weights) error {
	views := map[string]safetensors.TensorView{}
	for name, t := range ws {
		if len(t.Data) != numel(t.Shape) {
			return fmt.Errorf("lm: tensor %s: %d values for shape %v", name, len(t.Data), t.Shape)
		}
		shape := make([]uint64, len(t.Shape))
		for i, d := range t.Shape {
			shape[i] = uint64(d)
		}
		data := make([]byte, 4*len(t.Data))
		for i, f := range t.Data {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(f))
		}
		v, err := safetensors.NewTensorView(safetensors.F32, shape, data)
		if err != nil {
			return fmt.Errorf("lm: tensor %s: %w", name, err)
		}
		views[name] = v
	}
	buf, err := safetensors.Serialize(views, nil)
	if err != nil {
		return fmt.Errorf("lm: safetensors: %w", err)
	}
	_, err = w.Write(buf)
	return err
}
