package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/models/encoder/encodertest"
)

// TestLocalEmbedderEndToEnd indexes the example corpus with a tiny local model
// folder, then queries, evaluates and serves it with the embedder the index
// records, and refuses a query with another folder or another setting.
func TestLocalEmbedderEndToEnd(t *testing.T) {
	dir := t.TempDir()
	modelA, modelB, plain := filepath.Join(dir, "mini-a"), filepath.Join(dir, "mini-b"), filepath.Join(dir, "plain")
	_, err := encodertest.Write(modelA, encodertest.Spec{SentenceTransformers: true, Normalize: true, Seed: 1,
		Prompts: map[string]string{"query": "query: ", "document": "passage: "}})
	require.NoError(t, err)
	_, err = encodertest.Write(modelB, encodertest.Spec{SentenceTransformers: true, Normalize: true, Seed: 2,
		Prompts: map[string]string{"query": "query: ", "document": "passage: "}})
	require.NoError(t, err)
	_, err = encodertest.Write(plain, encodertest.Spec{Seed: 3})
	require.NoError(t, err)
	idx := filepath.Join(dir, "x.gl")
	r := run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idx, "--embedder", "local:"+modelA)
	require.Equal(t, 0, r.code, r.stderr)

	r = run(t, nil, "stats", "--index", idx)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `embedder\s+local:mini-a@[0-9a-f]{16}`, r.stdout)

	// The model reads 128 positions: the example's longer passages are cut, and the
	// JSON report and a warning say how many.
	r = run(t, nil, "index", "--corpus", "../../examples/harbour/corpus.json", "--out", filepath.Join(dir, "j.gl"), "--embedder", "local:"+modelA, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Local struct {
			Texts, Truncated, MaxLength int
		} `json:"local_embedder"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	assert.Positive(t, rep.Local.Texts)
	assert.Positive(t, rep.Local.Truncated)
	assert.Less(t, rep.Local.Truncated, rep.Local.Texts, "entity names are short")
	assert.Contains(t, r.stderr, fmt.Sprintf("warning: %d texts were longer than the model's", rep.Local.Truncated))

	for _, retriever := range []string{"dense", "ppr"} {
		r = run(t, nil, "query", "--index", idx, "--retriever", retriever, "--json", "Where was Tomas Brell born?")
		require.Equal(t, 0, r.code, "%s: %s", retriever, r.stderr)
		assert.Contains(t, r.stdout, `"passages"`, retriever)
	}
	r = run(t, nil, "query", "--index", idx, "--retriever", "dense", "--embedder", "local:"+modelA, "Where was Tomas Brell born?")
	require.Equal(t, 0, r.code, r.stderr)
	// bf16: the same folder run in bf16 builds and answers; the index records the
	// dtype, and the float32 model opens it (same folder digest).
	idxBF := filepath.Join(dir, "bf.gl")
	r = run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idxBF, "--embedder", "local:"+modelA, "--embed-dtype", "bfloat16")
	require.Equal(t, 0, r.code, r.stderr)
	r = run(t, nil, "query", "--index", idxBF, "--retriever", "dense", "--json", "Where was Tomas Brell born?")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"passages"`)
	r = run(t, nil, "query", "--index", idxBF, "--retriever", "dense", "--embedder", "local:"+modelA, "Where was Tomas Brell born?")
	require.Equal(t, 0, r.code, r.stderr)
	r = run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", filepath.Join(dir, "bad.gl"), "--embedder", "local:"+modelA, "--embed-dtype", "int8")
	assert.Equal(t, 2, r.code, "unsupported --embed-dtype is a usage error")
	r = run(t, nil, "eval", "--index", idx, "--dataset", "../../examples/harbour/questions.json", "--retrievers", "dense,ppr")
	require.Equal(t, 0, r.code, r.stderr)
	// calibrate runs on the index's own local model (its dense path is a feature and
	// seeds PPR; a random model ranks nothing well, so only its presence is checked)
	// and the calibrated index answers through it.
	cal := filepath.Join(dir, "cal.gl")
	r = run(t, nil, "calibrate", "--quiet", "--index", idx, "--out", cal, "--max-questions", "60", "--steps", "25", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var calOut struct {
		Report struct {
			Questions int `json:"questions"`
			Fits      []struct {
				Retriever string             `json:"retriever"`
				Features  map[string]float64 `json:"features_alone"`
			} `json:"retrievers"`
		} `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &calOut), r.stdout)
	assert.GreaterOrEqual(t, calOut.Report.Questions, 45)
	require.NotEmpty(t, calOut.Report.Fits)
	for _, f := range calOut.Report.Fits {
		assert.Contains(t, f.Features, "dense", f.Retriever)
	}
	r = run(t, nil, "query", "--index", cal, "--retriever", "ppr", "--json", "Where was Tomas Brell born?")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"passages"`)
	r = run(t, nil, "serve", "--index", idx, "--dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	// serve answers a dense query with the index's own local model: the passages the
	// CLI's query gives.
	r = run(t, nil, "query", "--index", idx, "--retriever", "dense", "--top-k", "3", "--json", "Where was Tomas Brell born?")
	require.Equal(t, 0, r.code, r.stderr)
	var cliRes struct{ Passages []struct{ Title string } }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &cliRes), r.stdout)
	srv := cli(t, nil, "serve", "--index", idx, "--addr", "127.0.0.1:0")
	stdout, err := srv.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	url := strings.Fields(line[strings.Index(line, "http://"):])[0]
	resp, err := http.Post(url+"/v1/query", "application/json", strings.NewReader(`{"question": "Where was Tomas Brell born?", "retriever": "dense", "top_k": 3}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode)
	var srvRes struct{ Passages []struct{ Title string } }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&srvRes))
	require.NotEmpty(t, srvRes.Passages)
	assert.Equal(t, cliRes.Passages, srvRes.Passages, "serve ranks as query does")

	for _, c := range []struct {
		name string
		args []string
	}{
		{"another folder", []string{"--embedder", "local:" + modelB}},
		{"another prompt", []string{"--embedder", "local:" + modelA, "--query-prompt", "search: "}},
	} {
		r = run(t, nil, append([]string{"query", "--index", idx, "--retriever", "dense", "Where was Tomas Brell born?"}, c.args...)...)
		assert.Equal(t, 1, r.code, c.name)
		assert.Contains(t, r.stderr, "embedder mismatch", c.name)
		assert.Contains(t, r.stderr, "the index was embedded with \"local:mini-a@", c.name)
	}

	// A plain Hugging Face folder needs --pooling.
	r = run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", filepath.Join(dir, "p.gl"), "--embedder", "local:"+plain)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "--pooling")
	r = run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", filepath.Join(dir, "p.gl"),
		"--embedder", "local:"+plain, "--pooling", "cls")
	require.Equal(t, 0, r.code, r.stderr)
	assert.False(t, strings.Contains(r.stderr, "panic"))
}

// TestLMEmbed prints a local folder's vector of a text: unit norm with 2_Normalize,
// the query prompt with --query, and a clear error for a plain folder without
// --pooling.
func TestLMEmbed(t *testing.T) {
	dir := t.TempDir()
	st, plain := filepath.Join(dir, "st"), filepath.Join(dir, "plain")
	_, err := encodertest.Write(st, encodertest.Spec{SentenceTransformers: true, Normalize: true, Hidden: 24, Heads: 3,
		Prompts: map[string]string{"query": "query: "}})
	require.NoError(t, err)
	_, err = encodertest.Write(plain, encodertest.Spec{})
	require.NoError(t, err)
	r := run(t, nil, "lm", "embed", "--lm", st, "the harbour") // [CLS] the h ##a ##r ##b ##o ##u ##r [SEP]
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `embedder local:st@[0-9a-f]{16}\ndim 24, norm 1\.000000, 10 tokens\nfirst 8: (-?\d\.\d{6} ){7}-?\d\.\d{6}\n`, r.stdout)
	r = run(t, nil, "lm", "embed", "--lm", st, "--query", "--json", "the harbour")
	require.Equal(t, 0, r.code, r.stderr)
	var v struct {
		Dim    int       `json:"dim"`
		Tokens int       `json:"tokens"`
		Prompt string    `json:"prompt"`
		Vector []float64 `json:"vector"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
	assert.Equal(t, 24, v.Dim)
	assert.Len(t, v.Vector, 24)
	assert.Equal(t, "query: ", v.Prompt)
	assert.Equal(t, 12, v.Tokens) // [CLS] query : the h ##a ##r ##b ##o ##u ##r [SEP]
	r = run(t, nil, "lm", "embed", "--lm", plain, "x")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "--pooling")
	r = run(t, nil, "lm", "embed", "--lm", plain, "--pooling", "mean", "--normalize", "false", "x")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "norm 1.000000")
}

// TestLMEmbedTaskAdapters embeds with a jina-embeddings-v3 folder's task adapters:
// questions with retrieval.query and its instruction by default, another task's
// adapters with --query-task (another vector), and a task the model lacks is refused
// by name; lm info lists the adapters.
func TestLMEmbedTaskAdapters(t *testing.T) {
	jina := filepath.Join(t.TempDir(), "jina")
	_, err := encodertest.Write(jina, encodertest.Spec{ModelType: "jina", Prefix: "roberta.", SentenceTransformers: true, Normalize: true})
	require.NoError(t, err)
	vector := func(args ...string) (prompt string, vec []float64) {
		t.Helper()
		r := run(t, nil, append([]string{"lm", "embed", "--lm", jina, "--query", "--json"}, append(args, "the harbour")...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var v struct {
			Prompt string    `json:"prompt"`
			Vector []float64 `json:"vector"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &v), r.stdout)
		return v.Prompt, v.Vector
	}
	prompt, byDefault := vector()
	assert.Equal(t, encodertest.JinaInstructions["retrieval.query"], prompt)
	_, same := vector("--query-task", "retrieval.query")
	assert.Equal(t, byDefault, same)
	prompt, other := vector("--query-task", "text-matching")
	assert.Equal(t, "", prompt, "text-matching has no instruction")
	_, otherSamePrompt := vector("--query-task", "text-matching", "--query-prompt", encodertest.JinaInstructions["retrieval.query"])
	assert.NotEqual(t, byDefault, other)
	assert.NotEqual(t, byDefault, otherSamePrompt, "the adapters alone change the vector")

	r := run(t, nil, "lm", "embed", "--lm", jina, "--query", "--query-task", "retrieval", "x")
	assert.Equal(t, 2, r.code, "a flag value the folder cannot take")
	assert.Contains(t, r.stderr, `task "retrieval": the model's adapters are ["retrieval.query" "retrieval.passage" "separation" "classification" "text-matching"]`)
	r = run(t, nil, "lm", "embed", "--lm", jina, "--pooling", "median", "x")
	assert.Equal(t, 2, r.code, "so is an unknown pooling")
	assert.Contains(t, r.stderr, `pooling "median" not supported`)
	r = run(t, nil, "lm", "info", "--lm", jina)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "adapters     retrieval.query, retrieval.passage, separation, classification, text-matching; query retrieval.query, passage retrieval.passage")
}
