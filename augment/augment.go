package augment

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/internal/counts"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/llm"
)

// Options configures one augmentation job beyond the paper's knobs.
type Options struct {
	Config Config
	// Completer proposes the new facts; nil with Plan.
	Completer Completer
	// Plan stops after selection and prompt building: nothing is sent or merged.
	Plan bool
	// Embedder embeds new records; nil uses the index's own (built-in hashed) embedder.
	Embedder embed.Embedder
	// KG holds the synonym settings applied to new entities.
	KG kg.Config
	// NewScorer creates an untrained scorer for node features of width inputDim.
	NewScorer func(inputDim int, cfg Config) (Scorer, error)
	// Checkpoint is where the trained scorer is saved (next to the index); if a
	// checkpoint for the same graph and settings is there, it is loaded instead of
	// training again. Empty: no checkpoint.
	Checkpoint string
	// LoadScorer loads a checkpoint written by Scorer.Save.
	LoadScorer func(path string) (Scorer, error)
	// Progress returns the progress callback of a stage; Log receives training lines.
	Progress func(stage string) func(done, total int)
	Log      io.Writer
}

// Report describes an augmentation run.
type Report struct {
	Run        string `json:"run"`
	Plan       bool   `json:"plan"`
	Selector   string `json:"selector"`
	Completer  string `json:"completer,omitempty"`
	Candidates int    `json:"root_candidates"`
	Roots      int    `json:"inference_roots"`
	Sampled    int    `json:"sampled_subgraphs"`
	AboveTheta int    `json:"subgraphs_above_threshold"`
	// Threshold is the θ the scores were compared with.
	Threshold float64 `json:"threshold"`
	// ScoreQuantiles are the min, quartiles and max of the sampled subgraphs'
	// missingness scores, to help choose θ.
	ScoreQuantiles []float64   `json:"score_quantiles,omitempty"`
	Budget         int         `json:"budget"`
	Training       TrainReport `json:"training"`
	Calls          int         `json:"completion_calls"`
	PlanTokens     int         `json:"planned_prompt_tokens"`
	FailedCalls    int         `json:"failed_calls"`
	// FailedByKind counts failed calls by kind (llm.Kind: "unparseable" answers, or
	// "network", "timeout", … when no answer arrived); LastFailure is the last one's error.
	FailedByKind map[string]int `json:"failed_calls_by_kind,omitempty"`
	LastFailure  string         `json:"last_failure,omitempty"`
	Proposed     int            `json:"proposed_triples"`
	Accepted     int            `json:"accepted_triples"`
	Rejections   map[string]int `json:"rejections"`
	// Rejected lists the refused proposals (the first MaxRejectedListed): the
	// subgraph, the proposal, the field and value at fault.
	Rejected   []Rejected      `json:"rejected,omitempty"`
	Added      Added           `json:"added"`
	Seconds    map[string]any  `json:"stage_seconds"`
	Selected   []Selected      `json:"selected"`
	scored     []candidate     // every sampled subgraph with its score (0 for the random selector)
	Facts      []Accepted      `json:"accepted"`
	Hyperedges []AcceptedHyper `json:"accepted_hyperedges,omitempty"`
}

// NewRunID returns a fresh run id: "aug-" + UTC timestamp + 4 random hex digits.
func NewRunID() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return "aug-" + time.Now().UTC().Format(runTime) + "-" + hex.EncodeToString(b[:])
}

// runTime is the layout of a run id's timestamp.
const runTime = "20060102T150405"

// isRunID reports whether s has the form of an id NewRunID returns.
func isRunID(s string) bool {
	ts, suffix, ok := strings.Cut(strings.TrimPrefix(s, "aug-"), "-")
	if !ok || !strings.HasPrefix(s, "aug-") || len(suffix) != 4 {
		return false
	}
	if _, err := time.Parse(runTime, ts); err != nil {
		return false
	}
	_, err := hex.DecodeString(suffix)
	return err == nil
}

// ReportPath is where the report of run is written beside the index at path.
func ReportPath(path, run string) string { return path + "." + run + ".json" }

// RemoveStaleReportTemps removes the temporary files that runs killed while writing
// their report beside the index at path (ReportPath) left behind, and returns them.
// Call it holding the index's writer lock, under which every report is written.
func RemoveStaleReportTemps(path string) ([]string, error) {
	dir, base := filepath.Dir(path), filepath.Base(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var removed []string
	seen := map[string]bool{}
	for _, e := range entries {
		name, _, ok := strings.Cut(e.Name(), ".json.tmp-")
		if !ok {
			continue
		}
		run, ok := strings.CutPrefix(name, "."+base+".")
		if !ok || !isRunID(run) || seen[run] {
			continue
		}
		seen[run] = true
		more, err := graphio.RemoveStaleTemps(ReportPath(path, run))
		removed = append(removed, more...)
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// Run augments ix in place (the caller writes it) and returns the report. With
// opts.Plan it changes nothing and reports what completion would cost.
func Run(ctx context.Context, ix *graphio.Index, run string, opts Options) (*Report, error) {
	cfg := opts.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if ix.Embeddings[graphio.KindEntity] == nil || len(ix.Facts) == 0 {
		return nil, fmt.Errorf("augment: the index has no facts or entity embeddings; build it with `graphloom index`")
	}
	if !opts.Plan && opts.Completer == nil {
		return nil, fmt.Errorf("augment: no completer")
	}
	rep := &Report{Run: run, Plan: opts.Plan, Selector: "gnn", Threshold: cfg.Threshold, Rejections: map[string]int{}, Seconds: map[string]any{}}
	switch {
	case cfg.RandomSelector:
		rep.Selector = "random"
	case cfg.FactsSelector:
		rep.Selector = "facts"
	}
	if opts.Completer != nil {
		rep.Completer = opts.Completer.Name()
	}
	stage := func(name string, t0 time.Time) { rep.Seconds[name] = round3(time.Since(t0).Seconds()) }
	progress := func(name string) func(done, total int) {
		if opts.Progress == nil {
			return nil
		}
		return opts.Progress(name)
	}

	t0 := time.Now()
	g := newMinerGraph(ix, cfg)
	feat, err := newFeaturizer(ix, cfg.NodeFeatures)
	if err != nil {
		return nil, err
	}
	cands := g.rootCandidates()
	rep.Candidates = len(cands)
	if len(cands) == 0 {
		return nil, fmt.Errorf("augment: no root candidates (no entity has a fact or synonym neighbour)")
	}
	stage("graph", t0)

	// Scorer: load a matching checkpoint or train.
	var sc *ensemble
	if !cfg.RandomSelector && !cfg.FactsSelector {
		t0 = time.Now()
		sc, rep.Training, err = obtainScorer(ctx, ix, g, feat, cands, opts)
		if err != nil {
			return nil, err
		}
		defer sc.close()
		stage("train", t0)
	}

	// Inference: chained roots, one subgraph each, scored.
	t0 = time.Now()
	roots := g.chainRoots(cands, cfg.rootBudget(len(ix.Entities)), cfg)
	rep.Roots = len(roots)
	subs := g.sampleRoots(roots, cfg)
	rep.Sampled = len(subs)
	stage("sample", t0)
	t0 = time.Now()
	scored := make([]candidate, len(subs))
	if sc != nil {
		logits, err := scoreSubgraphs(ctx, feat, sc, subs, progress("score"))
		if err != nil {
			return nil, err
		}
		probs := make([]float64, len(subs))
		for i, s := range subs {
			probs[i] = sigmoid(logits[i])
			scored[i] = candidate{sg: s, score: probs[i], logit: logits[i]}
			if probs[i] >= cfg.Threshold {
				rep.AboveTheta++
			}
		}
		rep.ScoreQuantiles = quantiles(probs)
	} else {
		for i, s := range subs {
			scored[i] = candidate{sg: s}
		}
		rep.AboveTheta = len(subs)
	}
	stage("score", t0)

	t0 = time.Now()
	rep.Budget = cfg.budget(len(ix.Chunks))
	rep.scored = scored
	rep.Selected = selectSubgraphs(ix, scored, rep.Budget, cfg)
	rep.Calls = len(rep.Selected)
	stage("select", t0)
	if len(rep.Selected) == 0 {
		return rep, nil // nothing to complete: the caller reports it and records no run
	}
	if opts.Plan {
		tok, err := ingest.NewTokenizer("cl100k_base")
		if err != nil {
			return nil, err
		}
		rep.PlanTokens = llm.PromptTokens(Requests(ix, rep.Selected, cfg, len(ix.Hyperedges) > 0), tok.Count)
		return rep, nil
	}

	t0 = time.Now()
	comps, err := opts.Completer.Complete(ctx, ix, rep.Selected, cfg, progress("complete"))
	if err != nil {
		return nil, err
	}
	for _, c := range comps {
		if c.Failed != "" {
			rep.FailedCalls++
			if rep.FailedByKind == nil {
				rep.FailedByKind = map[string]int{}
			}
			rep.FailedByKind[string(cmp.Or(c.Kind, "other"))]++
			rep.LastFailure = c.Failed
		}
		rep.Proposed += len(c.Triples)
	}
	if rep.FailedCalls > 0 && rep.FailedCalls == len(comps) {
		return rep, fmt.Errorf("augment: every completion call failed (%d of %d: %s); last: %s; nothing was merged",
			rep.FailedCalls, len(comps), FormatCounts(rep.FailedByKind), rep.LastFailure)
	}
	facts, hypers := validate(ix, rep.Selected, comps, rep.Rejections, &rep.Rejected)
	rep.Facts, rep.Hyperedges, rep.Accepted = facts, hypers, len(facts)
	stage("complete", t0)

	t0 = time.Now()
	emb := opts.Embedder
	if emb == nil {
		if emb, err = embed.ForIndex(ix, nil); err != nil {
			return nil, err
		}
	}
	params, _ := json.Marshal(cfg)
	ix.Runs = append(ix.Runs, graphio.Run{ID: run, Kind: "augment", Created: time.Now().UTC().Format(time.RFC3339), Params: string(params)})
	rep.Added, err = merge(ctx, ix, run, facts, hypers, emb, opts.KG)
	if err != nil {
		return nil, err
	}
	stage("merge", t0)
	summary, _ := json.Marshal(map[string]any{"added": rep.Added, "accepted": rep.Accepted, "proposed": rep.Proposed,
		"rejections": rep.Rejections, "selected": len(rep.Selected), "completer": rep.Completer, "selector": rep.Selector})
	ix.Runs[len(ix.Runs)-1].Summary = string(summary)
	return rep, nil
}

// LostCalls is the number of completion calls that got no answer at all (network,
// timeout, server errors…): a rerun may still get their facts, unlike unparseable
// answers, which the cache would repeat.
func (r *Report) LostCalls() int {
	n := 0
	for k, c := range r.FailedByKind {
		if k != "unparseable" {
			n += c
		}
	}
	return n
}

// FormatCounts formats counts by name as "a 3, b 1", largest first.
func FormatCounts(m map[string]int) string { return counts.Format(m) }

// scoreSubgraphs returns the log-odds of the ensemble's missingness probability
// (ensemble.logit) of every subgraph, in batches.
func scoreSubgraphs(ctx context.Context, feat *featurizer, sc *ensemble, subs []*subgraph, progress func(done, total int)) ([]float64, error) {
	const batch = scoreChunk
	var shapes [][]*kernels.Graph
	for lo := 0; lo < len(subs); lo += batch {
		shapes = append(shapes, shapeGraphs(subs[lo:min(lo+batch, len(subs))]))
	}
	for _, m := range sc.members {
		if p, ok := m.(batchPreparer); ok {
			if err := p.Prepare(shapes); err != nil {
				return nil, fmt.Errorf("augment: score: %w", err)
			}
		}
	}
	out := make([]float64, 0, len(subs))
	for lo := 0; lo < len(subs); lo += batch {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hi := min(lo+batch, len(subs))
		gs := make([]*kernels.Graph, 0, hi-lo)
		for _, s := range subs[lo:hi] {
			gs = append(gs, feat.graph(s, nil))
		}
		logits, err := sc.logits(gs)
		if err != nil {
			return nil, fmt.Errorf("augment: score: %w", err)
		}
		out = append(out, logits...)
		if progress != nil {
			progress(hi, len(subs))
		}
	}
	return out, nil
}

// quantiles returns the min, quartiles and max of xs (rounded), or nil if empty.
func quantiles(xs []float64) []float64 {
	if len(xs) == 0 {
		return nil
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	var out []float64
	for _, q := range []float64{0, 0.25, 0.5, 0.75, 1} {
		out = append(out, round3(s[int(q*float64(len(s)-1)+0.5)]))
	}
	return out
}
