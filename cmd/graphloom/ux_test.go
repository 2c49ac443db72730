package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

func TestEveryCommandHasExamples(t *testing.T) {
	for _, cmd := range newRootCmd().Commands() {
		if cmd.Name() == "help" || cmd.Name() == "completion" {
			continue
		}
		assert.NotEmpty(t, cmd.Example, "%s has no Examples section", cmd.Name())
		for _, line := range strings.Split(cmd.Example, "\n") {
			assert.NotContains(t, line, "../shared", cmd.Name())
		}
	}
}

// TestPlainProgressAndTimings: with stderr not a terminal, stages print plain progress
// lines, and timings are printed as words, not Go maps.
func TestPlainProgressAndTimings(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "x.gl")
	r := run(t, []string{progressIntervalEnv + "=1ms"}, "index", "--corpus", writeCorpus(t, 6), "--out", idx)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "extract: 6/6 (100%)")
	assert.Contains(t, r.stderr, ", done")
	assert.Regexp(t, `time: extract [0-9.]+ s, merge`, r.stdout)
	assert.NotContains(t, r.stdout, "map[")
	r = run(t, nil, "augment", "--index", idx, "--selector", "random", "--budget", "3", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "map[")
	assert.Contains(t, r.stdout, "time: graph ")
	assert.Empty(t, r.stderr, "--quiet prints no progress")
}

// TestLLMStageShowsRetriesAndWaits: against a server that fails before answering,
// the progress lines and a retry line say what the LLM stage is doing.
func TestLLMStageShowsRetriesAndWaits(t *testing.T) {
	srv := extractionServer(t, 0)
	srv.FailNext(3, llmtest.ServerError(503))
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", progressIntervalEnv + "=1ms"}
	r := run(t, env, "index", "--corpus", writeCorpus(t, 3), "--out", filepath.Join(t.TempDir(), "x.gl"), "--llm-concurrency", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "LLM: attempt 1 failed (llm: chat (ner): server_error (HTTP 503)")
	assert.Contains(t, r.stderr, "retrying in")
	assert.Regexp(t, `extract: .*; LLM: \d+ HTTP calls, \d+ cache hits, 3 retries, failed attempts: server_error 3`, r.stderr)
}

func TestStatsListsRuns(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 8), "--out", idx).code)
	srv := completionServer(t, 0)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m"}
	r := run(t, env, "augment", "--index", idx, "--selector", "random", "--budget", "3", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	id := runID(t, r.stdout)
	ix, err := graphio.ReadFile(idx)
	require.NoError(t, err)
	facts := 0
	for _, f := range ix.Facts {
		if f.Run == id {
			facts++
		}
	}
	require.Positive(t, facts)
	r = run(t, nil, "stats", "--index", idx)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, id+` +augment 20\d\d-\d\d-\d\dT[0-9:]+Z, selector random: `+itoa(facts)+` facts, \d+ entities added`, r.stdout)
	r = run(t, nil, "stats", "--index", idx, "--json")
	assert.Contains(t, r.stdout, `"id": "`+id+`"`)
	assert.Contains(t, r.stdout, `"facts_added": `+itoa(facts))
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestHyperedgesFlag: --hyperedges defaults to auto (rule: on), and false switches
// hyperedges off.
func TestHyperedgesFlag(t *testing.T) {
	dir := t.TempDir()
	corpus := writeCorpus(t, 3)
	for _, tc := range []struct {
		args []string
		some bool
		code int
	}{
		{nil, true, 0}, {[]string{"--hyperedges"}, true, 0}, {[]string{"--hyperedges=false"}, false, 0}, {[]string{"--hyperedges=maybe"}, false, 2},
	} {
		out := filepath.Join(dir, "h.gl")
		r := run(t, nil, append([]string{"index", "--corpus", corpus, "--out", out}, tc.args...)...)
		require.Equal(t, tc.code, r.code, r.stderr)
		if tc.code != 0 {
			continue
		}
		ix, err := graphio.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, tc.some, len(ix.Hyperedges) > 0, "%v", tc.args)
	}
}

// TestFakeLLM starts `graphloom fake-llm` with a script and talks to it.
func TestFakeLLM(t *testing.T) {
	script := filepath.Join(t.TempDir(), "s.json")
	require.NoError(t, os.WriteFile(script, []byte(`{"default": "{\"answer\": 0}", "rules": [
		{"user_contains": "hello", "reply": "{\"answer\": 42}"},
		{"user_contains": "busy", "status": 503, "times": 1}]}`), 0o644))
	cmd := cli(t, nil, "fake-llm", "--addr", "127.0.0.1:0", "--script", script)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	sc := bufio.NewScanner(stdout)
	require.True(t, sc.Scan())
	line := sc.Text()
	require.Contains(t, line, "fake LLM serving http://127.0.0.1:")
	url := strings.Fields(line)[3]

	c, err := llm.New(llm.Config{BaseURL: url, Model: "fake", BackoffBase: time.Millisecond})
	require.NoError(t, err)
	resp, err := c.Chat(context.Background(), llm.ChatRequest{Messages: []llm.Message{llm.User("hello there")}})
	require.NoError(t, err)
	assert.Equal(t, `{"answer": 42}`, resp.Content)
	resp, err = c.Chat(context.Background(), llm.ChatRequest{Messages: []llm.Message{llm.User("busy?")}})
	require.NoError(t, err, "a 503 once, then the default")
	assert.Equal(t, `{"answer": 0}`, resp.Content)
	assert.Equal(t, int64(1), c.Usage().Retries)
	vecs, err := func() ([][]float32, error) {
		c, err := llm.New(llm.Config{BaseURL: url, EmbedModel: "fake"})
		require.NoError(t, err)
		return c.Embed(context.Background(), []string{"harbour"})
	}()
	require.NoError(t, err)
	assert.Len(t, vecs, 1)

	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for sc.Scan() {
		line = sc.Text()
	}
	require.NoError(t, cmd.Wait())
	assert.Equal(t, "fake LLM: served 4 requests", line)

	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"rules": [{"reply": "x"}]}`), 0o644))
	r := run(t, nil, "fake-llm", "--addr", "127.0.0.1:0", "--script", bad)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "rule 0 has no matcher")
}
