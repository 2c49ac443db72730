package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleFile(t *testing.T) (*File, []*model.Variable) {
	t.Helper()
	store := model.NewStore()
	scope := store.RootScope().In("m")
	// Values chosen to catch lossy round trips: NaN payloads, -0, denormals, extremes.
	w := []float32{1.5, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32,
		float32(math.NaN()), -3.25}
	v1, err := scope.CreateVariable("w", tensors.FromFlatDataAndDimensions(w, 2, 3))
	require.NoError(t, err)
	v2, err := scope.In("sub").CreateVariable("b", tensors.FromFlatDataAndDimensions([]float64{math.Pi}, 1))
	require.NoError(t, err)
	vars := []*model.Variable{v1, v2}
	ts, err := FromVariables(vars, "/m/")
	require.NoError(t, err)
	return &File{Kind: "test", Config: json.RawMessage(`{"a":1}`), Meta: map[string]string{"step": "7"}, Tensors: ts}, vars
}

func TestRoundTripBitExact(t *testing.T) {
	f, vars := sampleFile(t)
	path := filepath.Join(t.TempDir(), "m.ckpt")
	require.NoError(t, Save(path, f))
	got, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, f.Kind, got.Kind)
	assert.JSONEq(t, string(f.Config), string(got.Config))
	assert.Equal(t, f.Meta, got.Meta)
	require.Len(t, got.Tensors, 2)
	for i := range f.Tensors {
		assert.Equal(t, f.Tensors[i], got.Tensors[i], "tensor %s bytes", f.Tensors[i].Name)
	}
	assert.Equal(t, "w", got.Tensors[0].Name)
	assert.Equal(t, "sub/b", got.Tensors[1].Name)

	// Assign into fresh variables of the same shapes: identical bits.
	store := model.NewStore()
	scope := store.RootScope().In("m")
	n1, err := scope.CreateVariable("w", tensors.FromShape(vars[0].Shape()))
	require.NoError(t, err)
	n2, err := scope.In("sub").CreateVariable("b", tensors.FromShape(vars[1].Shape()))
	require.NoError(t, err)
	require.NoError(t, got.Assign([]*model.Variable{n1, n2}, "/m/"))
	for i, v := range []*model.Variable{n1, n2} {
		var a, b []byte
		require.NoError(t, v.MustValue().ConstBytes(func(d []byte) { a = append(a, d...) }))
		require.NoError(t, vars[i].MustValue().ConstBytes(func(d []byte) { b = append(b, d...) }))
		assert.Equal(t, b, a)
	}
	// No temporary files are left behind.
	entries, err := os.ReadDir(filepath.Dir(path))
	require.NoError(t, err)
	assert.Len(t, entries, 1)
}

func TestLoadRejectsDamage(t *testing.T) {
	f, _ := sampleFile(t)
	good, err := Encode(f)
	require.NoError(t, err)
	withVersion := func(v uint32) []byte {
		b := append([]byte{}, good...)
		binary.LittleEndian.PutUint32(b[8:], v)
		return b
	}
	// A header whose tensor extent overflows int64 (offset + size wraps negative), with
	// a valid checksum: a crafted file, not a damaged one.
	overflow := func() []byte {
		hlen := binary.LittleEndian.Uint32(good[12:])
		var h map[string]any
		require.NoError(t, json.Unmarshal(good[16:16+hlen], &h))
		h["tensors"].([]any)[0].(map[string]any)["offset"] = int64(math.MaxInt64 - 2)
		hj, err := json.Marshal(h)
		require.NoError(t, err)
		b := append([]byte{}, good[:12]...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(hj)))
		b = append(b, hj...)
		b = append(b, good[16+hlen:len(good)-4]...)
		return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	}()
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrCorrupt},
		{"extent past int64", overflow, ErrCorrupt},
		{"truncated", good[:len(good)-9], ErrCorrupt},
		{"flipped payload byte", flip(good, len(good)-6), ErrCorrupt},
		{"flipped header byte", flip(good, 20), ErrCorrupt},
		{"bad magic", flip(good, 0), ErrCorrupt},
		{"newer version", withVersion(FormatVersion + 1), ErrVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.ckpt")
			require.NoError(t, os.WriteFile(path, tc.data, 0o644))
			_, err := Load(path)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.want), "got %v", err)
		})
	}
	_, err = Load(filepath.Join(t.TempDir(), "missing.ckpt"))
	assert.Error(t, err)
}

func flip(b []byte, i int) []byte {
	out := append([]byte{}, b...)
	out[i] ^= 0x40
	return out
}

func TestAssignErrors(t *testing.T) {
	f, _ := sampleFile(t)
	store := model.NewStore()
	wrongShape, err := store.RootScope().In("m").CreateVariable("w", tensors.FromShape(tensors.FromFlatDataAndDimensions([]float32{1, 2}, 2).Shape()))
	require.NoError(t, err)
	assert.Error(t, f.Assign([]*model.Variable{wrongShape}, "/m/"), "shape mismatch")
	missing, err := store.RootScope().In("m").CreateVariable("nope", tensors.FromFlatDataAndDimensions([]float32{1}, 1))
	require.NoError(t, err)
	assert.Error(t, f.Assign([]*model.Variable{missing}, "/m/"), "missing tensor")
	assert.Error(t, f.Assign([]*model.Variable{missing}, "/other/"), "outside prefix")
}

func TestEncodeValidates(t *testing.T) {
	_, err := Encode(&File{Tensors: []Tensor{{Name: "a", DType: dtypes.Float32, Dims: []int{2}, Data: make([]byte, 4)}}})
	assert.Error(t, err, "short data")
	_, err = Encode(&File{Tensors: []Tensor{
		{Name: "a", DType: dtypes.Float32, Dims: []int{1}, Data: make([]byte, 4)},
		{Name: "a", DType: dtypes.Float32, Dims: []int{1}, Data: make([]byte, 4)},
	}})
	assert.Error(t, err, "duplicate name")
}

// TestSaveKeepsModeAndLinks: a replaced checkpoint keeps its permissions (a 0644 one
// stays readable by the server that loads it) and a symbolic link is written through.
func TestSaveKeepsModeAndLinks(t *testing.T) {
	f, _ := sampleFile(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "v2.ckpt")
	require.NoError(t, Save(target, f))
	require.NoError(t, os.Chmod(target, 0o644))
	link := filepath.Join(dir, "current.ckpt")
	require.NoError(t, os.Symlink("v2.ckpt", link))
	require.NoError(t, Save(link, f))
	st, err := os.Stat(target)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	lst, err := os.Lstat(link)
	require.NoError(t, err)
	assert.NotZero(t, lst.Mode()&os.ModeSymlink, "the link stays a link")
	_, err = Load(link)
	require.NoError(t, err)
}
