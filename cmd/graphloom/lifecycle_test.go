package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// TestIndexAddAndDelete: `index --add` grows an index in place (a document already
// present is skipped and counted), another chunking is refused naming both, `delete
// --plan` writes nothing, `delete --out` leaves the input as it was, and `delete`
// in place removes the document's chunks.
func TestIndexAddAndDelete(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 5), "--out", idx).code)
	more := filepath.Join(dir, "more.json")
	require.NoError(t, os.WriteFile(more, []byte(`[{"title":"Passage 0","text":"Mara Vell0 founded Quillhaven0 in 1800. Mara Vell0 was born in Ostrid0. Quillhaven0 lies near Orlen Ford0."},
 {"title":"Harl Dunmere","text":"Harl Dunmere built the mill of Quillhaven0 in 1821."},
 {"title":"Orlen Ford","text":"Orlen Ford is a crossing of the river Tey."}]`), 0o644))

	r := run(t, nil, "index", "--add", more, "--index", idx, "--chunk-tokens", "600")
	require.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, "chunk-tokens=1200")
	assert.Contains(t, r.stderr, "chunk-tokens=600")

	// --plan goes with --sync only: with --add or --merge it would extract and write.
	unchanged := readFile(t, idx)
	for _, args := range [][]string{{"--add", more, "--index", idx, "--plan"}, {"--merge", "--index", idx, "--plan"}} {
		r = run(t, nil, append([]string{"index"}, args...)...)
		assert.Equal(t, 2, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "--plan goes with --sync")
		assert.True(t, unchanged == readFile(t, idx), "%v wrote nothing", args)
	}

	r = run(t, nil, "index", "--add", more, "--index", idx)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "2 documents (1 already present, 0 duplicates merged), 2 chunks extracted")
	r = run(t, nil, "index", "--merge", "--index", idx)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "merged "+idx)
	r = run(t, nil, "index", "--merge", "--corpus", more, "--index", idx)
	assert.Equal(t, 2, r.code, "--merge alone goes with --index only")
	ix, err := graphio.ReadFile(idx)
	require.NoError(t, err)
	assert.Len(t, ix.Documents, 7)

	before, err := os.ReadFile(idx)
	require.NoError(t, err)
	r = run(t, nil, "delete", "--index", idx, "--title", "Harl Dunmere", "--plan")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "would delete (plan: nothing written) 1 documents, 1 chunks")
	after, err := os.ReadFile(idx)
	require.NoError(t, err)
	assert.Equal(t, before, after, "--plan writes nothing")

	smaller := filepath.Join(dir, "smaller.gl")
	r = run(t, nil, "delete", "--index", idx, "--title", "Harl Dunmere", "--out", smaller)
	require.Equal(t, 0, r.code, r.stderr)
	after, err = os.ReadFile(idx)
	require.NoError(t, err)
	assert.Equal(t, before, after, "--out leaves the input as it was")
	out, err := graphio.ReadFile(smaller)
	require.NoError(t, err)
	assert.Len(t, out.Documents, 6)
	for _, c := range out.Chunks {
		assert.NotEqual(t, "Harl Dunmere", c.Title)
	}

	r = run(t, nil, "delete", "--index", idx, "--doc", "doc-0000")
	require.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, `no document "doc-0000" (argument 1)`)
	ids := filepath.Join(t.TempDir(), "gone.txt")
	require.NoError(t, os.WriteFile(ids, []byte("# to delete\n"+ix.Documents[0].ID+"\n\ndoc-typo\n"), 0o644))
	r = run(t, nil, "delete", "--index", idx, "--ids", ids)
	require.NotEqual(t, 0, r.code)
	assert.Contains(t, r.stderr, `no document "doc-typo" (`+ids+`:4)`)
	r = run(t, nil, "delete", "--index", idx, "--title", "Orlen Ford")
	require.Equal(t, 0, r.code, r.stderr)
	ix, err = graphio.ReadFile(idx)
	require.NoError(t, err)
	assert.Len(t, ix.Documents, 6)
	// stats shows the lifecycle state: what changed since the last merge.
	st, ok := kg.ReadState(ix)
	require.True(t, ok)
	r = run(t, nil, "stats", "--index", idx)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, fmt.Sprintf("lifecycle\tlast merge at %d chunks; since: %d changes, %d chunks added or deleted", st.MergeChunks, st.Changes, st.Changed))
	r = run(t, nil, "stats", "--index", idx, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var js struct{ Lifecycle *kg.State }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &js))
	require.NotNil(t, js.Lifecycle)
	assert.Equal(t, st.Changed, js.Lifecycle.Changed)

	r = run(t, nil, "stats", "--index", idx, "--documents")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `(?m)^add 20\d\d-[0-9T:-]+Z: 2 documents, 2 chunks$`, r.stdout)
	assert.Regexp(t, `(?m)^delete 20\d\d-[0-9T:-]+Z: 1 documents, 1 chunks\n  doc-[0-9a-f]{32}\tOrlen Ford$`, r.stdout)
	assert.NotContains(t, r.stdout, "\tOrlen Ford\t", "deleted: no longer listed among the documents")
}

// TestIndexSync: `index --sync` on a folder whose files were edited, removed and
// added: --plan counts and names the changes and writes nothing, --out writes the
// synced index and leaves --index as it was, in place it replaces --index; the synced
// index has the documents, chunks and graph of a fresh index of the folder, and a
// second sync finds nothing to do.
func TestIndexSync(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	write := func(name, text string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(docs, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(docs, name), []byte(text), 0o644))
	}
	write("a.md", "# Mara Vell\n\nMara Vell founded Quillhaven in 1800. Mara Vell was born in Ostrid.")
	write("sub/b.md", "# Harl Dunmere\n\nHarl Dunmere built the mill of Quillhaven in 1821.")
	write("c.txt", "Orlen Ford is a crossing of the river Tey near Quillhaven.")
	idx := filepath.Join(dir, "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", docs, "--out", idx).code)

	write("sub/b.md", "# Harl Dunmere\n\nHarl Dunmere built the mill of Quillhaven in 1821. His son Ewan Dunmere ran it.")
	require.NoError(t, os.Remove(filepath.Join(docs, "c.txt")))
	write("d.txt", "Ostrid is a village on the river Tey.")
	before, err := os.ReadFile(idx)
	require.NoError(t, err)

	r := run(t, nil, "index", "--sync", docs, "--index", idx, "--plan")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "1 documents added, 1 changed, 1 deleted, 1 unchanged; 2 new chunks, 2 chunks dropped")
	assert.Contains(t, r.stdout, "  add\td.txt\td\n")
	assert.Contains(t, r.stdout, "  index again\tsub/b.md\tHarl Dunmere\n")
	assert.Contains(t, r.stdout, "  delete\tc.txt\tc\n")
	after, err := os.ReadFile(idx)
	require.NoError(t, err)
	assert.Equal(t, before, after, "--plan writes nothing")

	synced := filepath.Join(dir, "synced.gl")
	r = run(t, nil, "index", "--sync", docs, "--index", idx, "--out", synced)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "2 chunks extracted")
	after, err = os.ReadFile(idx)
	require.NoError(t, err)
	assert.Equal(t, before, after, "--out leaves the input as it was")

	r = run(t, nil, "index", "--sync", docs, "--index", idx)
	require.Equal(t, 0, r.code, r.stderr)
	freshPath := filepath.Join(dir, "fresh.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", docs, "--out", freshPath).code)
	want, err := graphio.ReadFile(freshPath)
	require.NoError(t, err)
	for _, p := range []string{synced, idx} {
		got, err := graphio.ReadFile(p)
		require.NoError(t, err)
		assert.Equal(t, want.Documents, got.Documents, p)
		assert.Equal(t, want.Chunks, got.Chunks, p)
		assert.Equal(t, want.Entities, got.Entities, p)
		assert.Equal(t, want.Facts, got.Facts, p)
		assert.Equal(t, []string{"a.md", "d.txt", "sub/b.md"}, []string{got.Documents[0].Key, got.Documents[1].Key, got.Documents[2].Key})
	}

	r = run(t, nil, "index", "--sync", docs, "--index", idx)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "nothing to do: the index matches the corpus")

	r = run(t, nil, "stats", "--index", idx, "--documents")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `(?m)^sync 20\d\d-[0-9T:-]+Z: 1 documents added, 1 changed, 1 deleted, 2 new chunks, 2 chunks dropped$`, r.stdout)
	assert.Regexp(t, `(?m)^  changed\tdoc-[0-9a-f]{32}\tsub/b.md\tHarl Dunmere$`, r.stdout)
	assert.Regexp(t, `(?m)^doc-[0-9a-f]{32}\tHarl Dunmere\t\S+sub/b.md\tsub/b.md\t20\d\d-`, r.stdout)

	r = run(t, nil, "index", "--sync", docs, "--add", docs, "--index", idx)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "give one of --add and --sync")
}

// TestIndexChangeKilledAndRerun: `index --add` and `index --sync` with the LLM
// extractor killed (SIGKILL) half-way through their new chunks leave the index as it
// was (byte for byte, and valid); the rerun sends no request that was answered before
// the kill (the answer cache) and gives the index a clean run gives.
func TestIndexChangeKilledAndRerun(t *testing.T) {
	for _, tc := range []struct {
		op   string
		want string // in the rerun's report
	}{
		{"--add", "34 documents (0 already present, 0 duplicates merged), 34 chunks extracted"},
		{"--sync", "34 documents added"},
	} {
		t.Run(tc.op, func(t *testing.T) {
			srv := extractionServer(t, 40*time.Millisecond)
			dir := t.TempDir()
			var a, b strings.Builder
			for i := range 40 {
				w := &b
				if i < 6 {
					w = &a
				}
				fmt.Fprintf(w, "{\"title\":\"Passage %d\",\"text\":\"Mara Vell%d founded Quillhaven%d in %d.\"}\n", i, i, i, 1800+i)
			}
			corpusA, corpusB, corpusAB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl"), filepath.Join(dir, "ab.jsonl")
			require.NoError(t, os.WriteFile(corpusA, []byte(a.String()), 0o644))
			require.NoError(t, os.WriteFile(corpusB, []byte(b.String()), 0o644))
			require.NoError(t, os.WriteFile(corpusAB, []byte(a.String()+b.String()), 0o644))
			change := corpusB // --add: the new documents; --sync: the whole corpus
			if tc.op == "--sync" {
				change = corpusAB
			}
			env := []string{"GRAPHLOOM_LLM_BASE_URL=" + srv.URL(), "GRAPHLOOM_LLM_MODEL=m", "GRAPHLOOM_LLM_CACHE=" + filepath.Join(dir, "cache")}
			idx, clean := filepath.Join(dir, "x.gl"), filepath.Join(dir, "clean.gl")
			r := run(t, env, "index", "--corpus", corpusA, "--out", idx, "--llm-concurrency", "4")
			require.Equal(t, 0, r.code, r.stderr)
			before, err := os.ReadFile(idx)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(clean, before, 0o644))

			args := []string{"index", tc.op, change, "--index", idx, "--llm-concurrency", "2"}
			start := srv.AnsweredCount()
			cmd := cli(t, env, args...)
			require.NoError(t, cmd.Start())
			deadline := time.Now().Add(30 * time.Second)
			for srv.AnsweredCount() < start+20 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			answered := map[string]bool{}
			for _, q := range srv.Answered()[start:] {
				answered[string(q.Body)] = true
			}
			time.Sleep(200 * time.Millisecond) // answers seen above are cached by now
			require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			_ = cmd.Wait()
			require.GreaterOrEqual(t, len(answered), 20)
			require.Less(t, srv.AnsweredCount()-start, 68, "killed before the 34 new chunks' 68 calls were all answered")
			after, err := os.ReadFile(idx)
			require.NoError(t, err)
			assert.Equal(t, before, after, "a killed change leaves the index as it was")
			_, err = graphio.ReadFile(idx)
			require.NoError(t, err, "and valid")

			sent := srv.Count()
			r = run(t, env, args...)
			require.Equal(t, 0, r.code, r.stderr)
			for _, q := range srv.Requests()[sent:] {
				assert.False(t, answered[string(q.Body)], "answered before the kill, sent again: %s", q.LastUser())
			}
			assert.Contains(t, r.stdout, tc.want)

			sent = srv.Count()
			r = run(t, env, "index", tc.op, change, "--index", clean)
			require.Equal(t, 0, r.code, r.stderr)
			assert.Equal(t, sent, srv.Count(), "a clean run of the same change is answered from the cache")
			got, err := graphio.ReadFile(idx)
			require.NoError(t, err)
			want, err := graphio.ReadFile(clean)
			require.NoError(t, err)
			require.NoError(t, got.Validate())
			assert.Len(t, got.Facts, 40)
			for _, ix := range []*graphio.Index{got, want} {
				delete(ix.Blobs, "lifecycle.history") // holds the time of the change
			}
			assert.Equal(t, want, got, "the rerun's index is the one a clean run gives")
		})
	}
}

// TestStaleModelWarns: a CAGE encoder trained on an index records the index's
// generation; querying with it warns of nothing until documents are added, and then
// says that the encoder is stale.
func TestStaleModelWarns(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 8), "--out", idx).code)
	r := run(t, nil, "train", "cage", "--index", idx, "--steps", "2")
	require.Equal(t, 0, r.code, r.stderr)
	query := []string{"query", "--index", idx, "--retriever", "bm25", "--candidates", "4", "--rerank", "cage", "--top-k", "2", "Where was Mara Vell3 born?"}
	r = run(t, nil, query...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "stale")

	more := filepath.Join(dir, "more.json")
	require.NoError(t, os.WriteFile(more, []byte(`[{"title":"Harl Dunmere","text":"Harl Dunmere built the mill of Quillhaven3 in 1821."}]`), 0o644))
	require.Equal(t, 0, run(t, nil, "index", "--add", more, "--index", idx).code)
	r = run(t, nil, query...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `warning: the CAGE encoder \S+x\.gl\.cage is stale: it was trained on index generation g0-[0-9a-f]{12} and the index is now g1-[0-9a-f]{12}`, r.stderr)
}

// TestDeleteKilled: `delete` killed (SIGKILL) at any point, incremental or as a merge,
// leaves the index as it was (byte for byte) or as a clean delete leaves it, valid;
// a rerun then gives the clean delete's index.
func TestDeleteKilled(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 120), "--out", base).code)
	before, err := os.ReadFile(base)
	require.NoError(t, err)
	ids := filepath.Join(dir, "ids.txt")
	ix, err := graphio.ReadFile(base)
	require.NoError(t, err)
	var lines []string
	for i := 0; i < len(ix.Documents); i += 20 {
		lines = append(lines, ix.Documents[i].ID)
	}
	require.NoError(t, os.WriteFile(ids, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	withoutTime := func(path string) *graphio.Index {
		t.Helper()
		ix, err := graphio.ReadFile(path)
		require.NoError(t, err, "a killed delete leaves a valid index")
		delete(ix.Blobs, "lifecycle.history") // holds the time of the change
		return ix
	}
	for _, mode := range []string{"--merge=false", "--merge"} {
		clean := filepath.Join(dir, "clean.gl")
		require.NoError(t, os.WriteFile(clean, before, 0o644))
		r := run(t, nil, "delete", "--index", clean, "--ids", ids, mode)
		require.Equal(t, 0, r.code, r.stderr)
		want := withoutTime(clean)
		for _, delay := range []time.Duration{0, 40 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond} {
			t.Run(fmt.Sprintf("%s/%v", mode, delay), func(t *testing.T) {
				idx := filepath.Join(dir, "x.gl")
				require.NoError(t, os.WriteFile(idx, before, 0o644))
				cmd := cli(t, nil, "delete", "--index", idx, "--ids", ids, mode)
				require.NoError(t, cmd.Start())
				time.Sleep(delay)
				_ = cmd.Process.Signal(syscall.SIGKILL)
				_ = cmd.Wait()
				after, err := os.ReadFile(idx)
				require.NoError(t, err)
				if string(after) != string(before) {
					assert.Equal(t, want, withoutTime(idx), "killed after the rename: the clean delete's index")
					return
				}
				r := run(t, nil, "delete", "--index", idx, "--ids", ids, mode)
				require.Equal(t, 0, r.code, r.stderr)
				assert.Equal(t, want, withoutTime(idx), "the rerun gives the clean delete's index")
			})
		}
	}
}

// TestChangesKeepTheIndexSettings: an index built with its own graph settings keeps
// them through a delete and an add made as merges (full rebuilds), which used the
// defaults: the hyperedges it was built without came back from the stored results.
func TestChangesKeepTheIndexSettings(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 5), "--out", idx,
		"--hyperedges=false", "--synonym-threshold", "0.9", "--max-entity-share", "0.2").code)
	check := func(step string) {
		t.Helper()
		ix, err := graphio.ReadFile(idx)
		require.NoError(t, err)
		assert.Empty(t, ix.Hyperedges, "%s: built without hyperedges", step)
		assert.Equal(t, "false", ix.Meta.Graph["hyperedges"], step)
		assert.Equal(t, "0.9", ix.Meta.Graph["synonym-threshold"], step)
		assert.Equal(t, "0.2", ix.Meta.Graph["max-entity-share"], step)
	}
	check("index")
	r := run(t, nil, "delete", "--index", idx, "--title", "Passage 1", "--merge")
	require.Equal(t, 0, r.code, r.stderr)
	check("delete --merge")
	more := filepath.Join(dir, "more.json")
	require.NoError(t, os.WriteFile(more, []byte(`[{"title":"Harl Dunmere","text":"Harl Dunmere built the mill of Quillhaven0 in 1821."}]`), 0o644))
	r = run(t, nil, "index", "--add", more, "--index", idx, "--merge")
	require.Equal(t, 0, r.code, r.stderr)
	check("index --add --merge")

	// A setting given on the command line wins, and is recorded.
	merge := func(flag string) *graphio.Index {
		t.Helper()
		r := run(t, nil, "index", "--merge", "--index", idx, flag)
		require.Equal(t, 0, r.code, r.stderr)
		ix, err := graphio.ReadFile(idx)
		require.NoError(t, err)
		return ix
	}
	ix := merge("--synonym-threshold=0.85")
	assert.Equal(t, "0.85", ix.Meta.Graph["synonym-threshold"])
	assert.Equal(t, "false", ix.Meta.Graph["hyperedges"])
	ix = merge("--hyperedges=true")
	assert.Equal(t, "true", ix.Meta.Graph["hyperedges"])
	assert.NotEmpty(t, ix.Hyperedges, "--hyperedges given to a merge")
	ix = merge("--hyperedges=false")
	assert.Equal(t, "false", ix.Meta.Graph["hyperedges"])
	assert.Empty(t, ix.Hyperedges, "--hyperedges=false given to a merge")
}

// TestAugmentChecksTheAPIModel: augment on an index built through an embedding API
// checks the configured model against the index's probe before any work, and keeps
// the probe of the model that built the index when it merges; another model served
// under the name is refused and the index is left as it was.
func TestAugmentChecksTheAPIModel(t *testing.T) {
	built := llmtest.NewServer(t)
	other := llmtest.NewServer(t)
	other.SetEmbedder(func(s string) []float32 {
		v := llmtest.Embed(s, llmtest.DefaultEmbedDim)
		slices.Reverse(v)
		return v
	})
	env := func(srv *llmtest.Server) []string {
		return []string{"GRAPHLOOM_EMBED_BASE_URL=" + srv.URL(), "GRAPHLOOM_EMBED_MODEL=bge-m3"}
	}
	idx := filepath.Join(t.TempDir(), "h.gl")
	r := run(t, env(built), "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idx, "--extractor", "rule", "--embedder", "api")
	require.Equal(t, 0, r.code, r.stderr)
	before, err := os.ReadFile(idx)
	require.NoError(t, err)
	ix, err := graphio.ReadFile(idx)
	require.NoError(t, err)
	probe := ix.Blobs["embedder"]
	require.NotEmpty(t, probe)

	args := []string{"augment", "--quiet", "--index", idx, "--selector", "random", "--completer", "extractive", "--budget", "6", "--roots", "6", "--max-jaccard", "1"}
	r = run(t, env(other), args...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "probe text at cosine")
	after, err := os.ReadFile(idx)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the index is untouched")
	assert.Zero(t, other.CountMatching(llmtest.EndpointIs(llmtest.Embeddings))-1, "only the probe was asked")

	r = run(t, nil, args...)
	assert.Equal(t, 1, r.code, "no embedding model configured: %s", r.stderr)
	assert.Contains(t, r.stderr, "configure that embedding model")

	r = run(t, env(built), args...)
	require.Equal(t, 0, r.code, r.stderr)
	ix, err = graphio.ReadFile(idx)
	require.NoError(t, err)
	require.Len(t, ix.Runs, 1)
	assert.Equal(t, probe, ix.Blobs["embedder"], "the index keeps its model's probe")
}
