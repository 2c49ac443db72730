package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio/interop/interoptest"
	"github.com/graphloom/graphloom/models/checkpoint"
)

// runIn runs the command in the working directory dir.
func runIn(t *testing.T, dir string, args ...string) result {
	t.Helper()
	cmd := cli(t, nil, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(interface{ ExitCode() int })
		require.True(t, ok, "%v", err)
		code = ee.ExitCode()
	}
	return result{code, out.String(), errb.String()}
}

// snapshot returns every file under dir with its content (directories as "/").
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() {
			files[rel] = "/"
			return nil
		}
		b, err := os.ReadFile(p)
		files[rel] = string(b)
		return err
	}))
	return files
}

// TestOutputGuard: every writer refuses, before any work and with exit 2 naming both
// paths, an output that is one of its inputs (by any name), lies inside an input
// directory, is a directory where a file goes, or is an existing file it did not
// write; every input is byte-identical afterwards (issue 49, rows 1-6 and 12).
func TestOutputGuard(t *testing.T) {
	dir := t.TempDir()
	corpus, err := os.ReadFile(writeCorpus(t, 5))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "corpus.json"), corpus, 0o644))
	require.NoError(t, os.Link(filepath.Join(dir, "corpus.json"), filepath.Join(dir, "hardlink.json")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "q.jsonl"), []byte(`{"id":"q1","question":"Who founded Quillhaven0?"}`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("my notes\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.gl.cage"), []byte("an encoder"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gephi.graphml"), []byte(`<?xml version="1.0"?><graphml><key id="d0" for="node" attr.name="label"/><graph/></graphml>`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "gold.jsonl"), []byte(`{"id":"q1","type":"bridge","question":"Who?","answer":"x"}`+"\n"), 0o644))
	require.NoError(t, checkpoint.Save(filepath.Join(dir, "other.ckpt"), &checkpoint.File{Kind: "gretriever", Config: []byte("{}")}))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "report.json"), []byte(`[{"id":"q1","question":"Who founded Quillhaven0?","answer":"x"}]`), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	require.NoError(t, interoptest.Sample().Write(filepath.Join(dir, "rag")))
	r := runIn(t, dir, "index", "--corpus", "corpus.json", "--out", "x.gl", "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	abs := filepath.Join(dir, "corpus.json")

	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"1 index onto its corpus", []string{"index", "--corpus", "corpus.json", "--out", "corpus.json"}, "--out corpus.json is the same file as --corpus corpus.json"},
		{"1 index onto ./corpus", []string{"index", "--corpus", "corpus.json", "--out", "./corpus.json"}, "--out ./corpus.json is the same file as --corpus corpus.json"},
		{"1 index onto the absolute corpus", []string{"index", "--corpus", "corpus.json", "--out", abs}, "--out " + abs + " is the same file as --corpus corpus.json"},
		{"1 index onto a hard link of the corpus", []string{"index", "--corpus", "corpus.json", "--out", "hardlink.json"}, "--out hardlink.json is the same file as --corpus corpus.json"},
		{"2 query run onto the index", []string{"query", "--index", "x.gl", "--questions", "q.jsonl", "--out", "x.gl"}, "--out x.gl is the same file as --index x.gl"},
		{"3 query run onto the questions", []string{"query", "--index", "x.gl", "--questions", "q.jsonl", "--out", "q.jsonl"}, "--out q.jsonl is the same file as --questions q.jsonl"},
		{"4 export onto the index", []string{"export", "--to", "graphml", "x.gl", "x.gl"}, "DST x.gl is the same file as INDEX x.gl"},
		{"5 import onto a source store", []string{"import", "--from", "lightrag", "rag", "--out", "rag/kv_store_text_chunks.json"}, "--out rag/kv_store_text_chunks.json lies inside SRC rag"},
		{"5 import into the source directory", []string{"import", "--from", "lightrag", "rag", "--out", "rag/new.gl"}, "--out rag/new.gl lies inside SRC rag"},
		{"6 export onto another tool's GraphML", []string{"export", "--to", "graphml", "x.gl", "gephi.graphml"}, "DST gephi.graphml exists and is not a GraphML file this command wrote"},
		{"6 export onto a text file", []string{"export", "--to", "graphml", "x.gl", "notes.txt"}, "DST notes.txt exists and is not a GraphML file this command wrote"},
		{"6 augment onto a corpus", []string{"augment", "--index", "x.gl", "--out", "corpus.json"}, "--out corpus.json exists and is not a graphloom index"},
		{"6 query run onto a text file", []string{"query", "--index", "x.gl", "--questions", "q.jsonl", "--out", "notes.txt"}, "--out notes.txt exists and is not a run file"},
		{"query run onto the CAGE encoder, forced", []string{"query", "--index", "x.gl", "--questions", "q.jsonl", "--out", "x.gl.cage", "--force"}, "--out x.gl.cage is the same file as the CAGE encoder x.gl.cage"},
		{"6 synth onto a QA set", []string{"synth", "--index", "x.gl", "--generator", "template", "--out", "gold.jsonl"}, "--out gold.jsonl exists and is not a synthetic-item file"},
		{"6 synth onto a text file", []string{"synth", "--index", "x.gl", "--generator", "template", "--out", "notes.txt"}, "--out notes.txt exists and is not a synthetic-item file"},
		{"6 eval corpus onto the dataset", []string{"eval", "--dataset", "q.jsonl", "--corpus-out", "q.jsonl"}, "--corpus-out q.jsonl is the same file as --dataset q.jsonl"},
		{"6 train cage onto a text file", []string{"train", "cage", "--index", "x.gl", "--out", "notes.txt"}, "--out notes.txt exists and is not a CAGE encoder checkpoint"},
		{"6 train cage onto another model's checkpoint", []string{"train", "cage", "--index", "x.gl", "--out", "other.ckpt"}, "--out other.ckpt exists and is not a CAGE encoder checkpoint"},
		{"12 index onto a directory", []string{"index", "--corpus", "corpus.json", "--out", "sub"}, "--out sub is an existing directory"},
		{"12 import onto a directory", []string{"import", "--from", "lightrag", "rag", "--out", "sub"}, "--out sub is an existing directory"},
		{"eval's report onto its dataset", []string{"eval", "--index", "x.gl", "--dataset", "report.json", "--out", "."}, "--out .: writing report.json there would destroy --dataset report.json"},
		{"eval's report onto its dataset, by another name", []string{"eval", "--index", "x.gl", "--dataset", "./report.json", "--out", dir}, "--out " + dir + ": writing report.json there would destroy --dataset ./report.json"},
		{"export layout onto a file", []string{"export", "--to", "lightrag", "x.gl", "notes.txt"}, "DST notes.txt exists and is not a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, dir)
			r := runIn(t, dir, append(tc.args, "--quiet")...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.Equal(t, before, snapshot(t, dir), "every input and file is unchanged, no lock or temporary file left")
		})
	}

	t.Run("own outputs are replaced", func(t *testing.T) {
		for _, args := range [][]string{
			{"index", "--corpus", "corpus.json", "--out", "x.gl"},
			{"augment", "--index", "x.gl", "--selector", "random", "--budget", "2"},
			{"augment", "--index", "x.gl", "--out", "./x.gl", "--selector", "random", "--budget", "2"},
			{"query", "--index", "x.gl", "--questions", "q.jsonl", "--out", "run.jsonl"},
			{"query", "--index", "x.gl", "--questions", "q.jsonl", "--out", "run.jsonl"},
			{"export", "--to", "graphml", "x.gl", "x.graphml"},
			{"export", "--to", "graphml", "x.gl", "x.graphml"},
			{"export", "--to", "graphml", "x.gl", "notes.txt", "--force"},
		} {
			r := runIn(t, dir, append(args, "--quiet")...)
			require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		}
		assert.Equal(t, string(corpus), readFile(t, abs))
		assert.Contains(t, readFile(t, filepath.Join(dir, "notes.txt")), "<graphml")

		// An empty file (what synth writes when every item is rejected) loses
		// nothing when replaced.
		empty := filepath.Join(dir, "empty.jsonl")
		require.NoError(t, os.WriteFile(empty, nil, 0o644))
		r := runIn(t, dir, "synth", "--index", "x.gl", "--generator", "template", "--out", "empty.jsonl", "--quiet")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, readFile(t, empty), `"type":`)
	})
}
