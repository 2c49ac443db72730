package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/models/encoder/encodertest"
)

// TestDeleteWithLocalEmbedder: deleting a document from an index embedded with a
// local model rebuilds its graph, which may hold texts the index never embedded:
// here "Keswyn", named in 11 of 210 passages, is a generic name (over 5 % of the
// chunks) until one of them goes, then an entity with facts. They are embedded with
// the index's own model folder.
func TestDeleteWithLocalEmbedder(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "mini")
	_, err := encodertest.Write(model, encodertest.Spec{SentenceTransformers: true, Normalize: true, Seed: 1})
	require.NoError(t, err)
	var ps []map[string]string
	for i := range 210 {
		text := fmt.Sprintf("Tomas Brell%d founded Quillhaven%d in %d.", i, i, 1600+i)
		if i < 11 {
			text = fmt.Sprintf("Mara Vell%d sailed to Keswyn in %d.", i, 1600+i)
		}
		ps = append(ps, map[string]string{"title": fmt.Sprintf("Passage %d", i), "text": text})
	}
	corpus := filepath.Join(dir, "corpus.json")
	b, err := json.Marshal(ps)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(corpus, b, 0o644))
	idx := filepath.Join(dir, "x.gl")
	r := run(t, nil, "index", "--quiet", "--corpus", corpus, "--out", idx, "--embedder", "local:"+model)
	require.Equal(t, 0, r.code, r.stderr)
	generic := func(path string) int {
		r := run(t, nil, "stats", "--index", path, "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var st struct {
			Filtered map[string]int `json:"filtered_entities"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
		return st.Filtered["generic"]
	}
	require.Equal(t, 1, generic(idx), "Keswyn is a generic name")

	out := filepath.Join(dir, "y.gl")
	r = run(t, nil, "delete", "--index", idx, "--title", "Passage 0", "--merge", "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 0, generic(out), "Keswyn is an entity again")
	r = run(t, nil, "query", "--index", out, "--retriever", "ppr", "--json", "Who sailed to Keswyn?")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"keswyn"`, "its facts are linked")
}
