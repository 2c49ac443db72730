package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/graphio/interop/interoptest"
)

// TestImportedIndexAddDelete checks that the index of every importer can be added to
// and deleted from: a new document added to an imported index is extracted and found
// by its words, and deleting an imported document takes its chunks away.
func TestImportedIndexAddDelete(t *testing.T) {
	for _, tc := range []struct {
		from  string
		write func(dir string) error
	}{
		{"lightrag", func(dir string) error { return interoptest.Sample().Write(dir) }},
		{"hipporag", func(dir string) error { return interoptest.HippoSample().Write(dir) }},
		{"gfmrag", func(dir string) error { return interoptest.GFMSample().WriteV2(dir) }},
		{"graphrag", func(dir string) error { return interoptest.GraphRAGSample().Write(dir) }},
	} {
		t.Run(tc.from, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			require.NoError(t, tc.write(src))
			idx := filepath.Join(dir, "x.gl")
			r := run(t, nil, "import", "--from", tc.from, src, "--out", idx)
			require.Equal(t, 0, r.code, r.stderr)
			before, err := graphio.ReadFile(idx)
			require.NoError(t, err)

			corpus := filepath.Join(dir, "new.json")
			b, err := json.Marshal([]map[string]string{{"title": "Quarry Vell", "text": "Quarry Vell is a slate quarry above Port Keswyn. Mara Oduya ran the Quarry Vell pumps."}})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(corpus, b, 0o644))
			r = run(t, nil, "index", "--add", corpus, "--index", idx)
			require.Equal(t, 2, r.code, "the framework's extractor cannot run: say so")
			assert.Contains(t, r.stderr, "give --extractor rule")
			r = run(t, nil, "index", "--add", corpus, "--index", idx, "--extractor", "rule")
			require.Equal(t, 0, r.code, r.stderr)
			added, err := graphio.ReadFile(idx)
			require.NoError(t, err)
			assert.Len(t, added.Documents, len(before.Documents)+1)
			assert.Greater(t, len(added.Chunks), len(before.Chunks))
			facts := map[string]bool{}
			for _, f := range added.Facts {
				facts[f.ID] = true
			}
			for _, f := range before.Facts {
				assert.True(t, facts[f.ID], "imported fact %s kept", f.ID)
			}
			r = run(t, nil, "query", "--index", idx, "--retriever", "bm25", "--top-k", "1", "slate quarry pumps")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stdout, "Quarry Vell")

			r = run(t, nil, "delete", "--index", idx, "--doc", before.Documents[0].ID)
			require.Equal(t, 0, r.code, r.stderr)
			deleted, err := graphio.ReadFile(idx)
			require.NoError(t, err)
			assert.Len(t, deleted.Documents, len(added.Documents)-1)
			for _, c := range deleted.Chunks {
				assert.NotEqual(t, before.Documents[0].ID, deleted.Documents[c.Doc].ID)
			}
		})
	}
}
