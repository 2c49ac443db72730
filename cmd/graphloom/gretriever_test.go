package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm/llmtest"
	"github.com/graphloom/graphloom/models/checkpoint"
	"github.com/graphloom/graphloom/models/lm/lmtest"
	"github.com/graphloom/graphloom/retrieve"
)

// TestTrainGRetriever trains G-Retriever end to end on the example corpus with a tiny
// random LM: checkpoints, log and curve are written, query answers with the model,
// eval scores its answers, and --resume continues where the last epoch ended.
func TestTrainGRetriever(t *testing.T) {
	dir, idx, lmDir := harbourAndLM(t, 5)
	var r result
	qa := filepath.Join(dir, "qa.json")
	require.NoError(t, os.WriteFile(qa, []byte(`[
{"id":"a","question":"In which town was the father of Mira Solenne born?","answer":["Aldwick"]},
{"id":"b","question":"Who bought the Meridian in 1801?","answer":["Odile Varrant"]},
{"id":"c","question":"Who built Tallow Point Lighthouse?","answer":["Jory Solenne"]},
{"id":"d","question":"In which town was the father of Anselm Solenne born?","answer":["Fennmouth"]},
{"id":"e","question":"Who rescued the master of the Meridian from the sea after the wreck?","answer":["Mira Solenne"]}]`), 0o644))
	out := filepath.Join(dir, "gr")
	small := []string{"--gt-layers", "1", "--gt-hidden", "16", "--projector-hidden", "16", "--max-text-tokens", "48", "--max-new-tokens", "4",
		"--batch-size", "2", "--grad-steps", "1", "--lr", "1e-3", "--min-lr", "1e-4", "--warmup-epochs", "0", "--quiet"}
	base := append([]string{"train", "gretriever", "--index", idx, "--train", qa, "--lm", lmDir, "--out", out}, small...)
	args := append(append([]string{}, base...), "--epochs", "1")

	// A missing LM directory is a clear error naming what is expected.
	bad := append([]string{"train", "gretriever", "--index", idx, "--train", qa, "--lm", filepath.Join(dir, "nope"), "--out", out}, small...)
	r = run(t, nil, bad...)
	assert.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "config.json, *.safetensors, tokenizer.json")
	r = run(t, nil, append(args, "--variant", "gat")...)
	assert.Equal(t, 2, r.code, r.stderr)

	r = run(t, nil, args...)
	require.Equal(t, 0, r.code, r.stderr)
	// 5 questions: 4 train, 1 held out; batch 2 → 2 steps per epoch.
	assert.Contains(t, r.stdout, "on 4 questions (1 held out), steps 0→2 of 2")
	for _, f := range []string{grBest, grLast, grLog, grCurve} {
		st, err := os.Stat(filepath.Join(out, f))
		require.NoError(t, err, f)
		assert.Positive(t, st.Size(), f)
	}
	assert.Equal(t, 3, countLines(t, filepath.Join(out, grLog))) // 2 steps + 1 evaluation

	// A second run into the same --out while one holds it fails at once, naming the
	// holder, and writes nothing.
	held, err := graphio.LockWriter(context.Background(), filepath.Join(out, "model"), "pid 1: another training run", false, nil)
	require.NoError(t, err)
	r = run(t, nil, append(append([]string{}, base...), "--epochs", "2", "--resume")...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "another training run writes to "+out)
	assert.Contains(t, r.stderr, "pid 1: another training run")
	assert.Equal(t, 3, countLines(t, filepath.Join(out, grLog)), "the log is untouched")
	require.NoError(t, held.Unlock())

	step2, err := os.ReadFile(filepath.Join(out, grState))
	require.NoError(t, err)

	// The same command again would start over and replace the run: refused, naming
	// --resume and --force; a resume over other data is refused too.
	r = run(t, nil, args...)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "holds a training run (last.ckpt): continue it with --resume, or start over with --force")
	fewer := filepath.Join(dir, "qa4.json")
	require.NoError(t, os.WriteFile(fewer, []byte(`[
{"id":"a","question":"In which town was the father of Mira Solenne born?","answer":["Aldwick"]},
{"id":"b","question":"Who bought the Meridian in 1801?","answer":["Odile Varrant"]},
{"id":"c","question":"Who built Tallow Point Lighthouse?","answer":["Jory Solenne"]},
{"id":"d","question":"In which town was the father of Anselm Solenne born?","answer":["Fennmouth"]}]`), 0o644))
	r = run(t, nil, append([]string{"train", "gretriever", "--index", idx, "--train", fewer, "--lm", lmDir, "--out", out, "--epochs", "2", "--resume"}, small...)...)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "was trained with --train "+qa+", this run has "+fewer)
	assert.Equal(t, string(step2), readFile(t, filepath.Join(out, grState)), "nothing was written")
	shorter := append(append([]string{}, base...), "--epochs", "2", "--resume", "--max-text-tokens", "40")
	r = run(t, nil, shorter...)
	assert.NotEqual(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, `was trained with subgraph text tokens (--max-text-tokens) "48"; this run has "40"`)
	assert.Equal(t, string(step2), readFile(t, filepath.Join(out, grState)), "nothing was written")
	r = run(t, nil, append(append([]string{}, base...), "--epochs", "2", "--resume", "--pcst-topk", "4")...)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "was trained with PCST settings topk=3,")

	// A run that has taken all its steps resumes only with more epochs.
	r = run(t, nil, append(append([]string{}, base...), "--epochs", "1", "--resume")...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the run already took 2 of its 2 steps: raise the epochs")

	// A killed run's half-written checkpoint is removed by the next run (which holds
	// the --out lock).
	stale := filepath.Join(out, "."+grLast+".tmp-123456")
	require.NoError(t, os.WriteFile(stale, []byte("half a checkpoint"), 0o644))

	// Resume: one more epoch continues at step 2 and appends to the log.
	r = run(t, nil, append(append([]string{}, base...), "--epochs", "2", "--resume")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "steps 2→4 of 4")
	assert.NotContains(t, r.stderr, "weights alone", "last.state holds step 2: an exact resume")
	assert.Contains(t, r.stderr, "the learning-rate schedule changed (2 steps", "more epochs: said")
	assert.NoFileExists(t, stale)
	assert.Equal(t, 6, countLines(t, filepath.Join(out, grLog)))

	// Without last.state (a directory trained before it existed) the resume goes on
	// from the weights alone, and says so.
	require.NoError(t, os.Remove(filepath.Join(out, grState)))
	r = run(t, nil, append(append([]string{}, base...), "--epochs", "3", "--resume")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "steps 4→6 of 6")
	assert.Contains(t, r.stderr, "no trainer state in "+filepath.Join(out, grState)+": resumed from the weights alone")
	assert.Equal(t, 9, countLines(t, filepath.Join(out, grLog)))
	// A state of another step than last.ckpt's (killed between the two writes) is not used.
	require.NoError(t, os.WriteFile(filepath.Join(out, grState), step2, 0o644))
	r = run(t, nil, append(append([]string{}, base...), "--epochs", "4", "--resume")...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "steps 6→8 of 8")
	assert.Contains(t, r.stderr, "was saved at step 2, the weights at step 6: resumed from the weights alone")
	// A last.state that is not a trainer's state is refused, naming it.
	require.NoError(t, os.WriteFile(filepath.Join(out, grState), []byte("not a state"), 0o644))
	r = run(t, nil, append(append([]string{}, base...), "--epochs", "5", "--resume")...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, grState)
	assert.Contains(t, r.stderr, "remove it to resume from the weights alone")

	q := "Who built Tallow Point Lighthouse?"
	r = run(t, nil, "query", "--index", idx, "--retriever", "gretriever", "--model", out, "--lm", lmDir, "--answer", "--json", q)
	require.Equal(t, 0, r.code, r.stderr)
	var line struct {
		Retriever string  `json:"retriever"`
		Subgraph  string  `json:"subgraph"`
		Answer    *string `json:"answer"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &line), r.stdout)
	assert.Equal(t, "gretriever", line.Retriever)
	assert.True(t, strings.HasPrefix(line.Subgraph, "node_id,node_attr\n"), line.Subgraph)
	require.NotNil(t, line.Answer)
	// The same answer again, and printed in the plain output.
	r = run(t, nil, "query", "--index", idx, "--retriever", "gretriever", "--model", out, "--lm", lmDir, "--answer", q)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Answer: "+*line.Answer+"\n")
	assert.Contains(t, r.stdout, "subgraph:\nnode_id,node_attr")
	assert.NotContains(t, r.stderr, "is not the LM")
	// Another LM of the same width loads, with a warning (its config.json differs).
	other := filepath.Join(dir, "lm-other")
	_, err = lmtest.Write(other, lmtest.Spec{Seed: 6})
	require.NoError(t, err)
	cfgPath := filepath.Join(other, "config.json")
	require.NoError(t, os.WriteFile(cfgPath, []byte(strings.Replace(readFile(t, cfgPath), "{", `{"_name_or_path": "another-lm", `, 1)), 0o644))
	r = run(t, nil, "query", "--index", idx, "--retriever", "gretriever", "--model", out, "--lm", other, q)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: --lm "+other+" is not the LM the G-Retriever model")
	r = run(t, nil, "query", "--index", idx, "--retriever", "gretriever", "--lm", lmDir, q)
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--model")

	// eval scores the generated answers (EM/F1) beside the other retrievers.
	r = run(t, nil, "eval", "--index", idx, "--dataset", qa, "--retrievers", "bm25,gretriever", "--model", out, "--lm", lmDir, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Retrievers []struct {
			Retriever string          `json:"retriever"`
			Skipped   string          `json:"skipped"`
			QA        *map[string]any `json:"qa"`
		} `json:"retrievers"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.Len(t, rep.Retrievers, 2)
	assert.Equal(t, "gretriever", rep.Retrievers[1].Retriever)
	assert.Empty(t, rep.Retrievers[1].Skipped)
	assert.NotNil(t, rep.Retrievers[1].QA, "the gretriever answers are scored")
	assert.Nil(t, rep.Retrievers[0].QA, "bm25 has no answers without --answer")
}

// harbourAndLM indexes the example corpus and writes a tiny random LM (seed) in a
// temporary directory.
func harbourAndLM(t *testing.T, seed uint64) (dir, idx, lmDir string) {
	t.Helper()
	dir = t.TempDir()
	idx = filepath.Join(dir, "h.gl")
	r := run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idx)
	require.Equal(t, 0, r.code, r.stderr)
	lmDir = filepath.Join(dir, "lm")
	_, err := lmtest.Write(lmDir, lmtest.Spec{Seed: seed})
	require.NoError(t, err)
	return dir, idx, lmDir
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}

// TestSelfGraphRAGEndToEnd runs SelfGraphRAG's loop on the example corpus offline with
// a tiny random LM: synth writes two-hop and summary QA from the graph, G-Retriever
// trains on it with SelfGraphRAG's verbalised subgraph text (GraphLM), query answers a question, and eval scores its answers on the synthetic
// questions and writes the report.
func TestSelfGraphRAGEndToEnd(t *testing.T) {
	dir, idx, lmDir := harbourAndLM(t, 7)
	var r result

	qa := filepath.Join(dir, "synth.jsonl")
	r = run(t, nil, "synth", "--index", idx, "--generator", "template", "--max-hop", "6", "--max-sum", "2", "--out", qa, "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	n := countLines(t, qa)
	require.GreaterOrEqual(t, n, 5, "synthetic items")
	types := map[string]int{}
	f, err := os.Open(qa)
	require.NoError(t, err)
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var item struct{ Type, Question, Answer string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &item))
		assert.NotEmpty(t, item.Question)
		assert.NotEmpty(t, item.Answer)
		types[item.Type]++
	}
	f.Close()
	assert.Positive(t, types["hop"], "two-hop items")
	assert.Positive(t, types["sum"], "node-summary items")

	out := filepath.Join(dir, "graphlm")
	// SelfGraphRAG's trainer: G-Retriever on the synthetic set, verbalised text by default.
	r = run(t, nil, "train", "selfgraphrag", "--index", idx, "--synth", qa, "--lm", lmDir, "--out", out, "--epochs", "1",
		"--gt-layers", "1", "--gt-hidden", "16", "--projector-hidden", "16", "--max-text-tokens", "48", "--max-new-tokens", "4",
		"--batch-size", "2", "--grad-steps", "1", "--lr", "1e-3", "--warmup-epochs", "0", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "held out")
	// The held-out (synthetic) loss decreases: the best validation loss after training
	// is below the loss before it.
	var before, after float64
	_, err = fmt.Sscanf(r.stdout[strings.Index(r.stdout, "validation loss"):], "validation loss %f → %f", &before, &after)
	require.NoError(t, err, r.stdout)
	assert.Less(t, after, before, "held-out loss")

	r = run(t, nil, "query", "--index", idx, "--retriever", "gretriever", "--model", out, "--lm", lmDir, "--answer", "Who built Tallow Point Lighthouse?")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Answer: ")
	assert.Contains(t, r.stdout, "subgraph:\n", r.stdout)
	assert.NotContains(t, r.stdout, "node_id,node_attr", "the model answers from the verbal text it was trained on")

	// The baseline: the same frozen LM from the same verbalised triples, no graph token.
	r = run(t, nil, "query", "--index", idx, "--retriever", "gretriever", "--model", out, "--lm", lmDir, "--answer", "--no-graph-token", "Who built Tallow Point Lighthouse?")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Answer: ")

	report := filepath.Join(dir, "report")
	r = run(t, nil, "eval", "--index", idx, "--dataset", qa, "--retrievers", "gretriever", "--model", out, "--lm", lmDir, "--out", report, "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	for _, name := range []string{"report.md", "report.json"} {
		st, err := os.Stat(filepath.Join(report, name))
		require.NoError(t, err, name)
		assert.Positive(t, st.Size(), name)
	}
}

// TestTrainGRetrieverQwen3ChatTemplate trains G-Retriever on the example corpus
// through a tiny Qwen3-layout LM with the real Qwen3 tokenizer and its chat template
// (seed 004's reader family), seed 004's encoder profile: the held-out loss falls,
// the checkpoint records the chat-template prompt, and reloading answers the same.
func TestTrainGRetrieverQwen3ChatTemplate(t *testing.T) {
	tokDir := sharedTokenizerDir(t, "qwen3")
	dir := t.TempDir()
	idx := filepath.Join(dir, "h.gl")
	r := run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idx)
	require.Equal(t, 0, r.code, r.stderr)
	lmDir := filepath.Join(dir, "qwen3")
	_, err := lmtest.Write(lmDir, lmtest.Spec{ModelType: "qwen3", HeadDim: 16, Tied: true, Seed: 4,
		TokenizerDir: tokDir, Vocab: 151669, BOSID: -1, EOSID: 151645})
	require.NoError(t, err)
	qa := filepath.Join(dir, "synth.jsonl")
	// --adjacent-ends keeps the eight items this test was written on (of which one or
	// two are held out): what it checks is training through the Qwen3 layout and
	// template, and whether the loss on so few items falls in two epochs turns on
	// which items they are.
	r = run(t, nil, "synth", "--index", idx, "--generator", "template", "--max-hop", "6", "--max-sum", "2", "--adjacent-ends", "--out", qa, "--quiet")
	require.Equal(t, 0, r.code, r.stderr)

	for _, c := range []struct {
		name  string
		extra []string
		norm  string
	}{
		{"seed004 encoder", []string{"--encoder", "seed004"}, `"norm":"layer"`},
		{"g-retriever encoder with LoRA", []string{"--encoder", "g-retriever", "--lora", "8"}, `"lora":8`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-"))
			args := append([]string{"train", "gretriever", "--index", idx, "--train", qa, "--lm", lmDir, "--out", out, "--epochs", "2",
				"--gt-layers", "2", "--projector-hidden", "16", "--max-text-tokens", "48", "--max-new-tokens", "4",
				"--batch-size", "2", "--lr", "2e-3", "--min-lr", "1e-3", "--warmup-epochs", "0", "--pcst-profile", "seed004", "--quiet"}, c.extra...)
			r := run(t, nil, args...)
			require.Equal(t, 0, r.code, r.stderr)
			var before, after float64
			_, err := fmt.Sscanf(r.stdout[strings.Index(r.stdout, "validation loss"):], "validation loss %f → %f", &before, &after)
			require.NoError(t, err, r.stdout)
			assert.Less(t, after, before, "held-out loss")
			ck, err := os.ReadFile(filepath.Join(out, "model.ckpt"))
			require.NoError(t, err)
			assert.Contains(t, string(ck), `"prompt_format":"template"`)
			assert.Contains(t, string(ck), c.norm)
			if slices.Contains(c.extra, "--lora") {
				for _, f := range []string{"adapter_config.json", "adapter_model.safetensors"} {
					_, err := os.Stat(filepath.Join(out, "adapter", f))
					assert.NoError(t, err, "PEFT adapter file %s", f)
				}
			}
			ask := func() string {
				r := run(t, nil, "query", "--index", idx, "--retriever", "gretriever", "--model", out, "--lm", lmDir, "--answer", "--pcst-profile", "seed004", "Who built Tallow Point Lighthouse?")
				require.Equal(t, 0, r.code, r.stderr)
				return r.stdout
			}
			first := ask()
			assert.Contains(t, first, "Answer: ")
			assert.Equal(t, first, ask(), "a reload answers the same")
		})
	}
}

// TestTrainGRetrieverOnAnAPIEmbeddedIndex trains G-Retriever on an index whose
// vectors come from an embedding API (the scripted server): the searcher opens with
// that embedder, so the relation vectors and question match the index's space.
func TestTrainGRetrieverOnAnAPIEmbeddedIndex(t *testing.T) {
	srv := llmtest.NewServer(t)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_EMBED_MODEL=test-embed"}
	dir := t.TempDir()
	idx := filepath.Join(dir, "h.gl")
	r := run(t, env, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idx, "--extractor", "rule", "--embedder", "api")
	require.Equal(t, 0, r.code, r.stderr)
	lmDir := filepath.Join(dir, "lm")
	_, err := lmtest.Write(lmDir, lmtest.Spec{Seed: 5})
	require.NoError(t, err)
	out := filepath.Join(dir, "model")
	r = run(t, env, "train", "gretriever", "--index", idx, "--train", "../../examples/harbour/questions.json", "--lm", lmDir, "--out", out,
		"--epochs", "1", "--gt-layers", "1", "--gt-hidden", "16", "--projector-hidden", "16", "--max-text-tokens", "32",
		"--max-new-tokens", "4", "--batch-size", "4", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "validation loss")
	assert.Positive(t, srv.CountMatching(llmtest.EndpointIs(llmtest.Embeddings)), "questions and relations embedded through the API")
	// Without the embedding model the index cannot be opened: a clear refusal, not a silent mismatch.
	r = run(t, nil, "train", "gretriever", "--index", idx, "--train", "../../examples/harbour/questions.json", "--lm", lmDir,
		"--out", filepath.Join(dir, "other"), "--epochs", "1", "--quiet")
	assert.NotEqual(t, 0, r.code)
	assert.NotContains(t, r.stderr, "panic")
}

// TestTrainedRetrieval: query and eval give a G-Retriever model the PCST settings it
// was trained with where the command line leaves them at their defaults, keep those
// given explicitly (by flag or profile) and warn when they differ.
func TestTrainedRetrieval(t *testing.T) {
	dir := t.TempDir()
	trained := retrieve.DefaultConfig()
	trained.PCSTTopK, trained.PCSTTopKEdges, trained.PCSTEdgeCost, trained.PCSTMaxNodes = 15, 20, 0.25, 500
	require.NoError(t, checkpoint.Save(filepath.Join(dir, grBest), &checkpoint.File{Kind: "test", Meta: map[string]string{pcstMeta: pcstSettings(trained)}}))
	for _, tc := range []struct {
		name string
		args []string
		want func(c *retrieve.Config)
		warn string
	}{
		{"defaults take the trained settings", nil, func(c *retrieve.Config) {
			c.PCSTTopK, c.PCSTTopKEdges, c.PCSTEdgeCost, c.PCSTMaxNodes = 15, 20, 0.25, 500
		}, ""},
		{"an explicit flag wins, with a warning", []string{"--pcst-topk", "4"}, func(c *retrieve.Config) {
			c.PCSTTopK, c.PCSTTopKEdges, c.PCSTEdgeCost, c.PCSTMaxNodes = 4, 20, 0.25, 500
		}, "--pcst-topk 4 (trained with 15)"},
		{"a profile counts as explicit", []string{"--pcst-profile", "g-retriever"}, func(c *retrieve.Config) {
			c.PCSTTopK, c.PCSTTopKEdges, c.PCSTEdgeCost, c.PCSTMaxNodes = 3, 5, 0.5, 500
		}, "--pcst-topk 3 (trained with 15), --pcst-topk-e 5 (trained with 20), --pcst-cost-e 0.5 (trained with 0.25)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := retrieve.DefaultConfig()
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
			registerRetrievalFlags(cmd, &cfg)
			var stderr bytes.Buffer
			cmd.SetErr(&stderr)
			require.NoError(t, cmd.ParseFlags(tc.args))
			g := gretrieverFlags{model: dir}
			require.NoError(t, g.trainedRetrieval(cmd, &cfg))
			want := retrieve.DefaultConfig()
			if slices.Contains(tc.args, "--pcst-profile") {
				want.PCSTTopK, want.PCSTTopKEdges, want.PCSTEdgeCost = 3, 5, 0.5
			}
			tc.want(&want)
			assert.Equal(t, want, cfg)
			if tc.warn == "" {
				assert.Empty(t, stderr.String())
			} else {
				assert.Contains(t, stderr.String(), tc.warn)
			}
		})
	}
}
