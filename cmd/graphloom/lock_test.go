package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// waitFor polls cond for up to 60 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out")
		time.Sleep(5 * time.Millisecond)
	}
}

func runID(t *testing.T, stdout string) string {
	t.Helper()
	var out struct {
		Report struct {
			Run string `json:"run"`
		} `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &out), stdout)
	return out.Report.Run
}

// TestConcurrentAugmentWriters: while one augment run holds the index, a second fails
// with a message naming the holder, a third with --wait waits and then adds its run,
// so no run is lost.
func TestConcurrentAugmentWriters(t *testing.T) {
	srv := completionServer(t, 40*time.Millisecond)
	dir := t.TempDir()
	idx := filepath.Join(dir, "a.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 20), "--out", idx).code)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=" + filepath.Join(dir, "cache")}
	args := []string{"augment", "--index", idx, "--selector", "random", "--budget", "20", "--roots", "40", "--llm-concurrency", "1", "--json"}

	first := cli(t, env, args...)
	var firstOut strings.Builder
	first.Stdout = &firstOut
	require.NoError(t, first.Start())
	waitFor(t, func() bool { return srv.Count() > 0 })

	second := run(t, env, args...)
	assert.Equal(t, 1, second.code, second.stderr)
	assert.Contains(t, second.stderr, "being written by another process")
	assert.Contains(t, second.stderr, fmt.Sprintf("pid %d: graphloom augment", first.Process.Pid))
	assert.Contains(t, second.stderr, "--wait")

	third := make(chan result, 1)
	go func() { third <- run(t, env, append(args, "--wait", "--seed", "7")...) }()
	require.NoError(t, first.Wait())
	r := <-third
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "waiting for the writer lock")

	ix, err := graphio.ReadFile(idx)
	require.NoError(t, err)
	var ids []string
	for _, run := range ix.Runs {
		ids = append(ids, run.ID)
	}
	assert.ElementsMatch(t, []string{runID(t, firstOut.String()), runID(t, r.stdout)}, ids, "both runs are kept")
}

// TestConcurrentIndexWriters: a second `index --out same.gl` fails instead of
// silently replacing the first's index.
func TestConcurrentIndexWriters(t *testing.T) {
	srv := extractionServer(t, 30*time.Millisecond)
	corpus := writeCorpus(t, 20)
	dir := t.TempDir()
	out := filepath.Join(dir, "same.gl")
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=off"}
	first := cli(t, env, "index", "--corpus", corpus, "--out", out, "--llm-concurrency", "1")
	require.NoError(t, first.Start())
	waitFor(t, func() bool { return srv.Count() > 0 })
	second := run(t, nil, "index", "--corpus", writeCorpus(t, 3), "--out", out)
	assert.Equal(t, 1, second.code, second.stderr)
	assert.Contains(t, second.stderr, "being written by another process")
	require.NoError(t, first.Wait())
	ix, err := graphio.ReadFile(out)
	require.NoError(t, err)
	assert.Len(t, ix.Documents, 20, "the first writer's index")
	// Readers are never blocked, even while a writer holds the lock.
	l, err := graphio.LockWriter(t.Context(), out, "test", false, nil)
	require.NoError(t, err)
	defer l.Unlock()
	r := run(t, nil, "stats", "--index", out)
	assert.Equal(t, 0, r.code, r.stderr)
}

// TestStaleTempsAndSideFiles: temporary files of a killed writer are removed by the
// next writer; a rollback removes its run's report; --rollback "" is a usage error;
// an unknown run lists the ids (graphio's TestRemoveRunNamesTheLaterRun covers a
// refused rollback).
func TestStaleTempsAndSideFiles(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "a.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 12), "--out", idx).code)
	stale := filepath.Join(dir, ".a.gl.tmp-123456")
	require.NoError(t, os.WriteFile(stale, []byte("half an index"), 0o644))
	// A run report's temporary file goes too; files of the same shape that are not
	// a killed report of this index stay.
	staleReport := filepath.Join(dir, ".a.gl.aug-20261207T101112-ab12.json.tmp-77")
	kept := []string{
		filepath.Join(dir, ".a.gl.aug-20261207T101112-ab12.json.tmp-x1"), // not AtomicWrite's suffix
		filepath.Join(dir, ".b.gl.aug-20261207T101112-ab12.json.tmp-77"), // another index's
		filepath.Join(dir, ".a.gl.notes.json.tmp-77"),                    // not a run id
		filepath.Join(dir, ".a.gl.aug-20261399T101112-ab12.json.tmp-77"), // not a timestamp
	}
	for _, f := range append([]string{staleReport}, kept...) {
		require.NoError(t, os.WriteFile(f, []byte("{"), 0o644))
	}
	before := readFile(t, idx)

	r := run(t, nil, "augment", "--index", idx, "--rollback", "")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--rollback needs a run id")
	assert.Equal(t, before, readFile(t, idx), "nothing was augmented")

	r = run(t, nil, "augment", "--index", idx, "--rollback", "aug-nope", "--plan")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--plan writes no index")

	r = run(t, nil, "augment", "--index", idx, "--rollback", "aug-nope", "--selector", "random", "--budget", "5")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--rollback removes a run and takes no settings of a new one: drop --budget, --selector")

	r = run(t, nil, "augment", "--index", idx, "--rollback", "aug-nope")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "it has no runs")
	assert.NoFileExists(t, stale, "the next writer removed the killed writer's temporary file")
	assert.NoFileExists(t, staleReport, "and a killed run's half-written report")
	for _, f := range kept {
		assert.FileExists(t, f)
	}

	// Two runs through a scripted server.
	var pred atomic.Value
	pred.Store("admired")
	srv := llmtest.NewServer(t)
	srv.SetDefault(func(r llmtest.Request) llmtest.Reply {
		u := r.LastUser()
		ev := u[strings.Index(u, "Evidence passages"):]
		id := ev[strings.Index(ev, "chunk-") : strings.Index(ev, "chunk-")+38]
		root := strings.TrimSpace(strings.Split(strings.Split(u, "Subgraph root entity:\n")[1], "\n")[0])
		// Cite the chunk and name the entity in it, so grounding accepts the fact.
		return llmtest.Reply{Content: fmt.Sprintf(`{"new_triples": [{"triple": [%q, %q, %q], "chunk_ids": [%q]}]}`, root, pred.Load(), root+" Hall", id)}
	})
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=off"}
	args := []string{"augment", "--index", idx, "--selector", "random", "--budget", "3", "--roots", "10", "--json", "--allow-partial"}
	r = run(t, env, args...)
	require.Equal(t, 0, r.code, r.stderr)
	first := runID(t, r.stdout)
	pred.Store("feared")
	r = run(t, env, args...)
	require.Equal(t, 0, r.code, r.stderr)
	second := runID(t, r.stdout)
	assert.FileExists(t, idx+"."+first+".json")

	r = run(t, nil, "augment", "--index", idx, "--rollback", "aug-nope")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "its runs: "+first+", "+second)

	// Rolled back into another file, the input keeps the run and its report.
	other := filepath.Join(dir, "b.gl")
	r = run(t, nil, "augment", "--index", idx, "--rollback", second, "--out", other)
	require.Equal(t, 0, r.code, r.stderr)
	assert.FileExists(t, idx+"."+second+".json", "the input's report stays: the input still holds the run")
	assert.NoFileExists(t, other+"."+second+".json")

	for _, id := range []string{second, first} {
		r = run(t, nil, "augment", "--index", idx, "--rollback", id, "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var removed struct {
			Run string `json:"removed_run"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &removed), "--json prints JSON: %q", r.stdout)
		assert.Equal(t, id, removed.Run)
		assert.NoFileExists(t, idx+"."+id+".json", "the run's report goes with it")
	}
	assert.Equal(t, before, readFile(t, idx))
}

// TestAugmentReadsGoldFactsFirst: a --gold-facts file that cannot be read fails the
// run before any completion call, naming the file.
func TestAugmentReadsGoldFactsFirst(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "a.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 12), "--out", idx).code)
	srv := llmtest.NewServer(t)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=off"}
	missing := filepath.Join(dir, "no-such-facts.json")
	r := run(t, env, "augment", "--index", idx, "--selector", "random", "--budget", "3", "--roots", "10", "--gold-facts", missing)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "no-such-facts.json")
	assert.Empty(t, srv.Requests(), "no completion call was paid for")
}
