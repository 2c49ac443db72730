package interop

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/graphloom/graphloom/graphio"
)

// Origins of a record in exported attributes.
const (
	OriginExtracted = "extracted"
	OriginAugmented = "augmented"
)

func origin(run string) string {
	if run == "" {
		return OriginExtracted
	}
	return OriginAugmented
}

// GraphML node and edge labels, as Neo4j's apoc.import.graphml reads them
// (readLabels: node "labels" ":Label", edge "label" type).
var (
	nodeLabel = map[graphio.NodeKind]string{graphio.KindEntity: ":Entity", graphio.KindChunk: ":Chunk", graphio.KindHyperedge: ":Hyperedge"}
)

// Edge types of an exported graph.
const (
	EdgeFact     = "fact"    // entity → entity, one per fact
	EdgeMention  = "mention" // entity → chunk it occurs in
	EdgeSynonym  = "synonym" // entity → entity, weight = cosine
	EdgeMember   = "member"  // hyperedge → member entity
	EdgeHyperSrc = "source"  // hyperedge → chunk it was extracted from
)

// ToGraphML builds the GraphML view of an index: a directed multigraph with one node
// per entity, chunk and hyperedge (attribute "kind") and one edge per fact, mention,
// synonym edge and hyperedge membership (attribute "type"; Neo4j relationship type in
// "label"). Weights are in "weight" (fact support, synonym cosine, 1 otherwise),
// provenance in "source_chunks" (chunk ids joined by "<SEP>"), the run that added a
// record in "run" and "origin" (extracted or augmented). The index's runs are a JSON
// graph attribute. Embedding matrices and component state cannot be held and are
// reported as dropped.
func ToGraphML(ix *graphio.Index) (*Graph, *Report, error) {
	rep := newReport("graphml")
	g := &Graph{Directed: true, GraphData: map[string]string{}}
	k := func(for_, name, typ string) { g.Keys = append(g.Keys, Key{For: for_, Name: name, Type: typ}) }
	for _, n := range []string{"created", "corpus", "extractor", "embedder", "graphloom", "runs"} {
		k("graph", n, TypeString)
	}
	for _, n := range []string{"labels", "kind", "name", "surface", "entity_type", "title", "text", "doc_id", "doc_title", "doc_source", "run", "origin", "source_chunks"} {
		k("node", n, TypeString)
	}
	k("node", "order", TypeLong)
	k("node", "tokens", TypeLong)
	k("node", "score", TypeDouble)
	for _, n := range []string{"label", "type", "predicate", "fact_id", "source_chunks", "run", "origin"} {
		k("edge", n, TypeString)
	}
	k("edge", "weight", TypeDouble)

	runs, err := json.Marshal(ix.Runs)
	if err != nil {
		return nil, nil, err
	}
	g.GraphData = map[string]string{"created": ix.Meta.Created, "corpus": ix.Meta.Corpus, "extractor": ix.Meta.Extractor,
		"embedder": ix.Meta.Embedder, "graphloom": ix.Meta.Graphloom, "runs": string(runs)}
	seen := map[string]graphio.NodeKind{}
	addNode := func(kind graphio.NodeKind, id string, d map[string]string) error {
		if k, dup := seen[id]; dup {
			return fmt.Errorf("interop: graphml: id %q names both a %s and a %s", id, k, kind)
		}
		seen[id] = kind
		d["kind"], d["labels"] = kind.String(), nodeLabel[kind]
		g.Nodes = append(g.Nodes, Element{ID: id, Data: d})
		return nil
	}
	chunkIDs := func(cs []int32) string {
		ids := make([]string, len(cs))
		for i, c := range cs {
			ids[i] = ix.Chunks[c].ID
		}
		return strings.Join(ids, SEP)
	}
	for _, e := range ix.Entities {
		if err := addNode(graphio.KindEntity, e.ID, map[string]string{"name": e.Name, "surface": strings.Join(e.Surface, SEP),
			"entity_type": e.Type, "run": e.Run, "origin": origin(e.Run)}); err != nil {
			return nil, nil, err
		}
	}
	for _, c := range ix.Chunks {
		d := map[string]string{"title": c.Title, "text": c.Text, "order": strconv.Itoa(int(c.Order)), "tokens": strconv.Itoa(int(c.Tokens))}
		if c.Doc >= 0 && int(c.Doc) < len(ix.Documents) {
			doc := ix.Documents[c.Doc]
			d["doc_id"], d["doc_title"], d["doc_source"] = doc.ID, doc.Title, doc.Source
		}
		if err := addNode(graphio.KindChunk, c.ID, d); err != nil {
			return nil, nil, err
		}
	}
	for _, h := range ix.Hyperedges {
		if err := addNode(graphio.KindHyperedge, h.ID, map[string]string{"text": h.Text, "score": fmtFloat(h.Score),
			"source_chunks": chunkIDs(h.Chunks), "run": h.Run, "origin": origin(h.Run)}); err != nil {
			return nil, nil, err
		}
	}
	addEdge := func(typ, src, dst string, d map[string]string) {
		d["type"], d["label"] = typ, strings.ToUpper(typ)
		g.Edges = append(g.Edges, Element{ID: fmt.Sprintf("e%d", len(g.Edges)), Source: src, Target: dst, Data: d})
		rep.Counts["edges."+typ]++
	}
	for _, f := range ix.Facts {
		addEdge(EdgeFact, ix.Entities[f.Subject].ID, ix.Entities[f.Object].ID, map[string]string{"predicate": f.Predicate,
			"fact_id": f.ID, "weight": fmtFloat(f.Weight), "source_chunks": chunkIDs(f.Chunks), "run": f.Run, "origin": origin(f.Run)})
	}
	for _, m := range ix.Mentions {
		addEdge(EdgeMention, ix.Entities[m.Entity].ID, ix.Chunks[m.Chunk].ID, map[string]string{"weight": "1",
			"source_chunks": ix.Chunks[m.Chunk].ID, "run": m.Run, "origin": origin(m.Run)})
	}
	for _, s := range ix.Synonyms {
		addEdge(EdgeSynonym, ix.Entities[s.A].ID, ix.Entities[s.B].ID, map[string]string{"weight": fmtFloat(s.Cosine), "run": s.Run, "origin": origin(s.Run)})
	}
	for _, h := range ix.Hyperedges {
		for _, e := range h.Entities {
			addEdge(EdgeMember, h.ID, ix.Entities[e].ID, map[string]string{"weight": "1", "run": h.Run, "origin": origin(h.Run)})
		}
		for _, c := range h.Chunks {
			addEdge(EdgeHyperSrc, h.ID, ix.Chunks[c].ID, map[string]string{"weight": "1", "source_chunks": ix.Chunks[c].ID, "run": h.Run, "origin": origin(h.Run)})
		}
	}
	rep.Counts["nodes.entity"], rep.Counts["nodes.chunk"], rep.Counts["nodes.hyperedge"] = len(ix.Entities), len(ix.Chunks), len(ix.Hyperedges)
	for kind, m := range ix.Embeddings {
		rep.drop("embedding rows ("+kind.String()+")", m.Rows())
	}
	for name := range ix.Blobs {
		if strings.HasPrefix(name, sidecarPrefix) {
			rep.drop("foreign-format records kept for re-export ("+strings.TrimPrefix(name, sidecarPrefix)+")", 1)
		}
	}
	rep.drop("document copy counts", countDupDocs(ix))
	return g, rep, nil
}

func countDupDocs(ix *graphio.Index) int {
	n := 0
	for _, d := range ix.Documents {
		if d.Count > 1 {
			n++
		}
	}
	return n
}

// WriteGraphML writes the GraphML view of ix (see ToGraphML) to w.
func WriteGraphML(w io.Writer, ix *graphio.Index) (*Report, error) {
	g, rep, err := ToGraphML(ix)
	if err != nil {
		return nil, err
	}
	if err := g.Encode(w); err != nil {
		return nil, fmt.Errorf("interop: graphml: %w", err)
	}
	return rep, nil
}

// ExportGraphML writes the GraphML view of ix to path atomically.
func ExportGraphML(ix *graphio.Index, path string) (*Report, error) {
	var rep *Report
	err := graphio.AtomicWrite(path, func(w io.Writer) error {
		var err error
		rep, err = WriteGraphML(w, ix)
		return err
	})
	return rep, err
}

func fmtFloat(f float32) string { return strconv.FormatFloat(float64(f), 'g', -1, 32) }
