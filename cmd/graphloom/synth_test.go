package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/llm/llmtest"
)

func TestSynthCLI(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "h.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", "../../examples/harbour/corpus.json", "--out", idx).code)

	// Offline: the template generator writes both kinds of items.
	out := filepath.Join(dir, "qa.jsonl")
	r := run(t, nil, "synth", "--index", idx, "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "(template)")
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	types := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var it struct {
			Type, Question, Answer, Evidence string
			Chunks                           []string `json:"chunk_ids"`
		}
		require.NoError(t, json.Unmarshal(sc.Bytes(), &it))
		types[it.Type]++
		assert.NotEmpty(t, it.Question)
		assert.NotEmpty(t, it.Chunks)
	}
	assert.Positive(t, types["hop"])
	assert.Positive(t, types["sum"])

	// --hyperedges: hyper items whose evidence is hyperedges, not facts.
	hq := filepath.Join(dir, "hyper.jsonl")
	r = run(t, nil, "synth", "--index", idx, "--out", hq, "--hyperedges")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `hyper [1-9][0-9]* of [1-9][0-9]* asked`, r.stdout)
	b, err := os.ReadFile(hq)
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var it struct {
			Type       string
			Facts      []string `json:"fact_ids"`
			Hyperedges []string `json:"hyperedge_ids"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &it))
		assert.Equal(t, "hyper", it.Type)
		assert.Empty(t, it.Facts)
		assert.NotEmpty(t, it.Hyperedges)
	}

	// --plan counts what the LLM would be sent and sends nothing.
	srv := llmtest.NewServer(t)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m"}
	r = run(t, env, "synth", "--index", idx, "--plan")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "nothing sent")
	assert.Zero(t, srv.Count())

	// Usage errors.
	assert.Equal(t, 2, run(t, nil, "synth", "--index", idx, "--out", out, "--generator", "magic").code)
	assert.Equal(t, 2, run(t, nil, "synth", "--index", idx).code, "--out is required without --plan")
}

func TestEvalSweep(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "h.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", "../../examples/harbour/corpus.json", "--out", idx).code)
	ds := "../../examples/harbour/questions.json"
	r := run(t, nil, "eval", "--index", idx, "--dataset", ds, "--retrievers", "pcst", "--sweep", "pcst-cost-e=0.01,0.5", "--sweep", "pcst-topk=3,5", "--out", dir)
	require.Equal(t, 0, r.code, r.stderr)
	for _, s := range []string{"pcst-cost-e=0.01 pcst-topk=3", "pcst-cost-e=0.01 pcst-topk=5", "pcst-cost-e=0.5 pcst-topk=3", "pcst-cost-e=0.5 pcst-topk=5"} {
		assert.Contains(t, r.stdout, "| "+s+" | pcst |")
	}
	assert.FileExists(t, filepath.Join(dir, "sweep.png"))
	for _, bad := range []string{"top-k=1,2", "nope=1", "pcst-cost-e", "pcst-cost-e=-1"} {
		assert.Equal(t, 2, run(t, nil, "eval", "--index", idx, "--dataset", ds, "--retrievers", "pcst", "--sweep", bad).code, bad)
	}

	// With --json, stdout is one JSON value and nothing else, whatever the mode.
	qs := filepath.Join(dir, "q.jsonl")
	require.NoError(t, os.WriteFile(qs, []byte(`{"id":"a","question":"Who founded the Lamplighters Guild?"}`+"\n"), 0o644))
	for _, args := range [][]string{
		{"eval", "--index", idx, "--dataset", ds, "--retrievers", "pcst", "--sweep", "pcst-topk=3,5", "--out", filepath.Join(dir, "j1"), "--json"},
		{"eval", "--index", idx, "--dataset", ds, "--retrievers", "bm25,ppr", "--ablate", "--json"},
		{"eval", "--dataset", ds, "--corpus-out", filepath.Join(dir, "corpus-out.json"), "--json"},
		{"query", "--index", idx, "--questions", qs, "--out", filepath.Join(dir, "run.jsonl"), "--json"},
	} {
		r := run(t, nil, args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		var v map[string]any
		assert.NoError(t, json.Unmarshal([]byte(r.stdout), &v), "%v: stdout %q", args, r.stdout)
	}
}

// TestSynthPartialFailure: when some generation calls get no answer, synth writes no
// file (an earlier one stays) unless --allow-partial, and says how many and why.
func TestSynthPartialFailure(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "h.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", "../../examples/harbour/corpus.json", "--out", idx).code)
	out := filepath.Join(dir, "qa.jsonl")
	require.Equal(t, 0, run(t, nil, "synth", "--index", idx, "--out", out, "--generator", "template").code)
	before := readFile(t, out)

	srv := llmtest.NewServer(t)
	srv.On(llmtest.UserContains("heron")).Fault(llmtest.Status(400)) // a 400 is not retried
	srv.On(llmtest.Any()).Reply(`{"question": "Which harbour?", "answer": "Port Keswyn"}`)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=" + filepath.Join(dir, "cache")}
	args := []string{"synth", "--index", idx, "--out", out, "--generator", "llm", "--max-hop", "20", "--max-sum", "20", "--json"}
	r := run(t, env, args...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Regexp(t, `[1-9][0-9]* of [1-9][0-9]* generation calls got no answer \(client_error [1-9][0-9]*\)`, r.stderr)
	assert.Contains(t, r.stderr, "--allow-partial")
	assert.True(t, before == readFile(t, out), "the earlier file stays")

	r = run(t, env, append(args, "--allow-partial")...)
	require.Equal(t, 0, r.code, r.stderr)
	var res struct {
		Report struct {
			Failed       int            `json:"failed"`
			FailedByKind map[string]int `json:"failed_by_kind"`
			Calls        int            `json:"calls"`
		} `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &res))
	assert.Positive(t, res.Report.Failed)
	assert.Less(t, res.Report.Failed, res.Report.Calls)
	assert.Equal(t, map[string]int{"client_error": res.Report.Failed}, res.Report.FailedByKind)
	assert.False(t, before == readFile(t, out), "written with --allow-partial")
}
