package kernels

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
)

// Layout fixes how a batch places node rows.
type Layout struct {
	// TileSize > 0 packs graphs into tiles of TileSize rows (no graph straddles a tile)
	// and enables the dense per-tile kernels. 0 lays graphs out sequentially.
	TileSize int
	// GraphsPerTile is the number of graph slots per tile (tiled layout only). The
	// packer never puts more graphs in a tile. It sizes the per-tile pooling matrices.
	GraphsPerTile int
}

// Tiled reports whether the layout is tiled.
func (l Layout) Tiled() bool { return l.TileSize > 0 }

// Validate checks the layout.
func (l Layout) Validate() error {
	switch {
	case l.TileSize < 0:
		return fmt.Errorf("kernels: layout: TileSize %d < 0", l.TileSize)
	case l.TileSize > 0 && (l.GraphsPerTile < 1 || l.GraphsPerTile > l.TileSize):
		return fmt.Errorf("kernels: layout: GraphsPerTile %d not in [1, TileSize=%d]", l.GraphsPerTile, l.TileSize)
	case l.TileSize == 0 && l.GraphsPerTile != 0:
		return fmt.Errorf("kernels: layout: GraphsPerTile %d set without tiles", l.GraphsPerTile)
	}
	return nil
}

// Bucket is one padded batch shape. In a tiled layout Nodes is a multiple of TileSize
// and Graphs = Nodes/TileSize × GraphsPerTile.
type Bucket struct {
	Nodes  int // node rows
	Edges  int // edge slots
	Graphs int // graph slots
}

// String names the bucket, e.g. "n2048e6144g128"; it is the executable cache key part.
func (b Bucket) String() string { return fmt.Sprintf("n%de%dg%d", b.Nodes, b.Edges, b.Graphs) }

// BucketerConfig configures a Bucketer.
type BucketerConfig struct {
	Spec    Spec
	Layout  Layout
	Buckets []Bucket // at least one; order does not matter
}

// Bucketer packs lists of graphs into padded batches of a fixed set of shapes.
type Bucketer struct {
	spec    Spec
	layout  Layout
	buckets []Bucket
}

// NewBucketer validates cfg and returns a Bucketer. In a tiled layout a bucket's
// Graphs may be 0 and is then derived from Nodes; otherwise it must match it.
func NewBucketer(cfg BucketerConfig) (*Bucketer, error) {
	if err := cfg.Spec.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Layout.Validate(); err != nil {
		return nil, err
	}
	if len(cfg.Buckets) == 0 {
		return nil, errors.New("kernels: bucketer: no buckets")
	}
	buckets := slices.Clone(cfg.Buckets)
	for i, b := range buckets {
		if b.Nodes < 1 || b.Edges < 1 {
			return nil, fmt.Errorf("kernels: bucketer: bucket %v needs ≥1 node row and ≥1 edge slot", b)
		}
		if cfg.Layout.Tiled() {
			t := cfg.Layout.TileSize
			if b.Nodes%t != 0 {
				return nil, fmt.Errorf("kernels: bucketer: bucket %v: Nodes not a multiple of TileSize %d", b, t)
			}
			g := b.Nodes / t * cfg.Layout.GraphsPerTile
			if b.Graphs != 0 && b.Graphs != g {
				return nil, fmt.Errorf("kernels: bucketer: bucket %v: tiled layout has %d graph slots", b, g)
			}
			buckets[i].Graphs = g
		} else if b.Graphs < 1 {
			return nil, fmt.Errorf("kernels: bucketer: bucket %v needs ≥1 graph slot", b)
		}
	}
	slices.SortFunc(buckets, func(a, b Bucket) int {
		return cmp.Or(cmp.Compare(a.Nodes, b.Nodes), cmp.Compare(a.Edges, b.Edges), cmp.Compare(a.Graphs, b.Graphs))
	})
	buckets = slices.Compact(buckets)
	return &Bucketer{spec: cfg.Spec, layout: cfg.Layout, buckets: buckets}, nil
}

// Spec returns the dataset dimensions.
func (bk *Bucketer) Spec() Spec { return bk.spec }

// Layout returns the node layout.
func (bk *Bucketer) Layout() Layout { return bk.layout }

// Buckets returns the buckets, smallest first.
func (bk *Bucketer) Buckets() []Bucket { return slices.Clone(bk.buckets) }

// Ladder returns count buckets growing geometrically by factor growth up to top
// (top/growth^(count-1), …, top). Node rows round up to the tile size (or 8), edges to
// multiples of 8; graph slots scale too in the sequential layout.
func Ladder(top Bucket, growth float64, count int, layout Layout) ([]Bucket, error) {
	if count < 1 || growth < 1 || math.IsNaN(growth) {
		return nil, fmt.Errorf("kernels: ladder: need count ≥ 1 and growth ≥ 1, got %d and %g", count, growth)
	}
	align := 8
	if layout.Tiled() {
		align = layout.TileSize
	}
	roundUp := func(v float64, a int) int { return max(a, int(math.Ceil(v/float64(a)-1e-9))*a) }
	var out []Bucket
	for k := count - 1; k >= 0; k-- {
		f := math.Pow(growth, float64(-k))
		b := Bucket{
			Nodes: roundUp(float64(top.Nodes)*f, align),
			Edges: roundUp(float64(top.Edges)*f, 8),
		}
		if !layout.Tiled() {
			b.Graphs = roundUp(float64(top.Graphs)*f, 1)
		}
		out = append(out, b)
	}
	return out, nil
}

// SuggestBuckets returns count buckets spanning the shapes that sample batches need in
// the given layout (from 5% below the smallest to 5% above the largest, geometric
// steps), for a Bucketer that will see batches like the samples.
func SuggestBuckets(spec Spec, layout Layout, samples [][]*Graph, count int) ([]Bucket, error) {
	if err := layout.Validate(); err != nil {
		return nil, err
	}
	if len(samples) == 0 || count < 1 {
		return nil, errors.New("kernels: suggest buckets: need sample batches and count ≥ 1")
	}
	lo, hi := Bucket{Nodes: math.MaxInt, Edges: math.MaxInt, Graphs: math.MaxInt}, Bucket{}
	for i, gs := range samples {
		need := Bucket{Graphs: len(gs)}
		for j, g := range gs {
			if err := g.Validate(spec); err != nil {
				return nil, fmt.Errorf("kernels: suggest buckets: batch %d graph %d: %w", i, j, err)
			}
			need.Nodes += g.NumNodes
			need.Edges += g.NumEdges()
		}
		if layout.Tiled() {
			off, slots := make([]int32, len(gs)), make([]int32, len(gs))
			tiles, err := packTiles(gs, layout, off, slots)
			if err != nil {
				return nil, err
			}
			need.Nodes = tiles * layout.TileSize
			need.Graphs = 0
		}
		lo = Bucket{Nodes: min(lo.Nodes, need.Nodes), Edges: min(lo.Edges, need.Edges), Graphs: min(lo.Graphs, need.Graphs)}
		hi = Bucket{Nodes: max(hi.Nodes, need.Nodes), Edges: max(hi.Edges, need.Edges), Graphs: max(hi.Graphs, need.Graphs)}
	}
	top := Bucket{Nodes: int(math.Ceil(float64(hi.Nodes) * 1.05)), Edges: int(math.Ceil(float64(max(hi.Edges, 1)) * 1.05)),
		Graphs: hi.Graphs}
	growth := 1.0
	if count > 1 {
		ratio := float64(top.Nodes) / math.Max(1, 0.95*float64(lo.Nodes))
		growth = math.Max(1, math.Pow(ratio, 1/float64(count-1)))
	}
	buckets, err := Ladder(top, growth, count, layout)
	if err != nil {
		return nil, err
	}
	if !layout.Tiled() {
		for i := range buckets { // every bucket must hold the largest batch's graph count
			buckets[i].Graphs = max(buckets[i].Graphs, hi.Graphs)
		}
	}
	return buckets, nil
}

// Batch is a list of graphs packed into one padded disjoint graph. All slices are
// host data in the shapes of Bucket; Tensors turns them into executable inputs.
type Batch struct {
	Spec   Spec
	Layout Layout
	Bucket Bucket

	NumGraphs, NumNodes, NumEdges int // real (unpadded) counts

	// Per node row, length Bucket.Nodes (X: × FeatDim).
	X        []float32
	NodeType []int32
	NodeMask []float32 // 1 for real rows
	NodeSlot []int32   // graph slot of the row; Bucket.Graphs (a dummy slot) for padding

	// Per edge slot, length Bucket.Edges (EdgeAttr: × EdgeDim), sorted by (Dst, EdgeType).
	Src, Dst, EdgeType []int32
	EdgeMask           []float32 // 1 for real edges
	EdgeNorm           []float32 // w_e/deg: its weight over the count of edges of that relation into Dst; 0 for padding
	EdgeAttr           []float32

	// Per graph slot, length Bucket.Graphs.
	GraphMask  []float32 // 1 for slots holding a graph
	GraphNodes []float32 // nodes of the graph in the slot

	// Mapping from the input order: graph i sits in slot GraphSlot[i] and its nodes are
	// rows NodeOffset[i] … NodeOffset[i]+NumNodes-1.
	GraphSlot  []int32
	NodeOffset []int32
	GraphSize  []int32 // nodes of input graph i

	// Tiled layout only (T = TileSize, S = GraphsPerTile, R = NumRelations, tiles = Nodes/T):
	Adj     []float32 // [tiles, T·R, T]: Adj[t, i·R+r, j] = Σ over edges j→i of relation r of 1/deg_r(i)
	AdjT    []float32 // [tiles, T, T·R]: transpose of Adj within each tile
	PoolSum []float32 // [tiles, S, T]: 1 where row j of tile t belongs to the graph in slot s
	Member  []float32 // [tiles, T, S]: transpose of PoolSum within each tile
}

// ShapeKey identifies the tensor shapes of the batch (bucket, layout and spec): batches
// with equal keys run on the same compiled executable.
func (b *Batch) ShapeKey() string {
	return fmt.Sprintf("%s/t%ds%d/f%de%dr%d", b.Bucket, b.Layout.TileSize, b.Layout.GraphsPerTile,
		b.Spec.FeatDim, b.Spec.EdgeDim, b.Spec.NumRelations)
}

// Tiles returns the number of tiles (0 in the sequential layout).
func (b *Batch) Tiles() int {
	if !b.Layout.Tiled() {
		return 0
	}
	return b.Bucket.Nodes / b.Layout.TileSize
}

// Batch packs graphs into the smallest bucket that holds them. It validates every graph
// and returns an error (never panics) when a graph is malformed or nothing fits.
func (bk *Bucketer) Batch(graphs []*Graph) (*Batch, error) {
	if len(graphs) == 0 {
		return nil, errors.New("kernels: batch: no graphs")
	}
	totalNodes, totalEdges := 0, 0
	for i, g := range graphs {
		if err := g.Validate(bk.spec); err != nil {
			return nil, fmt.Errorf("kernels: batch: graph %d: %w", i, err)
		}
		totalNodes += g.NumNodes
		totalEdges += g.NumEdges()
	}

	// Assign rows and slots.
	offsets := make([]int32, len(graphs))
	slots := make([]int32, len(graphs))
	neededNodes, neededGraphs := totalNodes, len(graphs)
	if bk.layout.Tiled() {
		tiles, err := packTiles(graphs, bk.layout, offsets, slots)
		if err != nil {
			return nil, err
		}
		neededNodes = tiles * bk.layout.TileSize
		neededGraphs = tiles * bk.layout.GraphsPerTile
	} else {
		row := 0
		for i, g := range graphs {
			offsets[i] = int32(row)
			slots[i] = int32(i)
			row += g.NumNodes
		}
	}
	bucket, ok := bk.pick(neededNodes, max(totalEdges, 1), neededGraphs)
	if !ok {
		largest := bk.buckets[len(bk.buckets)-1]
		return nil, fmt.Errorf("kernels: batch: %d graphs need %d node rows, %d edges, %d graph slots; largest bucket is %v",
			len(graphs), neededNodes, totalEdges, neededGraphs, largest)
	}
	b := &Batch{
		Spec: bk.spec, Layout: bk.layout, Bucket: bucket,
		NumGraphs: len(graphs), NumNodes: totalNodes, NumEdges: totalEdges,
		GraphSlot: slots, NodeOffset: offsets, GraphSize: make([]int32, len(graphs)),
	}
	for i, g := range graphs {
		b.GraphSize[i] = int32(g.NumNodes)
	}
	b.fill(graphs)
	return b, nil
}

// pick returns the first (smallest) bucket that fits.
func (bk *Bucketer) pick(nodes, edges, graphs int) (Bucket, bool) {
	for _, b := range bk.buckets {
		if b.Nodes >= nodes && b.Edges >= edges && b.Graphs >= graphs {
			return b, true
		}
	}
	return Bucket{}, false
}

// packTiles bin-packs graphs into tiles, first-fit decreasing by node count, with at
// most GraphsPerTile graphs per tile. It fills offsets (first row) and slots, and
// returns the number of tiles used.
func packTiles(graphs []*Graph, layout Layout, offsets, slots []int32) (int, error) {
	t, s := layout.TileSize, layout.GraphsPerTile
	order := make([]int, len(graphs))
	for i := range order {
		order[i] = i
		if graphs[i].NumNodes > t {
			return 0, fmt.Errorf("kernels: batch: graph %d has %d nodes, more than TileSize %d", i, graphs[i].NumNodes, t)
		}
	}
	sort.SliceStable(order, func(a, b int) bool { return graphs[order[a]].NumNodes > graphs[order[b]].NumNodes })
	var used, count []int // rows used and graphs placed per tile
	for _, gi := range order {
		n := graphs[gi].NumNodes
		tile := -1
		for k := range used {
			if used[k]+n <= t && count[k] < s {
				tile = k
				break
			}
		}
		if tile < 0 {
			tile = len(used)
			used = append(used, 0)
			count = append(count, 0)
		}
		offsets[gi] = int32(tile*t + used[tile])
		slots[gi] = int32(tile*s + count[tile])
		used[tile] += n
		count[tile]++
	}
	return len(used), nil
}

// fill writes the padded arrays.
func (b *Batch) fill(graphs []*Graph) {
	spec, bucket := b.Spec, b.Bucket
	n, e, gs := bucket.Nodes, bucket.Edges, bucket.Graphs
	b.X = make([]float32, n*spec.FeatDim)
	b.NodeType = make([]int32, n)
	b.NodeMask = make([]float32, n)
	b.NodeSlot = make([]int32, n)
	for i := range b.NodeSlot {
		b.NodeSlot[i] = int32(gs) // dummy slot for padding rows
	}
	b.GraphMask = make([]float32, gs)
	b.GraphNodes = make([]float32, gs)

	type edge struct {
		src, dst, typ int32
		weight        float32
		graph, index  int
	}
	edges := make([]edge, 0, b.NumEdges)
	for gi, g := range graphs {
		off := b.NodeOffset[gi]
		slot := b.GraphSlot[gi]
		b.GraphMask[slot] = 1
		b.GraphNodes[slot] = float32(g.NumNodes)
		copy(b.X[int(off)*spec.FeatDim:], g.X)
		for i := range g.NumNodes {
			row := off + int32(i)
			b.NodeType[row] = g.nodeType(i)
			b.NodeMask[row] = 1
			b.NodeSlot[row] = slot
		}
		for k := range g.NumEdges() {
			edges = append(edges, edge{src: off + g.Src[k], dst: off + g.Dst[k], typ: g.edgeType(k), weight: g.edgeWeight(k), graph: gi, index: k})
		}
	}
	slices.SortStableFunc(edges, func(a, b edge) int {
		return cmp.Or(cmp.Compare(a.dst, b.dst), cmp.Compare(a.typ, b.typ), cmp.Compare(a.src, b.src))
	})

	// In-degree per (row, relation) for the degree-normalised mean; an edge's weight
	// scales its message (Graph.EdgeWeight).
	r := spec.NumRelations
	deg := make([]float64, n*r)
	for _, ed := range edges {
		deg[int(ed.dst)*r+int(ed.typ)]++
	}

	b.Src = make([]int32, e)
	b.Dst = make([]int32, e)
	b.EdgeType = make([]int32, e)
	b.EdgeMask = make([]float32, e)
	b.EdgeNorm = make([]float32, e)
	b.EdgeAttr = make([]float32, e*spec.EdgeDim)
	for k, ed := range edges {
		b.Src[k], b.Dst[k], b.EdgeType[k] = ed.src, ed.dst, ed.typ
		b.EdgeMask[k] = 1
		b.EdgeNorm[k] = float32(float64(ed.weight) / deg[int(ed.dst)*r+int(ed.typ)])
		if spec.EdgeDim > 0 {
			src := graphs[ed.graph].EdgeAttr[ed.index*spec.EdgeDim : (ed.index+1)*spec.EdgeDim]
			copy(b.EdgeAttr[k*spec.EdgeDim:], src)
		}
	}
	// Padding edges point at the last row with the last relation, so the scatter index
	// Dst·R+EdgeType stays sorted; their mask and weight are 0.
	for k := len(edges); k < e; k++ {
		b.Src[k], b.Dst[k], b.EdgeType[k] = int32(n-1), int32(n-1), int32(r-1)
	}

	if !b.Layout.Tiled() {
		return
	}
	t, s := b.Layout.TileSize, b.Layout.GraphsPerTile
	tiles := n / t
	b.Adj = make([]float32, tiles*t*r*t)
	b.AdjT = make([]float32, tiles*t*t*r)
	for k, ed := range edges {
		tile := int(ed.dst) / t
		i, j := int(ed.dst)%t, int(ed.src)%t
		w := b.EdgeNorm[k]
		b.Adj[tile*t*r*t+(i*r+int(ed.typ))*t+j] += w
		b.AdjT[tile*t*t*r+j*t*r+i*r+int(ed.typ)] += w
	}
	b.PoolSum = make([]float32, tiles*s*t)
	b.Member = make([]float32, tiles*t*s)
	for row := range n {
		slot := int(b.NodeSlot[row])
		if slot == gs {
			continue
		}
		tile, j, sl := row/t, row%t, slot%s
		b.PoolSum[tile*s*t+sl*t+j] = 1
		b.Member[tile*t*s+j*s+sl] = 1
	}
}

// GraphValues scatters one value per input graph into slot order (length
// Bucket.Graphs), e.g. labels; padding slots get 0.
func (b *Batch) GraphValues(perGraph []float32) ([]float32, error) {
	if len(perGraph) != b.NumGraphs {
		return nil, fmt.Errorf("kernels: batch: %d values for %d graphs", len(perGraph), b.NumGraphs)
	}
	out := make([]float32, b.Bucket.Graphs)
	for i, v := range perGraph {
		out[b.GraphSlot[i]] = v
	}
	return out, nil
}

// PerGraph gathers slot-ordered rows (width values per slot, e.g. logits with width 1
// or pooled embeddings) back into input-graph order.
func (b *Batch) PerGraph(slotRows []float32, width int) ([]float32, error) {
	if width < 1 || len(slotRows) != b.Bucket.Graphs*width {
		return nil, fmt.Errorf("kernels: batch: got %d values, want %d slots × width %d", len(slotRows), b.Bucket.Graphs, width)
	}
	out := make([]float32, b.NumGraphs*width)
	for i, slot := range b.GraphSlot {
		copy(out[i*width:(i+1)*width], slotRows[int(slot)*width:(int(slot)+1)*width])
	}
	return out, nil
}

// NodeRows gathers the rows of input graph i (its NumNodes × width values) from a
// node-row output of width values per row.
func (b *Batch) NodeRows(rows []float32, width, i int) ([]float32, error) {
	if width < 1 || len(rows) != b.Bucket.Nodes*width {
		return nil, fmt.Errorf("kernels: batch: got %d values, want %d rows × width %d", len(rows), b.Bucket.Nodes, width)
	}
	if i < 0 || i >= b.NumGraphs {
		return nil, fmt.Errorf("kernels: batch: graph %d out of range [0,%d)", i, b.NumGraphs)
	}
	off, numNodes := int(b.NodeOffset[i]), int(b.GraphSize[i])
	return slices.Clone(rows[off*width : (off+numNodes)*width]), nil
}
