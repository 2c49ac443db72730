// Package interoptest writes small indices in other frameworks' on-disk layouts,
// straight from their documented formats (anchors §F), for tests of the importers.
package interoptest

import (
	"bytes"
	"compress/zlib"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/x448/float16"
)

// LRChunk is a LightRAG text chunk.
type LRChunk struct {
	Doc     int // index into LightRAG.Docs
	Content string
}

// LREntity is a LightRAG graph node.
type LREntity struct {
	Name, Type, Description string
	Chunks                  []int // indexes into LightRAG.Chunks
}

// LRRelation is a LightRAG graph edge.
type LRRelation struct {
	Src, Tgt              string
	Keywords, Description string
	Weight                float64
	Chunks                []int
}

// LightRAG describes a LightRAG v1.4 working directory.
type LightRAG struct {
	Docs      []string // document contents; file paths are "doc<i>.txt"
	Chunks    []LRChunk
	Entities  []LREntity
	Relations []LRRelation
	Dim       int // vector dimension; 0 writes no vdb_*.json
	Created   int64
}

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// ChunkID is LightRAG's chunk key: "chunk-" + md5(content).
func ChunkID(content string) string { return "chunk-" + md5hex(content) }

// DocID is LightRAG's document key: "doc-" + md5(content).
func DocID(content string) string { return "doc-" + md5hex(content) }

// Sample is a LightRAG index of four short passages about a harbour (one split into two
// chunks, linked by a pronoun), with typed, described entities, weighted relations
// citing their chunks, two names that differ only in case, and XML-special characters
// in a description.
func Sample() *LightRAG {
	docs := []string{
		"Port Keswyn\nPort Keswyn is a harbour town on the Brackwater Coast. Tomas Brell was the harbourmaster of Port Keswyn from 1785.",
		"Fennmouth\nFennmouth is a port town north of Port Keswyn. The Cobble Yard is the largest shipyard in Fennmouth.",
		"Tomas Brell\nTomas Brell, known as the Old Pilot, was born in Fennmouth.\nHe bought the brig Gannet from the Cobble Yard. He sailed the Gannet to Gull Rock.",
		"The brig Gannet was wrecked on Gull Rock in 1790. Gull Rock lies south of Port Keswyn.",
	}
	l := &LightRAG{Docs: docs, Dim: 8, Created: 1733000000}
	l.Chunks = []LRChunk{{0, docs[0]}, {1, docs[1]},
		{2, "Tomas Brell\nTomas Brell, known as the Old Pilot, was born in Fennmouth."},
		{2, "He bought the brig Gannet from the Cobble Yard. He sailed the Gannet to Gull Rock."},
		{3, docs[3]}}
	l.Entities = []LREntity{
		{"Port Keswyn", "location", "Port Keswyn is a harbour town on the Brackwater Coast.", []int{0, 4}},
		{"PORT KESWYN", "location", "A harbour <town> & port.", []int{1}},
		{"Brackwater Coast", "location", "A stretch of coast.", []int{0}},
		{"Tomas Brell", "person", "Tomas Brell was harbourmaster of Port Keswyn.", []int{0, 2, 3}},
		{"Fennmouth", "location", "Fennmouth is a port town north of Port Keswyn.", []int{1, 2}},
		{"Cobble Yard", "organization", "The largest shipyard in Fennmouth.", []int{1, 3}},
		{"Gannet", "artifact", "A brig.", []int{3, 4}},
		{"Gull Rock", "location", "A rock south of Port Keswyn.", []int{3, 4}},
	}
	l.Relations = []LRRelation{
		{"Port Keswyn", "Brackwater Coast", "location, coast", "Port Keswyn lies on the Brackwater Coast.", 2, []int{0}},
		{"Tomas Brell", "Port Keswyn", "harbourmaster", "Tomas Brell was harbourmaster of Port Keswyn.", 1, []int{0}},
		{"Fennmouth", "PORT KESWYN", "north of", "Fennmouth is north of Port Keswyn.", 1, []int{1}},
		{"Port Keswyn", "PORT KESWYN", "same place", "Two spellings.", 0.5, []int{1}},
		{"Cobble Yard", "Fennmouth", "shipyard, location", "The Cobble Yard is in Fennmouth.", 1.5, []int{1}},
		{"Tomas Brell", "Fennmouth", "birthplace", "Tomas Brell was born in Fennmouth.", 1, []int{2}},
		{"Tomas Brell", "Gannet", "purchase", "Tomas Brell bought the Gannet.", 1, []int{3}},
		{"Gannet", "Cobble Yard", "built by", "The Gannet came from the Cobble Yard.", 1, []int{3}},
		{"Gannet", "Gull Rock", "wrecked on", "The Gannet was wrecked on Gull Rock in 1790.", 1, []int{4}},
		{"Gull Rock", "Port Keswyn", "south of", "Gull Rock lies south of Port Keswyn.", 1, []int{4}},
	}
	return l
}

func (l *LightRAG) chunkIDs(cs []int) string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = ChunkID(l.Chunks[c].Content)
	}
	return strings.Join(ids, "<SEP>")
}

func (l *LightRAG) files(cs []int) string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cs {
		f := fmt.Sprintf("doc%d.txt", l.Chunks[c].Doc)
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return strings.Join(out, "<SEP>")
}

func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Write writes the working directory to dir.
func (l *LightRAG) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// The graph, as networkx.write_graphml writes an nx.Graph.
	var g strings.Builder
	g.WriteString("<?xml version='1.0' encoding='utf-8'?>\n<graphml xmlns=\"http://graphml.graphdrawing.org/xmlns\" xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:schemaLocation=\"http://graphml.graphdrawing.org/xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd\">\n")
	keys := []struct{ id, for_, name, typ string }{
		{"d0", "node", "entity_id", "string"}, {"d1", "node", "entity_type", "string"}, {"d2", "node", "description", "string"},
		{"d3", "node", "source_id", "string"}, {"d4", "node", "file_path", "string"}, {"d5", "node", "created_at", "long"},
		{"d6", "edge", "weight", "double"}, {"d7", "edge", "description", "string"}, {"d8", "edge", "keywords", "string"},
		{"d9", "edge", "source_id", "string"}, {"d10", "edge", "file_path", "string"}, {"d11", "edge", "created_at", "long"},
	}
	for _, k := range keys {
		fmt.Fprintf(&g, "  <key id=%q for=%q attr.name=%q attr.type=%q />\n", k.id, k.for_, k.name, k.typ)
	}
	g.WriteString("  <graph edgedefault=\"undirected\">\n")
	for _, e := range l.Entities {
		fmt.Fprintf(&g, "    <node id=\"%s\">\n", esc(e.Name))
		for i, v := range []string{e.Name, e.Type, e.Description, l.chunkIDs(e.Chunks), l.files(e.Chunks), fmt.Sprint(l.Created)} {
			fmt.Fprintf(&g, "      <data key=\"d%d\">%s</data>\n", i, esc(v))
		}
		g.WriteString("    </node>\n")
	}
	for _, r := range l.Relations {
		fmt.Fprintf(&g, "    <edge source=\"%s\" target=\"%s\">\n", esc(r.Src), esc(r.Tgt))
		for i, v := range []string{fmt.Sprint(r.Weight), r.Description, r.Keywords, l.chunkIDs(r.Chunks), l.files(r.Chunks), fmt.Sprint(l.Created)} {
			fmt.Fprintf(&g, "      <data key=\"d%d\">%s</data>\n", i+6, esc(v))
		}
		g.WriteString("    </edge>\n")
	}
	g.WriteString("  </graph>\n</graphml>\n")
	if err := os.WriteFile(filepath.Join(dir, "graph_chunk_entity_relation.graphml"), []byte(g.String()), 0o644); err != nil {
		return err
	}
	// Key-value stores: dict id → record with create_time, update_time, _id.
	type kv = []any // alternating key, value
	stores := map[string][][2]any{}
	add := func(ns, id string, fields kv) {
		rec := map[string]any{}
		for i := 0; i+1 < len(fields); i += 2 {
			rec[fields[i].(string)] = fields[i+1]
		}
		rec["create_time"], rec["update_time"], rec["_id"] = l.Created, l.Created, id
		stores[ns] = append(stores[ns], [2]any{id, rec})
	}
	docChunks := make([][]string, len(l.Docs))
	for i, c := range l.Chunks {
		id := ChunkID(c.Content)
		docChunks[c.Doc] = append(docChunks[c.Doc], id)
		add("text_chunks", id, kv{"tokens", len(strings.Fields(c.Content)) + 3, "content", c.Content, "chunk_order_index", len(docChunks[c.Doc]) - 1,
			"full_doc_id", DocID(l.Docs[c.Doc]), "file_path", fmt.Sprintf("doc%d.txt", c.Doc), "llm_cache_list", []string{fmt.Sprintf("default:extract:%d", i)}})
	}
	for i, d := range l.Docs {
		add("full_docs", DocID(d), kv{"content", d, "file_path", fmt.Sprintf("doc%d.txt", i)})
		stores["doc_status"] = append(stores["doc_status"], [2]any{DocID(d), map[string]any{"status": "processed", "content_summary": d[:20],
			"content_length": len(d), "file_path": fmt.Sprintf("doc%d.txt", i), "created_at": "2024-12-01T00:00:00+00:00",
			"updated_at": "2024-12-01T00:00:01+00:00", "track_id": "insert_1", "chunks_count": len(docChunks[i]), "chunks_list": docChunks[i],
			"error_msg": nil, "metadata": map[string]any{"processing_start_time": l.Created}}})
	}
	for i, d := range l.Docs {
		var names []string
		for _, e := range l.Entities {
			for _, c := range e.Chunks {
				if l.Chunks[c].Doc == i && !slices.Contains(names, e.Name) {
					names = append(names, e.Name)
				}
			}
		}
		add("full_entities", DocID(d), kv{"entity_names", names, "count", len(names)})
	}
	for _, e := range l.Entities {
		add("entity_chunks", e.Name, kv{"chunk_ids", strings.Split(l.chunkIDs(e.Chunks), "<SEP>"), "count", len(e.Chunks)})
	}
	for _, r := range l.Relations {
		a, b := r.Src, r.Tgt
		if b < a {
			a, b = b, a
		}
		add("relation_chunks", a+"<SEP>"+b, kv{"chunk_ids", strings.Split(l.chunkIDs(r.Chunks), "<SEP>"), "count", len(r.Chunks)})
	}
	stores["llm_response_cache"] = [][2]any{{"default:extract:0", map[string]any{"return": "(\"entity\"<|>Port Keswyn)", "cache_type": "extract", "chunk_id": ChunkID(l.Chunks[0].Content)}}}
	for ns, recs := range stores {
		if err := writeDict(filepath.Join(dir, "kv_store_"+ns+".json"), recs); err != nil {
			return err
		}
	}
	if l.Dim == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(1, 2))
	vdb := func(ns string, recs []map[string]any) error {
		var mat []byte
		for _, r := range recs {
			v := make([]float32, l.Dim)
			var n float64
			for i := range v {
				v[i] = float32(rng.NormFloat64())
				n += float64(v[i]) * float64(v[i])
			}
			r["vector"] = float16Vector(v)
			for _, x := range v {
				mat = binary.LittleEndian.AppendUint32(mat, math.Float32bits(x/float32(math.Sqrt(n))))
			}
		}
		b, err := json.Marshal(map[string]any{"embedding_dim": l.Dim, "data": recs, "matrix": base64.StdEncoding.EncodeToString(mat)})
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "vdb_"+ns+".json"), b, 0o644)
	}
	var ents, rels, chunks []map[string]any
	for _, e := range l.Entities {
		ents = append(ents, map[string]any{"__id__": "ent-" + md5hex(e.Name), "__created_at__": l.Created, "entity_name": e.Name,
			"source_id": l.chunkIDs(e.Chunks), "content": e.Name + "\n" + e.Description, "file_path": l.files(e.Chunks)})
	}
	for _, r := range l.Relations {
		a, b := r.Src, r.Tgt
		if b < a {
			a, b = b, a
		}
		rels = append(rels, map[string]any{"__id__": "rel-" + md5hex(a+b), "__created_at__": l.Created, "src_id": a, "tgt_id": b,
			"source_id": l.chunkIDs(r.Chunks), "content": r.Keywords + "\t" + a + "\n" + b + "\n" + r.Description, "file_path": l.files(r.Chunks)})
	}
	for _, c := range l.Chunks {
		chunks = append(chunks, map[string]any{"__id__": ChunkID(c.Content), "__created_at__": l.Created, "full_doc_id": DocID(l.Docs[c.Doc]),
			"content": c.Content, "file_path": fmt.Sprintf("doc%d.txt", c.Doc)})
	}
	for ns, recs := range map[string][]map[string]any{"entities": ents, "relationships": rels, "chunks": chunks} {
		if err := vdb(ns, recs); err != nil {
			return err
		}
	}
	return nil
}

// writeDict writes records as a JSON object in their order, like json.dump(indent=2).
func writeDict(path string, recs [][2]any) error {
	var b bytes.Buffer
	b.WriteString("{\n")
	for i, r := range recs {
		k, _ := json.Marshal(r[0])
		v, err := json.MarshalIndent(r[1], "  ", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "  %s: %s", k, v)
		if i < len(recs)-1 {
			b.WriteString(",")
		}
		b.WriteString("\n")
	}
	b.WriteString("}")
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// float16Vector is base64(zlib(float16 little-endian bytes)), LightRAG's per-record
// vector (values rounded to the nearest float16, as numpy writes them).
func float16Vector(v []float32) string {
	raw := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(raw[2*i:], float16.Fromfloat32(x).Bits())
	}
	var buf bytes.Buffer
	zw := zlib.NewWriter(&buf)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}
