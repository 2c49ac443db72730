package interop

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
)

func TestGraphMLExport(t *testing.T) {
	ix := nativeIndex(t)
	var buf bytes.Buffer
	rep, err := WriteGraphML(&buf, ix)
	require.NoError(t, err)
	nodes := len(ix.Entities) + len(ix.Chunks) + len(ix.Hyperedges)
	edges := len(ix.Facts) + len(ix.Mentions) + len(ix.Synonyms) + 2 + 1 // hyperedge: 2 members, 1 source chunk
	assert.Equal(t, len(ix.Facts), rep.Counts["edges.fact"])
	assert.Equal(t, len(ix.Entities), rep.Dropped["embedding rows (entity)"])

	// Well-formed XML all the way through.
	d := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	for {
		_, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	g, err := DecodeGraphML(bytes.NewReader(buf.Bytes()), "x.graphml")
	require.NoError(t, err)
	require.NoError(t, g.check("x.graphml"))
	assert.True(t, g.Directed)
	assert.Len(t, g.Nodes, nodes)
	assert.Len(t, g.Edges, edges)
	var runs []map[string]any
	require.NoError(t, json.Unmarshal([]byte(g.GraphData["runs"]), &runs))
	assert.Equal(t, "aug-1", runs[0]["id"])
	kinds := map[string]int{}
	for _, n := range g.Nodes {
		kinds[n.Data["kind"]]++
	}
	assert.Equal(t, map[string]int{"entity": len(ix.Entities), "chunk": 3, "hyperedge": 1}, kinds)
	var aug *Element
	for i, e := range g.Edges {
		if e.Data["type"] == EdgeFact && e.Data["run"] == "aug-1" {
			aug = &g.Edges[i]
		}
	}
	require.NotNil(t, aug)
	assert.Equal(t, "built hall in", aug.Data["predicate"])
	assert.Equal(t, OriginAugmented, aug.Data["origin"])
	assert.Equal(t, "FACT", aug.Data["label"])
	assert.Equal(t, ix.Chunks[1].ID+SEP+ix.Chunks[2].ID, aug.Data["source_chunks"])
	assert.Equal(t, "2", aug.Data["weight"])
	assert.Equal(t, TypeDouble, g.KeyType("edge", "weight"))
}

// TestGraphMLNetworkX opens the export with NetworkX (skipped without python3 and
// networkx: apt-get install python3-networkx).
func TestGraphMLNetworkX(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	if exec.Command(py, "-c", "import networkx").Run() != nil {
		t.Skip("python3 has no networkx (apt-get install python3-networkx)")
	}
	ix := nativeIndex(t)
	ix.Entities[0].Surface = append(ix.Entities[0].Surface, "A. Vane <\"the founder\"> & co\x01")
	_, _, err = graphio.NewBuilder(ix, "").AddFact("Alder Vane", "lived in", "Corran Bay", 0) // a parallel edge
	require.NoError(t, err)
	ix.Embeddings = nil
	p := filepath.Join(t.TempDir(), "x.graphml")
	_, err = ExportGraphML(ix, p)
	require.NoError(t, err)
	script := `
import json, sys, networkx as nx
g = nx.read_graphml(sys.argv[1])
fact = [d for _, _, d in g.edges(data=True) if d.get("type") == "fact" and d.get("run") == "aug-1"][0]
ent = g.nodes[sys.argv[2]]
print(json.dumps({"directed": g.is_directed(), "multi": g.is_multigraph(), "nodes": g.number_of_nodes(),
  "edges": g.number_of_edges(), "weight": fact["weight"], "weight_type": type(fact["weight"]).__name__,
  "source_chunks": fact["source_chunks"], "surface": ent["surface"], "kind": ent["kind"], "labels": ent["labels"]}))
`
	out, err := exec.Command(py, "-c", script, p, ix.Entities[0].ID).CombinedOutput()
	require.NoError(t, err, string(out))
	var got struct {
		Directed, Multi bool
		Nodes, Edges    int
		Weight          float64
		WeightType      string `json:"weight_type"`
		SourceChunks    string `json:"source_chunks"`
		Surface         string
		Kind, Labels    string
	}
	require.NoError(t, json.Unmarshal(out, &got), string(out))
	assert.True(t, got.Directed)
	assert.True(t, got.Multi, "two facts between one pair are parallel edges")
	assert.Equal(t, len(ix.Entities)+len(ix.Chunks)+len(ix.Hyperedges), got.Nodes)
	assert.Equal(t, len(ix.Facts)+len(ix.Mentions)+len(ix.Synonyms)+3, got.Edges)
	assert.Equal(t, 2.0, got.Weight)
	assert.Equal(t, "float", got.WeightType)
	assert.Equal(t, ix.Chunks[1].ID+SEP+ix.Chunks[2].ID, got.SourceChunks)
	assert.Equal(t, "Alder Vane"+SEP+"A. Vane <\"the founder\"> & co\uFFFD", got.Surface, "XML-special characters survive; a control character becomes U+FFFD")
	assert.Equal(t, "entity", got.Kind)
	assert.Equal(t, ":Entity", got.Labels)
}

func TestDecodeGraphMLErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "not a GraphML document"},
		{"<graphml></graphml>", "has no <graph>"},
		{`<graphml><graph><node/></graph></graphml>`, "x.graphml:1: node without an id"},
		{"<graphml>\n<graph>\n<node id=\"a\"><data key=\"zz\">1</data></node></graph></graphml>", `x.graphml:3: data refers to undeclared key "zz"`},
		{"<graphml><graph><node id=\"a\">", "x.graphml:1: malformed GraphML"},
		{`<graphml><graph/><graph/></graphml>`, "more than one graph"},
	} {
		_, err := DecodeGraphML(strings.NewReader(tc.in), "x.graphml")
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func TestExportGraphMLAtomic(t *testing.T) {
	ix := nativeIndex(t)
	ix.Chunks[0].ID = ix.Entities[0].ID // an id naming two nodes
	p := filepath.Join(t.TempDir(), "x.graphml")
	_, err := ExportGraphML(ix, p)
	require.ErrorContains(t, err, "names both")
	_, statErr := os.Stat(p)
	assert.True(t, os.IsNotExist(statErr), "nothing is written on failure")
}
