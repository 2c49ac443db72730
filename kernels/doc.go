// Package kernels holds graphloom's GNN building blocks as GoMLX graph functions,
// each paired with a plain-Go float64 reference that serves as its specification.
//
// Kernels:
//   - [RGCNConv]: PyG RGCNConv (per-relation mean aggregation, root weight, bias,
//     optional basis decomposition).
//   - [TransformerConv]: PyG TransformerConv (multi-head attention over incoming edges,
//     edge features added to keys and values, root/skip weight, optional beta gate).
//   - [SegmentSum], [SegmentMean], [SegmentMax] and the batch pools [SumPool],
//     [MeanPool], [MaxPool]: padding-aware; empty segments give 0.
//   - [Linear], [LayerNorm], [BatchNorm], [GELU], [ReLU], [Dropout], and
//     [SumSquares] (Σx² by matrix products, for gradient norms).
//
// Batching: many small [Graph]s are packed by a [Bucketer] into one disjoint graph
// padded to one of a few bucket sizes ([Batch]), so that a training loop compiles one
// executable per bucket and never again. Two node layouts exist:
//
//   - tiled (Layout.TileSize > 0): graphs are bin-packed into tiles of TileSize node
//     rows, never straddling a tile. The batch then carries per-tile dense, mean-
//     normalised adjacency blocks, and message passing and pooling become small batched
//     matrix products. This is the fast layout for graphs of up to a few hundred nodes.
//   - sequential (TileSize == 0): graphs are laid out one after another; message
//     passing uses Gather/Scatter over the edge list. Use it for large graphs.
//
// In both layouts padding node rows have NodeMask 0 and no graph slot, padding edges
// have EdgeMask 0 and weight 0, and padding graph slots have GraphMask 0: padding never
// changes a real node's or graph's output.
//
// The kernels take their weights as graph nodes; package models owns the variables.
package kernels
