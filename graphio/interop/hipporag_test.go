package interop

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/graphio/interop/interoptest"
)

func writeHippo(t testing.TB) (string, *interoptest.HippoRAG) {
	t.Helper()
	h := interoptest.HippoSample()
	dir := filepath.Join(t.TempDir(), "outputs")
	require.NoError(t, h.Write(dir))
	return dir, h
}

func readJSON(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(b, &v), path)
	return v
}

func readStore(t *testing.T, path string) []hippoRow {
	t.Helper()
	rows, err := parquet.ReadFile[hippoRow](path)
	require.NoError(t, err)
	return rows
}

func TestImportHippoRAG(t *testing.T) {
	dir, h := writeHippo(t)
	ix, rep, err := ImportHippoRAG(dir)
	require.NoError(t, err)
	require.Len(t, ix.Chunks, 3)
	for i, c := range ix.Chunks {
		assert.Equal(t, h.Docs[i].Passage, chunkContent(&c))
	}
	assert.Equal(t, "chunk-"+md5hex(h.Docs[0].Passage), ix.Chunks[0].ID, "HippoRAG's passage id is graphloom's")
	assert.Len(t, ix.Facts, 6, "the two-part triple is dropped, as HippoRAG drops it")
	assert.Contains(t, rep.Notices[0], "1 triples")
	f := factByNames(ix, "tomas brell", "born in", "fennmouth")
	require.NotNil(t, f)
	// graphloom's fact id is HippoRAG's.
	var sc hippoSidecar
	require.NoError(t, decodeSidecar(ix.Blobs[hippoBlob], &sc))
	assert.Contains(t, sc.Stores["fact"].IDs, f.ID)
	assert.Contains(t, sc.Stores["entity"].IDs, ix.Entities[f.Subject].ID)
	assert.Equal(t, 6, sc.Stores["chunk"].Dim)
	assert.Equal(t, h.WorkingDir(), sc.WorkingDir)
	ents := map[string]bool{}
	for _, e := range ix.Entities {
		ents[e.Name] = true
	}
	assert.True(t, ents["1785"], "NER entities become entities with mentions")
}

func TestHippoRAGRoundTrip(t *testing.T) {
	dir, h := writeHippo(t)
	ix1, _, err := ImportHippoRAG(dir)
	require.NoError(t, err)
	gl := filepath.Join(t.TempDir(), "x.gl")
	require.NoError(t, graphio.WriteFile(gl, ix1))
	stored, err := graphio.ReadFile(gl)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "out")
	rep, err := ExportHippoRAG(stored, out)
	require.NoError(t, err)
	assert.Empty(t, rep.Dropped)
	assert.Equal(t, readJSON(t, filepath.Join(dir, h.OpenIEFile())), readJSON(t, filepath.Join(out, h.OpenIEFile())))
	for _, kind := range hippoStores {
		p := filepath.Join(h.WorkingDir(), kind+"_embeddings", "vdb_"+kind+".parquet")
		assert.Equal(t, readStore(t, filepath.Join(dir, p)), readStore(t, filepath.Join(out, p)), kind)
	}
	ix2, _, err := ImportHippoRAG(out)
	require.NoError(t, err)
	assert.Equal(t, ix1.Chunks, ix2.Chunks)
	assert.Equal(t, ix1.Entities, ix2.Entities)
	assert.Equal(t, ix1.Facts, ix2.Facts)
	assert.Equal(t, ix1.Mentions, ix2.Mentions)
	var s1, s2 hippoSidecar
	require.NoError(t, decodeSidecar(ix1.Blobs[hippoBlob], &s1))
	require.NoError(t, decodeSidecar(ix2.Blobs[hippoBlob], &s2))
	assert.Equal(t, s1, s2)
}

func TestHippoRAGExportAugmented(t *testing.T) {
	dir, h := writeHippo(t)
	ix, _, err := ImportHippoRAG(dir)
	require.NoError(t, err)
	run := "aug-1"
	ix.Runs = []graphio.Run{{ID: run, Kind: "augment"}}
	b := graphio.NewBuilder(ix, run)
	s, _ := b.EntityIndex("tomas brell")
	o, _ := b.EntityIndex("gull rock")
	_, _, err = b.AddFactIDs(s, "owned the ship wrecked on", o, []int32{1, 2})
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "out")
	rep, err := ExportHippoRAG(ix, out)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Dropped["store rows for entities and facts graphloom added (HippoRAG embeds missing rows on its next index())"])
	var openie struct {
		Docs []struct {
			Idx      string     `json:"idx"`
			Entities []string   `json:"extracted_entities"`
			Triples  [][]string `json:"extracted_triples"`
		} `json:"docs"`
	}
	b2, err := os.ReadFile(filepath.Join(out, h.OpenIEFile()))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b2, &openie))
	want := []string{"tomas brell", "owned the ship wrecked on", "gull rock"}
	for i, d := range openie.Docs {
		has := false
		for _, t := range d.Triples {
			has = has || (len(t) == 3 && t[0] == want[0] && t[1] == want[1] && t[2] == want[2])
		}
		assert.Equal(t, i >= 1, has, "doc %d: appended to every cited chunk", i)
	}
	assert.Contains(t, openie.Docs[1].Entities, "gull rock")
	var hidden struct {
		Triples []struct {
			Triple   []string `json:"triple"`
			ChunkIDs []string `json:"chunk_ids"`
			Run      string   `json:"run"`
		} `json:"triples"`
	}
	b3, err := os.ReadFile(filepath.Join(out, "hidden_triplet_results_Qwen_Qwen3-32B.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b3, &hidden))
	require.Len(t, hidden.Triples, 1)
	assert.Equal(t, want, hidden.Triples[0].Triple)
	assert.Equal(t, []string{openie.Docs[1].Idx, openie.Docs[2].Idx}, hidden.Triples[0].ChunkIDs)
	assert.Equal(t, run, hidden.Triples[0].Run)

	// Importing the export gives the augmented triple as an extracted fact of both chunks.
	ix2, _, err := ImportHippoRAG(out)
	require.NoError(t, err)
	f := factByNames(ix2, want[0], want[1], want[2])
	require.NotNil(t, f)
	assert.Equal(t, []int32{1, 2}, f.Chunks)
}

func TestHippoRAGExportNative(t *testing.T) {
	ix := nativeIndex(t)
	out := filepath.Join(t.TempDir(), "out")
	rep, err := ExportHippoRAG(ix, out)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Dropped["synonym edges (HippoRAG recomputes them from entity vectors)"])
	assert.Equal(t, len(ix.Facts), rep.Counts["vectors.fact"])
	back, _, err := ImportHippoRAG(out)
	require.NoError(t, err)
	assert.Len(t, back.Chunks, len(ix.Chunks))
	for i := range ix.Chunks {
		assert.Equal(t, ix.Chunks[i].ID, back.Chunks[i].ID)
	}
	f := factByNames(back, "alder vane", "built hall in", "ostrid ford")
	require.NotNil(t, f, "the augmented fact is in the OpenIE results of its chunks")
	assert.Equal(t, []int32{1, 2}, f.Chunks)
	assert.Len(t, back.Facts, len(ix.Facts))
	var sc hippoSidecar
	require.NoError(t, decodeSidecar(back.Blobs[hippoBlob], &sc))
	assert.Equal(t, 4, sc.Stores["entity"].Dim)
	for _, fct := range ix.Facts {
		assert.Contains(t, sc.Stores["fact"].IDs, fct.ID)
	}
}

func TestHippoRAGBadInput(t *testing.T) {
	for _, tc := range []struct{ name, file, content, want string }{
		{"not json", "openie", `{"docs": [`, "openie_results_ner_Qwen_Qwen3-32B.json"},
		{"docs not a list", "openie", `{"docs": 3}`, "docs: want a list"},
		{"bad doc", "openie", `{"docs": [{"passage": 1}]}`, "docs[0]"},
		{"bad parquet", "chunk", "PAR1 not really", "vdb_chunk.parquet: malformed parquet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, h := writeHippo(t)
			p := filepath.Join(dir, h.OpenIEFile())
			if tc.file != "openie" {
				p = filepath.Join(dir, h.WorkingDir(), tc.file+"_embeddings", "vdb_"+tc.file+".parquet")
			}
			require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o644))
			_, _, err := ImportHippoRAG(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, _, err := ImportHippoRAG(t.TempDir())
	assert.ErrorContains(t, err, "no openie_results_ner_")
}
