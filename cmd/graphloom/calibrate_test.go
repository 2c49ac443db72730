package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/llm/llmtest"
)

// TestCalibrateCommand: calibrate --out leaves its input as it was and writes a
// calibrated index that stats describes; query and eval accept --calibration; a
// forced variant on an uncalibrated index is refused; after a delete, query warns that
// the calibration is stale. Calibration reads only the index: the corpus it was built
// from is gone, and no evaluation file lies beside it.
func TestCalibrateCommand(t *testing.T) {
	dir := t.TempDir()
	corpus, err := os.ReadFile("../../examples/harbour/corpus.json")
	require.NoError(t, err)
	src := filepath.Join(dir, "corpus.json")
	require.NoError(t, os.WriteFile(src, corpus, 0o644))
	idx := filepath.Join(dir, "h.gl")
	require.Equal(t, 0, run(t, nil, "index", "--quiet", "--corpus", src, "--out", idx).code)
	require.NoError(t, os.Remove(src))
	before, err := os.ReadFile(idx)
	require.NoError(t, err)
	cal := filepath.Join(dir, "hc.gl")
	r := run(t, nil, "calibrate", "--index", idx, "--out", cal, "--steps", "60", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	after, err := os.ReadFile(idx)
	require.NoError(t, err)
	assert.Equal(t, before, after, "--out leaves the input alone")
	var out struct {
		Report struct {
			Questions int `json:"questions"`
			Fits      []struct {
				Retriever  string             `json:"retriever"`
				Use        string             `json:"use"`
				Validation map[string]float64 `json:"validation"`
				Features   map[string]float64 `json:"features_alone"`
				Folds      map[string]int     `json:"chosen_feature_folds"`
			} `json:"retrievers"`
		} `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Positive(t, out.Report.Questions)
	require.Len(t, out.Report.Fits, 2)
	for _, f := range out.Report.Fits {
		require.NotNil(t, f.Validation, "%s: the example corpus is large enough to calibrate", f.Retriever)
		folds := 0
		for name, n := range f.Folds {
			assert.Contains(t, f.Features, name, f.Retriever)
			folds += n
		}
		// 3 folds × 5 deals at most; a fold without held-out questions is skipped.
		assert.True(t, folds >= 1 && folds <= 15, "%s: %d folds chose a feature", f.Retriever, folds)
	}

	r = run(t, nil, "stats", "--index", cal)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "calibration\tfitted")
	assert.Contains(t, r.stdout, "ppr: uses ")
	assert.Contains(t, r.stdout, "the feature best on each fold's fitting questions (R@5): ")
	r = run(t, nil, "stats", "--index", cal, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"calibration"`)
	r = run(t, nil, "stats", "--index", idx)
	assert.NotContains(t, r.stdout, "calibration")

	q := "Who bought the ship that was wrecked on Gull Rock?"
	for _, mode := range []string{"auto", "off", "fusion", "ranker", "ranker-nogate", "defaults"} {
		r = run(t, nil, "query", "--index", cal, "--retriever", "ppr", "--calibration", mode, "--json", q)
		require.Equal(t, 0, r.code, "%s: %s", mode, r.stderr)
		assert.NotContains(t, r.stderr, "warning")
	}
	r = run(t, nil, "query", "--index", idx, "--retriever", "ppr", "--calibration", "ranker", q)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "run `graphloom calibrate` first")
	r = run(t, nil, "query", "--index", idx, "--retriever", "ppr", "--calibration", "sometimes", q)
	assert.Equal(t, 2, r.code)

	require.Equal(t, 0, run(t, nil, "delete", "--index", cal, "--title", "Port Keswyn").code)
	r = run(t, nil, "query", "--index", cal, "--retriever", "ppr", q)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: the stored calibration (`graphloom calibrate` fits it again) is stale")
	r = run(t, nil, "stats", "--index", cal)
	assert.Contains(t, r.stdout, "STALE")
}

// TestCalibrateWithTheLLMGenerator: --plan counts the calls and sends nothing; the
// run asks the LLM for as many questions as the plan said for the first shape (1.25 ×
// the cap, not every candidate) and for later shapes only what is missing, calibrates
// on its questions, and a rerun sends nothing new (the cache).
func TestCalibrateWithTheLLMGenerator(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "h.gl")
	require.Equal(t, 0, run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idx).code)
	srv := questionServer(t)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=" + filepath.Join(dir, "cache")}
	args := []string{"calibrate", "--index", idx, "--generator", "llm", "--max-questions", "60", "--steps", "40", "--retrievers", "ppr"}

	r := run(t, env, append(args, "--plan", "--json")...)
	require.Equal(t, 0, r.code, r.stderr)
	var plan struct {
		Calls []int `json:"llm_calls_per_shape"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &plan), r.stdout)
	require.Len(t, plan.Calls, 5, "three shapes of facts, two of hyperedges")
	assert.Equal(t, 75, plan.Calls[0], "1.25 × 60: the harbour graph has more paths")
	assert.Zero(t, srv.Count(), "--plan sends nothing")

	cal := filepath.Join(dir, "hc.gl")
	r = run(t, env, append(args, "--out", cal, "--json")...)
	require.Equal(t, 0, r.code, r.stderr)
	var out struct {
		Report struct {
			Generator string `json:"generator"`
			Questions int    `json:"questions"`
			Synth     []struct {
				Calls int `json:"calls"`
			} `json:"synth"`
			Fits []struct {
				Use string `json:"use"`
			} `json:"retrievers"`
		} `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Equal(t, "llm:m", out.Report.Generator)
	assert.LessOrEqual(t, out.Report.Questions, 60)
	assert.GreaterOrEqual(t, out.Report.Questions, 45, "enough to calibrate")
	require.Len(t, out.Report.Fits, 1)
	require.NotEmpty(t, out.Report.Synth)
	assert.Equal(t, plan.Calls[0], out.Report.Synth[0].Calls, "the first shape: the calls the plan counted")
	sent := 0
	for i, s := range out.Report.Synth {
		if i > 0 { // asked for the questions still missing: at most the plan's bound
			assert.LessOrEqual(t, s.Calls, plan.Calls[i], "shape %d", i+1)
			assert.Less(t, s.Calls, plan.Calls[0], "shape %d", i+1)
		}
		sent += s.Calls
	}
	// Requests repeated within the run (two candidates verbalised alike) are answered
	// from the cache: at most one HTTP call a counted call.
	got := srv.Count()
	assert.LessOrEqual(t, got, sent)
	assert.Greater(t, got, sent*9/10)

	r = run(t, env, append(args, "--out", filepath.Join(dir, "again.gl"))...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, got, srv.Count(), "a rerun is answered from the cache")
}

func TestFoldCounts(t *testing.T) {
	for _, tc := range []struct {
		in   map[string]int
		want string
	}{
		{map[string]int{"graph": 15}, "graph in 15 folds"},
		{map[string]int{"dense": 1, "graph": 12, "bm25": 2}, "graph in 12 folds, bm25 in 2 folds, dense in 1 fold"},
		{map[string]int{"title": 3, "dense": 3}, "dense in 3 folds, title in 3 folds"},
		// Ties keep retrieve.FeatureNames order (bestAlone's), not the alphabet's.
		{map[string]int{"linked_facts": 3, "question_entities": 3}, "question_entities in 3 folds, linked_facts in 3 folds"},
	} {
		assert.Equal(t, tc.want, foldCounts(tc.in))
	}
}

// questionServer answers synth's prompts: a hop prompt lists its path "a [r] b" line
// by line, a summary its target and the facts into it; the reply asks about the
// path's start and middle, or about the target's three sources, and answers with the
// path's end or the target.
func questionServer(t *testing.T) *llmtest.Server {
	t.Helper()
	srv := llmtest.NewServer(t)
	fact := regexp.MustCompile(`(?m)^(.+) \[[^\]]*\] (.+)$`)
	srv.SetDefault(func(r llmtest.Request) llmtest.Reply {
		u := r.LastUser()
		fs := fact.FindAllStringSubmatch(u, -1)
		if len(fs) == 0 {
			return llmtest.Reply{Content: "no"}
		}
		q, a := fmt.Sprintf("Which place or person lies beyond %s, by way of %s?", fs[0][1], fs[0][2]), fs[len(fs)-1][2]
		if strings.HasPrefix(u, "Target node") {
			var from []string
			for _, f := range fs {
				from = append(from, f[1])
			}
			q = "What do " + strings.Join(from, " and ") + " all point to?"
		}
		b, _ := json.Marshal(map[string]string{"question": q, "answer": a})
		return llmtest.Reply{Content: string(b)}
	})
	return srv
}

// TestCalibrateRefusesFailedCalls: when some of the llm generator's calls get no
// answer, calibrate stops and says so (the index stays uncalibrated) unless
// --allow-partial.
func TestCalibrateRefusesFailedCalls(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "h.gl")
	require.Equal(t, 0, run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idx).code)
	srv := questionServer(t)
	srv.On(llmtest.UserContains("heron")).Fault(llmtest.Status(400))
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=" + filepath.Join(dir, "cache")}
	args := []string{"calibrate", "--index", idx, "--generator", "llm", "--max-questions", "60", "--steps", "20", "--repeats", "1", "--retrievers", "ppr", "--out", filepath.Join(dir, "hc.gl")}
	r := run(t, env, args...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Regexp(t, `[1-9][0-9]* of [1-9][0-9]* generation calls got no answer \(client_error [1-9][0-9]*\)`, r.stderr)
	assert.NoFileExists(t, filepath.Join(dir, "hc.gl"))
	r = run(t, env, append(args, "--allow-partial")...)
	assert.Equal(t, 0, r.code, r.stderr)
}
