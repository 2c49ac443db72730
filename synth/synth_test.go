package synth

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// handGraph: a –born in→ b –capital of→ c; x, y, z each –visited→ b; y –met→ b too.
func handGraph(t *testing.T) *graphio.Index {
	ix := &graphio.Index{}
	b := graphio.NewBuilder(ix, "")
	d, _ := b.AddDocument("D", "x", "s")
	c0, _ := b.AddChunk(d, 0, "T0", "text zero", 2)
	c1, _ := b.AddChunk(d, 1, "T1", "text one", 2)
	for _, f := range []struct {
		s, p, o string
		c       int32
	}{
		{"anna", "born in", "brill", c0},
		{"brill", "capital of", "corvia", c1},
		{"xavier", "visited", "brill", c0},
		{"yara", "visited", "brill", c1},
		{"yara", "met", "brill", c1},
		{"zeno", "visited", "brill", c1},
	} {
		_, _, err := b.AddFact(f.s, f.p, f.o, f.c)
		require.NoError(t, err)
	}
	return ix
}

func TestVerbalize(t *testing.T) {
	ix := handGraph(t)
	want := "anna [born in] brill\nbrill [capital of] corvia"
	assert.Equal(t, want, Verbalize(ix, []int32{0, 1}))
	assert.Equal(t, "brill [capital of] corvia\nanna [born in] brill", Verbalize(ix, []int32{1, 0}), "edge order is kept")
}

func TestHopPathsAndNeighbourhoods(t *testing.T) {
	ix := handGraph(t)
	cfg := DefaultConfig()
	paths, total := HopPaths(ix, cfg)
	// Every fact into brill continues with brill –capital of→ corvia.
	require.Equal(t, 5, total)
	for _, p := range paths {
		assert.Len(t, p.Facts, 2)
		assert.Equal(t, int32(1), p.Facts[1])
		assert.Equal(t, "corvia", ix.Entities[p.Answer].Name)
	}
	// A fact linking a path's ends, either way, makes it one hop: the path is not asked.
	// With AdjacentEnds every path is kept: the five, and with corvia → xavier also
	// brill → corvia → xavier and corvia → xavier → brill.
	want := map[string]int{"zeno": 5, "corvia": 7}
	for _, shortcut := range [][2]string{{"zeno", "corvia"}, {"corvia", "xavier"}} {
		ix := handGraph(t)
		b := graphio.NewBuilder(ix, "")
		_, _, err := b.AddFact(shortcut[0], "knows", shortcut[1], 0)
		require.NoError(t, err)
		paths, total := HopPaths(ix, DefaultConfig())
		assert.Equal(t, 4, total, "%s–%s", shortcut[0], shortcut[1])
		for _, p := range paths {
			start := ix.Entities[ix.Facts[p.Facts[0]].Subject].Name
			assert.NotContains(t, shortcut, start, "the path from %s", start)
		}
		keep := DefaultConfig()
		keep.AdjacentEnds = true
		_, all := HopPaths(ix, keep)
		assert.Equal(t, want[shortcut[0]], all, "every path, %s–%s", shortcut[0], shortcut[1])
	}
	cfg.PathLength = 1
	_, total = HopPaths(ix, cfg)
	assert.Equal(t, len(ix.Facts), total, "a path of one fact is its own shortcut")
	cfg.PathLength = 2
	cfg.MaxHop = 2
	a, _ := HopPaths(ix, cfg)
	b, _ := HopPaths(ix, cfg)
	assert.Len(t, a, 2)
	assert.Equal(t, a, b, "the sample is seeded")

	sums, n := SumNeighbourhoods(ix, DefaultConfig())
	require.Equal(t, 1, n, "brill has four distinct in-neighbours; corvia one")
	require.Len(t, sums, 1)
	assert.Equal(t, "brill", ix.Entities[sums[0].Answer].Name)
	srcs := map[int32]bool{}
	for _, f := range sums[0].Facts {
		srcs[ix.Facts[f].Subject] = true
		assert.Equal(t, sums[0].Answer, ix.Facts[f].Object)
	}
	assert.Len(t, srcs, 3, "three distinct in-neighbours")
	cfg = DefaultConfig()
	cfg.SumNeighbours = 5
	_, n = SumNeighbourhoods(ix, cfg)
	assert.Zero(t, n)
}

// hyperGraph: Brill is in four hyperedges (with Anna, Corvia, Xavier and Yara, Zeno
// and Anna), Anna in two; P and Q share two hyperedges but have no third member to
// name; a hyperedge of one member is no one's neighbour.
func hyperGraph(t *testing.T) *graphio.Index {
	t.Helper()
	ix := &graphio.Index{}
	b := graphio.NewBuilder(ix, "")
	d, _ := b.AddDocument("D", "x", "s")
	var chunks []int32
	for i := range 4 {
		c, _ := b.AddChunk(d, int32(i), fmt.Sprint("T", i), fmt.Sprint("text ", i), 2)
		chunks = append(chunks, c)
	}
	for _, h := range []struct {
		text    string
		members []string
		chunk   int
	}{
		{"Anna was born in Brill.", []string{"Anna", "Brill"}, 0},
		{"Brill is the capital of Corvia.", []string{"Brill", "Corvia"}, 1},
		{"Xavier and Yara visited Brill.", []string{"Xavier", "Yara", "Brill"}, 2},
		{"Zeno met Anna in Brill.", []string{"Zeno", "Anna", "Brill"}, 3},
		{"Xavier rested.", []string{"Xavier"}, 3},
		{"P met Q.", []string{"P", "Q"}, 0},
		{"Q met P again.", []string{"Q", "P"}, 1},
	} {
		var ents []int32
		for _, m := range h.members {
			ents = append(ents, b.Entity(m, ""))
		}
		b.AddHyperedge(h.text, ents, chunks[h.chunk], 1)
	}
	return ix
}

func TestHyperNeighbourhoods(t *testing.T) {
	ix := hyperGraph(t)
	name := func(e int32) string { return ix.Entities[e].Name }
	cfg := DefaultConfig()
	cfg.Hyperedges = true
	cands, total := HyperNeighbourhoods(ix, cfg)
	require.Equal(t, 1, total, "only brill is in three hyperedges with another member")
	require.Len(t, cands, 1)
	c := cands[0]
	assert.Equal(t, "brill", name(c.Answer))
	require.Len(t, c.Hyperedges, 3)
	require.Len(t, c.Named, 3)
	assert.True(t, slices.IsSorted(c.Hyperedges))
	named := map[int32]bool{}
	for i, h := range c.Hyperedges {
		u := c.Named[i]
		assert.Contains(t, ix.Hyperedges[h].Entities, u, "the named member is in its hyperedge")
		assert.Contains(t, ix.Hyperedges[h].Entities, c.Answer)
		assert.NotEqual(t, c.Answer, u)
		assert.False(t, named[u], "%s named twice", name(u))
		named[u] = true
	}

	// Two neighbours: brill and anna; p and q have two hyperedges each but one
	// neighbour between them, so they cannot be asked about.
	cfg.SumNeighbours = 2
	cands, total = HyperNeighbourhoods(ix, cfg)
	assert.Equal(t, 2, total)
	var answers []string
	for _, c := range cands {
		answers = append(answers, name(c.Answer))
	}
	assert.Equal(t, []string{"anna", "brill"}, answers)
	again, _ := HyperNeighbourhoods(ix, cfg)
	assert.Equal(t, cands, again, "seeded")

	// The template items: evidence is the hyperedges' texts, the question names the
	// members and not the answer.
	cfg.SumNeighbours = 3
	items, rep, err := Run(context.Background(), ix, Template{}, cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{TypeHyper: 1}, rep.Items)
	require.Len(t, items, 1)
	it := items[0]
	assert.Equal(t, "brill", it.Answer)
	assert.Empty(t, it.FactIDs)
	require.Len(t, it.HyperedgeIDs, 3)
	var texts []string
	chunks := map[string]bool{}
	for i, id := range it.HyperedgeIDs {
		h := &ix.Hyperedges[c.Hyperedges[i]]
		assert.Equal(t, h.ID, id)
		texts = append(texts, h.Text)
		chunks[ix.Chunks[h.Chunks[0]].ID] = true
	}
	assert.Equal(t, strings.Join(texts, "\n"), it.Evidence)
	assert.Len(t, it.Chunks, len(chunks))
	for _, ch := range it.Chunks {
		assert.True(t, chunks[ch], ch)
	}
	assert.True(t, strings.HasPrefix(it.Question, "Which is with "), it.Question)
	for _, u := range c.Named {
		assert.Contains(t, it.Question, "with "+ix.Entities[u].Surface[0])
	}
	assert.NotContains(t, it.Question, "Brill")

	// The LLM generator's request: π_Q for hyperedges, the target and the texts.
	reqs := Requests(ix, []Candidate{c}, cfg)
	require.Len(t, reqs, 1)
	assert.Equal(t, promptHyper, reqs[0].Messages[0].Content)
	assert.Equal(t, "Target entity: brill\nPassages:\n"+it.Evidence, reqs[0].Messages[1].Content)

	// Without hyperedges there is nothing to ask.
	_, _, err = Run(context.Background(), handGraph(t), Template{}, cfg, nil)
	assert.ErrorContains(t, err, "no hyperedges")
}

// TestMatchMembers: k hyperedges name distinct members whenever some choice does, not
// only when the first choices happen to.
func TestMatchMembers(t *testing.T) {
	for _, c := range []struct {
		name    string
		members [][]int32
		k       int
		want    []int32
	}{
		{"disjoint", [][]int32{{1}, {2}, {3}}, 3, []int32{1, 2, 3}},
		{"the first choice is given up", [][]int32{{1, 2}, {1}}, 2, []int32{2, 1}},
		{"a chain of give-ups", [][]int32{{1, 2}, {2, 3}, {1}}, 3, []int32{2, 3, 1}},
		{"stops at k", [][]int32{{1}, {2}, {3}}, 2, []int32{1, 2, -1}},
		{"a hyperedge left out", [][]int32{{1}, {1}, {2}}, 2, []int32{1, -1, 2}},
		{"one member for two", [][]int32{{1}, {1}}, 2, nil},
		{"too few", [][]int32{{1, 2}}, 2, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, matchMembers(c.members, c.k))
		})
	}
}

func exampleIndex(t *testing.T) *graphio.Index {
	t.Helper()
	ix, err := kg.BuildOffline(context.Background(), "../examples/harbour/corpus.json", kg.DefaultConfig(), extract.DefaultRuleConfig())
	require.NoError(t, err)
	return ix
}

func checkProvenance(t *testing.T, ix *graphio.Index, items []Item) {
	t.Helper()
	facts := map[string]*graphio.Fact{}
	for i := range ix.Facts {
		facts[ix.Facts[i].ID] = &ix.Facts[i]
	}
	chunks := map[string]bool{}
	for _, c := range ix.Chunks {
		chunks[c.ID] = true
	}
	for _, it := range items {
		require.Len(t, it.FactIDs, len(it.Edges), it.ID)
		var lines []string
		for i, id := range it.FactIDs {
			f := facts[id]
			require.NotNil(t, f, "%s: fact %s is in the index", it.ID, id)
			assert.Equal(t, [3]string{ix.Entities[f.Subject].Name, f.Predicate, ix.Entities[f.Object].Name}, it.Edges[i])
			lines = append(lines, it.Edges[i][0]+" ["+it.Edges[i][1]+"] "+it.Edges[i][2])
		}
		assert.Equal(t, strings.Join(lines, "\n"), it.Evidence)
		require.NotEmpty(t, it.Chunks)
		for _, c := range it.Chunks {
			assert.True(t, chunks[c], "%s: chunk %s", it.ID, c)
		}
		assert.Contains(t, " "+norm(it.Evidence)+" ", " "+norm(it.Answer)+" ")
	}
}

func TestTemplateSynthOnTheExampleCorpus(t *testing.T) {
	ix := exampleIndex(t)
	items, rep, err := Run(context.Background(), ix, Template{}, DefaultConfig(), nil)
	require.NoError(t, err)
	assert.Positive(t, rep.Items[TypeHop])
	assert.Positive(t, rep.Items[TypeSum])
	assert.Equal(t, len(items), rep.Items[TypeHop]+rep.Items[TypeSum])
	checkProvenance(t, ix, items)
	for _, it := range items {
		assert.Equal(t, "template", it.Generator)
		assert.NotContains(t, " "+norm(it.Question)+" ", " "+norm(it.Answer)+" ", "%s states its answer", it.ID)
	}
	again, _, err := Run(context.Background(), ix, Template{}, DefaultConfig(), nil)
	require.NoError(t, err)
	assert.Equal(t, items, again, "deterministic")
}

func TestLLMSynthAgainstTheScriptedServer(t *testing.T) {
	ix := handGraph(t)
	srv := llmtest.NewServer(t)
	// Hop prompts: a good pair for paths from anna, a question stating its answer for
	// xavier's, an answer not in the evidence for yara's, prose without JSON for zeno's.
	srv.SetDefault(func(r llmtest.Request) llmtest.Reply {
		u := r.LastUser()
		switch {
		case strings.HasPrefix(u, "Target node"):
			return llmtest.Reply{Content: `{"question": "Which city did Xavier, Yara and Zeno all come to?", "answer": "Brill"}`}
		case strings.Contains(u, "anna [born in]"):
			return llmtest.Reply{Content: `{"question": "Anna was born in a city; what is that city the capital of?", "answer": "Corvia"}`}
		case strings.Contains(u, "xavier"):
			return llmtest.Reply{Content: `{"question": "Is Corvia where Xavier's city is capital?", "answer": "corvia"}`}
		case strings.Contains(u, "yara"): // cut at the token limit: refused whatever it holds
			return llmtest.Reply{Content: `{"question": "Where did Yara go next?", "answer": ["Brill", "Cor`, FinishReason: "length"}
		}
		return llmtest.Reply{Content: `Sorry, I cannot help with that.`}
	})
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", CacheDir: t.TempDir()})
	require.NoError(t, err)
	gen := &LLMGenerator{C: c}
	items, rep, err := Run(context.Background(), ix, gen, DefaultConfig(), nil)
	require.NoError(t, err)
	assert.Equal(t, 6, rep.Calls, "5 paths and 1 neighbourhood")
	assert.Equal(t, 6, srv.Count())
	assert.Equal(t, map[string]int{TypeHop: 1, TypeSum: 1}, rep.Items)
	assert.Equal(t, 1, rep.Rejected[RejectAnswerInQuestion])
	assert.Equal(t, 2, rep.Rejected[RejectCut], "yara's two paths")
	assert.Equal(t, 1, rep.Rejected[RejectUnparseable])
	checkProvenance(t, ix, items)
	assert.Equal(t, "llm:m", items[0].Generator)
	systems := map[string]bool{}
	for _, r := range srv.Requests() { // sent concurrently: in any order
		systems[r.Messages[0].Content] = true
	}
	assert.Len(t, systems, 2, "one prompt per item type")
	assert.True(t, systems[promptHop] && systems[promptSum])

	// A rerun is answered from the cache.
	_, _, err = Run(context.Background(), ix, gen, DefaultConfig(), nil)
	require.NoError(t, err)
	assert.Equal(t, 6, srv.Count(), "no new HTTP call")

	// Plan sends nothing.
	plan := Plan(ix, DefaultConfig(), func(s string) int { return len(strings.Fields(s)) })
	assert.Equal(t, 6, plan.Calls)
	assert.Positive(t, plan.PlanTokens)
	assert.Equal(t, 6, srv.Count())

	// Items round-trip through JSON.
	b, err := json.Marshal(items[0])
	require.NoError(t, err)
	var back Item
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, items[0], back)
}

// TestLLMHyperSynth: the LLM generator writes hyper items from the hyperedges' texts
// and its answers are validated against them like any other.
func TestLLMHyperSynth(t *testing.T) {
	ix := hyperGraph(t)
	srv := llmtest.NewServer(t)
	srv.SetDefault(func(r llmtest.Request) llmtest.Reply {
		u := r.LastUser()
		if !strings.HasPrefix(u, "Target entity: ") || r.Messages[0].Content != promptHyper {
			return llmtest.Reply{Content: "no"}
		}
		target := strings.TrimPrefix(strings.SplitN(u, "\n", 2)[0], "Target entity: ")
		if target == "anna" { // an answer the passages do not hold
			return llmtest.Reply{Content: `{"question": "Who was born where Zeno met someone?", "answer": "Atlantis"}`}
		}
		return llmtest.Reply{Content: `{"question": "Which city did Anna, Corvia's people and the travellers share?", "answer": "Brill"}`}
	})
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", CacheDir: t.TempDir()})
	require.NoError(t, err)
	cfg := DefaultConfig()
	cfg.Hyperedges, cfg.SumNeighbours = true, 2
	items, rep, err := Run(context.Background(), ix, &LLMGenerator{C: c}, cfg, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Calls, "anna and brill")
	assert.Equal(t, map[string]int{TypeHyper: 1}, rep.Items)
	assert.Equal(t, 1, rep.Rejected[RejectAnswerNotInEvidence])
	require.Len(t, items, 1)
	assert.Equal(t, "Brill", items[0].Answer)
	assert.Equal(t, "llm:m", items[0].Generator)
	assert.Len(t, items[0].HyperedgeIDs, 2)
}

func TestLLMSynthFailsWhenEveryCallFails(t *testing.T) {
	ix := handGraph(t)
	srv := llmtest.NewServer(t)
	srv.FailNext(1000, llmtest.Fault{Status: 400})
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", CacheDir: t.TempDir()})
	require.NoError(t, err)
	_, _, err = Run(context.Background(), ix, &LLMGenerator{C: c}, DefaultConfig(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "every generation call failed")
}

// TestMention: template questions name an entity as the corpus writes it, capitalised
// where the corpus capitalises it beyond a sentence's first letter.
func TestMention(t *testing.T) {
	for _, tc := range []struct {
		name    string
		surface []string
		want    string
	}{
		{"ships", []string{"Ships", "ships"}, "ships"},                         // a common noun that began a sentence
		{"ships", []string{"ships", "Ships"}, "ships"},                         // in either order
		{"tomas brell", []string{"tomas brell", "Tomas Brell"}, "Tomas Brell"}, // a name also seen in lower case
		{"tallow point", []string{"Tallow Point"}, "Tallow Point"},
		{"lamplighters guild", []string{"Lamplighters' Guild"}, "Lamplighters' Guild"},
		{"aldwick", []string{"", "Aldwick"}, "Aldwick"}, // an empty form is never used
		{"1785", []string{"1785"}, "1785"},
		{"reef", nil, "reef"}, // no surface form: the name
	} {
		ix := &graphio.Index{Entities: []graphio.Entity{{Name: tc.name, Surface: tc.surface}}}
		if got := mention(ix, 0); got != tc.want {
			t.Errorf("mention(%q, %q) = %q, want %q", tc.name, tc.surface, got, tc.want)
		}
	}
}

// TestSumPromptCount: the sum prompt says how many incoming facts it gives.
func TestSumPromptCount(t *testing.T) {
	assert.Equal(t, promptSum, sumPrompt(3))
	for n, want := range map[int][]string{2: {"and two facts", "needs both facts"}, 4: {"and four facts", "needs all four facts"}, 12: {"and 12 facts", "needs all 12 facts"}} {
		p := sumPrompt(n)
		for _, w := range want {
			assert.Contains(t, p, w, n)
		}
		assert.NotContains(t, p, "three", n)
	}
}
