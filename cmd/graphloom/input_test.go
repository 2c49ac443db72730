package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// TestNumericFlagsAreDecimal: numeric flags read decimal numbers, leading zeros
// included, and refuse other bases (issue 49 row 10).
func TestNumericFlagsAreDecimal(t *testing.T) {
	for _, tc := range []struct {
		cmd, flag, arg, want, err string
	}{
		{"augment", "seed", "010", "10", ""},
		{"augment", "seed", "08", "8", ""},
		{"augment", "seed", "-007", "-7", ""},
		{"query", "top-k", "010", "10", ""},
		{"eval", "ks", "01,010", "[1,10]", ""},
		{"query", "damping", "0.50", "0.5", ""},
		{"augment", "seed", "0x10", "", `"0x10" is not a decimal integer`},
		{"query", "top-k", "1e3", "", `"1e3" is not a decimal integer`},
		{"query", "top-k", "0b11", "", `"0b11" is not a decimal integer`},
		{"query", "damping", "0x1p-1", "", `"0x1p-1" is not a decimal number`},
	} {
		t.Run(tc.cmd+" --"+tc.flag+" "+tc.arg, func(t *testing.T) {
			c, _, err := newRootCmd().Find([]string{tc.cmd})
			require.NoError(t, err)
			err = c.Flags().Set(tc.flag, tc.arg)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, c.Flags().Lookup(tc.flag).Value.String())
		})
	}
	r := run(t, nil, "augment", "--index", "x.gl", "--seed", "0x8")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, `"0x8" is not a decimal integer`)
	assert.NotContains(t, r.stderr, "strconv")
}

// TestQuestionsAreChecked: a question without content is a usage error on the command
// line and in --questions, and question ids must be unique (issue 49 rows 8, 9, 14).
func TestQuestionsAreChecked(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 3), "--out", idx, "--quiet").code)
	qfile := func(content string) string {
		p := filepath.Join(t.TempDir(), "q.jsonl")
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	out := filepath.Join(dir, "run.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"empty", []string{""}, "query: the question is empty"},
		{"blank", []string{"   "}, "query: the question is empty"},
		{"punctuation", []string{"?!."}, `query: the question "?!." has no letter or digit`},
		{"blank line question", []string{"--questions", qfile(`{"id":"a","question":" "}`), "--out", out}, `q.jsonl:1: field "question": the question is empty`},
		{"colliding default id", []string{"--questions", qfile("{\"id\":\"q2\",\"question\":\"Who founded Quillhaven1?\"}\n{\"question\":\"Where?\"}\n"), "--out", out}, `q.jsonl:2: no id, and its default id "q2" is the id of line 1`},
		{"duplicate id", []string{"--questions", qfile("{\"id\":\"a\",\"question\":\"Who?\"}\n{\"id\":\"a\",\"question\":\"Where?\"}\n"), "--out", out}, `q.jsonl:2: id "a" is also the id of line 1`},
		{"numeric id", []string{"--questions", qfile(`{"id":7,"question":"Who?"}`), "--out", out}, `q.jsonl:1: field "id": want a string, got a number`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, append([]string{"query", "--index", idx}, tc.args...)...)
			assert.Equal(t, exitUsage, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.NotContains(t, r.stderr, "Go value")
			assert.NoFileExists(t, out)
		})
	}
}

// TestServeRefusesAnOpenNetworkWithoutAToken: listening beyond loopback needs
// GRAPHLOOM_SERVE_TOKEN or --insecure (issue 49 row 11).
func TestServeRefusesAnOpenNetworkWithoutAToken(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 2), "--out", idx, "--quiet").code)
	r := run(t, nil, "serve", "--index", idx, "--addr", "0.0.0.0:0", "--dry-run")
	assert.Equal(t, exitUsage, r.code, r.stderr)
	assert.Contains(t, r.stderr, "--addr 0.0.0.0:0 listens on 0.0.0.0, beyond this machine, without a token: set GRAPHLOOM_SERVE_TOKEN")
	r = run(t, nil, "serve", "--index", idx, "--addr", "0.0.0.0:0", "--dry-run", "--insecure")
	assert.Equal(t, 0, r.code, r.stderr)
	r = run(t, []string{serveTokenEnv + "=s3cret"}, "serve", "--index", idx, "--addr", "0.0.0.0:0", "--dry-run")
	assert.Equal(t, 0, r.code, r.stderr)
	r = run(t, nil, "serve", "--index", idx, "--addr", "127.0.0.1:0", "--dry-run")
	assert.Equal(t, 0, r.code, r.stderr)
}

// TestCorpusInputs: a symbolic link to a corpus directory is followed and links
// skipped inside it are named; a single text file is a corpus; a bad corpus is named
// with what would do (issue 49 rows 7, 13, 14).
func TestCorpusInputs(t *testing.T) {
	base := t.TempDir()
	docs := filepath.Join(base, "docs")
	require.NoError(t, os.Mkdir(docs, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(docs, "a.txt"), []byte("Mara Vell founded Quillhaven in 1801."), 0o644))
	require.NoError(t, os.Symlink(t.TempDir(), filepath.Join(docs, "more")))
	link := filepath.Join(base, "link")
	require.NoError(t, os.Symlink(docs, link))
	notes := filepath.Join(base, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("Tomas Brell was born in Aldwick."), 0o644))
	bad := filepath.Join(base, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`[{"title":"a","text":"Mara Vell founded Quillhaven."}, null, 42]`), 0o644))

	r := run(t, nil, "index", "--corpus", link, "--out", filepath.Join(base, "l.gl"), "--quiet")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "1 documents")
	assert.Contains(t, r.stderr, "warning: skipped "+filepath.Join(link, "more")+": symbolic link to a directory: not followed")

	r = run(t, nil, "index", "--corpus", notes, "--out", filepath.Join(base, "n.gl"), "--quiet")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "1 documents")

	r = run(t, nil, "index", "--corpus", bad, "--out", filepath.Join(base, "b.gl"), "--quiet")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, `bad.json#1: want an object {"title", "text"}, got null`)
	assert.Contains(t, r.stderr, `bad.json#2: want an object {"title", "text"}, got a number`)
	assert.NotContains(t, r.stderr, "Go value")

	require.NoError(t, os.WriteFile(bad, []byte("A plain line"), 0o644))
	r = run(t, nil, "index", "--corpus", bad, "--out", filepath.Join(base, "b2.gl"), "--quiet")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "a .txt/.md file, or a directory of .txt/.md files")
}

// TestCorpusFromDatasetSaysWhatItLeftOut: a record whose answer cannot be read is not
// read, so its passages are not indexed: index names its line and why, --strict
// refuses it, and eval --corpus-out warns the same.
func TestCorpusFromDatasetSaysWhatItLeftOut(t *testing.T) {
	base := t.TempDir()
	ds := filepath.Join(base, "qs.jsonl")
	require.NoError(t, os.WriteFile(ds, []byte(`{"question": "Who founded Quillhaven?", "answer": "Mara Vell", "paragraphs": [{"title": "Quillhaven", "text": "Mara Vell founded Quillhaven in 1801."}]}
{"question": "Where was Tomas Brell born?", "answer": {"span": "Aldwick"}, "paragraphs": [{"title": "Tomas Brell", "text": "Tomas Brell was born in Aldwick."}]}
{"question": "What is Ostrid?", "answer": "a ford", "paragraphs": [{"text": "Ostrid is a ford on the Orlen."}]}
{"question": "What is the Orlen?", "answer": [["a river"]], "paragraphs": [{"title": "Orlen", "text": "The Orlen is a river."}]}
`), 0o644))
	r := run(t, nil, "index", "--corpus-from-dataset", ds, "--out", filepath.Join(base, "x.gl"), "--quiet")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "2 documents")
	assert.Contains(t, r.stderr, "warning: skipped "+ds+`:2: record not read, its passages not indexed: answer: an object without "text", "value" or "aliases"`)
	assert.Contains(t, r.stderr, "warning: "+ds+":3: paragraphs[0]: no title")

	r = run(t, nil, "index", "--corpus-from-dataset", ds, "--out", filepath.Join(base, "y.gl"), "--quiet", "--strict")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, ds+":2: record not read (--strict): answer:")
	assert.Equal(t, 1, strings.Count(r.stderr, ds+":2:"), "the first skipped record is named once, by the error: %s", r.stderr)
	assert.Contains(t, r.stderr, "(and 1 more records skipped; strict mode)")
	assert.Contains(t, r.stderr, "warning: skipped "+ds+":4: record not read", "the others are still listed")
	assert.NoFileExists(t, filepath.Join(base, "y.gl"))

	r = run(t, nil, "eval", "--dataset", ds, "--corpus-out", filepath.Join(base, "c.jsonl"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: "+ds+`:2: skipped: answer: an object without "text"`)
	assert.Contains(t, r.stderr, "warning: "+ds+":3: paragraphs[0]: no title")
	assert.Contains(t, r.stdout, "2 passages")
}

// TestFailedFirstWriteLeavesNothing: a failed write where no index existed leaves no
// lock and no temporary file (issue 49 row 15).
func TestFailedFirstWriteLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(dir string) []string
		want string
	}{
		{"import from an empty directory", func(dir string) []string {
			src := filepath.Join(dir, "src")
			require.NoError(t, os.Mkdir(src, 0o755))
			return []string{"import", "--from", "lightrag", src, "--out", filepath.Join(dir, "out", "x.gl")}
		}, "kv_store_text_chunks.json"},
		{"index --strict with a bad record", func(dir string) []string {
			c := filepath.Join(dir, "src", "c.json")
			require.NoError(t, os.MkdirAll(filepath.Dir(c), 0o755))
			require.NoError(t, os.WriteFile(c, []byte(`[{"text":"Mara Vell founded Quillhaven."}, 42]`), 0o644))
			return []string{"index", "--corpus", c, "--strict", "--out", filepath.Join(dir, "out", "x.gl")}
		}, "strict mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.Mkdir(filepath.Join(dir, "out"), 0o755))
			r := run(t, nil, append(tc.args(dir), "--quiet")...)
			assert.Equal(t, 1, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			left, err := os.ReadDir(filepath.Join(dir, "out"))
			require.NoError(t, err)
			assert.Empty(t, left, "no lock file, no temporary file")
		})
	}
}

// TestStatsCutsLongNames: a 100 KB entity name is cut in the human output and whole
// with --full (issue 49 row 16).
func TestStatsCutsLongNames(t *testing.T) {
	long := strings.Repeat("é", 100_000)
	s := graphio.Stats{Entities: 2, TopEntities: []graphio.EntityStat{{Name: long, Degree: 3}, {Name: "Mara Vell", Degree: 2}}}
	for _, tc := range []struct {
		full    bool
		want    string
		maxSize int
	}{
		{false, strings.Repeat("é", maxNameRunes) + "… (100000 characters; --full shows them) (3), Mara Vell (2)", 2000},
		{true, long + " (3), Mara Vell (2)", 300_000},
	} {
		var out bytes.Buffer
		cmd := &cobra.Command{}
		cmd.SetOut(&out)
		require.NoError(t, printStats(cmd, "x.gl", s, tc.full))
		assert.Contains(t, out.String(), tc.want)
		assert.Less(t, out.Len(), tc.maxSize)
	}
}

// TestLLMFailFastCanBeSwitchedOff: the first eight attempts failing make the client
// give up on every chunk; with --llm-fail-fast=false it keeps retrying and every chunk
// is extracted (a server still loading its model; issue 49 row 18).
func TestLLMFailFastCanBeSwitchedOff(t *testing.T) {
	corpus := writeCorpus(t, 3)
	for _, tc := range []struct {
		flag string
		code int
		want string
	}{
		{"--llm-fail-fast=true", 1, "the extraction failed for every chunk (3 of 3)"},
		{"--llm-fail-fast=false", 0, "server_error 8"},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			srv := extractionServer(t, 0)
			fault := llmtest.ServerError(503)
			fault.RetryAfter = "0"
			srv.FailNext(8, fault)
			env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m"}
			r := run(t, env, "index", "--corpus", corpus, "--out", filepath.Join(t.TempDir(), "x.gl"), "--llm-concurrency", "1", "--quiet", tc.flag)
			assert.Equal(t, tc.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			if tc.code == 0 {
				assert.NotContains(t, r.stderr, "extraction failed")
			}
		})
	}
}

// TestLLMTimeoutSetsTheDeadline: --llm-timeout 30m gives a request deadline of three
// attempts, not the 10-minute default a shorter timeout gets.
func TestLLMTimeoutSetsTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		timeout  time.Duration
		deadline time.Duration
	}{{30 * time.Minute, 90 * time.Minute}, {2 * time.Minute, 10 * time.Minute}} {
		var lf llmFlags
		cmd := &cobra.Command{Use: "x"}
		lf.register(cmd)
		require.NoError(t, cmd.Flags().Set("llm-timeout", tc.timeout.String()))
		cfg := lf.config()
		cfg.BaseURL, cfg.Model, cfg.CacheDir = "http://127.0.0.1:1/v1", "m", ""
		c, err := llm.New(cfg)
		require.NoError(t, err)
		assert.Equal(t, tc.deadline, c.Config().RequestDeadline, "--llm-timeout %s", tc.timeout)
	}
}

// TestAddStrictNamesTheFirstSkipOnce: index --add --strict refuses a corpus with an
// unusable record, naming it once (by the error), and lists the others.
func TestAddStrictNamesTheFirstSkipOnce(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "x.gl")
	r := run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idx)
	require.Equal(t, 0, r.code, r.stderr)
	bad := filepath.Join(dir, "more.json")
	require.NoError(t, os.WriteFile(bad, []byte(`[{"title": "Orlen", "text": "The Orlen is a river."}, 42, {"title": 7}]`), 0o644))
	r = run(t, nil, "index", "--add", bad, "--index", idx, "--strict", "--quiet")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "strict mode")
	assert.Equal(t, 1, strings.Count(r.stderr, bad+"#1"), "the first skipped record is named once: %s", r.stderr)
	assert.Contains(t, r.stderr, "warning: skipped "+bad+"#2", "the others are listed")
}
