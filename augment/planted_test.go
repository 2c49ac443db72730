package augment

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
)

// rereader is an ideal completer: for every evidence chunk of a subgraph it proposes
// the facts the original index extracted from that chunk, citing it.
type rereader struct {
	byChunk map[string][][]string
}

func newRereader(ix *graphio.Index) *rereader {
	r := &rereader{byChunk: map[string][][]string{}}
	for _, f := range ix.Facts {
		for _, c := range f.Chunks {
			id := ix.Chunks[c].ID
			r.byChunk[id] = append(r.byChunk[id], []string{ix.Entities[f.Subject].Name, f.Predicate, ix.Entities[f.Object].Name})
		}
	}
	return r
}

func (r *rereader) Name() string { return "rereader" }

func (r *rereader) Complete(_ context.Context, _ *graphio.Index, sel []Selected, _ Config, _ func(int, int)) ([]Completion, error) {
	out := make([]Completion, len(sel))
	for i, s := range sel {
		for _, id := range s.Chunks {
			for _, t := range r.byChunk[id] {
				out[i].Triples = append(out[i].Triples, Proposal{Triple: t, ChunkIDs: []string{id}})
			}
		}
	}
	return out, nil
}

// TestDegreeResidual: logits built as 2 + 3·log(1 + degree) plus deviations that sum to
// zero within each degree come back as those deviations.
func TestDegreeResidual(t *testing.T) {
	// Entity i has fact degree i: i facts from it to entity 0 (which gets 0+1+…+4 = 10).
	ix := &graphio.Index{}
	for range 6 {
		ix.Entities = append(ix.Entities, graphio.Entity{})
	}
	for i := 1; i <= 4; i++ {
		for range i {
			ix.Facts = append(ix.Facts, graphio.Fact{Subject: int32(i), Object: 0})
		}
	}
	var cands []candidate
	var dev []float64
	for _, root := range []int32{1, 2, 3, 4, 5} { // degrees 1, 2, 3, 4, 0
		d := float64(root)
		if root == 5 {
			d = 0
		}
		for _, e := range []float64{-0.5, 0.5} {
			cands = append(cands, candidate{sg: &subgraph{root: root}, logit: 2 + 3*math.Log1p(d) + e})
			dev = append(dev, e)
		}
	}
	got := degreeResidual(ix, cands)
	require.Len(t, got, len(cands))
	for i := range got {
		assert.InDelta(t, dev[i], got[i].logit, 1e-12)
		assert.Same(t, cands[i].sg, got[i].sg)
	}
	assert.Equal(t, 2+3*math.Log1p(1)-0.5, cands[0].logit, "the input is left as it was")
}

// TestPlanted deletes facts, runs both selectors at the same budget and counts: the
// input index is untouched, every deleted fact an ideal completer re-reads from the
// selected evidence counts as recovered, and a completer that proposes nothing
// recovers none.
func TestPlanted(t *testing.T) {
	ix := chainIndex(t)
	before := encode(t, ix)
	opts := testOptions(newRereader(ix))
	rows, err := Planted(context.Background(), ix, 6, []int64{1, 2, 3}, opts)
	require.NoError(t, err)
	assert.Equal(t, before, encode(t, ix), "the benchmark works on copies")
	require.Len(t, rows, 24, "3 seeds × (3 selectors + the GNN's degree-adjusted ranking) × 2 classes")
	gnn := map[[2]any]PlantedRow{}
	for _, r := range rows {
		if r.Selector == "gnn" {
			gnn[[2]any{r.Seed, r.Class}] = r
		}
	}
	recovered := 0
	for _, r := range rows {
		if r.Class == PlantedWithinChunk {
			assert.Equal(t, 6, r.Deleted)
		}
		assert.LessOrEqual(t, r.Recovered, r.Deleted)
		assert.LessOrEqual(t, r.Regions, r.Touched)
		assert.LessOrEqual(t, r.Regions, r.Reachable, "no selector selects a region no sampled subgraph holds")
		assert.Equal(t, r.Regions, r.RegionsByBudget[len(PlantedBudgetFractions)-1], "the whole budget")
		for k := 1; k < len(PlantedBudgetFractions); k++ {
			assert.LessOrEqual(t, r.RegionsByBudget[k-1], r.RegionsByBudget[k], "a larger budget keeps what a smaller one selected")
		}
		if r.Selector != "gnn" {
			g := gnn[[2]any{r.Seed, r.Class}]
			assert.Equal(t, g.Selected, r.Selected, "%s runs at the GNN's number of calls", r.Selector)
			assert.Equal(t, g.Reachable, r.Reachable, "every selector chooses among the same sampled subgraphs")
		}
		assert.Equal(t, r.Selector == PlantedDegreeAdjusted, r.NotCompleted, "%s: only the diagnostic ranking is not completed", r.Selector)
		recovered += r.Recovered
	}
	assert.Positive(t, recovered, "the ideal completer brings deleted facts back")
	sum := SummarisePlanted(rows)
	require.Len(t, sum, 8)
	for _, s := range sum {
		assert.Equal(t, s.Selector == PlantedDegreeAdjusted, s.NotCompleted, s.Selector)
	}
	assert.Equal(t, "gnn", sum[0].Selector)
	assert.Equal(t, PlantedCrossChunk, sum[0].Class)

	for _, r := range rows {
		if r.Selector == "gnn" && r.RootEnds > 0 {
			// The AUC arithmetic is checked by hand in TestStratifiedAUC and train's
			// ROCAUC tests; here only that the diagnostics were computed (a NaN would
			// mean an empty class slipped through).
			for _, v := range []float64{r.RootEndAUC, r.RootEndAUCWithinDegree, r.RootEndDegreeAUC} {
				assert.False(t, math.IsNaN(v), "root-end diagnostics of %s", r.Class)
			}
		}
		if r.Selector != "gnn" {
			assert.Zero(t, r.RootEnds, "no scores to diagnose")
		}
	}

	none, err := Planted(context.Background(), ix, 6, []int64{1}, testOptions(&rereader{}))
	require.NoError(t, err)
	for _, r := range none {
		assert.Zero(t, r.Recovered)
	}
}

// checkpointOptions are testOptions planning a run that keeps its scorer checkpoint
// in a temporary directory.
func checkpointOptions(t *testing.T) Options {
	opts := testOptions(nil)
	opts.Plan = true
	opts.Checkpoint = filepath.Join(t.TempDir(), "ix.gl.scorer")
	opts.LoadScorer = func(string) (Scorer, error) { return &fakeScorer{}, nil }
	return opts
}

// TestTrainingLogBesideCheckpoint: a trained scorer leaves its JSONL training log (one
// line per epoch and per validation) and its loss / ROC-AUC curves beside the
// checkpoint, and a second run reuses the checkpoint.
func TestTrainingLogBesideCheckpoint(t *testing.T) {
	ix, opts := chainIndex(t), checkpointOptions(t)
	rep, err := Run(context.Background(), ix, "plan", opts)
	require.NoError(t, err)
	require.False(t, rep.Training.Reused)
	data, err := os.ReadFile(opts.Checkpoint + ".log.jsonl")
	require.NoError(t, err)
	var steps, evals int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Step int              `json:"step"`
			Loss *float64         `json:"loss"`
			Eval *json.RawMessage `json:"eval"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &r))
		if r.Eval != nil {
			evals++
		} else {
			steps++
		}
	}
	assert.Equal(t, rep.Training.Epochs, steps)
	assert.Equal(t, len(rep.Training.History), evals)
	png, err := os.ReadFile(opts.Checkpoint + ".png")
	require.NoError(t, err)
	assert.Equal(t, "\x89PNG", string(png[:4]))

	rep, err = Run(context.Background(), ix, "plan", opts)
	require.NoError(t, err)
	assert.True(t, rep.Training.Reused)
}

// TestUnwritableCheckpointIsNotFatal: a scorer checkpoint that cannot be written (its
// directory is a file here; a read-only index directory in use) costs the next run
// its training, not this run: the run goes on, and its report says why nothing was
// saved.
func TestUnwritableCheckpointIsNotFatal(t *testing.T) {
	ix := chainIndex(t)
	opts := testOptions(nil)
	opts.Plan = true
	blocker := filepath.Join(t.TempDir(), "not-a-dir")
	require.NoError(t, os.WriteFile(blocker, []byte("x"), 0o644))
	opts.Checkpoint = filepath.Join(blocker, "ix.gl.scorer")
	var log strings.Builder
	opts.Log = &log
	rep, err := Run(context.Background(), ix, "plan", opts)
	require.NoError(t, err)
	assert.NotEmpty(t, rep.Selected)
	assert.Contains(t, rep.Training.CheckpointError, "not-a-dir")
	assert.Empty(t, rep.Training.MemberDigests)
	assert.Contains(t, log.String(), "warning: the scorer checkpoint was not saved")
}

func TestStratifiedAUC(t *testing.T) {
	for _, c := range []struct {
		name    string
		scores  []float64
		pos     []bool
		stratum []int
		want    float64
	}{
		// Overall the positives score low (the low stratum scores high), but within
		// each stratum every positive outranks every negative.
		{"confounded", []float64{0.9, 0.8, 0.3, 0.2, 0.1}, []bool{true, false, true, true, false}, []int{0, 0, 1, 1, 1}, 1},
		{"reversed", []float64{0.1, 0.9, 0.2, 0.8}, []bool{true, false, true, false}, []int{0, 0, 1, 1}, 0},
		// 1 pair in stratum 0 (right), 2 in stratum 1 (one right, one wrong).
		{"weighted by pairs", []float64{0.9, 0.1, 0.5, 0.9, 0.1}, []bool{true, false, true, false, false}, []int{0, 0, 1, 1, 1}, (1 + 2*0.5) / 3},
		{"no stratum with both classes", []float64{1, 0}, []bool{true, false}, []int{0, 1}, 0.5},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.InDelta(t, c.want, stratifiedAUC(c.scores, c.pos, c.stratum), 1e-12)
		})
	}
}

// TestScorePlantedCounts checks the region counts on hand-made selections: regions
// need both ends in one selected subgraph, reachable ones in one sampled subgraph, and
// the budget prefixes follow the selection order.
func TestScorePlantedCounts(t *testing.T) {
	ix := &graphio.Index{}
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		ix.Entities = append(ix.Entities, graphio.Entity{Name: n})
	}
	sg := func(nodes ...int32) *subgraph { return &subgraph{root: nodes[0], nodes: nodes} }
	sampled := []*subgraph{sg(0, 1), sg(2, 3), sg(4, 5), sg(6, 2), sg(0, 7), sg(5, 7), sg(1, 2), sg(3, 4)}
	rep := &Report{}
	for _, s := range sampled {
		rep.scored = append(rep.scored, candidate{sg: s})
	}
	// Selected in this order: {c,d} first, then {a,b}, {e,f}, {g,c}, {a,h}, {f,h}, {b,c}, {d,e}.
	for _, i := range []int{1, 0, 2, 3, 4, 5, 6, 7} {
		rep.Selected = append(rep.Selected, Selected{sg: sampled[i]})
	}
	rep.Selected = rep.Selected[:6] // the budget stops before {b,c} and {d,e}
	deleted := []plantedFact{
		{class: PlantedWithinChunk, s: "c", p: "p", o: "d"}, // selected 1st
		{class: PlantedWithinChunk, s: "a", p: "p", o: "b"}, // selected 2nd
		{class: PlantedWithinChunk, s: "h", p: "p", o: "f"}, // selected 6th
		{class: PlantedWithinChunk, s: "b", p: "p", o: "c"}, // sampled, not selected
		{class: PlantedWithinChunk, s: "a", p: "p", o: "g"}, // never together: touched only
		{class: PlantedCrossChunk, s: "d", p: "p", o: "e"},  // sampled, not selected
	}
	rows := scorePlanted(ix, rep, deleted, 1, "random")
	within, cross := rows[1], rows[0]
	require.Equal(t, PlantedWithinChunk, within.Class)
	assert.Equal(t, 5, within.Deleted)
	assert.Equal(t, 3, within.Regions)
	assert.Equal(t, 4, within.Reachable)
	assert.Equal(t, 5, within.Touched)
	// 6 selected: prefixes of ⌈6/8⌉ = 1, ⌈6/4⌉ = 2, 3 and 6 subgraphs.
	assert.Equal(t, [4]int{1, 2, 2, 3}, within.RegionsByBudget)
	assert.Equal(t, 0, cross.Regions)
	assert.Equal(t, 1, cross.Reachable)
	assert.Equal(t, 1, cross.Touched)
}

// signalWriter keeps what is written and closes done on the first write holding want.
type signalWriter struct {
	want string
	once sync.Once
	done chan struct{}
	mu   sync.Mutex
	all  strings.Builder
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.all.Write(p)
	w.mu.Unlock()
	if strings.Contains(string(p), w.want) {
		w.once.Do(func() { close(w.done) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all.String()
}

// TestCheckpointSavedUnderItsLock: a run saves the scorer checkpoint only while it
// holds the checkpoint's lock, so that two runs on one index cannot leave a report
// naming the other's members.
func TestCheckpointSavedUnderItsLock(t *testing.T) {
	ix, opts := chainIndex(t), checkpointOptions(t)
	// A save killed part-way left temporary files beside the checkpoint; the next
	// save removes them once it holds the lock.
	dir, base := filepath.Split(opts.Checkpoint)
	stale := []string{filepath.Join(dir, "."+base+".json.tmp-41"), filepath.Join(dir, "."+base+".tmp-42"), filepath.Join(dir, "."+base+".log.jsonl.tmp-43")}
	other := filepath.Join(dir, "."+base+"x.json.tmp-44") // another file's
	for _, f := range append(stale, other) {
		require.NoError(t, os.WriteFile(f, []byte("half"), 0o600))
	}
	trained := &signalWriter{want: "scorer (", done: make(chan struct{})}
	opts.Log = trained
	lk, err := graphio.LockWriter(context.Background(), opts.Checkpoint, "the test", false, nil)
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() {
		_, err := Run(context.Background(), ix, "plan", opts)
		ran <- err
	}()
	select {
	case <-trained.done:
	case err := <-ran:
		t.Fatalf("the run ended before its scorer was trained: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // time enough to write, were the lock not taken
	assert.NoFileExists(t, opts.Checkpoint+".json", "nothing is saved while another holds the lock")
	assert.FileExists(t, stale[0], "nor removed")
	assert.Contains(t, trained.String(), "waiting for the scorer checkpoint "+opts.Checkpoint+", which another run is saving (held by the test)")
	require.NoError(t, lk.Unlock())
	require.NoError(t, <-ran)
	assert.FileExists(t, opts.Checkpoint+".json")
	for _, f := range stale {
		assert.NoFileExists(t, f, "a killed save's temporary file")
	}
	assert.FileExists(t, other)
}
