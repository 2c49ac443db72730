package kernels

import (
	"cmp"
	"math"
	"slices"
	"unsafe"
)

// pprSellRows is the number of rows iterated in lockstep (SELL-C-σ with C = 8).
const pprSellRows = 8

// pprPrefetchGroups is how many groups ahead the AVX-512 tile kernel prefetches the
// neighbour rows (the offset 256 = 8 groups × 32 bytes of columns in
// ppr_gather_amd64.s).
const pprPrefetchGroups = 8

// pprSellSigma is the window of nodes within which rows are sorted by length. Wider
// windows pad less and keep less of the original order's locality: on the 120K-passage
// HippoRAG graph (843K nodes, 4.43M entries) σ = 256 stores 5.39M entries (22 % padding)
// and σ = 1024 4.83M, a two-goroutine pass 3.85 → 3.60 ms; σ = ∞ stores 4.53M and takes
// 4.72 ms. The bench/ppr graph (Poisson degrees) barely pads at either.
const pprSellSigma = 1024

// pprLayout is the matrix as the PPR passes read it: SELL-8-σ over internally
// relabelled nodes.
//
// Graph rows are short (6 entries on average for HippoRAG-sized graphs), so a
// row-at-a-time CSR loop spends its time on the mispredicted exit at the end of every
// row and on one serial add chain. SELL-8 iterates 8 rows in lockstep: entries are
// stored in groups of 8, group k of a slice holding the k-th entry of each of its 8
// rows (padding: weight 0), so the inner loop has 8 independent accumulators and one
// loop exit per slice.
//
// Slices are nearly full when their rows have similar lengths, so nodes are relabelled:
// within each window of pprSellSigma consecutive nodes, by decreasing row length
// (stable). Internal node i is original node perm[i]; slice s holds internal rows
// 8s..8s+7; all per-node vectors are stored in internal order, so every pass reads and
// writes them sequentially, and windows keep whatever locality the original order had.
// Each row keeps its CSR entry order, so its sum is the same as a CSR loop's. The rows
// are padded to a multiple of 8 with isolated dummy nodes (perm −1).
//
// With colours (the SOR solver) the nodes are first grouped by a colouring of the graph
// in which no two neighbours share a colour (pprColouring): each colour is a run of
// internal rows, padded to whole slices and cut into its own chunks (colourChunk), so
// that one colour's rows can be updated in place, in parallel, from the others'.
//
// With elimination (the SOR solver) leaves and bridges are not rows: see pprLeaves.
type pprLayout struct {
	n, np int     // nodes; internal rows (whole slices, padding included)
	perm  []int32 // internal → original node, len np; −1 for padding rows
	// pos maps an original node to its internal row, or eliminated node k to −1−k.
	pos []int32
	// str and inv are the strength a pass weighs a row's iterate with and its inverse:
	// the node's strength, less d²·w per eliminated leaf and d²·A²/str_v per
	// neighbouring bridge v with elimination; 1 and 1 for an isolated or padding row.
	// full is the node's strength in the whole graph (the same slice as str without
	// elimination), which turns the iterate into scores, and mass is full + d·(the
	// weights to its leaves and bridges), which turns it into the row's and its share
	// of the eliminated nodes' Σz, less their Σs (the same slice as full without
	// elimination).
	str, inv, full, mass []float64
	str32, inv32         []float32 // str and inv rounded, for SOR's float32 batch passes
	slicePtr             []int32   // slice s holds groups [slicePtr[s], slicePtr[s+1])
	col                  []int32   // internal column of each entry, pprSellRows per group
	val                  []float32 // weight of each entry, pprSellRows per group
	chunk                []int32   // chunk c is slices [chunk[c], chunk[c+1]); chunks balance work
	// colourChunk[k] .. colourChunk[k+1] are the chunks of colour k; one colour holding
	// every chunk without colouring.
	colourChunk []int32
	leaves      pprLeaves
	// ilvNode and ilvRow list each chunk's rows by node (ilvRow: the row less the
	// chunk's first row, ilvNode: its node), padding rows last: a tile's resets are
	// gathered in node order, reading each reset forward, and the rows written at
	// random within the chunk, which stays in cache.
	ilvNode, ilvRow []int32
}

// pprLeaves are the nodes eliminated from the iteration, Schur-complement style: a
// leaf v has one neighbour u (no self-loop) and that neighbour has others. With the
// iterate stored as y = z/strength, the leaf's equation z_v = s_v + d·w·y_u (w = A_uv,
// the leaf's whole strength) is exact given y_u, and substituting it into u's row,
//
//	z_u = s_u + d·Σ_{v leaf of u} s_v + d²·W_u·y_u + d·Σ_{j not a leaf} A_uj·y_j,
//
// (W_u the weight of u's leaves) leaves a system over the other nodes whose row u
// reads y_u = (s'_u + d·Σ_j A_uj·y_j) / (str_u − d²·W_u): the pass kernels run it
// unchanged with the reset s' = s_u + d·Σ s_v and str_u − d²·W_u as the row's strength
// (pprLayout.str), and the leaves' scores are recovered from their neighbours' at the
// end. Against that strength the residual a pass measures at u is exactly the whole
// graph's residual at u once the leaves are recovered (a leaf's is 0), and the SOR
// bound of PPRConfig.Tol still holds: a later update of y_j moves the residual of j's
// remaining neighbours by d·ω·|δ_j|·(str_j − W_j) ≤ d·ω·(str_j − d²·W_j)·|δ_j|, j's
// measured residual. The passes count Σz over the rows plus Σs over the leaves, a lower
// bound on the whole graph's Σz: the stopping test can only be stricter.
//
// A bridge v has two neighbours a ≠ b, kept rows, and no leaves (pprFindLeaves). Its
// equation str_v·y_v = s_v + d·(A_va·y_a + A_vb·y_b) substituted into a's row moves
// d·A_av·s_v/str_v into a's reset, d²·A_av²/str_v out of its strength and adds a fill
// entry d·A_av·A_vb/str_v to b (symmetrically in b's row): the same system on fewer
// rows, the fill stored as two float32 whose sum is exact to about 2⁻⁴⁸. Its score
// z_v = s_v + d·(A_va·y_a + A_vb·y_b) is recovered at the end, and Σz over the rows
// folds it in as for a leaf (mass d·A_av at a, d·A_bv at b, s_v into Σs). The SOR
// bound holds as for leaves: row a's remaining weights, fills included, sum to no more
// than its pass strength, since d·(A_vb + d·A_va) ≤ str_v = A_va + A_vb for d < 1.
// No two bridges are neighbours, so every fill joins rows.
//
// On the 120K-passage HippoRAG graph 270K of 843K nodes are leaves (entities of one
// passage and no fact) and 540K of 4.43M entries go with them; 221K more are bridges
// (mostly entities of two passages), leaving 352K rows of 573K and one pass fewer
// (11), their 884K entries replaced by fills to 178K pairs of rows.
type pprLeaves struct {
	node   []int32   // original node of eliminated node k, ordered by parent row, then node
	parent []int32   // internal row of its (first) neighbour
	w      []float64 // the weight of that edge
	// A bridge's second neighbour's row and edge weight; parent2 is −1 for a leaf.
	parent2 []int32
	w2      []float64
	// chunk[c] .. chunk[c+1] are the nodes whose (first) parents are rows of chunk c.
	chunk []int32
	fold  pprFolds
	// foldOf[k] is the fold that counts eliminated node k's reset (count set): a
	// tile keeps each fold's resets, so a leaf's score reads them there.
	foldOf []int32
}

// pprFolds are the resets folded into rows: s'_p += d·c·s_v for each entry, c = 1 for
// a leaf and A_pv/str_v for each of a bridge's two rows; count marks the one entry of
// each eliminated node that adds s_v to Σs. They are ordered by node, so that folding a
// reset reads it in address order (most eliminated nodes have none: a query seeds a
// few entities), one core for all of them: 712K folds on the 120K-passage graph took
// 6 ms of CPU a question in row order, reading the reset at random.
type pprFolds struct {
	row, node []int32
	c         []float64
	count     []bool
}

// newPPRLayout relabels and lays out csr, grouped by colour when colour is set, and
// cuts the slices into chunks of at least chunkCost work (entries + 4 per row) that
// never span two colours. With elim > 0 (the damping d) the leaves are eliminated
// (pprLeaves).
func newPPRLayout(csr *CSR, sigma, chunkCost int, colour bool, elim float64) *pprLayout {
	n := csr.N
	strength := csr.Strength()
	var leafOf []int32 // leaf → parent (original), pprBridge or pprKept; nil without elimination
	var kept *CSR
	if elim > 0 {
		leafOf, kept = pprFindLeaves(csr, strength, elim)
	}
	if kept == nil {
		leafOf, kept = nil, csr
	}
	var loops []float64 // A_vv per node: the self-loops a pass solves for (see pprDropLoops)
	if elim > 0 {
		kept, loops = pprDropLoops(kept)
	}
	rowLen := func(v int32) int32 { return kept.RowPtr[v+1] - kept.RowPtr[v] }
	isLeaf := func(v int32) bool { return leafOf != nil && leafOf[v] != pprKept }
	var groups [][]int32
	if colour {
		groups = pprColouring(kept)
	} else {
		all := make([]int32, n)
		for i := range all {
			all[i] = int32(i)
		}
		groups = [][]int32{all}
	}
	if leafOf != nil {
		for k, g := range groups {
			groups[k] = slices.DeleteFunc(g, isLeaf)
		}
		groups = slices.DeleteFunc(groups, func(g []int32) bool { return len(g) == 0 })
	}
	l := &pprLayout{n: n}
	var groupEnd []int // slice index after each group
	for _, g := range groups {
		for w := 0; w < len(g); w += sigma {
			win := g[w:min(w+sigma, len(g))]
			slices.SortStableFunc(win, func(a, b int32) int { return cmp.Compare(rowLen(b), rowLen(a)) })
		}
		l.perm = append(l.perm, g...)
		for len(l.perm)%pprSellRows != 0 {
			l.perm = append(l.perm, -1)
		}
		groupEnd = append(groupEnd, len(l.perm)/pprSellRows)
	}
	np := len(l.perm)
	l.np = np
	l.str, l.inv = make([]float64, np), make([]float64, np)
	inv := make([]int32, n) // original → internal
	for i, v := range l.perm {
		if v >= 0 {
			inv[v] = int32(i)
		}
	}
	l.pos = inv
	for i, v := range l.perm {
		l.str[i], l.inv[i] = 1, 1
		if v >= 0 {
			if st := strength[v]; st > 0 && !math.IsInf(1/st, 0) {
				l.str[i], l.inv[i] = st, 1/st
			}
		}
	}
	l.full, l.mass = l.str, l.str
	if leafOf != nil {
		l.eliminate(leafOf, csr, strength, elim)
	}
	if loops != nil {
		l.solveLoops(loops, elim)
	}
	csr = kept // the rows that are laid out
	ns := np / pprSellRows
	l.slicePtr = make([]int32, 1, ns+1)
	l.col = make([]int32, 0, csr.NNZ()+csr.NNZ()/16)
	l.val = make([]float32, 0, csr.NNZ()+csr.NNZ()/16)
	l.chunk = []int32{0}
	l.colourChunk = []int32{0}
	cost := 0
	for sl := range ns {
		width := int32(0)
		for r := range pprSellRows {
			if v := l.perm[sl*pprSellRows+r]; v >= 0 {
				width = max(width, rowLen(v))
			}
		}
		for k := range width {
			for r := range pprSellRows {
				i := sl*pprSellRows + r
				var p0, ln int32
				if v := l.perm[i]; v >= 0 {
					p0, ln = csr.RowPtr[v], rowLen(v)
				}
				switch {
				case k < ln:
					l.col, l.val = append(l.col, inv[csr.Col[p0+k]]), append(l.val, csr.Val[p0+k])
				case ln > 0: // pad with the row's last column: already in cache
					l.col, l.val = append(l.col, inv[csr.Col[p0+ln-1]]), append(l.val, 0)
				default:
					l.col, l.val = append(l.col, int32(i)), append(l.val, 0)
				}
			}
		}
		l.slicePtr = append(l.slicePtr, l.slicePtr[sl]+width)
		cost += int(width)*pprSellRows + 4*pprSellRows
		groupDone := sl+1 == groupEnd[len(l.colourChunk)-1]
		if cost >= chunkCost || groupDone {
			l.chunk = append(l.chunk, int32(sl+1))
			cost = 0
		}
		if groupDone {
			l.colourChunk = append(l.colourChunk, int32(len(l.chunk)-1))
		}
	}
	l.leaves.chunk = make([]int32, len(l.chunk))
	for c := range l.chunk[1:] {
		end := l.chunk[c+1] * pprSellRows
		k := l.leaves.chunk[c]
		for int(k) < len(l.leaves.parent) && l.leaves.parent[k] < end {
			k++
		}
		l.leaves.chunk[c+1] = k
	}
	// The tile kernel prefetches the neighbours of the group pprPrefetchGroups ahead:
	// past the last group it reads these columns (node 0), which len(col) leaves out.
	l.col = append(l.col, make([]int32, pprPrefetchGroups*pprSellRows)...)[:len(l.col)]
	l.ilvNode, l.ilvRow = make([]int32, np), make([]int32, np)
	for c := range len(l.chunk) - 1 {
		lo, hi := int(l.chunk[c])*pprSellRows, int(l.chunk[c+1])*pprSellRows
		rows := l.ilvRow[lo:hi]
		for i := range rows {
			rows[i] = int32(lo + i)
		}
		key := func(r int32) int64 {
			if v := l.perm[r]; v >= 0 {
				return int64(v)
			}
			return math.MaxInt64
		}
		slices.SortStableFunc(rows, func(a, b int32) int { return cmp.Compare(key(a), key(b)) })
		for i, r := range rows {
			l.ilvNode[lo+i], rows[i] = l.perm[r], r-int32(lo)
		}
	}
	if colour { // SOR: SolveBatch's float32 passes (solvePair)
		l.str32, l.inv32 = pprFloat32Strengths(l.str)
	}
	return l
}

// sliceEntries returns the columns and weights of slice sl's groups (pprSellRows
// entries a group, row r's k-th entry at k·pprSellRows + r), of equal length.
func (l *pprLayout) sliceEntries(sl int) ([]int32, []float32) {
	g0, g1 := int(l.slicePtr[sl])*pprSellRows, int(l.slicePtr[sl+1])*pprSellRows
	cols, vals := l.col[g0:g1], l.val[g0:g1]
	return cols, vals[:len(cols)]
}

// pprFloat32Strengths returns the strengths and their inverses rounded to float32,
// or nil when a strength lies outside [2⁻¹⁰⁰, 2¹⁰⁰]: there the iterate (the reset
// over the strength) and its products could overflow or vanish in float32, and the
// batch runs in float64 throughout.
func pprFloat32Strengths(str []float64) (str32, inv32 []float32) {
	for _, x := range str {
		if !(x >= 0x1p-100 && x <= 0x1p100) {
			return nil, nil
		}
	}
	str32, inv32 = make([]float32, len(str)), make([]float32, len(str))
	for i, x := range str {
		str32[i], inv32[i] = float32(x), float32(1/x)
	}
	return str32, inv32
}

// Node kinds in pprFindLeaves's answer, besides a leaf's neighbour (≥ 0).
const (
	pprKept   = -1 // a row of the iteration
	pprBridge = -2 // eliminated between its two neighbours (pprLeaves)
)

// pprFindLeaves returns, for every node, the neighbour a leaf is eliminated into, or
// pprBridge, or pprKept; and the graph the iteration runs on: without the leaves' and
// the bridges' entries, each bridge's two neighbours joined by its fill entries (see
// pprLeaves). It returns nil, nil when nothing is eliminated. A leaf has one entry, to
// another node, which has more than one; the CSR holds no weightless entries, so the
// leaf's strength is positive. A bridge has two entries, to two distinct nodes that are
// neither leaves nor bridges (it has no leaves itself), and shares no neighbour with an
// earlier bridge — chosen greedily in node order, so that no row is next to two
// eliminated nodes of a chain. strength is the graph's, d the damping.
func pprFindLeaves(csr *CSR, strength []float64, d float64) ([]int32, *CSR) {
	n := csr.N
	rowLen := func(v int32) int32 { return csr.RowPtr[v+1] - csr.RowPtr[v] }
	leafOf := make([]int32, n)
	eliminated := 0
	for v := range int32(n) {
		leafOf[v] = pprKept
		if rowLen(v) != 1 {
			continue
		}
		p := csr.RowPtr[v]
		if u := csr.Col[p]; u != v && rowLen(u) > 1 && csr.Val[p] > 0 {
			leafOf[v] = u
			eliminated++
		}
	}
	blocked := make([]bool, n) // next to a bridge
	for v := range int32(n) {
		if leafOf[v] != pprKept || rowLen(v) != 2 || blocked[v] {
			continue
		}
		p := csr.RowPtr[v]
		a, b := csr.Col[p], csr.Col[p+1]
		if a == v || b == v || a == b || leafOf[a] != pprKept || leafOf[b] != pprKept {
			continue
		}
		if !(pprFill(csr, strength, d, v) >= 0x1p-100) {
			continue // a fill near float32's subnormals would lose its low part's bits
		}
		leafOf[v] = pprBridge
		blocked[a], blocked[b] = true, true
		eliminated++
	}
	if eliminated == 0 {
		return nil, nil
	}
	kept := &CSR{N: n, RowPtr: make([]int32, n+1)}
	kept.Col = make([]int32, 0, csr.NNZ())
	kept.Val = make([]float32, 0, csr.NNZ())
	type fill struct {
		col int32
		w   float64
	}
	var fills []fill
	for v := range int32(n) {
		if leafOf[v] == pprKept {
			fills = fills[:0]
			for p := csr.RowPtr[v]; p < csr.RowPtr[v+1]; p++ {
				switch u := csr.Col[p]; leafOf[u] {
				case pprKept:
					kept.Col = append(kept.Col, u)
					kept.Val = append(kept.Val, csr.Val[p])
				case pprBridge: // a fill to the bridge's other neighbour, summed per neighbour
					q := csr.RowPtr[u]
					other := csr.Col[q]
					if other == v {
						other = csr.Col[q+1]
					}
					f := pprFill(csr, strength, d, u)
					if i := slices.IndexFunc(fills, func(x fill) bool { return x.col == other }); i >= 0 {
						fills[i].w += f
					} else {
						fills = append(fills, fill{other, f})
					}
				}
			}
			// Each fill as two float32 whose sum is it to about 2⁻⁴⁸ (the passes add
			// both products in float64): one rounded entry would change the system
			// by 2⁻²⁴, far above any tolerance.
			for _, x := range fills {
				hi := float32(x.w)
				kept.Col = append(kept.Col, x.col)
				kept.Val = append(kept.Val, hi)
				if lo := float32(x.w - float64(hi)); lo != 0 {
					kept.Col = append(kept.Col, x.col)
					kept.Val = append(kept.Val, lo)
				}
			}
		}
		kept.RowPtr[v+1] = int32(len(kept.Col))
	}
	return leafOf, kept
}

// pprDropLoops returns csr without its self-loop entries and each node's self-loop
// weight A_vv (the sum of its self entries), or csr and nil when it has none.
//
// With the iterate y = z/strength, node v's equation z_v = s_v + d·A_vv·y_v +
// d·Σ_{u≠v} A_vu·y_u solved for y_v reads y_v = (s_v + d·Σ_{u≠v} A_vu·y_u) /
// (str_v − d·A_vv): the SOR passes run it with str_v − d·A_vv as the row's pass
// strength (pprLayout.solveLoops) and the loop out of the row, as Gauss–Seidel takes
// the diagonal of the splitting. A pass then measures J_v(z) − z_v exactly, and v's
// residual after its own update is (1−ω)·r_v whatever its loop. Left in the row, a
// loop is a neighbour the pass reads before updating it, and a node whose strength is
// mostly a loop converges like |1 − ω + ω·d·A_vv/str_v| per pass, about d: on the
// bench/ppr graph (1 % of the edges self-loops) the passes fell from 17.5 to 13 a
// query, and in TestPPRIterationCounts from 18 to 12 (d = 0.5) and from 47 to 24
// (d = 0.85). The SOR bound of PPRConfig.Tol still holds: a later update of y_u moves its
// neighbours' residuals by d·(str_u − A_vv)·|δy_u| ≤ d·ω·r_u.
func pprDropLoops(csr *CSR) (*CSR, []float64) {
	var loops []float64
	for v := range int32(csr.N) {
		for p := csr.RowPtr[v]; p < csr.RowPtr[v+1]; p++ {
			if csr.Col[p] == v {
				if loops == nil {
					loops = make([]float64, csr.N)
				}
				loops[v] += float64(csr.Val[p])
			}
		}
	}
	if loops == nil {
		return csr, nil
	}
	out := &CSR{N: csr.N, RowPtr: make([]int32, csr.N+1), Col: make([]int32, 0, csr.NNZ()), Val: make([]float32, 0, csr.NNZ())}
	for v := range int32(csr.N) {
		for p := csr.RowPtr[v]; p < csr.RowPtr[v+1]; p++ {
			if csr.Col[p] != v {
				out.Col, out.Val = append(out.Col, csr.Col[p]), append(out.Val, csr.Val[p])
			}
		}
		out.RowPtr[v+1] = int32(len(out.Col))
	}
	return out, loops
}

// solveLoops takes each kept row's self-loop weight A_vv (pprDropLoops) out of its pass
// strength, d·A_vv, after the eliminated nodes' shares; full and mass keep the whole
// graph's strength, since a loop moves no mass.
func (l *pprLayout) solveLoops(loops []float64, d float64) {
	if len(l.leaves.node) == 0 {
		l.full, l.mass = slices.Clone(l.str), slices.Clone(l.str)
	}
	for i, v := range l.perm {
		if v >= 0 && loops[v] > 0 {
			l.str[i] -= d * loops[v]
			l.inv[i] = 1 / l.str[i]
		}
	}
}

// pprFill returns the weight d·A_va·A_vb/str_v that eliminating bridge v gives the
// edge between its neighbours a and b.
func pprFill(csr *CSR, strength []float64, d float64, v int32) float64 {
	p := csr.RowPtr[v]
	return d * float64(csr.Val[p]) * float64(csr.Val[p+1]) / strength[v]
}

// eliminate records the leaves and bridges (leafOf from pprFindLeaves): the parents'
// pass strength drops by d²·w per leaf and by d²·A_av²/str_v per bridge, their mass
// grows by d·w and d·A_av (see pprLeaves); full keeps the whole graph's strengths.
func (l *pprLayout) eliminate(leafOf []int32, csr *CSR, strength []float64, d float64) {
	lv := &l.leaves
	first := func(v int32) int32 { // the row a node is recovered in order of
		if u := leafOf[v]; u >= 0 {
			return l.pos[u]
		}
		return l.pos[csr.Col[csr.RowPtr[v]]]
	}
	for v, u := range leafOf {
		if u != pprKept {
			lv.node = append(lv.node, int32(v))
		}
	}
	slices.SortStableFunc(lv.node, func(a, b int32) int { return cmp.Compare(first(a), first(b)) })
	k := len(lv.node)
	lv.parent, lv.w = make([]int32, k), make([]float64, k)
	lv.parent2, lv.w2 = make([]int32, k), make([]float64, k)
	l.full = slices.Clone(l.str)
	l.mass = slices.Clone(l.str)
	type fold struct {
		row, node int32
		c         float64
		count     bool
	}
	var folds []fold
	touched := map[int32]bool{}
	for k, v := range lv.node {
		p0 := csr.RowPtr[v]
		w := float64(csr.Val[p0])
		p := first(v)
		lv.parent[k], lv.w[k], lv.parent2[k] = p, w, -1
		l.pos[v] = int32(-1 - k)
		touched[p] = true
		if leafOf[v] >= 0 {
			l.str[p] -= d * d * w // from the full strength, leaf by leaf in node order
			l.mass[p] += d * w
			folds = append(folds, fold{row: p, node: v, c: 1, count: true})
			continue
		}
		q, w2 := l.pos[csr.Col[p0+1]], float64(csr.Val[p0+1])
		lv.parent2[k], lv.w2[k] = q, w2
		touched[q] = true
		sv := strength[v]
		l.str[p] -= d * d * (w * w / sv)
		l.str[q] -= d * d * (w2 * w2 / sv)
		l.mass[p] += d * w
		l.mass[q] += d * w2
		folds = append(folds, fold{row: p, node: v, c: w / sv, count: true}, fold{row: q, node: v, c: w2 / sv})
	}
	for p := range touched {
		l.inv[p] = 1 / l.str[p]
	}
	slices.SortStableFunc(folds, func(a, b fold) int { return cmp.Compare(a.node, b.node) })
	f := &lv.fold
	lv.foldOf = make([]int32, len(lv.node))
	for i, x := range folds {
		f.row, f.node, f.c, f.count = append(f.row, x.row), append(f.node, x.node), append(f.c, x.c), append(f.count, x.count)
		if x.count {
			lv.foldOf[-1-l.pos[x.node]] = int32(i)
		}
	}
}

// pprColouring colours the nodes of csr greedily in node order, each with the
// smallest colour no earlier neighbour has (self-loops ignored), and returns the
// nodes of each colour in node order. Neighbours never share a colour, so a colour's
// nodes can be updated at once from the others' values: Gauss–Seidel by colour. Sparse
// graphs need few colours (the degeneracy bounds them): 7 on the 2Wiki HippoRAG graph.
func pprColouring(csr *CSR) [][]int32 {
	colour := make([]int32, csr.N)
	var out [][]int32
	var taken []int32 // taken[k] == v+1: colour k is used by a neighbour of v
	for v := range csr.N {
		for p := csr.RowPtr[v]; p < csr.RowPtr[v+1]; p++ {
			if u := csr.Col[p]; int(u) < v {
				taken[colour[u]] = int32(v + 1)
			}
		}
		k := int32(0)
		for int(k) < len(taken) && taken[k] == int32(v+1) {
			k++
		}
		if int(k) == len(taken) {
			taken = append(taken, 0)
			out = append(out, nil)
		}
		colour[v] = k
		out[k] = append(out[k], int32(v))
	}
	return out
}

// pprPass1 runs one Jacobi, Chebyshev or SOR step for one vector over the slices
// [s0,s1) and returns their residual Σ|J(z)−z| and Σz. cur holds y_k; nxt holds
// y_{k−1} on entry (cheb: relaxation ω·(J − y_{k−1}) + y_{k−1}) and y_{k+1} on return;
// SOR passes nxt = cur, so that the same relaxation is (1−ω)·y_k + ω·J, in place. sv
// is the normalised reset, all in internal order. Residual and Σz are accumulated per
// slot of the slice (8 independent chains) and summed at the end.
//
// The neighbour loads skip bounds checks: every column is an internal node < np (built
// by newPPRLayout) and cur has np entries.
func pprPass1(l *pprLayout, sv []float64, d, omega float64, cheb bool, cur, nxt []float64, s0, s1 int) (res, zsum float64) {
	base := unsafe.Pointer(unsafe.SliceData(cur[:l.np]))
	y := func(u int32) float64 { return *(*float64)(unsafe.Add(base, uintptr(u)*8)) }
	var rs, zs [pprSellRows]float64
	for sl := s0; sl < s1; sl++ {
		cols, vals := l.sliceEntries(sl)
		var a0, a1, a2, a3, a4, a5, a6, a7 float64
		for k := 0; k+pprSellRows <= len(cols); k += pprSellRows {
			c := (*[pprSellRows]int32)(cols[k:])
			w := (*[pprSellRows]float32)(vals[k:])
			a0 += float64(w[0]) * y(c[0])
			a1 += float64(w[1]) * y(c[1])
			a2 += float64(w[2]) * y(c[2])
			a3 += float64(w[3]) * y(c[3])
			a4 += float64(w[4]) * y(c[4])
			a5 += float64(w[5]) * y(c[5])
			a6 += float64(w[6]) * y(c[6])
			a7 += float64(w[7]) * y(c[7])
		}
		acc := [pprSellRows]float64{a0, a1, a2, a3, a4, a5, a6, a7}
		i0 := sl * pprSellRows
		str := (*[pprSellRows]float64)(l.str[i0:])
		inv := (*[pprSellRows]float64)(l.inv[i0:])
		yc := (*[pprSellRows]float64)(cur[i0:])
		yn := (*[pprSellRows]float64)(nxt[i0:])
		ss := (*[pprSellRows]float64)(sv[i0:])
		for r := range acc {
			j := ss[r] + d*acc[r]
			z := yc[r] * str[r]
			rs[r] += math.Abs(j - z)
			zs[r] += z
			jy := j * inv[r]
			if cheb {
				yn[r] = omega*(jy-yn[r]) + yn[r]
			} else {
				yn[r] = jy
			}
		}
	}
	for r := range rs {
		res += rs[r]
		zsum += zs[r]
	}
	return res, zsum
}
