package kernels

import "math"

// This file holds the float64 references: short, direct transcriptions of the PyG
// definitions, working on one unbatched Graph. They are the specification the GoMLX
// kernels are tested against. Matrices are [rows][cols]; weights are [in][out].

// RGCNRef holds float64 R-GCN weights (see RGCNWeights for shapes).
type RGCNRef struct {
	Root  [][]float64   // [in][out] or nil
	Rel   [][][]float64 // [R][in][out], or nil with Basis/Comp
	Basis [][][]float64 // [B][in][out]
	Comp  [][]float64   // [R][B]
	Bias  []float64     // [out] or nil
}

// relation returns W_r.
func (w RGCNRef) relation(r int) [][]float64 {
	if w.Rel != nil {
		return w.Rel[r]
	}
	in, out := len(w.Basis[0]), len(w.Basis[0][0])
	m := zeros(in, out)
	for b, coef := range w.Comp[r] {
		for i := range in {
			for o := range out {
				m[i][o] += coef * w.Basis[b][i][o]
			}
		}
	}
	return m
}

// RGCNConvRef is PyG RGCNConv (mean aggregation) on one graph: x [n][in] → [n][out].
// With Graph.EdgeWeight set each message is scaled by its edge's weight and the mean
// stays degree-normalised: Σ w_e x_j / deg_r(i) per relation.
func RGCNConvRef(g *Graph, x [][]float64, w RGCNRef, numRelations int) [][]float64 {
	var out int
	if w.Rel != nil {
		out = len(w.Rel[0][0])
	} else {
		out = len(w.Basis[0][0])
	}
	res := zeros(g.NumNodes, out)
	for i := range g.NumNodes {
		if w.Root != nil {
			addVecMat(res[i], x[i], w.Root, 1)
		}
		for o := range w.Bias {
			res[i][o] += w.Bias[o]
		}
	}
	for r := range numRelations {
		wr := w.relation(r)
		deg := make([]float64, g.NumNodes) // in-degree: a count, whatever the weights
		for e := range g.NumEdges() {
			if int(g.edgeType(e)) == r {
				deg[g.Dst[e]]++
			}
		}
		for e := range g.NumEdges() {
			if int(g.edgeType(e)) != r {
				continue
			}
			d := g.Dst[e]
			addVecMat(res[d], x[g.Src[e]], wr, float64(g.edgeWeight(e))/deg[d])
		}
	}
	return res
}

// TransformerRef holds float64 TransformerConv weights (see TransformerWeights).
type TransformerRef struct {
	Query, Key, Value             [][]float64
	QueryBias, KeyBias, ValueBias []float64
	Edge                          [][]float64 // [edgeDim][H·C] or nil
	Skip                          [][]float64 // or nil
	SkipBias                      []float64
	Beta                          [][]float64 // [3·out][1] or nil
}

// TransformerConvRef is PyG TransformerConv on one graph (no dropout).
func TransformerConvRef(g *Graph, x [][]float64, w TransformerRef, heads int, concat bool, edgeDim int) [][]float64 {
	n := g.NumNodes
	hc := len(w.Query[0])
	c := hc / heads
	lin := func(wm [][]float64, bias []float64) [][]float64 {
		res := zeros(n, hc)
		for i := range n {
			addVecMat(res[i], x[i], wm, 1)
			for o := range bias {
				res[i][o] += bias[o]
			}
		}
		return res
	}
	q, k, v := lin(w.Query, w.QueryBias), lin(w.Key, w.KeyBias), lin(w.Value, w.ValueBias)
	edgeFeat := func(e int) []float64 {
		ef := make([]float64, hc)
		if w.Edge != nil {
			attr := make([]float64, edgeDim)
			for f := range edgeDim {
				attr[f] = float64(g.EdgeAttr[e*edgeDim+f])
			}
			addVecMat(ef, attr, w.Edge, 1)
		}
		return ef
	}
	agg := zeros(n, hc)
	for i := range n {
		var in []int
		for e := range g.NumEdges() {
			if int(g.Dst[e]) == i {
				in = append(in, e)
			}
		}
		if len(in) == 0 {
			continue
		}
		for h := range heads {
			logits := make([]float64, len(in))
			for t, e := range in {
				ef := edgeFeat(e)
				j := g.Src[e]
				for ch := range c {
					col := h*c + ch
					logits[t] += q[i][col] * (k[j][col] + ef[col])
				}
				logits[t] /= math.Sqrt(float64(c))
			}
			mx := math.Inf(-1)
			for _, l := range logits {
				mx = math.Max(mx, l)
			}
			sum := 0.0
			for t := range logits {
				logits[t] = math.Exp(logits[t] - mx)
				sum += logits[t]
			}
			for t, e := range in {
				alpha := logits[t] / sum
				ef := edgeFeat(e)
				j := g.Src[e]
				for ch := range c {
					col := h*c + ch
					agg[i][col] += alpha * (v[j][col] + ef[col])
				}
			}
		}
	}
	out := agg
	if !concat {
		out = zeros(n, c)
		for i := range n {
			for h := range heads {
				for ch := range c {
					out[i][ch] += agg[i][h*c+ch] / float64(heads)
				}
			}
		}
	}
	if w.Skip == nil {
		return out
	}
	width := len(out[0])
	res := zeros(n, width)
	for i := range n {
		xr := make([]float64, width)
		addVecMat(xr, x[i], w.Skip, 1)
		for o := range w.SkipBias {
			xr[o] += w.SkipBias[o]
		}
		if w.Beta == nil {
			for o := range width {
				res[i][o] = out[i][o] + xr[o]
			}
			continue
		}
		z := 0.0
		for o := range width {
			z += out[i][o]*w.Beta[o][0] + xr[o]*w.Beta[width+o][0] + (out[i][o]-xr[o])*w.Beta[2*width+o][0]
		}
		beta := 1 / (1 + math.Exp(-z))
		for o := range width {
			res[i][o] = beta*xr[o] + (1-beta)*out[i][o]
		}
	}
	return res
}

// SegmentSumRef sums the rows of x with mask set (nil = all) per segment id in [0, num).
func SegmentSumRef(x [][]float64, seg []int, mask []bool, num int) [][]float64 {
	res := zeros(num, width(x))
	for i, s := range seg {
		if (mask != nil && !mask[i]) || s < 0 || s >= num {
			continue
		}
		for f := range x[i] {
			res[s][f] += x[i][f]
		}
	}
	return res
}

// SegmentMeanRef averages like SegmentSumRef; empty segments give 0.
func SegmentMeanRef(x [][]float64, seg []int, mask []bool, num int) [][]float64 {
	res := SegmentSumRef(x, seg, mask, num)
	cnt := make([]float64, num)
	for i, s := range seg {
		if (mask == nil || mask[i]) && s >= 0 && s < num {
			cnt[s]++
		}
	}
	for s := range res {
		for f := range res[s] {
			if cnt[s] > 0 {
				res[s][f] /= cnt[s]
			}
		}
	}
	return res
}

// SegmentMaxRef takes the per-segment maximum like SegmentSumRef; empty segments give 0.
func SegmentMaxRef(x [][]float64, seg []int, mask []bool, num int) [][]float64 {
	res := zeros(num, width(x))
	seen := make([]bool, num)
	for i, s := range seg {
		if (mask != nil && !mask[i]) || s < 0 || s >= num {
			continue
		}
		for f := range x[i] {
			if !seen[s] || x[i][f] > res[s][f] {
				res[s][f] = x[i][f]
			}
		}
		seen[s] = true
	}
	return res
}

// SegmentSoftmaxRef is the softmax of logits[e][h] over entries sharing seg[e] (mask
// nil = all; masked entries give 0).
func SegmentSoftmaxRef(logits [][]float64, seg []int, mask []bool) [][]float64 {
	res := zeros(len(logits), width(logits))
	groups := map[int][]int{}
	for e, s := range seg {
		if mask == nil || mask[e] {
			groups[s] = append(groups[s], e)
		}
	}
	for _, es := range groups {
		for h := range logits[es[0]] {
			mx := math.Inf(-1)
			for _, e := range es {
				mx = math.Max(mx, logits[e][h])
			}
			sum := 0.0
			for _, e := range es {
				sum += math.Exp(logits[e][h] - mx)
			}
			for _, e := range es {
				res[e][h] = math.Exp(logits[e][h]-mx) / sum
			}
		}
	}
	return res
}

// LayerNormRef normalises each row (biased variance); gamma/beta may be nil.
func LayerNormRef(x [][]float64, gamma, beta []float64, eps float64) [][]float64 {
	res := zeros(len(x), width(x))
	for i, row := range x {
		mean, variance := 0.0, 0.0
		for _, v := range row {
			mean += v
		}
		mean /= float64(len(row))
		for _, v := range row {
			variance += (v - mean) * (v - mean)
		}
		variance /= float64(len(row))
		for f, v := range row {
			y := (v - mean) / math.Sqrt(variance+eps)
			if gamma != nil {
				y *= gamma[f]
			}
			if beta != nil {
				y += beta[f]
			}
			res[i][f] = y
		}
	}
	return res
}

// BatchNormRef is BatchNorm1d in training mode over the rows with mask set (nil =
// all): it returns y and the batch mean and biased variance.
func BatchNormRef(x [][]float64, mask []bool, gamma, beta []float64, eps float64) (y [][]float64, mean, variance []float64) {
	f := width(x)
	mean, variance = make([]float64, f), make([]float64, f)
	n := 0.0
	for i, row := range x {
		if mask != nil && !mask[i] {
			continue
		}
		n++
		for j, v := range row {
			mean[j] += v
		}
	}
	for j := range mean {
		mean[j] /= n
	}
	for i, row := range x {
		if mask != nil && !mask[i] {
			continue
		}
		for j, v := range row {
			variance[j] += (v - mean[j]) * (v - mean[j])
		}
	}
	for j := range variance {
		variance[j] /= n
	}
	y = zeros(len(x), f)
	for i, row := range x {
		for j, v := range row {
			y[i][j] = (v - mean[j]) / math.Sqrt(variance[j]+eps)
			if gamma != nil {
				y[i][j] *= gamma[j]
			}
			if beta != nil {
				y[i][j] += beta[j]
			}
		}
	}
	return y, mean, variance
}

// GELURef is the exact GELU x·Φ(x).
func GELURef(x float64) float64 { return 0.5 * x * (1 + math.Erf(x/math.Sqrt2)) }

// zeros returns a rows×cols zero matrix.
func zeros(rows, cols int) [][]float64 {
	m := make([][]float64, rows)
	flat := make([]float64, rows*cols)
	for i := range m {
		m[i] = flat[i*cols : (i+1)*cols]
	}
	return m
}

// width returns the column count of a matrix (0 if it has no rows).
func width(m [][]float64) int {
	if len(m) == 0 {
		return 0
	}
	return len(m[0])
}

// addVecMat adds scale·(x·W) to dst, with W [len(x)][len(dst)].
func addVecMat(dst, x []float64, w [][]float64, scale float64) {
	for i, xi := range x {
		if xi == 0 {
			continue
		}
		row := w[i]
		for o := range dst {
			dst[o] += scale * xi * row[o]
		}
	}
}
