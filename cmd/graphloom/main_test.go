package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// TestMain lets the test binary act as the graphloom command, so tests can run it as
// a separate process (and kill it).
func TestMain(m *testing.M) {
	if os.Getenv("GRAPHLOOM_TEST_CLI") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

type result struct {
	code           int
	stdout, stderr string
}

// cli starts the command with args and extra environment variables.
func cli(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "GRAPHLOOM_TEST_CLI=1", "GRAPHLOOM_LLM_BASE_URL=", "GRAPHLOOM_LLM_MODEL=",
		"GRAPHLOOM_EMBED_BASE_URL=", "GRAPHLOOM_EMBED_MODEL=", "GRAPHLOOM_LLM_CACHE=off")
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := cli(t, env, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{code, out.String(), errb.String()}
}

func writeCorpus(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "{\"title\":\"Passage %d\",\"text\":\"Mara Vell%d founded Quillhaven%d in %d. Mara Vell%d was born in Ostrid%d. Quillhaven%d lies near Orlen Ford%d.\"}\n", i, i, i, 1800+i, i, i, i, i)
	}
	p := filepath.Join(t.TempDir(), "c.jsonl")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

func TestIndexStatsOffline(t *testing.T) {
	corpus := writeCorpus(t, 5)
	idx := filepath.Join(t.TempDir(), "x.gl")
	r := run(t, nil, "index", "--corpus", corpus, "--out", idx)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "5 documents")
	r = run(t, nil, "stats", "--index", idx, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"documents": 5`)
	assert.Contains(t, r.stdout, `"extractor": "rule"`)
}

func TestExitCodesAndErrors(t *testing.T) {
	dir := t.TempDir()
	corpus := writeCorpus(t, 2)
	idx := filepath.Join(dir, "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", corpus, "--out", idx, "--no-graph").code)
	data, err := os.ReadFile(idx)
	require.NoError(t, err)
	flipped := bytes.Clone(data)
	flipped[len(flipped)/2] ^= 0xff
	require.NoError(t, os.WriteFile(filepath.Join(dir, "flip.gl"), flipped, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "trunc.gl"), data[:len(data)*2/3], 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.json"), []byte("[{\"text\": }]"), 0o644))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"checksum", []string{"stats", "--index", filepath.Join(dir, "flip.gl")}, 1, "checksum mismatch"},
		{"truncated", []string{"stats", "--index", filepath.Join(dir, "trunc.gl")}, 1, "truncated"},
		{"missing flag", []string{"stats"}, 2, "--index is required"},
		{"unknown flag", []string{"stats", "--nope"}, 2, "unknown flag"},
		{"malformed corpus names the file and line", []string{"index", "--corpus", filepath.Join(dir, "bad.json"), "--out", idx}, 1, "bad.json:1: malformed JSON"},
		{"llm extractor without an llm", []string{"index", "--corpus", corpus, "--out", idx, "--extractor", "llm"}, 2, "no LLM configured"},
		{"an argument too many", []string{"stats", "--index", idx, "extra"}, 2, `unknown command "extra"`},
		{"an argument too few", []string{"export", "--to", "graphml", idx}, 2, "accepts 2 arg(s), received 1"},
		{"unknown command", []string{"bogus"}, 2, `unknown command "bogus" for "graphloom"`},
		{"unknown subcommand", []string{"train", "bogus"}, 2, `unknown command "bogus" for "graphloom train"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, nil, tc.args...)
			assert.Equal(t, tc.code, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
		})
	}
	// The failed index run did not damage the existing index.
	_, err = graphio.ReadFile(idx)
	assert.NoError(t, err)
}

// extractionServer answers every OpenIE call for the writeCorpus passages.
func extractionServer(t *testing.T, delay time.Duration) *llmtest.Server {
	srv := llmtest.NewServer(t)
	srv.SetDefault(func(r llmtest.Request) llmtest.Reply {
		if delay > 0 {
			time.Sleep(delay)
		}
		u := r.LastUser()
		var i int
		if at := strings.Index(u, "Passage "); at >= 0 {
			fmt.Sscanf(u[at:], "Passage %d", &i)
		}
		switch sys := r.Messages[0].Content; {
		case strings.Contains(sys, "extract named entities"):
			return llmtest.Reply{Content: fmt.Sprintf(`{"named_entities": ["Mara Vell%d", "Quillhaven%d"]}`, i, i)}
		case strings.Contains(sys, "RDF graph"):
			return llmtest.Reply{Content: fmt.Sprintf(`{"triples": [["Mara Vell%d", "founded", "Quillhaven%d"]]}`, i, i)}
		}
		return llmtest.Reply{Content: "{}"}
	})
	return srv
}

func TestIndexWithLLMUsesCache(t *testing.T) {
	srv := extractionServer(t, 0)
	corpus := writeCorpus(t, 6)
	dir := t.TempDir()
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=" + filepath.Join(dir, "cache"),
		"GRAPHLOOM_API_KEY=sk-secret-never-logged"}
	r := run(t, env, "index", "--corpus", corpus, "--out", filepath.Join(dir, "a.gl"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 12, srv.Count(), "NER and triples for 6 chunks")
	assert.Contains(t, r.stderr, "LLM usage")
	ix, err := graphio.ReadFile(filepath.Join(dir, "a.gl"))
	require.NoError(t, err)
	assert.Len(t, ix.Facts, 6)
	assert.Equal(t, "llm:m", ix.Meta.Extractor)

	r = run(t, env, "index", "--corpus", corpus, "--out", filepath.Join(dir, "b.gl"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 12, srv.Count(), "a second run makes zero HTTP calls")
	// The same content: compressed sizes may differ, since the meta section holds the
	// creation time.
	a, err := graphio.ReadFile(filepath.Join(dir, "a.gl"))
	require.NoError(t, err)
	b, err := graphio.ReadFile(filepath.Join(dir, "b.gl"))
	require.NoError(t, err)
	a.Meta.Created, b.Meta.Created = "", ""
	assert.Equal(t, a, b)

	// The key reaches the server but is never written to disk or printed.
	assert.Equal(t, "Bearer sk-secret-never-logged", srv.Requests()[0].Header.Get("Authorization"))
	assert.NotContains(t, r.stdout+r.stderr, "sk-secret")
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			data, _ := os.ReadFile(p)
			assert.NotContains(t, string(data), "sk-secret", p)
		}
		return nil
	})
}

func TestIndexKilledAndRerunDoesNotResend(t *testing.T) {
	srv := extractionServer(t, 40*time.Millisecond)
	corpus := writeCorpus(t, 40)
	dir := t.TempDir()
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=" + filepath.Join(dir, "cache")}
	args := []string{"index", "--corpus", corpus, "--out", filepath.Join(dir, "a.gl"), "--llm-concurrency", "2"}
	cmd := cli(t, env, args...)
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(30 * time.Second)
	for srv.AnsweredCount() < 20 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	answered := map[string]bool{}
	for _, r := range srv.Answered() {
		answered[string(r.Body)] = true
	}
	time.Sleep(300 * time.Millisecond) // answers seen above are cached by now
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.GreaterOrEqual(t, len(answered), 20)
	require.Less(t, srv.AnsweredCount(), 80, "killed half-way")
	before := srv.Count()

	r := run(t, env, args...)
	require.Equal(t, 0, r.code, r.stderr)
	for _, req := range srv.Requests()[before:] {
		assert.False(t, answered[string(req.Body)], "answered before the kill, sent again: %s", req.LastUser())
	}
	ix, err := graphio.ReadFile(filepath.Join(dir, "a.gl"))
	require.NoError(t, err)
	assert.Len(t, ix.Facts, 40)
}

// promptPassage is an evidence passage of a CrossAug completion prompt.
type promptPassage struct {
	ChunkID string `json:"chunk_id"`
	Passage string `json:"passage"`
}

// crossAugPrompt reads a CrossAug completion prompt's root entity and evidence
// passages; ok is false for any other prompt.
func crossAugPrompt(u string) (root string, passages []promptPassage, ok bool) {
	_, after, ok1 := strings.Cut(u, "Subgraph root entity:\n")
	_, ev, ok2 := strings.Cut(u, "Evidence passages:\n")
	end := strings.Index(ev, "\n\n")
	if !ok1 || !ok2 || end < 0 || json.Unmarshal([]byte(ev[:end]), &passages) != nil {
		return "", nil, false
	}
	return strings.TrimSpace(strings.Split(after, "\n")[0]), passages, true
}

// completionServer answers every CrossAug completion with one grounded triple: the
// root "admired" another name of an evidence chunk that names the root, citing it.
func completionServer(t *testing.T, delay time.Duration) *llmtest.Server {
	srv := llmtest.NewServer(t)
	names := regexp.MustCompile(`(Mara Vell|Quillhaven|Ostrid|Orlen Ford)\d+`)
	srv.SetDefault(func(r llmtest.Request) llmtest.Reply {
		if delay > 0 {
			time.Sleep(delay)
		}
		root, passages, ok := crossAugPrompt(r.LastUser())
		if !ok {
			return llmtest.Reply{Content: "{}"}
		}
		for _, p := range passages {
			if !strings.Contains(strings.ToLower(p.Passage), strings.ToLower(root)) {
				continue
			}
			for _, other := range names.FindAllString(p.Passage, -1) {
				if !strings.EqualFold(other, root) {
					return llmtest.Reply{Content: fmt.Sprintf(`{"new_triples": [{"triple": [%q, "admired", %q], "chunk_ids": [%q]}]}`, root, other, p.ChunkID)}
				}
			}
		}
		return llmtest.Reply{Content: "{}"}
	})
	return srv
}

func TestAugmentKilledResumesAndRollsBack(t *testing.T) {
	srv := completionServer(t, 30*time.Millisecond)
	dir := t.TempDir()
	idx := filepath.Join(dir, "a.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 30), "--out", idx).code)
	before, err := os.ReadFile(idx)
	require.NoError(t, err)
	env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=" + filepath.Join(dir, "cache")}
	args := []string{"augment", "--index", idx, "--selector", "random", "--budget", "24", "--roots", "60", "--llm-concurrency", "2", "--json"}

	cmd := cli(t, env, args...)
	require.NoError(t, cmd.Start())
	deadline := time.Now().Add(60 * time.Second)
	for srv.AnsweredCount() < 8 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	answered := map[string]bool{}
	for _, r := range srv.Answered() {
		answered[string(r.Body)] = true
	}
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.GreaterOrEqual(t, len(answered), 8)
	require.Less(t, srv.AnsweredCount(), 24, "killed during completion")
	after, _ := os.ReadFile(idx)
	assert.Equal(t, before, after, "a killed run leaves the index untouched")
	sent := srv.Count()

	r := run(t, env, args...)
	require.Equal(t, 0, r.code, r.stderr)
	for _, req := range srv.Requests()[sent:] {
		assert.False(t, answered[string(req.Body)], "a request answered before the kill was sent again")
	}
	var out struct {
		Report struct {
			Run   string `json:"run"`
			Added struct {
				Triples int `json:"triples"`
			} `json:"added"`
		} `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Equal(t, 24, out.Report.Added.Triples)
	ix, err := graphio.ReadFile(idx)
	require.NoError(t, err)
	require.Len(t, ix.Runs, 1)

	r = run(t, nil, "augment", "--index", idx, "--rollback", out.Report.Run)
	require.Equal(t, 0, r.code, r.stderr)
	after, _ = os.ReadFile(idx)
	assert.Equal(t, before, after, "rollback restores the index byte for byte")
}

func TestQueryWritesRunLines(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "c.json")
	texts := map[string]string{
		"Alder Vane":   "Alder Vane was born in Corran Bay. Alder Vane founded Dunmore Hall.",
		"Dunmore Hall": "Dunmore Hall is a library in Ostrid Ford.\n\nIt holds maps.",
		"Brin Holt":    "Brin Holt sailed from Ostrid Ford to Corran Bay.",
	}
	var recs []map[string]string
	for _, title := range []string{"Alder Vane", "Dunmore Hall", "Brin Holt"} {
		recs = append(recs, map[string]string{"title": title, "text": texts[title]})
	}
	data, _ := json.Marshal(recs)
	require.NoError(t, os.WriteFile(corpus, data, 0o644))
	idx := filepath.Join(dir, "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", corpus, "--out", idx).code)
	qs := filepath.Join(dir, "q.jsonl")
	require.NoError(t, os.WriteFile(qs, []byte("{\"id\":\"a\",\"question\":\"Where was the founder of Dunmore Hall born?\"}\n{\"id\":\"b\",\"question\":\"Who sailed to Corran Bay?\"}\n"), 0o644))
	for _, r := range []string{"bm25", "dense", "triples", "ppr", "hyperppr"} {
		out := filepath.Join(dir, r+".jsonl")
		res := run(t, nil, "query", "--index", idx, "--questions", qs, "--retriever", r, "--top-k", "2", "--out", out)
		require.Equal(t, 0, res.code, res.stderr)
		lines := strings.Split(strings.TrimSpace(readFile(t, out)), "\n")
		require.Len(t, lines, 2, r)
		for _, l := range lines {
			var line struct {
				ID        string `json:"id"`
				Retriever string `json:"retriever"`
				Passages  []struct {
					ChunkID string  `json:"chunk_id"`
					Title   string  `json:"title"`
					Text    string  `json:"text"`
					Score   float64 `json:"score"`
				} `json:"passages"`
				Facts [][]string `json:"facts"`
			}
			require.NoError(t, json.Unmarshal([]byte(l), &line))
			assert.Equal(t, r, line.Retriever)
			assert.NotNil(t, line.Facts)
			require.NotEmpty(t, line.Passages, r)
			for _, p := range line.Passages {
				assert.Equal(t, texts[p.Title], p.Text, "a whole passage keeps its title and text unchanged")
				assert.True(t, strings.HasPrefix(p.ChunkID, "chunk-"))
			}
		}
	}
	res := run(t, nil, "query", "--index", idx, "--retriever", "ppr", "Who founded Dunmore Hall?")
	require.Equal(t, 0, res.code, res.stderr)
	assert.Contains(t, res.stdout, "1. ")
	res = run(t, nil, "query", "--index", idx, "--retriever", "nope", "x")
	assert.Equal(t, 2, res.code)
	res = run(t, nil, "query", "--index", idx, "--answer", "x")
	assert.Equal(t, 2, res.code)
	assert.Contains(t, res.stderr, "needs an LLM")
}

func readFile(t *testing.T, p string) string {
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}
