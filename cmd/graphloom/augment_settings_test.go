package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// TestAugmentFollowsTheIndexGraphSettings: the entities a run adds are linked by
// synonym edges under the index's own graph settings, not the defaults. Every passage
// names "the quillhavens", which no extraction made an entity; the completion adds it.
// Under the defaults (stem synonyms on) it is linked to Quillhaven; in an index built
// with --stem-synonyms=false --synonym-threshold 0.99 it is linked to nothing.
func TestAugmentFollowsTheIndexGraphSettings(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range 8 {
		fmt.Fprintf(&b, "{\"title\":\"Passage %d\",\"text\":\"Mara Vell%d founded Quillhaven in %d. Mara Vell%d was born in Ostrid%d. Mara Vell%d sold salt to the quillhavens.\"}\n", i, i, 1800+i, i, i, i)
	}
	corpus := filepath.Join(dir, "c.jsonl")
	require.NoError(t, os.WriteFile(corpus, []byte(b.String()), 0o644))
	srv := llmtest.NewServer(t)
	srv.SetDefault(func(r llmtest.Request) llmtest.Reply {
		root, passages, ok := crossAugPrompt(r.LastUser())
		if !ok {
			return llmtest.Reply{Content: "{}"} // not a CrossAug prompt: the test then finds no entity added
		}
		for _, p := range passages {
			if strings.Contains(strings.ToLower(p.Passage), strings.ToLower(root)) {
				return llmtest.Reply{Content: fmt.Sprintf(`{"new_triples": [{"triple": [%q, "sold salt to", "quillhavens"], "chunk_ids": [%q]}]}`, root, p.ChunkID)}
			}
		}
		return llmtest.Reply{Content: "{}"}
	})
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=" + filepath.Join(dir, "cache")}
	linked := func(extra ...string) []string {
		idx := filepath.Join(t.TempDir(), "x.gl")
		r := run(t, nil, append([]string{"index", "--quiet", "--corpus", corpus, "--out", idx}, extra...)...)
		require.Equal(t, 0, r.code, r.stderr)
		r = run(t, env, "augment", "--quiet", "--index", idx, "--selector", "random", "--budget", "8", "--roots", "20")
		require.Equal(t, 0, r.code, r.stderr)
		ix, err := graphio.ReadFile(idx)
		require.NoError(t, err)
		q, ok := graphio.NewBuilder(ix, "").EntityIndex("quillhavens")
		require.True(t, ok, "the run added the entity")
		require.NotEmpty(t, ix.Entities[q].Run)
		var out []string
		for _, s := range ix.Synonyms {
			switch q {
			case s.A:
				out = append(out, ix.Entities[s.B].Name)
			case s.B:
				out = append(out, ix.Entities[s.A].Name)
			}
		}
		return out
	}
	assert.Contains(t, linked(), "quillhaven", "the defaults link the inflected name")
	assert.Empty(t, linked("--stem-synonyms=false", "--synonym-threshold", "0.99"), "the index's settings do not")
}
