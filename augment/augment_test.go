package augment

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// fakeScorer scores every graph by its node count (bigger = less missing) so the
// pipeline around the scorer can be tested without training a network.
type fakeScorer struct{ steps, snaps, restores int }

func (f *fakeScorer) TrainStep(gs []*kernels.Graph, _ []float32) (float64, error) {
	f.steps++
	return 0.5, nil
}
func (f *fakeScorer) Logits(gs []*kernels.Graph) ([]float32, error) {
	out := make([]float32, len(gs))
	for i, g := range gs {
		out[i] = float32(10 - g.NumNodes)
	}
	return out, nil
}
func (f *fakeScorer) Snapshot() error     { f.snaps++; return nil }
func (f *fakeScorer) Restore() error      { f.restores++; return nil }
func (f *fakeScorer) Save(p string) error { return os.WriteFile(p, []byte("fake scorer"), 0o644) }

// chainIndex builds an index of entity chains spread over several chunks.
func chainIndex(t *testing.T) *graphio.Index {
	t.Helper()
	return chainIndexTitled(t, "Doc %d")
}

// chainIndexTitled is chainIndex with document titles from title (a format of the
// document number).
func chainIndexTitled(t *testing.T, title string) *graphio.Index {
	t.Helper()
	var ps []ingest.Passage
	for d := 0; d < 6; d++ {
		var b strings.Builder
		for i := 0; i < 5; i++ {
			fmt.Fprintf(&b, "Alder Vane%d%d met Brin Holt%d%d in Corran Bay%d. ", d, i, d, i, d)
			fmt.Fprintf(&b, "Brin Holt%d%d founded Dunmore Hall%d. ", d, i, d)
		}
		ps = append(ps, ingest.Passage{Title: fmt.Sprintf(title, d), Text: b.String(), Source: "t"})
	}
	ix := &graphio.Index{}
	require.NoError(t, ingest.AddPassages(context.Background(), ix, ps, ingest.DefaultConfig(), nil, &ingest.Report{}))
	_, err := kg.Build(context.Background(), ix, extract.NewRule(extract.DefaultRuleConfig()), nil, kg.DefaultConfig(), nil)
	require.NoError(t, err)
	require.Greater(t, len(ix.Facts), 20)
	return ix
}

// TestCorruptedViews checks both corruption types of the reference on walk samples:
// a relation-missing view holds both ends of a masked fact but not the fact, an
// entity-missing view none of the deleted entities and a fact neighbour of one; both
// are connected; balanced epochs have the same shape distribution in both classes.
func TestCorruptedViews(t *testing.T) {
	ix := chainIndex(t)
	cfg := DefaultConfig()
	g := newMinerGraph(ix, cfg)
	cands := g.rootCandidates()
	rng := rand.New(rand.NewSource(1))
	var rel, ent int
	for _, root := range cands {
		rec := g.sample(root, cfg.WalksPerRoot, cfg, rng)
		if rec == nil {
			continue
		}
		if m, _ := g.relationMissing(rec, cfg, rng); m != nil {
			rel++
			assert.Equal(t, 1, components(m), "relation-missing views are connected")
			has := map[[2]int32]bool{}
			for _, e := range m.edges {
				if e.rel == relFact {
					has[pairKey(m.nodes[e.u], m.nodes[e.v])] = true
				}
			}
			missing := 0
			for i, u := range m.nodes {
				for _, nb := range g.adj[u] {
					j, ok := slices.BinarySearch(m.nodes, nb.to)
					if nb.rel == relFact && (!ok || !has[pairKey(u, nb.to)]) {
						missing++
					}
					_ = i
					_ = j
				}
			}
			assert.Positive(t, missing, "a fact of one of the view's entities is missing")
		}
		if d, _ := g.entityMissing(rec, cfg, rng); d != nil {
			ent++
			assert.Equal(t, 1, components(d), "entity-missing views are connected")
			in := map[int32]bool{}
			for _, n := range d.nodes {
				in[n] = true
			}
			assert.True(t, in[root])
		}
	}
	assert.Positive(t, rel)
	assert.Positive(t, ent)

	views := g.sampleGroups(cands, 200, cfg, rng)
	require.NotEmpty(t, views)
	count := map[shapeKey][2]int{}
	kinds := map[string]int{}
	for _, v := range views {
		c := count[keyOf(v.sg)]
		c[int(v.label)]++
		count[keyOf(v.sg)] = c
		kinds[v.kind]++
	}
	for k, c := range count {
		assert.Equal(t, c[0], c[1], "shape %+v: as many clean as corrupted views", k)
	}
	// On this chain a view without one of its root's facts walks only the other way
	// and is smaller than every clean view, so balancing may keep no relation-missing
	// view (on the 2Wiki corpus a third of the kept corrupted views are); training
	// groups draw both kinds.
	drawn := map[string]int{}
	for i, root := range cands {
		for _, v := range g.trainingGroup(root, i, cfg, rng) {
			drawn[v.kind]++
		}
	}
	assert.Positive(t, drawn[kindRelation])
	assert.Positive(t, drawn[kindEntity])
	assert.Positive(t, kinds[kindRelation]+kinds[kindEntity])
	assert.Equal(t, kinds[kindClean], kinds[kindRelation]+kinds[kindEntity])
}

// TestPartition checks that the split regions cover the walk graph in the requested
// shares and that restricted graphs never leave their split.
func TestPartition(t *testing.T) {
	ix := chainIndex(t)
	g := newMinerGraph(ix, DefaultConfig())
	part := g.partition(0.15, 0.15, 0, 7)
	var sizes [3]int
	active := 0
	for u := range g.adj {
		if len(g.adj[u]) > 0 {
			active++
			sizes[part[u]]++
		}
	}
	assert.GreaterOrEqual(t, float64(sizes[splitTest]), 0.15*float64(active))
	assert.GreaterOrEqual(t, float64(sizes[splitVal]), 0.15*float64(active))
	assert.Greater(t, sizes[splitTrain], sizes[splitTest])
	for split := int8(0); split < 3; split++ {
		r := g.restrict(part, split)
		for u, ns := range r.adj {
			for _, nb := range ns {
				assert.Equal(t, split, part[u])
				assert.Equal(t, split, part[nb.to])
			}
		}
	}
}

// TestInferenceSampleFollowsTheGraph checks that what inference examines is a function
// of the graph: the root order is the SHA-256 of the names (the FIPS 180-2 vector for
// "abc" begins ba7816bf8f01cfea), an entity left out of the candidates leaves the
// others' order as it was, every root's subgraph comes from walks seeded by its own
// key (not by its index, nor by what was sampled before it), and those walks are
// still random: another source gives some root another subgraph.
func TestInferenceSampleFollowsTheGraph(t *testing.T) {
	assert.Equal(t, uint64(0xba7816bf8f01cfea), rootKey("abc"))
	ix := chainIndex(t)
	g := newMinerGraph(ix, DefaultConfig())
	cands := g.rootCandidates()
	require.Greater(t, len(cands), 10)
	order := g.rootOrder(cands)
	assert.ElementsMatch(t, cands, order)
	assert.NotEqual(t, cands, order, "not the index's order")
	// One candidate fewer (an entity deleted, or one more added seen the other way).
	gone := cands[len(cands)/2]
	without := func(xs []int32) []int32 {
		return slices.DeleteFunc(slices.Clone(xs), func(c int32) bool { return c == gone })
	}
	assert.Equal(t, without(order), g.rootOrder(without(cands)))

	cfg := DefaultConfig()
	all := g.sampleRoots(order, cfg)
	require.Len(t, all, len(order), "every chain-index root has a subgraph")
	moved := -1
	for i, r := range order {
		own := g.sample(r, cfg.WalksPerRoot, cfg, rand.New(rand.NewSource(int64(rootKey(ix.Entities[r].Name)))))
		require.NotNil(t, own)
		assert.Equal(t, own.nodes, all[i].nodes, "root %d: walks seeded by its own key", r)
		other := g.sample(r, cfg.WalksPerRoot, cfg, rand.New(rand.NewSource(int64(r))))
		if i > 0 && moved < 0 && (other == nil || !slices.Equal(other.nodes, all[i].nodes)) {
			moved = i
		}
	}
	require.Positive(t, moved, "walks seeded otherwise give some root (not the first) another subgraph")
	alone := g.sampleRoots([]int32{order[moved]}, cfg)
	require.Len(t, alone, 1)
	assert.Equal(t, all[moved].nodes, alone[0].nodes, "a root's subgraph does not depend on the roots before it")
}

func TestGraphHelpers(t *testing.T) {
	assert.InDelta(t, 2.0/4, jaccard([]int32{1, 2, 3}, []int32{2, 3, 4}), 1e-12)
	assert.Equal(t, 0.0, jaccard[int32](nil, nil))
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"1843", false}, {"42", false}, {"x", false}, {"14 november 1803", true}, {"odile varrant", true}} {
		assert.Equal(t, tc.ok, informative(tc.name), tc.name)
	}
	cfg := DefaultConfig()
	assert.Equal(t, 9, cfg.budget(45))
	cfg.Budget = 3
	assert.Equal(t, 3, cfg.budget(45))

	ix := chainIndex(t)
	g := newMinerGraph(ix, DefaultConfig())
	cands := g.rootCandidates()
	require.NotEmpty(t, cands)
	roots := g.chainRoots(cands, 10, DefaultConfig())
	assert.Len(t, roots, 10)
	seen := map[int32]bool{}
	for _, r := range roots {
		assert.False(t, seen[r], "roots are distinct")
		seen[r] = true
	}
	other := DefaultConfig()
	other.Seed, other.SplitSeed = 7, 7
	assert.Equal(t, roots, g.chainRoots(cands, 10, other), "neither --seed nor --split-seed moves the inference roots")
	every := DefaultConfig()
	every.RootFraction = 1
	all := g.chainRoots(cands, every.rootBudget(len(ix.Entities)), every)
	assert.ElementsMatch(t, cands, all, "--root-fraction 1 examines every candidate")
	for _, f := range []float64{0, -0.1, 1.5} {
		every.RootFraction = f
		assert.Error(t, every.Validate(), "root fraction %v", f)
	}
	// Walk weights: min(2·support, 5) × α.
	for u, ns := range g.adj {
		for _, n := range ns {
			want := min(n.weight, 5.0)
			if n.rel == relSynonym {
				want *= 0.5
			}
			assert.InDelta(t, want, n.eff, 1e-12, "edge from %d", u)
		}
	}
}

func TestValidateCitations(t *testing.T) {
	ix := chainIndex(t)
	// Chunk d holds "Doc d": Alder Vane{d}{i}, Brin Holt{d}{i}, Corran Bay{d}, Dunmore Hall{d}.
	sel := []Selected{{Score: 0.9, chunkIx: []int32{0, 1}, Chunks: []string{ix.Chunks[0].ID, ix.Chunks[1].ID},
		Known: [][]string{{"x", "knows", "y"}}},
		{Score: 0.7, chunkIx: []int32{0, 1, 2}, Chunks: []string{ix.Chunks[0].ID, ix.Chunks[1].ID, ix.Chunks[2].ID}},
		{Score: 0.5, chunkIx: []int32{2}, Chunks: []string{ix.Chunks[2].ID}}}
	f0 := ix.Facts[0]
	existing := []string{ix.Entities[f0.Subject].Name, f0.Predicate, ix.Entities[f0.Object].Name}
	comps := []Completion{{Triples: []Proposal{
		{Triple: []string{"Alder Vane00", "rowed to", "Dunmore Hall1"}, ChunkIDs: []string{`"` + strings.ToUpper(ix.Chunks[1].ID) + `" `, ix.Chunks[0].ID}},
		{Triple: []string{"Alder Vane00", "sailed to", "Corran Bay0"}, ChunkIDs: []string{"chunk-deadbeef"}},
		{Triple: []string{"Alder Vane00", "waved at", "Corran Bay0"}, ChunkIDs: []string{"see " + ix.Chunks[0].ID}},
		{Triple: []string{"Alder Vane00", "sang to", "Corran Bay0"}},
		{Triple: []string{"X", "knows", "Y"}, ChunkIDs: []string{ix.Chunks[0].ID}},
		{Triple: existing, ChunkIDs: []string{ix.Chunks[0].ID}},
		{Triple: []string{"a", "b"}},
		{Triple: []string{"Same", "is", "same"}, ChunkIDs: []string{ix.Chunks[0].ID}},
		{Triple: []string{"!!", "is", "x"}, ChunkIDs: []string{ix.Chunks[0].ID}},
		// Grounding.
		{Triple: []string{"Zed Fakeman", "visited", "Corran Bay0"}, ChunkIDs: []string{ix.Chunks[0].ID}},              // in no passage
		{Triple: []string{"Alder Vane00", "fake relation", "Dunmore Hall1"}, ChunkIDs: []string{ix.Chunks[0].ID}},     // object not in the cited chunk
		{Triple: []string{"Brin Holt10", "fake relation", "Corran Bay1"}, ChunkIDs: []string{ix.Chunks[0].ID}},        // neither in the cited chunk
		{Triple: []string{"She", "founded", "Dunmore Hall0"}, ChunkIDs: []string{ix.Chunks[0].ID}},                    // pronoun
		{Triple: []string{"Alder Vane00", "admired", "them"}, ChunkIDs: []string{ix.Chunks[0].ID}},                    // pronoun
		{Triple: []string{"Alder Vane00", "met", "Vane00 Brin"}, ChunkIDs: []string{ix.Chunks[0].ID}},                 // not verbatim
		{Triple: []string{"Alder Vane00", "admired", "Corran"}, ChunkIDs: []string{ix.Chunks[0].ID, ix.Chunks[1].ID}}, // new, named in a cited chunk: accepted
	}}, {Triples: []Proposal{
		{Triple: []string{"alder vane00", "Rowed to", "dunmore hall1"}, ChunkIDs: []string{ix.Chunks[2].ID, ix.Chunks[0].ID, ix.Chunks[1].ID}}, // duplicate of the first: merged
	}}, {Triples: []Proposal{
		{Triple: []string{"Brin Holt21", "sang to", "Corran Bay2"}}, // one prompt chunk: uncited is accepted
	}}}
	sel[0].Root, sel[1].Root, sel[2].Root = "alder vane00", "brin holt10", "corran bay2"
	rej := map[string]int{}
	var listed []Rejected
	facts, _ := validate(ix, sel, comps, rej, &listed)
	assert.Equal(t, map[string]int{RejectHallucinate: 1, RejectUncited: 1, RejectKnown: 1, RejectInIndex: 1,
		RejectMalformed: 1, RejectSelfLoop: 1, RejectEmptyPart: 1, RejectNewEntity: 2, RejectUngrounded: 2, RejectPronoun: 2}, rej)
	// Each refusal is listed with its subgraph, proposal, field and value.
	require.Len(t, listed, 13)
	for _, r := range listed {
		assert.Equal(t, "alder vane00", r.Root)
		assert.Equal(t, "triple", r.Kind)
	}
	assert.Equal(t, Rejected{Root: "alder vane00", Proposal: 2, Kind: "triple", Triple: []string{"Alder Vane00", "sailed to", "Corran Bay0"},
		Field: "chunk_ids", Value: "chunk-deadbeef", Reason: RejectHallucinate}, listed[0], "the invented chunk id is named")
	assert.Equal(t, Rejected{Root: "alder vane00", Proposal: 10, Kind: "triple", Triple: []string{"Zed Fakeman", "visited", "Corran Bay0"},
		Field: "triple", Value: "Zed Fakeman", Reason: RejectNewEntity}, listed[7], "the ungrounded name is named")
	require.Len(t, facts, 4)
	assert.Equal(t, []int32{0, 1, 2}, facts[0].chunkIx, "citations resolved through case, quotes and a duplicate proposal")
	assert.InDelta(t, 0.9, facts[0].Score, 1e-12)
	assert.Equal(t, []int32{0}, facts[1].chunkIx, "chunk id found inside prose")
	assert.Equal(t, []string{"Alder Vane00", "admired", "Corran"}, facts[2].Triple)
	assert.Equal(t, []int32{2}, facts[3].chunkIx)
}

// TestValidateRefusesAHyperedgeTheIndexHolds: a completion that repeats a hyperedge
// the index holds (with a member the index lacks) is refused, naming why; merging it
// would have changed no hyperedge and left that member an entity of none.
func TestValidateRefusesAHyperedgeTheIndexHolds(t *testing.T) {
	ix := chainIndexTitled(t, "Doc %d, Ember Quay")
	h := ix.Hyperedges[0]
	c := h.Chunks[0]
	var names []string
	for _, e := range h.Entities {
		names = append(names, ix.Entities[e].Name)
	}
	sel := []Selected{{Root: names[0], Score: 0.9, chunkIx: []int32{c}, Chunks: []string{ix.Chunks[c].ID}}}
	comps := []Completion{{Hyperedges: []HyperProposal{
		{Text: " " + h.Text + " ", Entities: append(names, "Ember Quay"), ChunkIDs: []string{ix.Chunks[c].ID}},
		{Text: h.Text + " Ember Quay saw it.", Entities: append(names, "Ember Quay"), ChunkIDs: []string{ix.Chunks[c].ID}},
	}}}
	rej := map[string]int{}
	var listed []Rejected
	_, hypers := validate(ix, sel, comps, rej, &listed)
	assert.Equal(t, map[string]int{RejectHyperInIndex: 1}, rej)
	require.Len(t, listed, 1)
	assert.Equal(t, Rejected{Root: names[0], Proposal: 1, Kind: "hyperedge", Text: " " + h.Text + " ", Field: "text", Value: h.ID, Reason: RejectHyperInIndex}, listed[0], "names the hyperedge it repeats")
	require.Len(t, hypers, 1, "a new text is accepted")
	assert.Equal(t, h.Text+" Ember Quay saw it.", hypers[0].Text)
}

func testOptions(c Completer) Options {
	cfg := DefaultConfig()
	cfg.Epochs, cfg.EvalEvery, cfg.Budget, cfg.Roots, cfg.Threshold = 5, 5, 3, 20, 0
	cfg.Ensemble = 1 // TestObtainEnsemble tests more members
	return Options{Config: cfg, Completer: c, KG: kg.DefaultConfig(),
		NewScorer: func(int, Config) (Scorer, error) { return &fakeScorer{}, nil }}
}

func encode(t *testing.T, ix *graphio.Index) []byte {
	var b bytes.Buffer
	require.NoError(t, graphio.Write(&b, ix))
	return b.Bytes()
}

func TestRunWithLLMMergesAndRollsBack(t *testing.T) {
	// Every passage's title names Ember Quay, which the extractor did not make an
	// entity: a new entity the completions may ground in any chunk.
	ix := chainIndexTitled(t, "Doc %d, Ember Quay")
	_, isEntity := graphio.NewBuilder(ix, "").EntityIndex("ember quay")
	require.False(t, isEntity)
	before := encode(t, ix)
	srv := llmtest.NewServer(t)
	// Answer each prompt with one triple citing its first two evidence chunks, one
	// citing a chunk id that was not in the prompt, and a known triple.
	srv.SetDefault(func(r llmtest.Request) llmtest.Reply {
		u := r.LastUser()
		ids := chunkIDPattern.FindAllString(u[strings.Index(u, "Evidence passages"):strings.Index(u, "Strategy")], -1)
		cite := fmt.Sprintf("%q", ids[0])
		if len(ids) > 1 {
			cite += fmt.Sprintf(", %q", ids[1])
		}
		root := strings.TrimSpace(strings.Split(strings.Split(u, "Subgraph root entity:\n")[1], "\n")[0])
		return llmtest.Reply{Content: fmt.Sprintf(`{"new_triples": [
			{"triple": [%q, "visited", "Ember Quay"], "chunk_ids": [%s]},
			{"triple": [%q, "feared", "Fenwick Moor"], "chunk_ids": ["chunk-not-in-prompt"]}],
			"new_hyperedges": [{"text": "%s visited Ember Quay by sea.", "entities": [%q, "Ember Quay"], "chunk_ids": [%s]},
			{"text": "A lone entity.", "entities": ["Ember Quay"], "chunk_ids": [%s]}]}`, root, cite, root, root, root, cite, cite)}
	})
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m", CacheDir: t.TempDir()})
	require.NoError(t, err)
	rep, err := Run(context.Background(), ix, "aug-test", testOptions(&LLMCompleter{C: c, Hyperedges: true}))
	require.NoError(t, err)
	require.Equal(t, 3, rep.Calls)
	assert.Equal(t, 3, srv.Count())
	assert.Equal(t, rep.Calls, rep.Rejections[RejectHallucinate], "every citation of a chunk outside the prompt is rejected")
	require.Equal(t, 3, rep.Accepted)
	assert.Equal(t, 1, rep.Added.Nodes, "Ember Quay")
	assert.Equal(t, 3, rep.Added.Triples)
	assert.Equal(t, 3, rep.Added.Hyperedges, "one per subgraph; a hyperedge with one entity is rejected")
	assert.Equal(t, 3, rep.Rejections[RejectHyperEnts])
	assert.Contains(t, srv.Requests()[0].Messages[0].Content, "new_hyperedges")
	assert.Equal(t, len(ix.Hyperedges), ix.Embeddings[graphio.KindHyperedge].Rows(), "new hyperedges are embedded")
	ember, ok := graphio.NewBuilder(ix, "").EntityIndex("ember quay")
	require.True(t, ok)
	assert.Equal(t, "aug-test", ix.Entities[ember].Run)
	n := 0
	for _, f := range ix.Facts {
		if f.Object == ember {
			n++
			assert.Equal(t, "aug-test", f.Run, "origin and run id")
			assert.NotEmpty(t, f.Chunks, "provenance")
		}
	}
	assert.Equal(t, 3, n)
	require.NoError(t, ix.Validate())
	assert.Equal(t, len(ix.Entities), ix.Embeddings[graphio.KindEntity].Rows(), "new entities are embedded")
	assert.Equal(t, len(ix.Facts), ix.Embeddings[graphio.KindFact].Rows())
	require.Len(t, ix.Runs, 1)
	assert.Contains(t, ix.Runs[0].Summary, `"triples":3`)

	// Rollback restores the index byte for byte.
	require.NoError(t, Rollback(ix, "aug-test"))
	assert.Equal(t, before, encode(t, ix))

	// A second run on a fresh copy sends nothing: every answer is cached.
	ix2 := chainIndexTitled(t, "Doc %d, Ember Quay")
	_, err = Run(context.Background(), ix2, "aug-2", testOptions(&LLMCompleter{C: c, Hyperedges: true}))
	require.NoError(t, err)
	assert.Equal(t, 3, srv.Count())
}

func TestPlanSendsNothing(t *testing.T) {
	ix := chainIndex(t)
	before := encode(t, ix)
	opts := testOptions(nil)
	opts.Plan = true
	rep, err := Run(context.Background(), ix, "plan", opts)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Calls)
	assert.Greater(t, rep.PlanTokens, 3*300, "system, example and evidence count")
	assert.Equal(t, before, encode(t, ix), "plan changes nothing")
}

func TestRandomSelectorSkipsTraining(t *testing.T) {
	ix := chainIndex(t)
	opts := testOptions(&Extractive{Rule: extract.NewRule(extract.DefaultRuleConfig())})
	opts.Config.RandomSelector = true
	opts.NewScorer = func(int, Config) (Scorer, error) { return nil, fmt.Errorf("must not train") }
	rep, err := Run(context.Background(), ix, "rand", opts)
	require.NoError(t, err)
	assert.Equal(t, "random", rep.Selector)
	assert.Equal(t, 3, len(rep.Selected))
}

// The facts selector trains nothing and takes the subgraphs with the most facts
// first; it excludes the random selector.
func TestFactsSelector(t *testing.T) {
	ix := chainIndex(t)
	opts := testOptions(&Extractive{Rule: extract.NewRule(extract.DefaultRuleConfig())})
	opts.Config.FactsSelector = true
	opts.Config.MaxJaccard = 1 // keep every subgraph: the order alone decides
	opts.NewScorer = func(int, Config) (Scorer, error) { return nil, fmt.Errorf("must not train") }
	rep, err := Run(context.Background(), ix, "facts", opts)
	require.NoError(t, err)
	assert.Equal(t, "facts", rep.Selector)
	require.NotEmpty(t, rep.Selected)
	most := 0
	for _, c := range rep.scored {
		most = max(most, c.sg.factEdges())
	}
	assert.Equal(t, most, rep.Selected[0].sg.factEdges(), "the largest subgraph first")
	for i := 1; i < len(rep.Selected); i++ {
		assert.GreaterOrEqual(t, rep.Selected[i-1].sg.factEdges(), rep.Selected[i].sg.factEdges())
	}
	opts.Config.RandomSelector = true
	assert.Error(t, opts.Config.Validate())
}

func TestCrossChunkFacts(t *testing.T) {
	r := extract.NewRule(extract.DefaultRuleConfig())
	res, err := r.ExtractDocs([]string{
		"Odile Varrant, known as the Grey Widow, came to Port Keswyn.",
		"The Grey Widow bought the Meridian. Mira Solenne rowed to Gull Rock.",
		"She rescued Ruel Faddock. Tomas Brell kept the ledger.",
	}, nil)
	require.NoError(t, err)
	c := crossChunkFacts(res, []string{"chunk-a", "chunk-b", "chunk-c"}, nil)
	got := map[string][]string{}
	for _, p := range c.Triples {
		got[strings.Join(p.Triple, "|")] = p.ChunkIDs
	}
	assert.Equal(t, []string{"chunk-a", "chunk-b"}, got["Odile Varrant|bought|Meridian"], "alias bridge: %v", got)
	assert.Equal(t, []string{"chunk-b", "chunk-c"}, got["Mira Solenne|rescued|Ruel Faddock"], "pronoun bridge: %v", got)
	for k := range got {
		assert.NotContains(t, k, "Tomas Brell", "chunk-local facts are not proposed")
	}
}

func TestCrossChunkAliasesOutsideTheirDiscourse(t *testing.T) {
	r := extract.NewRule(extract.DefaultRuleConfig())
	texts := []string{
		"Odile Varrant, known as the Grey Widow, came to Port Keswyn.",
		"Mira Solenne, known as Mira, rowed to Gull Rock.",
		"The Grey Widow bought the Meridian. Mira Brell kept the ledger.",
		"Mira founded Aldwick.",
	}
	for _, c := range []struct {
		name   string
		linked []bool
		want   map[string]bool // triple → proposed
	}{
		// "Grey Widow" names no one else; "Mira" is part of Mira Brell's name too.
		{"unrelated passages", []bool{false, false, false, false},
			map[string]bool{"Odile Varrant|bought|Meridian": true, "Mira Solenne|founded|Aldwick": false}},
		{"the short alias's own discourse", []bool{false, false, true, true},
			map[string]bool{"Odile Varrant|bought|Meridian": true, "Mira Solenne|founded|Aldwick": true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := r.ExtractDocs(texts, c.linked)
			require.NoError(t, err)
			got := map[string]bool{}
			for _, p := range crossChunkFacts(res, []string{"chunk-a", "chunk-b", "chunk-c", "chunk-d"}, c.linked).Triples {
				got[strings.Join(p.Triple, "|")] = true
			}
			for k, want := range c.want {
				assert.Equal(t, want, got[k], "%s in %v", k, got)
			}
		})
	}
}

func TestEmbedderMismatch(t *testing.T) {
	ix := chainIndex(t)
	_, err := embed.ForIndex(ix, nil)
	require.NoError(t, err)
	ix.Meta.Embedder = "api:other"
	_, err = Run(context.Background(), ix, "x", testOptions(&Extractive{Rule: extract.NewRule(extract.DefaultRuleConfig())}))
	assert.ErrorIs(t, err, embed.ErrMismatch)
}

func TestExtractiveLinksNeighbouringPassagesUnlessTitledByAPerson(t *testing.T) {
	x := &Extractive{Rule: extract.NewRule(extract.DefaultRuleConfig())}
	cases := []struct {
		titles [2]string
		texts  [2]string
		want   string // a proposed triple, or "" for none about the first text's person
	}{
		{[2]string{"Chapter 11: Wreck on Gull Rock", "Chapter 12: Morning Tide"},
			[2]string{"Mira Solenne rowed out to Gull Rock in the storm.", "She rescued Ruel Faddock from the water."},
			"Mira Solenne|rescued|Ruel Faddock"},
		{[2]string{"Paul Brooke", "Obata Toramori"},
			[2]string{"Paul Brooke is a retired English actor.", "He was the father of Obata Masamori."}, ""},
	}
	for _, c := range cases {
		t.Run(c.titles[1], func(t *testing.T) {
			ix := &graphio.Index{}
			for i := range 2 {
				ix.Chunks = append(ix.Chunks, graphio.Chunk{ID: fmt.Sprintf("chunk-%d", i), Doc: int32(i), Title: c.titles[i], Text: c.texts[i]})
			}
			comps, err := x.Complete(context.Background(), ix, []Selected{{chunkIx: []int32{0, 1}}}, DefaultConfig(), nil)
			require.NoError(t, err)
			var got []string
			for _, p := range comps[0].Triples {
				got = append(got, strings.Join(p.Triple, "|"))
			}
			if c.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, c.want)
		})
	}
}

// TestFingerprintFollowsWhatTrainingReads changes, one at a time, each part of the
// index the walk graph and the node features read: each must change the fingerprint,
// so that a checkpoint trained before the change is not reused after it. Rebuilding
// the same index gives the same fingerprint.
func TestFingerprintFollowsWhatTrainingReads(t *testing.T) {
	cfg := testOptions(nil).Config
	built := chainIndex(t)
	base := fingerprint(built, cfg)
	require.Equal(t, base, fingerprint(chainIndex(t), cfg), "the same index built twice")
	stored := encode(t, built)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, ix *graphio.Index)
	}{
		{"an entity's type", func(t *testing.T, ix *graphio.Index) { ix.Entities[0].Type = "ORG" }},
		{"an entity's name", func(t *testing.T, ix *graphio.Index) { ix.Entities[len(ix.Entities)-1].Name += " ii" }},
		{"a fact's support", func(t *testing.T, ix *graphio.Index) { ix.Facts[0].Weight++ }},
		{"a synonym's cosine", func(t *testing.T, ix *graphio.Index) {
			ix.Synonyms = append(ix.Synonyms, graphio.Synonym{A: 0, B: 1, Cosine: 0.9})
			base2 := fingerprint(ix, cfg)
			ix.Synonyms[len(ix.Synonyms)-1].Cosine = 0.95
			require.NotEqual(t, base2, fingerprint(ix, cfg))
		}},
		{"a hyperedge's text", func(t *testing.T, ix *graphio.Index) {
			require.NotEmpty(t, ix.Hyperedges)
			h := &ix.Hyperedges[0]
			h.Text += " Again."
			h.ID = graphio.HyperedgeID(h.Text)
		}},
		{"a hyperedge's members", func(t *testing.T, ix *graphio.Index) {
			h := &ix.Hyperedges[0]
			h.Entities = append(h.Entities[:len(h.Entities):len(h.Entities)], int32(len(ix.Entities)-1))
		}},
		{"a mention moved to another chunk", func(t *testing.T, ix *graphio.Index) {
			require.NotEmpty(t, ix.Mentions)
			ix.Mentions[0].Chunk = (ix.Mentions[0].Chunk + 1) % int32(len(ix.Chunks))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix, err := graphio.Read(bytes.NewReader(stored))
			require.NoError(t, err)
			require.Equal(t, base, fingerprint(ix, cfg), "read back unchanged")
			tc.change(t, ix)
			assert.NotEqual(t, base, fingerprint(ix, cfg))
		})
	}
}

// TestIsRunID: isRunID accepts NewRunID's ids and nothing else of a report-like name.
func TestIsRunID(t *testing.T) {
	assert.True(t, isRunID(NewRunID()))
	assert.True(t, isRunID("aug-20261207T101112-ab12"))
	for _, s := range []string{"", "aug-", "aug-20261207T101112", "aug-20261207T101112-ab1", "aug-20261207T101112-abcde",
		"aug-20261207T101112-zz12", "aug-20261307T101112-ab12", "run-20261207T101112-ab12", "aug-2026-12-07-ab12", "notes"} {
		assert.False(t, isRunID(s), s)
	}
}
