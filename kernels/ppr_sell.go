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
// With elimination (the SOR solver) leaves are not rows: see pprLeaves.
type pprLayout struct {
	n, np int     // nodes; internal rows (whole slices, padding included)
	perm  []int32 // internal → original node, len np; −1 for padding rows
	// pos maps an original node to its internal row, or an eliminated leaf k to −1−k.
	pos []int32
	// str and inv are the strength a pass weighs a row's iterate with and its inverse:
	// the node's strength, less d²·(its eliminated leaves' weight) with elimination; 1
	// and 1 for an isolated or padding row. full is the node's strength in the whole
	// graph (the same slice as str without leaves), which turns the iterate into scores,
	// and mass is full + d·W, which turns it into the row's and its leaves' Σz, less
	// their Σs (the same slice as full without leaves).
	str, inv, full, mass []float64
	slicePtr             []int32   // slice s holds groups [slicePtr[s], slicePtr[s+1])
	col                  []int32   // internal column of each entry, pprSellRows per group
	val                  []float32 // weight of each entry, pprSellRows per group
	chunk                []int32   // chunk c is slices [chunk[c], chunk[c+1]); chunks balance work
	// colourChunk[k] .. colourChunk[k+1] are the chunks of colour k; one colour holding
	// every chunk without colouring.
	colourChunk []int32
	leaves      pprLeaves
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
// On the 120K-passage HippoRAG graph 270K of 843K nodes are leaves (entities of one
// passage and no fact) and 540K of 4.43M entries go with them.
type pprLeaves struct {
	node   []int32   // original node of leaf k, ordered by parent row, then node
	parent []int32   // internal row of its neighbour
	w      []float64 // the weight of its one edge
	// chunk[c] .. chunk[c+1] are the leaves whose parents are rows of chunk c.
	chunk []int32
}

// newPPRLayout relabels and lays out csr, grouped by colour when colour is set, and
// cuts the slices into chunks of at least chunkCost work (entries + 4 per row) that
// never span two colours. With elim > 0 (the damping d) the leaves are eliminated
// (pprLeaves).
func newPPRLayout(csr *CSR, sigma, chunkCost int, colour bool, elim float64) *pprLayout {
	n := csr.N
	strength := csr.Strength()
	var leafOf []int32 // leaf → parent (original), or −1; nil without elimination
	var kept *CSR
	if elim > 0 {
		leafOf, kept = pprFindLeaves(csr)
	}
	if kept == nil {
		leafOf, kept = nil, csr
	}
	rowLen := func(v int32) int32 { return kept.RowPtr[v+1] - kept.RowPtr[v] }
	isLeaf := func(v int32) bool { return leafOf != nil && leafOf[v] >= 0 }
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
		l.eliminate(leafOf, csr, elim)
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
	return l
}

// pprFindLeaves returns, for every node, the neighbour it is eliminated into (or −1),
// and the graph without the leaves' entries; nil, nil when there is no leaf. A leaf has
// one entry, to another node, which has more than one; the CSR holds no weightless
// entries, so the leaf's strength is positive.
func pprFindLeaves(csr *CSR) ([]int32, *CSR) {
	n := csr.N
	rowLen := func(v int32) int32 { return csr.RowPtr[v+1] - csr.RowPtr[v] }
	leafOf := make([]int32, n)
	leaves := 0
	for v := range int32(n) {
		leafOf[v] = -1
		if rowLen(v) != 1 {
			continue
		}
		p := csr.RowPtr[v]
		if u := csr.Col[p]; u != v && rowLen(u) > 1 && csr.Val[p] > 0 {
			leafOf[v] = u
			leaves++
		}
	}
	if leaves == 0 {
		return nil, nil
	}
	kept := &CSR{N: n, RowPtr: make([]int32, n+1)}
	kept.Col = make([]int32, 0, csr.NNZ()-2*leaves)
	kept.Val = make([]float32, 0, csr.NNZ()-2*leaves)
	for v := range int32(n) {
		if leafOf[v] < 0 {
			for p := csr.RowPtr[v]; p < csr.RowPtr[v+1]; p++ {
				if leafOf[csr.Col[p]] < 0 {
					kept.Col = append(kept.Col, csr.Col[p])
					kept.Val = append(kept.Val, csr.Val[p])
				}
			}
		}
		kept.RowPtr[v+1] = int32(len(kept.Col))
	}
	return leafOf, kept
}

// eliminate records the leaves (leafOf from pprFindLeaves) and lowers their parents'
// pass strength by d²·W (see pprLeaves); full keeps the whole graph's strengths.
func (l *pprLayout) eliminate(leafOf []int32, csr *CSR, d float64) {
	lv := &l.leaves
	for v, u := range leafOf {
		if u >= 0 {
			lv.node = append(lv.node, int32(v))
		}
	}
	slices.SortStableFunc(lv.node, func(a, b int32) int { return cmp.Compare(l.pos[leafOf[a]], l.pos[leafOf[b]]) })
	lv.parent = make([]int32, len(lv.node))
	lv.w = make([]float64, len(lv.node))
	l.full = slices.Clone(l.str)
	l.mass = slices.Clone(l.str)
	for k, v := range lv.node {
		p := l.pos[leafOf[v]]
		w := float64(csr.Val[csr.RowPtr[v]])
		lv.parent[k], lv.w[k] = p, w
		l.pos[v] = int32(-1 - k)
		l.str[p] -= d * d * w // from the full strength, leaf by leaf in node order
		l.mass[p] += d * w
	}
	for k := range lv.node {
		if k == 0 || lv.parent[k] != lv.parent[k-1] {
			p := lv.parent[k]
			l.inv[p] = 1 / l.str[p]
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
		g0, g1 := int(l.slicePtr[sl])*pprSellRows, int(l.slicePtr[sl+1])*pprSellRows
		cols, vals := l.col[g0:g1], l.val[g0:g1]
		vals = vals[:len(cols)]
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
