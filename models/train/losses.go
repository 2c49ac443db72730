package train

import (
	"math"

	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/graph"
)

// Losses of the training tasks. Each returns a scalar; masks and weights select which
// entries count, so padded slots (graphs, nodes, edges, tokens) never do.
//
//   - graph-, node- and edge-level binary classification: MaskedBCE on logits of any
//     shape ([G], [N], [E]) with a weight per entry (GraphMask, NodeMask, edge weights);
//   - node- and edge-level multi-class classification: MaskedCE;
//   - token-level language modelling: TokenCE, labels −100 ignored (PyTorch's
//     ignore_index);
//   - ranking: PairwiseMargin (hinge) and PairwiseLogistic (RankNet);
//   - contrastive: InfoNCE.

// IgnoreIndex is the label that TokenCE skips, as PyTorch's CrossEntropyLoss
// ignore_index.
const IgnoreIndex = -100

// MaskedCE is the mean softmax cross-entropy of logits [N, C] against integer class
// labels [N], over the entries with weight > 0 (weights [N]), weighted by weights.
func MaskedCE(logits, labels, weights *graph.Node) *graph.Node {
	weights = graph.ConvertDType(weights, logits.DType())
	per := crossEntropy(logits, labels)
	total := graph.ReduceAllSum(graph.Mul(per, weights))
	return graph.Div(total, graph.MaxScalar(graph.ReduceAllSum(weights), 1e-12))
}

// crossEntropy returns −log softmax(logits)[label] per row: logits [..., C], labels
// [...] integer and in range. It is logsumexp(row) − row[label], the label's logit
// gathered, so no one-hot [..., C] tensor is built (at a vocabulary of 151,936 that
// would be as large as the logits).
func crossEntropy(logits, labels *graph.Node) *graph.Node {
	idx := dtypes.Int32 // the flat index row·C + label: int64 past 2³¹ (14,200 rows of Qwen's 151,936)
	if int64(logits.Shape().Size()) > math.MaxInt32 {
		idx = dtypes.Int64
	}
	return crossEntropyIndexed(logits, labels, idx)
}

// crossEntropyIndexed is crossEntropy with flat indices of dtype idx.
func crossEntropyIndexed(logits, labels *graph.Node, idx dtypes.DType) *graph.Node {
	dims := logits.Shape().Dimensions
	c := dims[len(dims)-1]
	lead := dims[:len(dims)-1]
	rows := logits.Shape().Size() / c
	flat := graph.Reshape(logits, rows, c)
	mx := graph.StopGradient(graph.ReduceAndKeep(flat, graph.ReduceMax, -1)) // [R, 1]
	lse := graph.Add(graph.Squeeze(mx, -1), graph.Log(graph.ReduceSum(graph.Exp(graph.Sub(flat, mx)), -1)))
	g := logits.Graph()
	at := graph.Add(graph.MulScalar(graph.Iota(g, shapes.Make(idx, rows), 0), float64(c)),
		graph.Reshape(graph.ConvertDType(labels, idx), rows))
	picked := graph.Gather(graph.Reshape(flat, rows*c), graph.InsertAxes(at, -1)) // [R]
	return graph.Reshape(graph.Sub(lse, picked), lead...)
}

// TokenCE is the mean next-token cross-entropy of logits [..., V] against labels
// [...] (integers), over the tokens whose label is not IgnoreIndex (−100): prompt
// and padding positions carry −100, exactly as the labels of a Hugging Face causal LM.
// The logits at position t are scored against labels[t] (shift the labels before).
// Language models should pass only the labelled positions' logits ([P, V], the
// hidden states gathered before the LM head), never [B, T, V].
func TokenCE(logits, labels *graph.Node) *graph.Node {
	labels = graph.ConvertDType(labels, dtypes.Int32)
	keep := graph.NotEqual(labels, graph.Scalar(labels.Graph(), dtypes.Int32, IgnoreIndex))
	safe := graph.Where(keep, labels, graph.ZerosLike(labels))
	weights := graph.ConvertDType(keep, logits.DType())
	per := crossEntropy(logits, safe)
	total := graph.ReduceAllSum(graph.Mul(per, weights))
	return graph.Div(total, graph.MaxScalar(graph.ReduceAllSum(weights), 1))
}

// PairwiseMargin is the mean hinge max(0, margin − pos + neg) over pairs of scores
// pos[i], neg[i] with weight > 0 (weights [P]), weighted by weights: each positive
// should outscore its negative by margin.
func PairwiseMargin(pos, neg, weights *graph.Node, margin float64) *graph.Node {
	weights = graph.ConvertDType(weights, pos.DType())
	hinge := graph.MaxScalar(graph.AddScalar(graph.Sub(neg, pos), margin), 0)
	total := graph.ReduceAllSum(graph.Mul(hinge, weights))
	return graph.Div(total, graph.MaxScalar(graph.ReduceAllSum(weights), 1e-12))
}

// PairwiseLogistic is RankNet's loss (Burges et al., 2005): the weighted mean of
// log(1 + exp(−σ(pos − neg))) over pairs of scores pos[i], neg[i] (weights [P], 0 on
// padding) — the cross-entropy of "pos ranks above neg" under a logistic model of
// the score difference with slope sigma.
func PairwiseLogistic(pos, neg, weights *graph.Node, sigma float64) *graph.Node {
	weights = graph.ConvertDType(weights, pos.DType())
	per := graph.Softplus(graph.MulScalar(graph.Sub(neg, pos), sigma))
	total := graph.ReduceAllSum(graph.Mul(per, weights))
	return graph.Div(total, graph.MaxScalar(graph.ReduceAllSum(weights), 1e-12))
}

// InfoNCE is the contrastive loss of queries [B, D] against keys [B, D]: row i's
// positive is key i, every other key of the batch a negative; logits are the dot
// products divided by temperature (pass L2-normalised embeddings for cosine
// similarity). The loss is the weighted mean of the rows' cross-entropies (weights
// [B], ≥ 0); a row of weight 0 is neither an anchor nor a negative, and any positive
// weight keeps its key a negative of every row.
func InfoNCE(queries, keys, weights *graph.Node, temperature float64) *graph.Node {
	g := queries.Graph()
	b := queries.Shape().Dimensions[0]
	weights = graph.ConvertDType(weights, queries.DType())
	logits := graph.DivScalar(graph.Einsum("id,jd->ij", queries, keys), temperature)
	// Masked keys get −∞ (a large negative) so they are no negatives; the mask is
	// weight > 0, not the weight (w = 0.5 would add −5·10⁸ to a positive logit).
	present := graph.ConvertDType(graph.GreaterThan(weights, graph.ScalarZero(g, weights.DType())), weights.DType())
	penalty := graph.MulScalar(graph.OneMinus(graph.ExpandAxes(present, 0)), -1e9)
	logits = graph.Add(logits, penalty)
	labels := graph.Iota(g, shapes.Make(dtypes.Int32, b), 0)
	return MaskedCE(logits, labels, weights)
}
