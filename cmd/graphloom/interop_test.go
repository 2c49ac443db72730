package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/graphio/interop"
	"github.com/graphloom/graphloom/graphio/interop/interoptest"
)

// TestLightRAGImportAugmentExport is the interop acceptance path: a LightRAG index is
// imported, queried, augmented offline and exported; the export holds the new
// relations with the LightRAG ids of the chunks they cite and the run id.
func TestLightRAGImportAugmentExport(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "rag_storage")
	require.NoError(t, interoptest.Sample().Write(src))
	idx := filepath.Join(dir, "x.gl")
	r := run(t, nil, "import", "--from", "lightrag", src, "--out", idx, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var imp struct {
		Report interop.Report `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &imp))
	assert.Equal(t, 5, imp.Report.Counts["chunks"])
	assert.Equal(t, 7, imp.Report.Counts["entities"])
	assert.Contains(t, strings.Join(imp.Report.Notices, "\n"), "embedded with graphloom's hash-tfidf")

	r = run(t, nil, "query", "--index", idx, "--retriever", "ppr", "--top-k", "2", "--json", "Where was the Gannet wrecked?")
	require.Equal(t, 0, r.code, r.stderr)
	var q struct {
		Passages []struct {
			ChunkID string `json:"chunk_id"`
			Text    string `json:"text"`
		} `json:"passages"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &q), r.stdout)
	require.Len(t, q.Passages, 2)
	assert.Contains(t, q.Passages[0].Text+q.Passages[1].Text, "wrecked on Gull Rock")

	r = run(t, nil, "augment", "--index", idx, "--selector", "random", "--completer", "extractive", "--budget", "8", "--roots", "8", "--max-jaccard", "1", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	ix, err := graphio.ReadFile(idx)
	require.NoError(t, err)
	require.Len(t, ix.Runs, 1)
	runID := ix.Runs[0].ID
	var added []graphio.Fact
	for _, f := range ix.Facts {
		if f.Run == runID {
			added = append(added, f)
		}
	}
	require.NotEmpty(t, added, "the extractive completer adds cross-chunk facts")

	out := filepath.Join(dir, "exported")
	r = run(t, nil, "export", "--to", "lightrag", idx, out)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "not representable in lightrag (dropped)")
	chunkKeys := map[string]bool{}
	var chunks map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(out, "kv_store_text_chunks.json"))), &chunks))
	for k := range chunks {
		chunkKeys[k] = true
	}
	fx := interoptest.Sample()
	for _, c := range fx.Chunks {
		assert.True(t, chunkKeys[interoptest.ChunkID(c.Content)], "LightRAG's chunk keys are kept")
	}
	f, err := os.Open(filepath.Join(out, interop.LightRAGGraphFile))
	require.NoError(t, err)
	g, err := interop.DecodeGraphML(f, interop.LightRAGGraphFile)
	f.Close()
	require.NoError(t, err)
	withRun := 0
	for _, e := range g.Edges {
		if !strings.Contains(e.Data["description"], runID) {
			continue
		}
		withRun++
		ids := strings.Split(e.Data["source_id"], interop.SEP)
		require.NotEmpty(t, ids)
		for _, id := range ids {
			assert.True(t, chunkKeys[id], "source_id %q is a LightRAG chunk key", id)
		}
	}
	assert.GreaterOrEqual(t, withRun, 1)
	assert.LessOrEqual(t, withRun, len(added), "facts of one pair merge into one relation")

	// The export imports again, with the augmented facts as facts.
	again := filepath.Join(dir, "again.gl")
	r = run(t, nil, "import", "--from", "lightrag", out, "--out", again)
	require.Equal(t, 0, r.code, r.stderr)
	ix2, err := graphio.ReadFile(again)
	require.NoError(t, err)
	assert.Len(t, ix2.Facts, len(g.Edges)-1, "one fact per relation but the Port Keswyn self-loop")

	// GraphML for NetworkX and friends.
	gml := filepath.Join(dir, "x.graphml")
	r = run(t, nil, "export", "--to", "graphml", idx, gml)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, readFile(t, gml), runID)
}

func TestInteropUsage(t *testing.T) {
	dir, outDir := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"import", "--from", "nope", dir, "--out", filepath.Join(dir, "x.gl")}, 2, `unknown format "nope"`},
		{[]string{"import", "--from", "graphrag", dir, "--out", filepath.Join(outDir, "x.gl")}, 1, "text_units.parquet"},
		{[]string{"import", "--from", "lightrag", dir}, 2, "--out is required"},
		{[]string{"import", "--from", "lightrag", dir, "--out", filepath.Join(outDir, "x.gl")}, 1, "no kv_store_text_chunks.json"},
		{[]string{"export", "--to", "neo4j", "x.gl", dir}, 2, `unknown format "neo4j"`},
		{[]string{"export", "--to", "graphml", filepath.Join(dir, "missing.gl"), dir}, 1, "missing.gl"},
	} {
		r := run(t, nil, tc.args...)
		assert.Equal(t, tc.code, r.code, "%v: %s", tc.args, r.stderr)
		assert.Contains(t, r.stderr, tc.want, tc.args)
	}
	// Malformed input names the file and the record.
	src := filepath.Join(dir, "bad")
	require.NoError(t, interoptest.Sample().Write(src))
	require.NoError(t, os.WriteFile(filepath.Join(src, "kv_store_text_chunks.json"), []byte(`{"chunk-x": {"content": 7}}`), 0o644))
	r := run(t, nil, "import", "--from", "lightrag", src, "--out", filepath.Join(dir, "y.gl"))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, `kv_store_text_chunks.json: record "chunk-x"`)
	_, err := os.Stat(filepath.Join(dir, "y.gl"))
	assert.True(t, os.IsNotExist(err), "nothing is written")
}

// TestExportDirGuard: export fills a new directory, or one it filled before; a
// directory holding another tool's files (the LightRAG working directory an index was
// imported from) is written into only with --force.
func TestExportDirGuard(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "rag_storage")
	require.NoError(t, interoptest.Sample().Write(src))
	idx := filepath.Join(dir, "x.gl")
	r := run(t, nil, "import", "--from", "lightrag", src, "--out", idx)
	require.Equal(t, 0, r.code, r.stderr)
	graphFile := filepath.Join(src, interop.LightRAGGraphFile)
	original := readFile(t, graphFile)

	for _, to := range []string{"lightrag", "hipporag", "gfmrag", "graphrag"} {
		t.Run(to, func(t *testing.T) {
			out := filepath.Join(dir, "out-"+to)
			for i := range 2 { // a new directory, then the one it wrote
				r := run(t, nil, "export", "--to", to, idx, out)
				require.Equal(t, 0, r.code, "export %d: %s", i, r.stderr)
			}
			assert.Contains(t, readFile(t, filepath.Join(out, exportMarker)), `"format": "`+to+`"`)
		})
	}

	r = run(t, nil, "export", "--to", "lightrag", idx, src)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "holds files graphloom did not write")
	assert.Equal(t, original, readFile(t, graphFile), "the LightRAG store is untouched")
	_, err := os.Stat(filepath.Join(src, exportMarker))
	assert.True(t, os.IsNotExist(err))

	// Another tool working in an exported directory makes it its own: a changed or an
	// added file is not replaced without --force.
	out := filepath.Join(dir, "out-lightrag")
	kv := filepath.Join(out, "kv_store_text_chunks.json")
	before := readFile(t, kv)
	require.NoError(t, os.WriteFile(kv, []byte(before+" "), 0o644))
	r = run(t, nil, "export", "--to", "lightrag", idx, out)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "holds kv_store_text_chunks.json, changed since graphloom exported there")
	require.NoError(t, os.WriteFile(kv, []byte(before), 0o644))
	r = run(t, nil, "export", "--to", "lightrag", "--force", idx, out)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.WriteFile(filepath.Join(out, "lightrag_notes.json"), []byte("{}"), 0o644))
	r = run(t, nil, "export", "--to", "lightrag", idx, out)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "holds lightrag_notes.json, which graphloom's export did not write there")

	// Through a symbolic link to the directory, the same.
	link := filepath.Join(dir, "out-link")
	require.NoError(t, os.Symlink(out, link))
	r = run(t, nil, "export", "--to", "lightrag", idx, link)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "holds lightrag_notes.json")

	// A marker of the first format (no file list) or of an export cut short is ours.
	require.NoError(t, os.Remove(filepath.Join(out, "lightrag_notes.json")))
	for _, marker := range []string{`{"written_by": "graphloom export", "format": "lightrag"}`,
		`{"written_by": "graphloom export", "format": "lightrag", "files": {}, "in_progress": true}`} {
		require.NoError(t, os.WriteFile(filepath.Join(out, exportMarker), []byte(marker), 0o644))
		r = run(t, nil, "export", "--to", "lightrag", idx, out)
		require.Equal(t, 0, r.code, "%s: %s", marker, r.stderr)
	}

	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	r = run(t, nil, "export", "--to", "lightrag", idx, empty)
	assert.Equal(t, 0, r.code, "an empty directory is filled: %s", r.stderr)

	r = run(t, nil, "export", "--to", "lightrag", "--force", idx, src)
	require.Equal(t, 0, r.code, r.stderr)
	assert.FileExists(t, filepath.Join(src, exportMarker))

	// An export into a directory it made, killed after writing a file, is rerun
	// without --force: the directory is marked before the exporter writes.
	killed := filepath.Join(dir, "new", "killed")
	require.NoError(t, startExport(killed, "lightrag", idx))
	require.NoError(t, os.WriteFile(filepath.Join(killed, "kv_store_text_chunks.json"), []byte(`{"chunk-`), 0o644))
	r = run(t, nil, "export", "--to", "lightrag", idx, killed)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, readFile(t, filepath.Join(killed, exportMarker)), `"in_progress": true`)
}
