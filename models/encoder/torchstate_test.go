package encoder

import (
	"archive/zip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nlpodyssey/gopickle/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/models/encoder/encodertest"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

// torchFixtures is gopickle's testdata: tensors torch.save wrote (its
// generate_fixtures.py), read here as conformance data for the PyTorch layer.
func torchFixtures(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/nlpodyssey/gopickle").Output()
	require.NoError(t, err, "the gopickle module's folder")
	dir := filepath.Join(strings.TrimSpace(string(out)), "pytorch", "testdata")
	require.DirExists(t, dir)
	return dir
}

// TestUnpickleTorchFixtures reads tensors torch.save wrote, in its zip format under
// pickle protocols 2 to 5: [1.2, -3.4, 5.6, -7.8] in float32, float16, bfloat16 and
// float64. Its older format is refused, and an integer tensor is read as skipped.
func TestUnpickleTorchFixtures(t *testing.T) {
	dir := torchFixtures(t)
	want := []float32{1.2, -3.4, 5.6, -7.8}
	for _, c := range []struct {
		dtype string
		tol   float64
	}{{"float32", 0}, {"float64", 1e-7}, {"float16", 2e-3}, {"bfloat16", 2e-2}} {
		for _, proto := range []string{"2", "3", "4", "5"} {
			name := "tensor_" + c.dtype + "_proto" + proto + "_zip.pt"
			v, err := unpickleTorch(filepath.Join(dir, name))
			require.NoError(t, err, name)
			w, ok := v.(lm.Weight)
			require.True(t, ok, "%s: %T", name, v)
			assert.Equal(t, []int{4}, w.Shape, name)
			require.Len(t, w.Data, 4, name)
			for i := range want {
				assert.InDelta(t, want[i], w.Data[i], c.tol+1e-7, "%s[%d]", name, i)
			}
		}
	}
	_, err := unpickleTorch(filepath.Join(dir, "tensor_float32_proto2.pt"))
	assert.ErrorContains(t, err, "not a zip archive")
	v, err := unpickleTorch(filepath.Join(dir, "tensor_int8_proto2_zip.pt"))
	require.NoError(t, err)
	assert.Equal(t, skippedTensor{}, v)
	_, err = readTorchState(filepath.Join(dir, "tensor_float32_proto2_zip.pt"))
	assert.ErrorContains(t, err, "holds a lm.Weight, want a state dict")
}

// TestReadTorchState reads a state dict as torch.save lays it out, and refuses
// archives whose storages do not hold what the pickle claims.
func TestReadTorchState(t *testing.T) {
	dir := t.TempDir()
	tensors := map[string]lmtest.Tensor{
		"linear.weight": {Shape: []int{2, 3}, Data: []float32{1, 2, 3, 4, 5, 6}},
		"linear.bias":   {Shape: []int{2}, Data: []float32{-0.5, 0.25}},
	}
	path := filepath.Join(dir, "pytorch_model.bin")
	require.NoError(t, encodertest.WriteTorchState(path, []string{"linear.weight", "linear.bias"}, tensors,
		map[string][]int64{"position_ids": {0, 1, 2}}))
	ws, err := readTorchState(path)
	require.NoError(t, err)
	require.Len(t, ws, 2, "the integer buffer is left out")
	for name, tt := range tensors {
		assert.Equal(t, lm.Weight{Shape: tt.Shape, Data: tt.Data}, ws[name], name)
	}

	// rewrite copies the archive with entry edits applied.
	rewrite := func(t *testing.T, edit func(h *zip.FileHeader, data []byte) []byte) string {
		t.Helper()
		zr, err := zip.OpenReader(path)
		require.NoError(t, err)
		defer zr.Close()
		out := filepath.Join(t.TempDir(), "pytorch_model.bin")
		f, err := os.Create(out)
		require.NoError(t, err)
		zw := zip.NewWriter(f)
		for _, e := range zr.File {
			r, err := e.Open()
			require.NoError(t, err)
			data, err := io.ReadAll(r)
			require.NoError(t, err)
			h := e.FileHeader
			data = edit(&h, data)
			w, err := zw.CreateHeader(&h)
			require.NoError(t, err)
			_, err = w.Write(data)
			require.NoError(t, err)
		}
		require.NoError(t, zw.Close())
		require.NoError(t, f.Close())
		return out
	}
	cases := []struct {
		name string
		edit func(h *zip.FileHeader, data []byte) []byte
		want string
	}{
		{"a storage shorter than the pickle says", func(h *zip.FileHeader, data []byte) []byte {
			if strings.HasSuffix(h.Name, "/data/0") {
				return data[:8]
			}
			return data
		}, "storage 0 claims 6 FloatStorage values, its entry holds 8 bytes"},
		{"a compressed storage", func(h *zip.FileHeader, data []byte) []byte {
			if strings.HasSuffix(h.Name, "/data/1") {
				h.Method = zip.Deflate
			}
			return data
		}, "storage 1 is compressed"},
		{"a missing storage", func(h *zip.FileHeader, data []byte) []byte {
			if strings.HasSuffix(h.Name, "/data/1") {
				h.Name = strings.Replace(h.Name, "/data/1", "/data/9", 1)
			}
			return data
		}, "storage 1: no entry data/1 in the archive"},
		{"a class that is not a tensor's", func(h *zip.FileHeader, data []byte) []byte {
			if strings.HasSuffix(h.Name, "/data.pkl") {
				return []byte(strings.Replace(string(data), "ctorch._utils\n_rebuild_tensor_v2\n", "cos\nsystem\n", 1))
			}
			return data
		}, "class os.system is not part of a state dict of tensors"},
		{"a compressed pickle", func(h *zip.FileHeader, data []byte) []byte {
			if strings.HasSuffix(h.Name, "/data.pkl") {
				h.Method = zip.Deflate
			}
			return data
		}, "data.pkl is compressed"},
		{"a big-endian archive", func(h *zip.FileHeader, data []byte) []byte {
			if strings.HasSuffix(h.Name, "/version") {
				h.Name = strings.Replace(h.Name, "/version", "/byteorder", 1)
				return []byte("big")
			}
			return data
		}, `byte order "big"`},
		{"a truncated pickle", func(h *zip.FileHeader, data []byte) []byte {
			if strings.HasSuffix(h.Name, "/data.pkl") {
				return data[:len(data)/2]
			}
			return data
		}, "pytorch_model.bin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := readTorchState(rewrite(t, c.edit))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "pytorch_model.bin", "the error names the file")
		})
	}
}

// TestScanPickle: the opcode scan refuses stated lengths past the end, unterminated
// lines, unknown opcodes, a missing STOP and too many MARKs, before gopickle
// allocates anything; torch's own pickles pass it (TestUnpickleTorchFixtures).
func TestScanPickle(t *testing.T) {
	ok := []byte("\x80\x02X\x03\x00\x00\x00abc.")
	require.NoError(t, scanPickle(ok))
	for _, c := range []struct {
		name, code, want string
	}{
		{"a BINUNICODE longer than the pickle", "\x80\x02X\xff\xff\xff\xffabc.", "states 4294967295 bytes, 4 are left"},
		{"a BINUNICODE8 of 2^62 bytes", "\x80\x04\x8d\x00\x00\x00\x00\x00\x00\x00\x40.", "states 4611686018427387904 bytes"},
		{"a FRAME longer than the pickle", "\x80\x04\x95\x00\x00\x00\x00\x00\x00\x01\x00N.", "FRAME at byte 2 is longer than the pickle"},
		{"a LONG4 cut off", "\x80\x02\x8b\x05\x00", "its length is cut off"},
		{"an unterminated GLOBAL", "\x80\x02ctorch\nFloatStorage", "its line is not terminated"},
		{"a decimal LONG of 5,000 digits", "\x80\x02L" + strings.Repeat("9", 5000) + "L\n.", "not terminated within 4096 bytes"},
		{"an unknown opcode", "\x80\x02\xff.", "unknown opcode 0xff"},
		{"no STOP", "\x80\x02N", "no STOP opcode"},
		{"bytes after STOP", "\x80\x02N.N", "STOP at byte 3, 1 bytes before the end"},
		{"too many MARKs", "\x80\x02" + strings.Repeat("(", maxMarks+1) + ".", "more than 262144 MARK opcodes"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.ErrorContains(t, scanPickle([]byte(c.code)), c.want)
		})
	}
}

// FuzzReadTorchState runs arbitrary data.pkl bytes (seeded with a real state dict's)
// inside an archive whose one storage holds 24 bytes: readTorchState must return a
// state dict or an error, within bounded memory, whatever the pickle says.
func FuzzReadTorchState(f *testing.F) {
	dir := f.TempDir()
	seed := filepath.Join(dir, "seed.bin")
	require.NoError(f, encodertest.WriteTorchState(seed, []string{"w"}, map[string]lmtest.Tensor{"w": {Shape: []int{2, 3}, Data: make([]float32, 6)}},
		map[string][]int64{"position_ids": {0, 1, 2}}))
	zr, err := zip.OpenReader(seed)
	require.NoError(f, err)
	for _, e := range zr.File {
		if strings.HasSuffix(e.Name, "/data.pkl") {
			r, err := e.Open()
			require.NoError(f, err)
			b, err := io.ReadAll(r)
			require.NoError(f, err)
			f.Add(b)
		}
	}
	require.NoError(f, zr.Close())
	f.Add([]byte("\x80\x04\x95\x00\x00\x00\x00\x00\x00\x01\x00N."))
	f.Fuzz(func(t *testing.T, pkl []byte) {
		path := filepath.Join(t.TempDir(), "fuzz.bin")
		out, err := os.Create(path)
		require.NoError(t, err)
		zw := zip.NewWriter(out)
		for _, e := range []struct {
			name string
			data []byte
		}{{"fuzz/data.pkl", pkl}, {"fuzz/data/0", make([]byte, 24)}, {"fuzz/data/1", make([]byte, 24)}, {"fuzz/version", []byte("3\n")}} {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: e.name, Method: zip.Store})
			require.NoError(t, err)
			_, err = w.Write(e.data)
			require.NoError(t, err)
		}
		require.NoError(t, zw.Close())
		require.NoError(t, out.Close())
		ws, err := readTorchState(path)
		if err == nil {
			for name, w := range ws {
				n := 1
				for _, d := range w.Shape {
					n *= d
				}
				assert.Len(t, w.Data, n, name)
			}
		}
	})
}

// TestRebuildTensorShapes: views that do not fit their storage, are not contiguous
// or have a negative size are refused; empty ones are read as empty.
func TestRebuildTensorShapes(t *testing.T) {
	st := &torchStorage{data: []float32{1, 2, 3, 4, 5, 6}}
	tuple := func(v ...int) *types.Tuple {
		out := make(types.Tuple, len(v))
		for i, x := range v {
			out[i] = x
		}
		return &out
	}
	w, err := rebuildTensor{}.Call(st, 2, tuple(2, 2), tuple(2, 1))
	require.NoError(t, err)
	assert.Equal(t, lm.Weight{Shape: []int{2, 2}, Data: []float32{3, 4, 5, 6}}, w)
	w, err = rebuildTensor{}.Call(st, 0, tuple(3, 0), tuple(1, 1))
	require.NoError(t, err)
	assert.Equal(t, lm.Weight{Shape: []int{3, 0}}, w)
	for _, c := range []struct {
		off          int
		size, stride *types.Tuple
		want         string
	}{
		{0, tuple(-3, 0), tuple(1, 1), "tensor of size [-3 0]"},
		{0, tuple(2, 3), tuple(1, 2), "is not contiguous"},
		{3, tuple(2, 2), tuple(2, 1), "at offset 3 does not fit"},
		{0, tuple(1<<40, 1<<40), tuple(1<<40, 1), "does not fit its storage"},
	} {
		_, err := rebuildTensor{}.Call(st, c.off, c.size, c.stride)
		assert.ErrorContains(t, err, c.want)
	}
}
