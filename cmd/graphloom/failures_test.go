package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/llm/llmtest"
)

func closedPortURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return "http://" + addr + "/v1"
}

// TestIndexFailsFastOnADeadServer: against a closed port, a server answering 501 or
// one that never answers, `index` exits 1 naming the cause, writes nothing, and leaves
// an existing index alone.
func TestIndexFailsFastOnADeadServer(t *testing.T) {
	corpus := writeCorpus(t, 6)
	for _, tc := range []struct {
		name  string
		url   func(t *testing.T) string
		extra []string
		want  string
	}{
		{"closed port", closedPortURL, nil, "connection refused"},
		{"501", func(t *testing.T) string {
			srv := llmtest.NewServer(t)
			srv.On(llmtest.Any()).Fault(llmtest.ServerError(501))
			return srv.URL()
		}, nil, "HTTP 501"},
		{"never answers", func(t *testing.T) string {
			srv := llmtest.NewServer(t)
			srv.On(llmtest.Any()).Delay(time.Minute)
			return srv.URL()
		}, []string{"--llm-timeout", "300ms"}, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			env := []string{"GRAPHLOOM_LLM_BASE_URL=" + tc.url(t), "GRAPHLOOM_LLM_MODEL=m"}
			fresh := filepath.Join(dir, "new.gl")
			r := run(t, env, append([]string{"index", "--corpus", corpus, "--out", fresh}, tc.extra...)...)
			assert.Equal(t, 1, r.code, r.stderr)
			assert.Contains(t, r.stderr, "failed for every chunk (6 of 6)")
			assert.Contains(t, r.stderr, "failed attempts by kind")
			assert.Contains(t, r.stderr, tc.want)
			assert.NoFileExists(t, fresh)

			old := filepath.Join(dir, "old.gl")
			require.Equal(t, 0, run(t, nil, "index", "--corpus", corpus, "--out", old).code)
			before := readFile(t, old)
			r = run(t, env, append([]string{"index", "--corpus", corpus, "--out", old, "--allow-partial"}, tc.extra...)...)
			assert.Equal(t, 1, r.code, r.stderr)
			assert.Equal(t, before, readFile(t, old), "the existing index is untouched")
		})
	}
}

// TestIndexPartialFailureKeepsTheOldIndex: when some chunks fail, an existing index
// is only replaced with --allow-partial.
func TestIndexPartialFailureKeepsTheOldIndex(t *testing.T) {
	srv := extractionServer(t, 0)
	srv.On(llmtest.UserContains("Passage 2")).Fault(llmtest.Status(400))
	corpus := writeCorpus(t, 6)
	dir := t.TempDir()
	old := filepath.Join(dir, "old.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", corpus, "--out", old).code)
	before := readFile(t, old)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m"}
	r := run(t, env, "index", "--corpus", corpus, "--out", old)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "1 of 6 chunks were refused by the server or answered unreadably")
	assert.Contains(t, r.stderr, "client_error 1")
	assert.Contains(t, r.stderr, "--allow-partial")
	assert.Equal(t, before, readFile(t, old))
	assert.Equal(t, 1, countPath(srv, "Passage 2"), "a 400 is not retried")

	// A new index is written, with a warning: a 400 is refused again by a rerun.
	fresh := filepath.Join(dir, "new.gl")
	r = run(t, env, "index", "--corpus", corpus, "--out", fresh)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: writing the index without the facts of 1 of 6 chunks: 1 of 6 chunks were refused by the server or answered unreadably (a rerun gets the same; --llm-reask-unparseable asks the unreadable ones again)")
	assert.Contains(t, r.stderr, "chunk-", "the failed chunk is named")

	r = run(t, env, "index", "--corpus", corpus, "--out", old, "--allow-partial")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: writing the index without the facts of 1 of 6 chunks")
	ix, err := graphio.ReadFile(old)
	require.NoError(t, err)
	assert.Len(t, ix.Facts, 5)
}

func countPath(srv *llmtest.Server, s string) int {
	n := 0
	for _, r := range srv.Requests() {
		if strings.Contains(r.LastUser(), s) {
			n++
		}
	}
	return n
}

// TestAugmentRecordsNoRunWhenEveryCallFails: `augment --completer llm` against a dead
// server exits 1 and leaves the index as it was.
func TestAugmentRecordsNoRunWhenEveryCallFails(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "a.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 12), "--out", idx).code)
	before := readFile(t, idx)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + closedPortURL(t), "GRAPHLOOM_LLM_MODEL=m"}
	r := run(t, env, "augment", "--index", idx, "--completer", "llm", "--selector", "random", "--budget", "5", "--roots", "10")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "every completion call failed")
	assert.Contains(t, r.stderr, "connection refused")
	assert.Equal(t, before, readFile(t, idx))
	matches, _ := filepath.Glob(idx + ".aug-*.json")
	assert.Empty(t, matches)

	// Some calls unanswered: no run unless --allow-partial.
	srv := completionServer(t, 0)
	srv.On(llmtest.UserContains("Mara Vell3")).Fault(llmtest.Status(400))
	env = []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=" + filepath.Join(dir, "cache")}
	args := []string{"augment", "--index", idx, "--selector", "random", "--budget", "12", "--roots", "40"}
	r = run(t, env, args...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "got no answer (client_error")
	assert.Equal(t, before, readFile(t, idx))
	r = run(t, env, append(args, "--allow-partial")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "failed calls by kind: client_error")
}

// TestAugmentEmptySelection: when no subgraph reaches θ the command says so, prints
// the score quantiles and what to change, exits 0 and records no run.
func TestAugmentEmptySelection(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "a.gl")
	// A graph large enough for the scorer's disjoint train/validation/test regions.
	require.Equal(t, 0, run(t, nil, "index", "--corpus", "../../examples/harbour/corpus.json", "--out", idx).code)
	before := readFile(t, idx)
	r := run(t, nil, "augment", "--index", idx, "--threshold", "1", "--epochs", "1", "--no-checkpoint")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "0 selected")
	assert.Contains(t, r.stdout, "missingness scores: min")
	assert.Contains(t, r.stdout, "nothing selected")
	assert.Contains(t, r.stdout, "lower --threshold below")
	assert.NotContains(t, r.stdout, "run aug-")
	assert.Equal(t, before, readFile(t, idx), "no run recorded")
	matches, _ := filepath.Glob(idx + ".aug-*.json")
	assert.Empty(t, matches)
}

func TestBaseURLWithoutModelIsAnError(t *testing.T) {
	corpus := writeCorpus(t, 2)
	out := filepath.Join(t.TempDir(), "x.gl")
	r := run(t, []string{"GRAPHLOOM_LLM_BASE_URL=http://127.0.0.1:1/v1"}, "index", "--corpus", corpus, "--out", out)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "but no model")
	_, err := os.Stat(out)
	assert.True(t, os.IsNotExist(err))
}

// TestEvalAnswerFailuresAreNotScored: reader requests that got no answer make eval
// write nothing (the report would score those questions as unanswered), naming the
// example and the error; --allow-partial writes the report with each error beside
// its example.
func TestEvalAnswerFailuresAreNotScored(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.UserContains("Meridian")).Fault(llmtest.Status(400))
	srv.On(llmtest.Any()).Reply("Answer: Aldwick")
	dir := t.TempDir()
	idx := filepath.Join(dir, "h.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", "../../examples/harbour/corpus.json", "--out", idx, "--quiet").code)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m"}
	report := filepath.Join(dir, "report")
	args := []string{"eval", "--index", idx, "--dataset", "../../examples/harbour/questions.json", "--retrievers", "bm25", "--answer", "--out", report, "--quiet"}
	r := run(t, env, args...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "reader or judge requests got no answer (first: bm25, example ")
	assert.Contains(t, r.stderr, "HTTP 400")
	assert.NoDirExists(t, report)
	r = run(t, env, append(args, "--rerank", "dense")...) // the reranking evaluation too
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "reader or judge requests got no answer")
	assert.NoDirExists(t, report)

	r = run(t, env, append(args, "--allow-partial")...)
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Retrievers []struct {
			AnswerFailures int `json:"answer_failures"`
			Examples       []struct {
				ID          string  `json:"id"`
				Answer      *string `json:"answer"`
				AnswerError string  `json:"answer_error"`
			} `json:"examples"`
		} `json:"retrievers"`
	}
	require.NoError(t, json.Unmarshal([]byte(readFile(t, filepath.Join(report, "report.json"))), &rep))
	require.Len(t, rep.Retrievers, 1)
	failed := 0
	for _, e := range rep.Retrievers[0].Examples {
		if e.AnswerError != "" {
			failed++
			assert.Nil(t, e.Answer, e.ID)
			assert.Contains(t, e.AnswerError, "HTTP 400", e.ID)
		}
	}
	assert.Positive(t, failed)
	assert.Equal(t, failed, rep.Retrievers[0].AnswerFailures)
}

// TestUnansweredChunksWriteNothing: chunks the LLM gave no answer for (a timeout, a
// 5xx: a rerun asks again) write no index while answers are cached, since nothing is
// lost; with the cache off, or with --allow-partial, the index is written with a
// warning; every chunk lost is always an error.
func TestUnansweredChunksWriteNothing(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "new.gl")
	rep := &kg.Report{Chunks: 6, FailedChunks: 2, UnansweredChunks: 1, FailureExamples: []string{"chunk-ab: ner: timeout"}}
	for _, c := range []struct {
		name         string
		cache        string
		allowPartial bool
		want         string // "" = written
	}{
		{"cached", filepath.Join(dir, "cache"), false, "1 of 6 chunks got no answer from the LLM and 1 were refused by the server or answered unreadably (a rerun gets the same; --llm-reask-unparseable asks the unreadable ones again) (last: chunk-ab: ner: timeout; e.g. chunk-ab: ner: timeout); nothing was written: rerun"},
		{"cache off", "off", false, ""},
		{"allowed", filepath.Join(dir, "cache"), true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := &cobra.Command{Use: "index"}
			var errb strings.Builder
			cmd.SetErr(&errb)
			lf := &llmFlags{cache: c.cache}
			err := checkLostChunks(cmd, rep, out, c.allowPartial, lf)
			if c.want != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.want)
				return
			}
			require.NoError(t, err)
			assert.Contains(t, errb.String(), "warning: writing the index without the facts of 2 of 6 chunks")
		})
	}
	all := &kg.Report{Chunks: 3, FailedChunks: 3}
	require.ErrorContains(t, checkLostChunks(&cobra.Command{}, all, out, true, &llmFlags{}), "failed for every chunk (3 of 3)")
}

// TestEvalCutRepliesAreScoredEmpty: a reader reply cut at the token limit before its
// "Answer:" is scored as an empty answer (a rerun would read the same cached reply),
// with the error beside the example and a note in the report; it stops nothing.
func TestEvalCutRepliesAreScoredEmpty(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.UserContains("Meridian")).ReplyWith(llmtest.Reply{Content: "Let me think about the wreck of the", FinishReason: "length", CompletionTokens: 9})
	srv.On(llmtest.Any()).Reply("Answer: Aldwick")
	dir := t.TempDir()
	idx := filepath.Join(dir, "h.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", "../../examples/harbour/corpus.json", "--out", idx, "--quiet").code)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m"}
	r := run(t, env, "eval", "--index", idx, "--dataset", "../../examples/harbour/questions.json", "--retrievers", "bm25", "--answer", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Notes      []string `json:"notes"`
		Retrievers []struct {
			AnswerFailures int `json:"answer_failures"`
			Examples       []struct {
				Answer      *string `json:"answer"`
				AnswerError string  `json:"answer_error"`
			} `json:"examples"`
		} `json:"retrievers"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	cut := 0
	for _, e := range rep.Retrievers[0].Examples {
		if e.AnswerError != "" {
			cut++
			require.NotNil(t, e.Answer)
			assert.Empty(t, *e.Answer)
			assert.Contains(t, e.AnswerError, "cut at the token limit (9 tokens)")
		}
	}
	assert.Positive(t, cut)
	assert.Zero(t, rep.Retrievers[0].AnswerFailures)
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "reader replies were cut at the token limit")

	// query prints why there is no answer.
	r = run(t, env, "query", "--index", idx, "--retriever", "bm25", "--answer", "Who bought the Meridian in 1801?")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "(no answer: retrieve: answer: the reply was cut at the token limit (9 tokens)")
}

// TestWarnsWithoutAnAnswerCache: with no cache directory to be had (no
// GRAPHLOOM_LLM_CACHE, XDG_CACHE_HOME or HOME), an LLM job says its answers are not
// cached; a cache turned off on purpose says nothing.
func TestWarnsWithoutAnAnswerCache(t *testing.T) {
	srv := extractionServer(t, 0)
	corpus := writeCorpus(t, 2)
	out := filepath.Join(t.TempDir(), "x.gl")
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=", "XDG_CACHE_HOME=", "HOME="}
	r := run(t, env, "index", "--corpus", corpus, "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: LLM answers are not cached")
	r = run(t, append(env, "GRAPHLOOM_LLM_CACHE=off"), "index", "--corpus", corpus, "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "not cached")
}
