package augment

import (
	"fmt"
	"math"
	"slices"

	"github.com/graphloom/graphloom/kernels"
)

// walkRelations is the number of relations sampled subgraphs carry (FACT, SYNONYM):
// the walk graph has no ENTITY_CHUNK edges (anchors §D.2).
const walkRelations = relSynonym + 1

// batchPreparer is implemented by scorers that pad batches to fixed shapes. Prepare
// receives one family of batches like the ones that will follow (sampled training
// batches, or the evaluation batches, or the scoring batches: one call each); only
// their graphs' node and edge counts matter (features may be nil). It lets the scorer
// fit its shapes to them before the first step instead of padding to a generic ladder.
type batchPreparer interface {
	Prepare(samples [][]*kernels.Graph) error
}

// compileCounter is implemented by scorers that compile executables.
type compileCounter interface {
	Compilations() int64
}

// Batch widths: evaluation views are scored 256 at a time, inference subgraphs 64.
const (
	evalChunk  = 256
	scoreChunk = 64
)

// Shape ladder parameters.
const (
	baseTile      = 64   // the smallest tile: the fast layout for the typical view (≤ 61 nodes)
	tileSlotsDiv  = 8    // graph slots per tile = TileSize/8 (views have ≥ 3 nodes)
	ladderGrowth  = 1.25 // growth of the generic ladder's node rows
	edgesPerRow   = 16   // edge slots per node row (walk subgraphs average 2–4 directed edges per node)
	fittedBuckets = 3    // most fitted shapes per family (kernels.SuggestBuckets: 5% margins)
)

// batchShapes chooses a layout and a padded bucket for every batch of the scorer.
//
// Each graph must lie inside one tile, so a batch uses the smallest tile size in
// 64, 128, 256, … that holds its largest graph. Per tile size the buckets are a
// geometric ladder of tile counts (growth 1.25, up to one tile per graph of the
// largest batch), which always fits; fit adds shapes fitted to sample batches
// (kernels.SuggestBuckets) and drops the ladder rungs inside their range, so that
// batches like the samples pad by a few percent and compile once per fitted shape.
//
// In the tiled layout message passing uses the dense per-tile adjacency, not the edge
// list, so edge slots cost only their host arrays: every bucket has 16 per node row,
// and the top rung enough for any graph that fits a tile.
type batchShapes struct {
	spec  kernels.Spec
	tiers []*shapeTier // ascending tile size
}

// shapeTier is the buckets of one tile size.
type shapeTier struct {
	layout    kernels.Layout
	ladder    []kernels.Bucket
	fitRanges [][2]int         // node-row ranges of the fitted shapes (ladder rungs inside are dropped)
	fitShapes []kernels.Bucket // shapes added by fit
	bk        *kernels.Bucketer
}

// newBatchShapes returns the ladders for cfg's largest subgraph (1 + walks × hops
// nodes) and largest batch (three views per training root, or 256 evaluation views).
func newBatchShapes(spec kernels.Spec, cfg Config) (*batchShapes, error) {
	maxNodes := 1 + cfg.WalksPerRoot*cfg.WalkLength
	maxGraphs := max((cleanPerGroup+2)*cfg.TrainRoots, evalChunk, scoreChunk)
	s := &batchShapes{spec: spec}
	for t := baseTile; ; t *= 2 {
		layout := kernels.Layout{TileSize: t, GraphsPerTile: t / tileSlotsDiv}
		tier := &shapeTier{layout: layout}
		for rows := float64(t); ; rows *= ladderGrowth {
			tiles := min(maxGraphs, int(math.Ceil(rows/float64(t))))
			if n := len(tier.ladder); n == 0 || tier.ladder[n-1].Nodes < tiles*t {
				tier.ladder = append(tier.ladder, kernels.Bucket{Nodes: tiles * t, Edges: tiles * t * edgesPerRow})
			}
			if tiles == maxGraphs {
				break
			}
		}
		top := tier.ladder[len(tier.ladder)-1]
		tier.ladder = append(tier.ladder, kernels.Bucket{Nodes: top.Nodes, Edges: top.Nodes * 2 * (t - 1)})
		if err := tier.rebuild(spec); err != nil {
			return nil, err
		}
		s.tiers = append(s.tiers, tier)
		if t >= maxNodes {
			break
		}
	}
	return s, nil
}

// rebuild makes the tier's Bucketer from its fitted shapes and the ladder rungs
// outside their ranges.
func (t *shapeTier) rebuild(spec kernels.Spec) error {
	buckets := slices.Clone(t.fitShapes)
	for _, b := range t.ladder {
		inside := false
		for _, r := range t.fitRanges {
			inside = inside || (b.Nodes >= r[0] && b.Nodes <= r[1])
		}
		if !inside {
			buckets = append(buckets, b)
		}
	}
	bk, err := kernels.NewBucketer(kernels.BucketerConfig{Spec: spec, Layout: t.layout, Buckets: buckets})
	if err != nil {
		return fmt.Errorf("augment: scorer shapes: %w", err)
	}
	t.bk = bk
	return nil
}

// tier returns the tier of the smallest tile that holds every graph.
func (s *batchShapes) tier(graphs []*kernels.Graph) (*shapeTier, error) {
	largest := 0
	for _, g := range graphs {
		if g != nil {
			largest = max(largest, g.NumNodes)
		}
	}
	for _, t := range s.tiers {
		if largest <= t.layout.TileSize {
			return t, nil
		}
	}
	return nil, fmt.Errorf("augment: scorer: a graph of %d nodes exceeds the largest tile (%d)", largest, s.tiers[len(s.tiers)-1].layout.TileSize)
}

// batch packs graphs into their tier's smallest fitting bucket.
func (s *batchShapes) batch(graphs []*kernels.Graph) (*kernels.Batch, error) {
	t, err := s.tier(graphs)
	if err != nil {
		return nil, err
	}
	return t.bk.Batch(graphs)
}

// fit adds, for one family of sample batches (per tier they fall in), up to three
// shapes spanning the node rows they need, with 5% margins (kernels.SuggestBuckets).
func (s *batchShapes) fit(samples [][]*kernels.Graph) error {
	shapeSpec := s.spec
	shapeSpec.FeatDim = 1
	groups := map[*shapeTier][][]*kernels.Graph{}
	for i, gs := range samples {
		if len(gs) == 0 {
			continue
		}
		t, err := s.tier(gs)
		if err != nil {
			return fmt.Errorf("augment: scorer shapes: sample %d: %w", i, err)
		}
		shaped := make([]*kernels.Graph, len(gs))
		for j, g := range gs {
			if g == nil {
				return fmt.Errorf("augment: scorer shapes: sample %d graph %d is nil", i, j)
			}
			c := *g
			c.X, c.EdgeAttr = make([]float32, g.NumNodes), nil
			shaped[j] = &c
		}
		groups[t] = append(groups[t], shaped)
	}
	for _, t := range s.tiers {
		group := groups[t]
		if len(group) == 0 {
			continue
		}
		suggested, err := kernels.SuggestBuckets(shapeSpec, t.layout, group, min(fittedBuckets, len(group)))
		if err != nil {
			return fmt.Errorf("augment: scorer shapes: %w", err)
		}
		lo, hi := math.MaxInt, 0
		for _, b := range suggested {
			b.Edges = max(b.Edges, b.Nodes*edgesPerRow)
			b.Graphs = b.Nodes / t.layout.TileSize * t.layout.GraphsPerTile
			t.fitShapes = append(t.fitShapes, b)
			lo, hi = min(lo, b.Nodes), max(hi, b.Nodes)
		}
		t.fitRanges = append(t.fitRanges, [2]int{lo, hi})
		if err := t.rebuild(s.spec); err != nil {
			return err
		}
	}
	return nil
}

// shapeGraphs returns the structure of subgraphs as scorer graphs without features,
// for batchPreparer.
func shapeGraphs(subs []*subgraph) []*kernels.Graph {
	out := make([]*kernels.Graph, len(subs))
	for i, s := range subs {
		g := &kernels.Graph{NumNodes: len(s.nodes), Src: make([]int32, 0, 2*len(s.edges)),
			Dst: make([]int32, 0, 2*len(s.edges)), EdgeType: make([]int32, 0, 2*len(s.edges))}
		for _, e := range s.edges {
			g.Src = append(g.Src, e.u, e.v)
			g.Dst = append(g.Dst, e.v, e.u)
			g.EdgeType = append(g.EdgeType, int32(e.rel), int32(e.rel))
		}
		out[i] = g
	}
	return out
}

// viewSubgraphs returns the subgraphs of views.
func viewSubgraphs(views []view) []*subgraph {
	out := make([]*subgraph, len(views))
	for i, v := range views {
		out[i] = v.sg
	}
	return out
}
