package interop

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/graphio/interop/interoptest"
)

// FuzzDecodeGraphML: any input decodes or fails with an error, never a panic.
func FuzzDecodeGraphML(f *testing.F) {
	var buf bytes.Buffer
	if _, err := WriteGraphML(&buf, nativeIndex(f)); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`<graphml><key id="d0" for="node" attr.name="x"/><graph><node id="a"><data key="d0">1</data></node><edge source="a" target="a"/></graph></graphml>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := DecodeGraphML(bytes.NewReader(data), "fuzz.graphml")
		if err != nil {
			return
		}
		_ = g.check("fuzz.graphml")
		var out bytes.Buffer
		if err := g.Encode(&out); err != nil {
			t.Fatalf("a decoded graph does not encode: %v", err)
		}
	})
}

// lightragFiles returns the files of the sample LightRAG index.
func lightragFiles(tb testing.TB) map[string][]byte {
	dir := tb.TempDir()
	if err := interoptest.Sample().Write(dir); err != nil {
		tb.Fatal(err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	files := map[string][]byte{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			tb.Fatal(err)
		}
		files[e.Name()] = b
	}
	return files
}

// FuzzImportLightRAG replaces one file of a valid LightRAG index by the fuzzer's bytes:
// the import fails with an error naming a file, or gives a valid index that exports.
func FuzzImportLightRAG(f *testing.F) {
	files := lightragFiles(f)
	var names []string
	for _, n := range []string{LightRAGGraphFile, "kv_store_text_chunks.json", "kv_store_full_docs.json", "vdb_entities.json", "vdb_chunks.json", "kv_store_entity_chunks.json"} {
		names = append(names, n)
		f.Add(uint8(len(names)-1), files[n])
	}
	f.Add(uint8(0), []byte(strings.Replace(string(files[LightRAGGraphFile]), "<data key=\"d6\">2</data>", "<data key=\"d6\">NaN</data>", 1)))
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		discard := func(_ string, fn func(io.Writer) error) error { return fn(io.Discard) }
		checkImport(t, files, names[int(which)%len(names)], data, ImportLightRAG,
			func(ix *graphio.Index, dir string) error { _, err := exportLightRAG(ix, dir, discard); return err })
	})
}

// FuzzImportHippoRAG replaces the OpenIE results or an embedding store of a valid
// HippoRAG save directory by the fuzzer's bytes.
func FuzzImportHippoRAG(f *testing.F) {
	h := interoptest.HippoSample()
	dir := f.TempDir()
	if err := h.Write(dir); err != nil {
		f.Fatal(err)
	}
	names := []string{h.OpenIEFile(), filepath.Join(h.WorkingDir(), "chunk_embeddings", "vdb_chunk.parquet"), filepath.Join(h.WorkingDir(), "fact_embeddings", "vdb_fact.parquet")}
	files := seedFiles(f, dir, names)
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		checkImport(t, files, names[int(which)%len(names)], data, ImportHippoRAG,
			func(ix *graphio.Index, dir string) error { _, err := ExportHippoRAG(ix, dir); return err })
	})
}

// FuzzImportGFMRAG replaces one file of a valid GFM-RAG v2 dataset by the fuzzer's bytes.
func FuzzImportGFMRAG(f *testing.F) {
	dir := f.TempDir()
	if err := interoptest.GFMSample().WriteV2(dir); err != nil {
		f.Fatal(err)
	}
	names := []string{gfmStage1 + "/nodes.csv", gfmStage1 + "/edges.csv", gfmStage1 + "/relations.csv", gfmDocuments}
	files := seedFiles(f, dir, names)
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		checkImport(t, files, names[int(which)%len(names)], data, ImportGFMRAG,
			func(ix *graphio.Index, dir string) error { _, err := ExportGFMRAG(ix, dir); return err })
	})
}

// FuzzImportGraphRAG replaces one output table of a valid GraphRAG index by the
// fuzzer's bytes.
func FuzzImportGraphRAG(f *testing.F) {
	dir := f.TempDir()
	if err := interoptest.GraphRAGSample().Write(dir); err != nil {
		f.Fatal(err)
	}
	names := []string{"text_units.parquet", "entities.parquet", "relationships.parquet", "documents.parquet"}
	files := seedFiles(f, dir, names)
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		checkImport(t, files, names[int(which)%len(names)], data, ImportGraphRAG,
			func(ix *graphio.Index, dir string) error { _, err := ExportGraphRAG(ix, dir); return err })
	})
}

// checkImport writes files into a fresh directory, with file name replaced by data,
// and imports it: the import fails with an error naming the directory, or gives an
// index that encodes and exports.
func checkImport(t *testing.T, files map[string][]byte, name string, data []byte,
	imp func(dir string) (*graphio.Index, *Report, error), exp func(ix *graphio.Index, dir string) error) {
	t.Helper()
	dir := t.TempDir()
	for n, b := range files {
		if n == name {
			b = data
		}
		p := filepath.Join(dir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ix, _, err := imp(dir)
	if err != nil {
		if !strings.Contains(err.Error(), dir) {
			t.Fatalf("error does not name the file: %v", err)
		}
		return
	}
	var buf bytes.Buffer
	if err := graphio.Write(&buf, ix); err != nil {
		t.Fatalf("imported index does not encode: %v", err)
	}
	if err := exp(ix, filepath.Join(dir, "out")); err != nil {
		t.Fatalf("imported index does not export: %v", err)
	}
}

// seedFiles reads the named files of dir and adds each as a seed (its index, its bytes).
func seedFiles(f *testing.F, dir string, names []string) map[string][]byte {
	files := map[string][]byte{}
	for i, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			f.Fatal(err)
		}
		files[n] = b
		f.Add(uint8(i), b)
	}
	return files
}
