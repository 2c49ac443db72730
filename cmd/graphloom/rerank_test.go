package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/rerank"
)

func TestRerankCage(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "h.gl")
	r := run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idx)
	require.Equal(t, 0, r.code, r.stderr)

	// Untrained: reranking works and says so; wrong flags are usage errors.
	r = run(t, nil, "eval", "--index", idx, "--dataset", "../../examples/harbour/questions.json", "--pool", "question")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--pool needs --rerank")
	r = run(t, nil, "query", "--index", idx, "--retriever", "bm25", "--rerank", "colbert", "Where was Tomas Brell born?")
	assert.Equal(t, 2, r.code, r.stderr)

	r = run(t, nil, "train", "cage", "--index", idx, "--steps", "6")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "6 steps")
	for _, suffix := range []string{".cage", ".cage.log.jsonl", ".cage.png"} {
		_, err := os.Stat(idx + suffix)
		require.NoError(t, err, suffix)
	}

	r = run(t, nil, "query", "--index", idx, "--retriever", "bm25", "--candidates", "10", "--rerank", "cage", "--top-k", "5", "--json",
		"In which town was the father of Mira Solenne born?")
	require.Equal(t, 0, r.code, r.stderr)
	var line struct {
		Retriever string `json:"retriever"`
		Passages  []struct {
			Score float64 `json:"score"`
		} `json:"passages"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &line), r.stdout)
	assert.Len(t, line.Passages, 5)
	for i := 1; i < len(line.Passages); i++ {
		assert.GreaterOrEqual(t, line.Passages[i-1].Score, line.Passages[i].Score)
	}

	r = run(t, nil, "eval", "--index", idx, "--dataset", "../../examples/harbour/questions.json", "--rerank", "cage",
		"--pool", "question", "--ablate", "--ks", "2,5")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "encoder "+idx+".cage")
	for _, row := range []string{"| bm25 | none |", "| dense | none |", "| dense | dense |", "| dense | cage |",
		"| dense | cage: GCN (one relation) |", "| dense | cage: beta=1 |", "| dense | cage: alpha=1 |"} {
		assert.Contains(t, r.stdout, row)
	}
	// The GCN ablation has no checkpoint here and says it runs untrained.
	assert.Contains(t, r.stdout, "untrained encoder (no "+idx+".cage-gcn")

	// Pools of nothing but gold passages rank perfectly: refused, unless distractors
	// are added.
	goldOnly := filepath.Join(t.TempDir(), "gold-only.json")
	require.NoError(t, os.WriteFile(goldOnly, []byte(`[{"id": "g1", "question": "Where was Tomas Brell born?", "answer": "Aldwick",
 "paragraphs": [{"title": "Tomas Brell", "paragraph_text": "Tomas Brell was born in Aldwick.", "is_supporting": true}]},
 {"id": "g2", "question": "Who built the lighthouse?", "answer": "Jory Solenne",
 "paragraphs": [{"title": "Tallow Point", "paragraph_text": "Jory Solenne built the lighthouse.", "is_supporting": true}]}]`), 0o644))
	r = run(t, nil, "eval", "--index", idx, "--dataset", goldOnly, "--rerank", "dense", "--pool", "question")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "every question's pool holds only its gold passages")
	r = run(t, nil, "eval", "--index", idx, "--dataset", goldOnly, "--rerank", "dense", "--pool", "question", "--pool-distractors", "1")
	assert.Equal(t, 0, r.code, r.stderr)

	r = run(t, nil, "eval", "--index", idx, "--dataset", "../../examples/harbour/questions.json", "--rerank", "cage",
		"--pool", "question", "--sweep", "cage-alpha=0.5,1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "| dense | cage alpha=0.5 |")
	assert.Contains(t, r.stdout, "| dense | cage alpha=1 |")
	// α = 1 is the cosine ranking: its row equals the dense row.
	rowOf := func(name string) string {
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, "| dense | "+name+" |") {
				f := strings.Split(l, "|")
				return strings.Join(f[3:len(f)-2], "|")
			}
		}
		return "missing"
	}
	assert.Equal(t, rowOf("dense"), rowOf("cage alpha=1"))
}

// TestCageBetaFromCheckpoint: a trained encoder keeps the β its features were trained
// with unless --cage-beta (or the β = 1 ablation) gives one.
func TestCageBetaFromCheckpoint(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "x.gl")
	eng, err := engine.New(engine.Config{})
	require.NoError(t, err)
	defer eng.Close()
	cfg := rerank.DefaultConfig()
	cfg.Encoder.Beta = 3
	enc, err := rerank.NewEncoder(eng, cfg.Encoder)
	require.NoError(t, err)
	require.NoError(t, enc.Save(idx+".cage", nil))
	ix := &graphio.Index{}
	for _, tc := range []struct {
		args      []string
		betaGiven bool
		want      float64
	}{
		{nil, false, 3},
		{[]string{"--cage-beta", "1.5"}, false, 1.5},
		{nil, true, 2}, // a variant's own β (the flags' default here)
	} {
		cmd := &cobra.Command{Use: "x"}
		var c cageFlags
		c.register(cmd, false)
		require.NoError(t, cmd.ParseFlags(tc.args))
		r, _, err := c.reranker(eng, idx, ix, c.cfg, tc.betaGiven || c.betaGiven())
		require.NoError(t, err)
		assert.Equal(t, tc.want, r.Encoder().Config().Beta, "%v given=%v", tc.args, tc.betaGiven)
	}
}

// TestCageSweepKeepsOutOfTheAblation: a β sweep sets --cage-beta for its own rows
// only. The ablation rows start from the flags as given (β not given: the trained
// encoder's, betaGiven false), apart from the β = 1 row, and the configuration the
// flags filled is restored (the flag itself stays marked as set).
func TestCageSweepKeepsOutOfTheAblation(t *testing.T) {
	cmd := &cobra.Command{Use: "x"}
	var c cageFlags
	c.register(cmd, false)
	require.NoError(t, cmd.ParseFlags([]string{"--cage-alpha", "0.7"}))
	base := c.cfg
	vs, err := c.cageVariants(cmd, []string{"cage-beta=1.5,4"}, true)
	require.NoError(t, err)
	type row struct {
		name        string
		beta, alpha float64
		given       bool
	}
	var got []row
	for _, v := range vs {
		if v.cfg == nil {
			got = append(got, row{name: v.name})
			continue
		}
		got = append(got, row{v.name, v.cfg.Encoder.Beta, v.cfg.Alpha, v.betaGiven})
	}
	assert.Equal(t, []row{
		{name: "none"}, {name: "dense"},
		{"cage beta=1.5", 1.5, 0.7, true}, {"cage beta=4", 4, 0.7, true},
		{"cage: GCN (one relation)", base.Encoder.Beta, 0.7, false},
		{"cage: beta=1", 1, 0.7, true},
		{"cage: alpha=1", base.Encoder.Beta, 1, false},
	}, got)
	assert.Equal(t, base, c.cfg, "the flags as given, after the sweep")
}
