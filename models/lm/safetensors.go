package lm

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/nlpodyssey/safetensors"
)

// Weight is one tensor of a checkpoint, converted to float32, row-major.
type Weight struct {
	Shape []int
	Data  []float32
}

// IndexFile is the index of a sharded Hugging Face checkpoint.
const IndexFile = "model.safetensors.index.json"

// SingleFile is the weights file of an unsharded Hugging Face checkpoint.
const SingleFile = "model.safetensors"

// ReadSafetensors reads every tensor of one .safetensors file (bf16, f16 or f32) as
// float32. The header is validated (offsets contiguous, in bounds, matching the
// shapes and the file length): a truncated or malformed file is an error.
func ReadSafetensors(path string) (map[string]Weight, error) {
	buf, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lm: reading %s: %w", path, err)
	}
	st, err := safetensors.Deserialize(buf)
	if err != nil {
		return nil, fmt.Errorf("lm: %s is not a valid safetensors file (8-byte header length, JSON header, data): %w", path, err)
	}
	out := make(map[string]Weight, st.Len())
	for _, nt := range st.Tensors() {
		w, err := toFloat32(nt.TensorView)
		if err != nil {
			return nil, fmt.Errorf("lm: %s: tensor %s: %w", path, nt.Name, err)
		}
		out[nt.Name] = w
	}
	return out, nil
}

// toFloat32 converts a tensor view to a float32 Weight.
func toFloat32(v safetensors.TensorView) (Weight, error) {
	shape := make([]int, len(v.Shape()))
	n := 1
	for i, d := range v.Shape() {
		shape[i] = int(d)
		n *= int(d)
	}
	data := v.Data()
	out := make([]float32, n)
	switch v.DType() {
	case safetensors.F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
	case safetensors.BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(data[2*i:])) << 16)
		}
	case safetensors.F16:
		for i := range out {
			out[i] = halfToFloat32(binary.LittleEndian.Uint16(data[2*i:]))
		}
	default:
		return Weight{}, fmt.Errorf("dtype %s not supported (want BF16, F16 or F32)", v.DType())
	}
	return Weight{Shape: shape, Data: out}, nil
}

// halfToFloat32 converts an IEEE 754 binary16 value.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf, NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: frac·2^-24
		f := float32(frac) * float32(1.0/(1<<24))
		if sign != 0 {
			return -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}

// ReadWeights reads a Hugging Face directory's weights: the shards listed by
// model.safetensors.index.json when it exists, else model.safetensors. Every tensor
// the index names must be in its shard.
func ReadWeights(dir string) (map[string]Weight, error) {
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
		return ReadSafetensors(path)
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
	out := map[string]Weight{}
	for _, f := range files {
		ws, err := ReadSafetensors(filepath.Join(dir, f))
		if err != nil {
			return nil, err
		}
		for _, name := range shards[f] {
			w, ok := ws[name]
			if !ok {
				return nil, fmt.Errorf("lm: %s lists tensor %s in %s, which does not hold it", idxPath, name, f)
			}
			out[name] = w
		}
	}
	return out, nil
}
