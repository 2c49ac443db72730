// Package grdata draws the random G-Retriever examples the benchmarks train on.
package grdata

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models/gretriever"
)

// Examples draws n examples: subgraphs of nodes nodes and edges random edges with
// dim-wide normal features on both, G-Retriever's node CSV as the text (padded with
// further rows to at least minText bytes; 0 = one row a node), a question and a short
// answer.
func Examples(rng *rand.Rand, n, dim, nodes, edges, minText int) []gretriever.Example {
	out := make([]gretriever.Example, n)
	for i := range out {
		g := &kernels.Graph{NumNodes: nodes, X: make([]float32, nodes*dim), EdgeAttr: make([]float32, edges*dim)}
		for j := range g.X {
			g.X[j] = float32(rng.NormFloat64())
		}
		for j := range g.EdgeAttr {
			g.EdgeAttr[j] = float32(rng.NormFloat64())
		}
		for range edges {
			g.Src, g.Dst = append(g.Src, int32(rng.IntN(nodes))), append(g.Dst, int32(rng.IntN(nodes)))
		}
		var text strings.Builder
		text.WriteString("node_id,node_attr\n")
		for j := range nodes {
			fmt.Fprintf(&text, "%d,entity %d\n", j, rng.IntN(1000))
		}
		for j := nodes; text.Len() < minText; j++ {
			fmt.Fprintf(&text, "%d,entity %d\n", j, rng.IntN(1000))
		}
		out[i] = gretriever.Example{Question: fmt.Sprintf("which entity is %d?", i),
			Answer: fmt.Sprintf("entity %d", rng.IntN(1000)), Graph: g, Text: text.String()}
	}
	return out
}
