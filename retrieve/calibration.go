package retrieve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// A calibration is a final passage ranking of the graph retrievers fitted on the
// corpus's own synthetic questions (`graphloom calibrate`, package calibrate) and
// stored in the index under CalibrationBlob. What it can hold, per retriever:
//
//   - fusion: the PPR/BM25 fusion of the final ranking (FinalFusion, FinalBM25Weight)
//     chosen by grid search;
//   - ranker-nogate: a linear ranker over per-passage features (FeatureNames);
//   - ranker: the same plus hidden ReLU units over the passage's features and the
//     question's own (GateNames), so a feature's weight can turn on the question and
//     on the other features: score = w·x + Σ_h aₕ relu(Uₕ·[x; z] + cₕ).
//
// Every variant ranks a candidate pool: the union of the top CalibrationDepth passages
// of BM25, the passage seeds (dense, or dense fused with BM25), the PPR mass and the
// uncalibrated final ranking. Use names the variant the held-out synthetic questions
// chose; "defaults" means none beat the uncalibrated ranking and none is applied.

// CalibrationBlob is the index blob holding the stored Calibration (JSON).
const CalibrationBlob = "calibration"

// Config.Calibration modes.
const (
	// CalibrationAuto applies the variant the calibration chose, when the index has one.
	CalibrationAuto = "auto"
	// CalibrationOff ignores a stored calibration: the uncalibrated defaults.
	CalibrationOff = "off"
)

// Calibration variants (Fitted.Use and the forced Config.Calibration modes, for
// ablations).
const (
	VariantDefaults = "defaults"
	VariantFusion   = "fusion"
	VariantNoGate   = "ranker-nogate"
	VariantRanker   = "ranker"
)

// Variants lists the calibration variants, simplest first.
var Variants = []string{VariantDefaults, VariantFusion, VariantNoGate, VariantRanker}

// CalibrationDepth is how many passages each ranking contributes to a calibrated
// query's candidate pool (more when a query asks for more).
const CalibrationDepth = 50

// Per-passage features of a candidate, each in [0, 1]; the order of
// CandidateSet.X's columns and Ranker.W.
const (
	FeatBM25      = iota // BM25 score, min-max over the corpus
	FeatBM25Rank         // 1/√rank in the BM25 ranking (0 beyond the pool depth)
	FeatGraph            // PPR mass, min-max over the corpus (0 when PPR did not run)
	FeatGraphRank        // 1/√rank by PPR mass
	FeatDense            // the passage seed score (dense, or dense fused with BM25), min-max
	FeatDenseRank        // 1/√rank by it
	FeatDefault          // 1/√rank in the uncalibrated final ranking
	FeatQEntities        // share of the entities the question names that the passage mentions
	FeatFacts            // share of the linked facts the passage states (ppr; 0 for hyperppr)
	FeatTitle            // share of the passage's document-title terms found in the question
	FeatLength           // log(1+tokens) / log(1+the index's longest chunk)
	NumFeatures
)

// FeatureNames names the features in column order.
var FeatureNames = []string{"bm25", "bm25_rank", "graph", "graph_rank", "dense", "dense_rank", "default_rank",
	"question_entities", "linked_facts", "title", "length"}

// Per-question gate features (CandidateSet.Z).
const (
	GateBias       = iota // 1
	GateBM25Margin        // the BM25 top passage's lead over the second, min-max scale
	GateQEntities         // entities the question names, min(n, 3)/3
	GateFacts             // linked facts ÷ LinkingTopK
	GateGraph             // 1 when PPR ran, 0 when the query fell back
	NumGates
)

// GateNames names the gate features in order.
var GateNames = []string{"bias", "bm25_margin", "question_entities", "linked_facts", "graph_ran"}

// Fusion is a fitted final fusion of PPR mass and BM25: Kind FusionRRF or
// FusionLinear, Mu BM25's weight (Config.FinalFusion, Config.FinalBM25Weight).
type Fusion struct {
	Kind string  `json:"kind"`
	Mu   float64 `json:"mu"`
}

// Ranker is a ranker over the features: s = Σⱼ (wⱼ + Σ_g Vⱼg z_g) xⱼ +
// Σ_h A_h relu(U_h·[x; z] + C_h), with W [NumFeatures]; the gated ranker has either
// hidden units U [H][NumFeatures+NumGates], C [H], A [H] over the passage's and the
// question's features (as CalibrationMethod 4 fits it) or the gate matrix V
// [NumFeatures][NumGates] (as earlier methods did, and the unfitted default: V = 0).
type Ranker struct {
	W []float64   `json:"w"`
	V [][]float64 `json:"v,omitempty"`
	U [][]float64 `json:"u,omitempty"`
	C []float64   `json:"c,omitempty"`
	A []float64   `json:"a,omitempty"`
}

// Fitted is one retriever's calibration.
type Fitted struct {
	// Use is the variant applied under CalibrationAuto (VariantDefaults: none).
	Use    string `json:"use"`
	Fusion Fusion `json:"fusion"`
	NoGate Ranker `json:"ranker_nogate"`
	Ranker Ranker `json:"ranker"`
}

// Calibration is what `graphloom calibrate` stores in an index.
type Calibration struct {
	Features []string `json:"features"`
	Gates    []string `json:"gates"`
	// Generation is the index generation the calibration was fitted on
	// (kg.Generation): a later add, delete, sync or augmentation makes it stale.
	Generation string             `json:"index_generation"`
	Retrievers map[string]*Fitted `json:"retrievers"`
	// Report is the calibration's report (package calibrate), shown by `stats`.
	Report json.RawMessage `json:"report,omitempty"`
	// Method is the calibration method's version (CalibrationMethod when fitted by
	// this graphloom; 0 before it was recorded).
	Method int `json:"method,omitempty"`
}

// CalibrationMethod is the version of how `graphloom calibrate` fits, raised when a
// change would fit an index otherwise: 2 — template questions name entities as the
// corpus writes them with no words of their own, the fusion fit keeps the
// reciprocal-rank kind, the rankers leave length at 0; 3 — a ranker is used only when
// it beats every feature alone on the held-out questions, and a corpus whose facts
// give too few questions is asked about its hyperedges; 4 — the rankers are trained
// with RankNet's loss on every candidate pair, and the gated one has hidden units
// (Ranker.U) in place of the gate matrix.
const CalibrationMethod = 4

// Warning says why c should be fitted again, "" when it need not: an earlier
// calibration method fitted it, or stale(c.Generation) says why — the caller's
// kg.StaleWarning against the index now. Either way c is still applied.
func (c *Calibration) Warning(stale func(generation string) string) string {
	if c.Method >= CalibrationMethod {
		return stale(c.Generation)
	}
	return fmt.Sprintf("warning: the stored calibration is outdated: it was fitted by calibration method %d and this graphloom fits by method %d (its synthetic questions and fits changed); `graphloom calibrate` fits it again", c.Method, CalibrationMethod)
}

// ReadCalibration returns the calibration stored in ix, nil when there is none.
func ReadCalibration(ix *graphio.Index) (*Calibration, error) {
	blob, ok := ix.Blobs[CalibrationBlob]
	if !ok {
		return nil, nil
	}
	var c Calibration
	if err := json.Unmarshal(blob, &c); err != nil {
		return nil, fmt.Errorf("retrieve: the index's calibration: %w (run `graphloom calibrate` again, or pass --calibration off)", err)
	}
	if !slices.Equal(c.Features, FeatureNames) || !slices.Equal(c.Gates, GateNames) {
		return nil, fmt.Errorf("retrieve: the index's calibration was fitted on features %v, gates %v; this graphloom computes %v, %v: run `graphloom calibrate` again, or pass --calibration off",
			c.Features, c.Gates, FeatureNames, GateNames)
	}
	for name, f := range c.Retrievers {
		if f == nil {
			return nil, fmt.Errorf("retrieve: the index's calibration: retriever %q has no fit", name)
		}
		if err := f.check(); err != nil {
			return nil, fmt.Errorf("retrieve: the index's calibration: retriever %q: %w", name, err)
		}
	}
	return &c, nil
}

// WriteCalibration stores c in ix (the caller writes the index).
func WriteCalibration(ix *graphio.Index, c *Calibration) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("retrieve: calibration: %w", err)
	}
	if ix.Blobs == nil {
		ix.Blobs = map[string][]byte{}
	}
	ix.Blobs[CalibrationBlob] = b
	return nil
}

func (f *Fitted) check() error {
	if !slices.Contains(Variants, f.Use) {
		return fmt.Errorf("use %q: want one of %v", f.Use, Variants)
	}
	if err := validFusion(f.Fusion.Kind); err != nil || !(f.Fusion.Mu >= 0 && f.Fusion.Mu <= 1) {
		return fmt.Errorf("fusion %q μ %g: want rrf or linear, 0 ≤ μ ≤ 1", f.Fusion.Kind, f.Fusion.Mu)
	}
	for _, r := range []struct {
		name  string
		r     Ranker
		gated bool
	}{{VariantNoGate, f.NoGate, false}, {VariantRanker, f.Ranker, true}} {
		if len(r.r.W) != NumFeatures {
			return fmt.Errorf("%s: %d weights, want %d", r.name, len(r.r.W), NumFeatures)
		}
		if err := r.r.check(r.gated); err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
	}
	return nil
}

// CandidateSet is a question's candidate pool with its features.
type CandidateSet struct {
	Chunks []int32     // candidate chunks, ascending
	X      [][]float64 // [len(Chunks)][NumFeatures]
	Z      []float64   // [NumGates]
	// Censored ranks (from 1; depth+1 beyond a ranking's pool depth) and min-max
	// scores of the PPR and BM25 rankings and the uncalibrated final ranking, for
	// the fusion variant and the defaults.
	GraphRank, BM25Rank, DefaultRank []int32
	Graph, BM25                      []float64
	Facts                            [][]string // the linked facts (ppr)
}

// Score returns the candidates' scores under variant v of f (higher first).
func (f *Fitted) Score(v string, cs *CandidateSet) []float64 {
	if v == VariantDefaults || v == VariantFusion && cs.Z[GateGraph] == 0 { // no PPR: the fallback ranking, as uncalibrated
		return cs.DefaultScores()
	}
	out := make([]float64, len(cs.Chunks))
	for i := range out {
		switch v {
		case VariantFusion:
			if f.Fusion.Kind == FusionLinear {
				out[i] = (1-f.Fusion.Mu)*cs.Graph[i] + f.Fusion.Mu*cs.BM25[i]
			} else {
				out[i] = rrfScore(f.Fusion.Mu, cs.GraphRank[i], cs.BM25Rank[i])
			}
		case VariantNoGate:
			out[i] = f.NoGate.score(cs.X[i], nil)
		case VariantRanker:
			out[i] = f.Ranker.score(cs.X[i], cs.Z)
		default:
			return cs.DefaultScores()
		}
	}
	return out
}

// check validates r's shapes and weights (gated: V or hidden units; ungated: neither).
func (r *Ranker) check(gated bool) error {
	switch {
	case len(r.W) != NumFeatures:
		return fmt.Errorf("%d weights, want %d", len(r.W), NumFeatures)
	case !gated && (r.V != nil || r.U != nil):
		return errors.New("gate weights on the ungated ranker")
	case gated && (r.V == nil) == (r.U == nil):
		return errors.New("want either gate rows (v) or hidden units (u, c, a)")
	case r.V != nil && len(r.V) != NumFeatures:
		return fmt.Errorf("%d gate rows, want %d", len(r.V), NumFeatures)
	case len(r.C) != len(r.U) || len(r.A) != len(r.U):
		return fmt.Errorf("%d hidden units with %d biases and %d output weights", len(r.U), len(r.C), len(r.A))
	}
	all := [][]float64{r.W, r.C, r.A}
	for _, row := range r.V {
		if len(row) != NumGates {
			return fmt.Errorf("gate row of %d, want %d", len(row), NumGates)
		}
		all = append(all, row)
	}
	for _, row := range r.U {
		if len(row) != NumFeatures+NumGates {
			return fmt.Errorf("hidden unit of %d inputs, want %d", len(row), NumFeatures+NumGates)
		}
		all = append(all, row)
	}
	for _, row := range all {
		for _, w := range row {
			if math.IsNaN(w) || math.IsInf(w, 0) {
				return fmt.Errorf("weight %g", w)
			}
		}
	}
	return nil
}

// score is Σⱼ (wⱼ + Σ_g Vⱼg z_g) xⱼ + Σ_h A_h relu(U_h·[x; z] + C_h) (z nil: no gate).
func (r *Ranker) score(x, z []float64) float64 {
	s := 0.0
	for j, xj := range x {
		w := r.W[j]
		if z != nil && r.V != nil {
			for g, zg := range z {
				w += r.V[j][g] * zg
			}
		}
		s += w * xj
	}
	if z == nil {
		return s
	}
	for h, u := range r.U {
		a := r.C[h]
		for j, xj := range x {
			a += u[j] * xj
		}
		for g, zg := range z {
			a += u[len(x)+g] * zg
		}
		s += r.A[h] * max(a, 0)
	}
	return s
}

// Order returns the candidate positions ranked by scores, ties broken by the
// uncalibrated rank and then by chunk.
func (cs *CandidateSet) Order(scores []float64) []int {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		case cs.DefaultRank[a] != cs.DefaultRank[b]:
			return int(cs.DefaultRank[a] - cs.DefaultRank[b])
		}
		return int(cs.Chunks[a] - cs.Chunks[b])
	})
	return idx
}

// CandidateSets prepares and solves the PPR of graph retriever name ("ppr" or
// "hyperppr") for each question, uncalibrated, and returns each question's candidate
// pool: the union of the top depth passages of each ranking.
func (s *Searcher) CandidateSets(ctx context.Context, name string, qs []string, depth int) ([]CandidateSet, error) {
	g, prepare, err := s.graphOf(name)
	if err != nil {
		return nil, err
	}
	return solveBatchWith(ctx, s, g, qs, prepare, func(i int, p *pprQuery, sc *scratch, x []float64, ok bool) CandidateSet {
		return s.candidates(sc, p, qs[i], x, ok, depth)
	})
}

// graphOf returns the graph and seeding of a graph retriever.
func (s *Searcher) graphOf(name string) (*graphView, preparer, error) {
	switch name {
	case "ppr":
		g, err := s.hippoGraph()
		return g, hippoRetriever{s}.prepare, err
	case "hyperppr":
		if len(s.ix.Hyperedges) == 0 {
			return nil, nil, fmt.Errorf("retrieve: hyperppr needs hyperedges; the index has none")
		}
		g, err := s.hyperGraph()
		return g, hyperRetriever{s}.prepare, err
	}
	return nil, nil, fmt.Errorf("retrieve: %q is not a graph retriever (calibration fits ppr and hyperppr)", name)
}

// candidates builds a question's pool from its prepared query p and PPR scores x.
func (s *Searcher) candidates(sc *scratch, p *pprQuery, q string, x []float64, ok bool, depth int) CandidateSet {
	n := len(s.ix.Chunks)
	cs := CandidateSet{Facts: p.facts, Z: make([]float64, NumGates)}
	bm25 := p.bm25
	if bm25 == nil {
		bm25 = s.bm25Scores(sc, q)
	}
	dense := p.dense
	if dense == nil {
		dense = make([]float64, n)
	}
	def := dense
	if ok {
		def = s.final(sc, p.bm25, x)
	} else {
		x = nil
	}
	type ranking struct {
		v     []float64
		rank  map[int32]int32
		lo, w float64
	}
	rk := func(v []float64) *ranking {
		r := &ranking{v: v, rank: map[int32]int32{}}
		if v == nil {
			return r
		}
		for j, nb := range kernels.TopK(toF32(nil, v), depth) {
			r.rank[nb.Index] = int32(j + 1)
		}
		lo, hi := bounds(v)
		r.lo = lo
		if hi > lo {
			r.w = 1 / (hi - lo)
		}
		return r
	}
	rb, rd, rg, rdef := rk(bm25), rk(dense), rk(x), rk(def)
	pool := map[int32]bool{}
	for _, r := range []*ranking{rb, rd, rg, rdef} {
		for c := range r.rank {
			pool[c] = true
		}
	}
	cs.Chunks = make([]int32, 0, len(pool))
	for c := range pool {
		cs.Chunks = append(cs.Chunks, c)
	}
	slices.Sort(cs.Chunks)
	censored := func(r *ranking, c int32) int32 {
		if v, ok := r.rank[c]; ok {
			return v
		}
		return int32(depth + 1)
	}
	rr := func(r *ranking, c int32) float64 {
		if v, ok := r.rank[c]; ok {
			return 1 / math.Sqrt(float64(v))
		}
		return 0
	}
	norm := func(r *ranking, c int32) float64 {
		if r.v == nil {
			return 0
		}
		return (r.v[c] - r.lo) * r.w
	}
	qents := s.queryEntities(q)
	entChunks := s.entityChunks()
	qterms := map[string]bool{}
	for _, t := range s.analyzer().Terms(q) {
		qterms[t] = true
	}
	maxLen := math.Log1p(float64(s.longestChunk()))
	m := len(cs.Chunks)
	cs.X = make([][]float64, m)
	cs.GraphRank, cs.BM25Rank, cs.DefaultRank = make([]int32, m), make([]int32, m), make([]int32, m)
	cs.Graph, cs.BM25 = make([]float64, m), make([]float64, m)
	for i, c := range cs.Chunks {
		f := make([]float64, NumFeatures)
		f[FeatBM25], f[FeatBM25Rank] = norm(rb, c), rr(rb, c)
		f[FeatGraph], f[FeatGraphRank] = norm(rg, c), rr(rg, c)
		f[FeatDense], f[FeatDenseRank] = norm(rd, c), rr(rd, c)
		f[FeatDefault] = rr(rdef, c)
		if len(qents) > 0 {
			hit := 0
			for _, e := range qents {
				if _, found := slices.BinarySearch(entChunks[e], c); found {
					hit++
				}
			}
			f[FeatQEntities] = float64(hit) / float64(len(qents))
		}
		if len(p.linked) > 0 {
			hit := 0
			for _, fi := range p.linked {
				if _, found := slices.BinarySearch(s.ix.Facts[fi].Chunks, c); found {
					hit++
				}
			}
			f[FeatFacts] = float64(hit) / float64(len(p.linked))
		}
		chunk := &s.ix.Chunks[c]
		if tt := s.docTitleTerms()[chunk.Doc]; len(tt) > 0 {
			hit := 0
			for _, t := range tt {
				if qterms[t] {
					hit++
				}
			}
			f[FeatTitle] = float64(hit) / float64(len(tt))
		}
		if maxLen > 0 {
			f[FeatLength] = math.Log1p(float64(chunk.Tokens)) / maxLen
		}
		cs.X[i] = f
		cs.GraphRank[i], cs.BM25Rank[i], cs.DefaultRank[i] = censored(rg, c), censored(rb, c), censored(rdef, c)
		cs.Graph[i], cs.BM25[i] = f[FeatGraph], f[FeatBM25]
	}
	cs.Z[GateBias] = 1
	if top := kernels.TopK(toF32(nil, bm25), 2); len(top) == 2 && rb.w > 0 {
		cs.Z[GateBM25Margin] = float64(top[0].Score-top[1].Score) * rb.w
	}
	cs.Z[GateQEntities] = float64(min(len(qents), 3)) / 3
	if s.cfg.LinkingTopK > 0 {
		cs.Z[GateFacts] = min(1, float64(len(p.linked))/float64(s.cfg.LinkingTopK))
	}
	if ok {
		cs.Z[GateGraph] = 1
	}
	return cs
}

// docTitleTerms returns each document's title terms (the BM25 analyzer's), computed
// once: the title feature needs them for every candidate of every query.
func (s *Searcher) docTitleTerms() [][]string {
	s.titleOnce.Do(func() {
		s.titleTerms = make([][]string, len(s.ix.Documents))
		an := s.analyzer()
		for i, d := range s.ix.Documents {
			s.titleTerms[i] = an.Terms(d.Title)
		}
	})
	return s.titleTerms
}

// longestChunk returns the most tokens of a chunk of the index.
func (s *Searcher) longestChunk() int32 {
	s.longestOnce.Do(func() {
		for _, c := range s.ix.Chunks {
			s.longest = max(s.longest, c.Tokens)
		}
	})
	return s.longest
}

// calibratedRetriever is a graph retriever whose final ranking is a calibration's
// variant over the candidate pool.
type calibratedRetriever struct {
	s       *Searcher
	name    string
	variant string
	fit     *Fitted
}

func (r calibratedRetriever) Name() string { return r.name }

func (r calibratedRetriever) Retrieve(ctx context.Context, q string, k int) (Result, error) {
	res, err := r.RetrieveBatch(ctx, []string{q}, k)
	if err != nil {
		return Result{}, err
	}
	return res[0], nil
}

// RetrieveBatch implements BatchRetriever: the questions' PPR solved together.
func (r calibratedRetriever) RetrieveBatch(ctx context.Context, qs []string, k int) ([]Result, error) {
	sets, err := r.s.CandidateSets(ctx, r.name, qs, max(CalibrationDepth, k))
	if err != nil {
		return nil, err
	}
	out := make([]Result, len(qs))
	for i := range sets {
		cs := &sets[i]
		scores := r.fit.Score(r.variant, cs)
		order := cs.Order(scores)
		ps := make([]Passage, 0, min(k, len(order)))
		for _, j := range order[:min(k, len(order))] {
			ps = append(ps, r.s.passage(cs.Chunks[j], scores[j]))
		}
		out[i] = Result{Passages: ps, Facts: cs.Facts}
	}
	return out, nil
}

// calibrated returns the calibrated form of graph retriever name under the Searcher's
// calibration mode, or nil when none applies.
func (s *Searcher) calibrated(name string) Retriever {
	if s.cal == nil || (name != "ppr" && name != "hyperppr") {
		return nil
	}
	f := s.cal.Retrievers[name]
	if f == nil {
		return nil
	}
	v := f.Use
	if m := s.cfg.Calibration; m != "" && m != CalibrationAuto {
		v = m
	}
	if v == VariantDefaults {
		return nil
	}
	return calibratedRetriever{s: s, name: name, variant: v, fit: f}
}

// CheckCalibration checks a Config.Calibration mode.
func CheckCalibration(m string) error {
	if m == "" || m == CalibrationAuto || m == CalibrationOff || slices.Contains(Variants, m) {
		return nil
	}
	return fmt.Errorf("retrieve: calibration %q: want %s, %s or a variant (%s)", m, CalibrationAuto, CalibrationOff, strings.Join(Variants, ", "))
}

// Calibration returns the calibration the Searcher applies (nil: none).
func (s *Searcher) Calibration() *Calibration { return s.cal }

// Config returns the Searcher's configuration.
func (s *Searcher) Config() Config { return s.cfg }

// DefaultScores ranks the candidates as the uncalibrated final ranking does.
func (cs *CandidateSet) DefaultScores() []float64 {
	out := make([]float64, len(cs.Chunks))
	for i, r := range cs.DefaultRank {
		out[i] = -float64(r)
	}
	return out
}
