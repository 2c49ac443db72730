package interop

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/graphloom/graphloom/graphio"
)

// The node and edge attributes LightRAG writes, in its order, with NetworkX's types.
var (
	lrNodeKeys = []Key{{For: "node", Name: "entity_id", Type: TypeString}, {For: "node", Name: "entity_type", Type: TypeString},
		{For: "node", Name: "description", Type: TypeString}, {For: "node", Name: "source_id", Type: TypeString},
		{For: "node", Name: "file_path", Type: TypeString}, {For: "node", Name: "created_at", Type: TypeLong},
		{For: "node", Name: "truncate", Type: TypeString}}
	lrEdgeKeys = []Key{{For: "edge", Name: "weight", Type: TypeDouble}, {For: "edge", Name: "description", Type: TypeString},
		{For: "edge", Name: "keywords", Type: TypeString}, {For: "edge", Name: "source_id", Type: TypeString},
		{For: "edge", Name: "file_path", Type: TypeString}, {For: "edge", Name: "created_at", Type: TypeLong},
		{For: "edge", Name: "truncate", Type: TypeString}}
)

// lrExport holds the state of one LightRAG export.
type lrExport struct {
	ix    *graphio.Index
	sc    *lightragSidecar // nil for an index graphloom built
	rep   *Report
	now   int64
	names [][]string // per entity: its LightRAG names (first = the one new relations use)
	byID  map[string]int32
	write writeFile
}

func (x *lrExport) runTime(run string) int64 {
	for _, r := range x.ix.Runs {
		if r.ID == run {
			if t, err := time.Parse(time.RFC3339, r.Created); err == nil {
				return t.Unix()
			}
		}
	}
	return x.now
}

// lrIDs returns the LightRAG keys of a graphloom chunk: those it was imported from,
// or its own id.
func (x *lrExport) lrIDs(c int32) []string {
	id := x.ix.Chunks[c].ID
	if x.sc != nil {
		if ids := x.sc.ChunkIDs[id]; len(ids) > 0 {
			return ids
		}
	}
	return []string{id}
}

func (x *lrExport) chunkIDs(cs []int32) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = x.lrIDs(c)[0]
	}
	return out
}

// filePaths returns the distinct file paths of the documents of chunks (LightRAG's
// file_path; "unknown_source" when a document has none).
func (x *lrExport) filePaths(chunks []string) []string {
	var out []string
	for _, id := range chunks {
		p := "unknown_source"
		if c := x.chunk(id); c != nil && int(c.Doc) < len(x.ix.Documents) && x.ix.Documents[c.Doc].Source != "" {
			p = x.ix.Documents[c.Doc].Source
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func (x *lrExport) chunk(id string) *graphio.Chunk {
	if i, ok := x.byID[id]; ok {
		return &x.ix.Chunks[i]
	}
	return nil
}

// ExportLightRAG writes ix as a LightRAG v1.4 working directory dir (created if
// needed): the entity–relation GraphML, the kv_store_*.json stores and, where vectors
// exist, the vdb_*.json stores. Records imported from LightRAG are written back as they
// were read; records a graphloom run added carry their provenance (source_id = cited
// chunk ids, description naming the run and the augmented origin), merged into an
// existing relation between the same two entities the way LightRAG merges. What
// LightRAG cannot hold (synonym edges, hyperedges, run records, vectors for new records
// of an imported index) is counted in the report.
func ExportLightRAG(ix *graphio.Index, dir string) (*Report, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("lightrag: export: %w", err)
	}
	return exportLightRAG(ix, dir, graphio.AtomicWrite)
}

// writeFile writes one file through fn (graphio.AtomicWrite, or an in-memory sink in
// fuzz tests).
type writeFile func(path string, fn func(w io.Writer) error) error

func exportLightRAG(ix *graphio.Index, dir string, write writeFile) (*Report, error) {
	x := &lrExport{ix: ix, rep: newReport("lightrag"), now: time.Now().Unix(), write: write}
	if blob, ok := ix.Blobs[lightragBlob]; ok {
		x.sc = &lightragSidecar{}
		if err := decodeSidecar(blob, x.sc); err != nil {
			return nil, fmt.Errorf("lightrag: export: the index's LightRAG records are corrupt: %w", err)
		}
	}
	x.byID = make(map[string]int32, len(ix.Chunks))
	for i := range ix.Chunks {
		for _, id := range x.lrIDs(int32(i)) {
			x.byID[id] = int32(i)
		}
	}
	x.names = make([][]string, len(ix.Entities))
	for i, e := range ix.Entities {
		if x.sc != nil && len(x.sc.Names[e.ID]) > 0 {
			x.names[i] = x.sc.Names[e.ID]
			continue
		}
		n := e.Name
		if len(e.Surface) > 0 && e.Surface[0] != "" {
			n = e.Surface[0]
		}
		x.names[i] = []string{n}
	}
	g, nodeChunks, relChunks, err := x.graph()
	if err != nil {
		return nil, err
	}
	gpath := filepath.Join(dir, LightRAGGraphFile)
	if err := x.write(gpath, g.Encode); err != nil {
		return nil, fmt.Errorf("lightrag: export: %w", err)
	}
	if err := x.kvStores(dir, g, nodeChunks, relChunks); err != nil {
		return nil, err
	}
	if err := x.vdbs(dir, g); err != nil {
		return nil, err
	}
	x.rep.drop("synonym edges", len(ix.Synonyms))
	x.rep.drop("hyperedges", len(ix.Hyperedges))
	x.rep.drop("run records (run ids are in the descriptions)", len(ix.Runs))
	if x.sc != nil {
		for k, m := range ix.Embeddings {
			x.rep.drop("graphloom "+k.String()+" vectors (the imported LightRAG vectors are written instead)", m.Rows())
		}
	} else if m := ix.Embeddings[graphio.KindFact]; m != nil {
		x.rep.notice("relation vectors are the normalised mean of the vectors of the facts each relation merges")
	}
	x.rep.Counts["entities"], x.rep.Counts["relations"], x.rep.Counts["chunks"] = len(g.Nodes), len(g.Edges), len(ix.Chunks)
	return x.rep, nil
}

// graph builds the GraphML graph. It returns the source chunk ids of every node and
// relation (by name and by relation key) for the kv stores.
func (x *lrExport) graph() (*Graph, map[string][]string, map[string][]string, error) {
	ix := x.ix
	g := &Graph{}
	if x.sc != nil && len(x.sc.NodeKeys) > 0 {
		g.Keys = slices.Clone(x.sc.NodeKeys)
	}
	for _, k := range append(slices.Clone(lrNodeKeys), lrEdgeKeys...) {
		if g.KeyType(k.For, k.Name) == "" {
			g.Keys = append(g.Keys, k)
		}
	}
	for i := range g.Keys {
		g.Keys[i].ID = fmt.Sprintf("d%d", i)
	}
	entByName := map[string]int32{}
	for i, e := range ix.Entities {
		entByName[e.Name] = int32(i)
	}
	nodeChunks := map[string][]string{}
	// Mentions a run added, per entity: they extend the entity's source_id.
	runChunks := make([][]string, len(ix.Entities))
	allChunks := make([][]string, len(ix.Entities))
	for _, m := range ix.Mentions {
		id := x.lrIDs(m.Chunk)[0]
		allChunks[m.Entity] = append(allChunks[m.Entity], id)
		if m.Run != "" {
			runChunks[m.Entity] = append(runChunks[m.Entity], id)
		}
	}
	written := map[string]bool{}
	if x.sc != nil {
		for _, name := range x.sc.NodeOrder {
			e, ok := entByName[graphio.NormalizeName(name)]
			if !ok || !slices.Contains(x.names[e], name) {
				continue
			}
			d := cloneMap(x.sc.Nodes[name])
			if name == x.names[e][0] && len(runChunks[e]) > 0 {
				src := splitSep(d["source_id"])
				add := sortedUnion(nil, runChunks[e])
				if n := sortedUnion(src, add); len(n) > len(src) {
					d["source_id"] = strings.Join(n, SEP)
					d["file_path"] = strings.Join(sortedUnion(splitSep(d["file_path"]), x.filePaths(add)), SEP)
				}
			}
			nodeChunks[name] = splitSep(d["source_id"])
			g.Nodes = append(g.Nodes, Element{ID: name, Data: d})
			written[name] = true
		}
	}
	emptyDesc := 0
	for i, e := range ix.Entities {
		name := x.names[i][0]
		if written[name] {
			continue
		}
		src := sortedUnion(nil, allChunks[i])
		ts := x.now
		desc := ""
		if e.Run != "" {
			ts = x.runTime(e.Run)
			desc = fmt.Sprintf("%s was introduced by graphloom CrossAug run %s (augmented) from evidence in %s", name, e.Run, strings.Join(src, ", "))
		} else {
			emptyDesc++
		}
		typ := e.Type
		if typ == "" {
			typ = "UNKNOWN"
		}
		d := map[string]string{"entity_id": name, "entity_type": typ, "description": desc, "source_id": strings.Join(src, SEP),
			"file_path": strings.Join(x.filePaths(src), SEP), "created_at": strconv.FormatInt(ts, 10), "truncate": ""}
		nodeChunks[name] = src
		g.Nodes = append(g.Nodes, Element{ID: name, Data: d})
		written[name] = true
	}
	if emptyDesc > 0 {
		x.rep.notice("%d entities graphloom extracted have no description (graphloom keeps facts, not entity summaries); their description is empty", emptyDesc)
	}
	// Relations.
	facts := map[string]int{}
	for i, f := range ix.Facts {
		facts[f.ID] = i
	}
	edgeAt := map[string]int{} // relation key → position in g.Edges
	covered := make([]bool, len(ix.Facts))
	if x.sc != nil {
		for _, le := range x.sc.Edges {
			if !written[le.Source] || !written[le.Target] {
				continue
			}
			if le.Fact != "" {
				fi, ok := facts[le.Fact]
				if !ok {
					continue
				}
				covered[fi] = true
			}
			key := lrRelKey(le.Source, le.Target)
			if _, dup := edgeAt[key]; dup {
				x.rep.drop("parallel relations between one entity pair (an undirected graph holds one)", 1)
				continue
			}
			edgeAt[key] = len(g.Edges)
			g.Edges = append(g.Edges, Element{Source: le.Source, Target: le.Target, Data: cloneMap(le.Data)})
		}
	}
	merged := 0
	for i, f := range ix.Facts {
		if covered[i] {
			continue
		}
		s, o := x.names[f.Subject][0], x.names[f.Object][0]
		src := x.chunkIDs(f.Chunks)
		desc := fmt.Sprintf("%s %s %s", s, f.Predicate, o)
		ts := x.now
		if f.Run != "" {
			ts = x.runTime(f.Run)
			desc += fmt.Sprintf(" (added by graphloom CrossAug run %s, augmented, from evidence in %s)", f.Run, strings.Join(src, ", "))
		}
		key := lrRelKey(s, o)
		if at, ok := edgeAt[key]; ok {
			d := g.Edges[at].Data
			w, _ := strconv.ParseFloat(d["weight"], 64)
			d["weight"] = fmtFloat64(w + float64(f.Weight))
			d["description"] = joinNonEmpty(d["description"], desc, SEP)
			if kws := splitKeywords(d["keywords"]); !slices.Contains(kws, f.Predicate) {
				d["keywords"] = strings.Join(append(kws, f.Predicate), ",")
			}
			d["source_id"] = strings.Join(sortedUnion(splitSep(d["source_id"]), src), SEP)
			d["file_path"] = strings.Join(sortedUnion(splitSep(d["file_path"]), x.filePaths(src)), SEP)
			merged++
			continue
		}
		edgeAt[key] = len(g.Edges)
		g.Edges = append(g.Edges, Element{Source: s, Target: o, Data: map[string]string{"weight": fmtFloat64(float64(f.Weight)),
			"description": desc, "keywords": f.Predicate, "source_id": strings.Join(src, SEP),
			"file_path": strings.Join(x.filePaths(src), SEP), "created_at": strconv.FormatInt(ts, 10), "truncate": ""}})
	}
	if merged > 0 {
		x.rep.notice("%d facts share an entity pair with another relation and were merged into it (LightRAG's graph is undirected with one relation per pair): weights added, descriptions and keywords joined", merged)
	}
	relChunks := map[string][]string{}
	for _, e := range g.Edges {
		relChunks[lrRelKey(e.Source, e.Target)] = splitSep(e.Data["source_id"])
	}
	return g, nodeChunks, relChunks, nil
}

func splitKeywords(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
}

func joinNonEmpty(a, b, sep string) string {
	if a == "" {
		return b
	}
	return a + sep + b
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func fmtFloat64(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// lrRecord adds the bookkeeping fields LightRAG's JSON kv store adds on upsert.
func lrRecord(id string, ts int64, fields ...any) json.RawMessage {
	var buf bytes.Buffer
	buf.WriteByte('{')
	add := func(k string, v any) {
		if buf.Len() > 1 {
			buf.WriteString(", ")
		}
		kb, _ := marshal(k)
		vb, err := marshal(v)
		if err != nil {
			vb = []byte("null")
		}
		buf.Write(kb)
		buf.WriteString(": ")
		buf.Write(vb)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		add(fields[i].(string), fields[i+1])
	}
	add("create_time", ts)
	add("update_time", ts)
	add("_id", id)
	buf.WriteByte('}')
	return buf.Bytes()
}

func (x *lrExport) kvStores(dir string, g *Graph, nodeChunks, relChunks map[string][]string) error {
	ix := x.ix
	stored := func(ns string) *object {
		if x.sc != nil && x.sc.KV[ns] != nil {
			return x.sc.KV[ns]
		}
		return newObject()
	}
	out := map[string]*object{}
	// Chunks.
	prev := stored(lrChunksNS)
	chunks := newObject()
	docChunks := make([][]int32, len(ix.Documents))
	for i := range ix.Chunks {
		c := &ix.Chunks[i]
		docChunks[c.Doc] = append(docChunks[c.Doc], int32(i))
		for _, id := range x.lrIDs(int32(i)) {
			if r, ok := prev.Records[id]; ok {
				chunks.set(id, r)
			}
		}
		id := x.lrIDs(int32(i))[0]
		if _, ok := prev.Records[id]; ok {
			continue
		}
		doc := ix.Documents[c.Doc]
		chunks.set(id, lrRecord(id, x.now, "tokens", c.Tokens, "content", chunkContent(c), "chunk_order_index", c.Order,
			"full_doc_id", doc.ID, "file_path", orUnknown(doc.Source), "llm_cache_list", []string{}))
	}
	out[lrChunksNS] = chunks
	// Documents.
	prev = stored(lrDocsNS)
	docs, status := newObject(), newObject()
	prevStatus := stored(lrDocStatusNS)
	rebuilt := 0
	fullEnt, fullRel := newObject(), newObject()
	prevFE, prevFR := stored(lrFullEntitiesNS), stored(lrFullRelsNS)
	docOfChunk := map[string]string{}
	for i, c := range ix.Chunks {
		for _, id := range x.lrIDs(int32(i)) {
			docOfChunk[id] = ix.Documents[c.Doc].ID
		}
	}
	docEnts, docRels := map[string][]string{}, map[string][][2]string{}
	for _, n := range g.Nodes {
		for _, c := range nodeChunks[n.ID] {
			if d, ok := docOfChunk[c]; ok && !slices.Contains(docEnts[d], n.ID) {
				docEnts[d] = append(docEnts[d], n.ID)
			}
		}
	}
	for _, e := range g.Edges {
		pair := [2]string{e.Source, e.Target}
		for _, c := range relChunks[lrRelKey(e.Source, e.Target)] {
			if d, ok := docOfChunk[c]; ok && !slices.Contains(docRels[d], pair) {
				docRels[d] = append(docRels[d], pair)
			}
		}
	}
	for di, d := range ix.Documents {
		var content string
		r, ok := prev.Records[d.ID]
		if ok {
			docs.set(d.ID, r)
			var v struct {
				Content string `json:"content"`
			}
			_ = json.Unmarshal(r, &v)
			content = v.Content
		} else {
			parts := make([]string, len(docChunks[di]))
			for j, c := range docChunks[di] {
				parts[j] = chunkContent(&ix.Chunks[c])
			}
			if len(parts) > 1 {
				rebuilt++
			}
			content = strings.Join(parts, "\n")
			docs.set(d.ID, lrRecord(d.ID, x.now, "content", content, "file_path", orUnknown(d.Source)))
		}
		if r, ok := prevStatus.Records[d.ID]; ok {
			status.set(d.ID, r)
		} else {
			ids := make([]string, len(docChunks[di]))
			for j, c := range docChunks[di] {
				ids[j] = x.lrIDs(c)[0]
			}
			iso := time.Unix(x.now, 0).UTC().Format(time.RFC3339)
			summary := content
			if len([]rune(summary)) > 100 {
				summary = string([]rune(summary)[:100]) + "..."
			}
			status.set(d.ID, mustMarshal(struct {
				Status         string         `json:"status"`
				ContentSummary string         `json:"content_summary"`
				ContentLength  int            `json:"content_length"`
				FilePath       string         `json:"file_path"`
				CreatedAt      string         `json:"created_at"`
				UpdatedAt      string         `json:"updated_at"`
				TrackID        string         `json:"track_id"`
				ChunksCount    int            `json:"chunks_count"`
				ChunksList     []string       `json:"chunks_list"`
				ErrorMsg       *string        `json:"error_msg"`
				Metadata       map[string]any `json:"metadata"`
			}{"processed", summary, len(content), orUnknown(d.Source), iso, iso, "graphloom-export", len(ids), ids, nil, map[string]any{}}))
		}
		if r, ok := prevFE.Records[d.ID]; ok {
			fullEnt.set(d.ID, r)
		} else if len(docEnts[d.ID]) > 0 {
			fullEnt.set(d.ID, lrRecord(d.ID, x.now, "entity_names", docEnts[d.ID], "count", len(docEnts[d.ID])))
		}
		if r, ok := prevFR.Records[d.ID]; ok {
			fullRel.set(d.ID, r)
		} else if len(docRels[d.ID]) > 0 {
			fullRel.set(d.ID, lrRecord(d.ID, x.now, "relation_pairs", docRels[d.ID], "count", len(docRels[d.ID])))
		}
	}
	if rebuilt > 0 {
		x.rep.notice("%d documents have several chunks; their full_docs content is the chunks joined by newlines (graphloom keeps chunk text, not the original document, so overlaps repeat)", rebuilt)
	}
	out[lrDocsNS], out[lrDocStatusNS], out[lrFullEntitiesNS], out[lrFullRelsNS] = docs, status, fullEnt, fullRel
	if x.sc != nil {
		// Derived stores an imported index did not have (older LightRAG) stay absent.
		for _, ns := range []string{lrFullEntitiesNS, lrFullRelsNS, lrDocStatusNS} {
			if x.sc.KV[ns] == nil {
				delete(out, ns)
			}
		}
	}
	// Entity and relation chunk lists.
	chunkList := func(ns string, keys []string, lists map[string][]string) *object {
		prev := stored(ns)
		o := newObject()
		for _, k := range keys {
			ids := lists[k]
			if r, ok := prev.Records[k]; ok {
				var v struct {
					ChunkIDs []string `json:"chunk_ids"`
				}
				if json.Unmarshal(r, &v) == nil && slices.Equal(sortedUnion(nil, v.ChunkIDs), sortedUnion(nil, ids)) || len(ids) == 0 {
					o.set(k, r)
					continue
				}
			}
			if len(ids) > 0 {
				o.set(k, lrRecord(k, x.now, "chunk_ids", ids, "count", len(ids)))
			}
		}
		return o
	}
	var names, rels []string
	for _, n := range g.Nodes {
		names = append(names, n.ID)
	}
	for _, e := range g.Edges {
		rels = append(rels, lrRelKey(e.Source, e.Target))
	}
	if x.sc == nil || x.sc.KV[lrEntityChunksNS] != nil {
		out[lrEntityChunksNS] = chunkList(lrEntityChunksNS, names, nodeChunks)
	}
	if x.sc == nil || x.sc.KV[lrRelChunksNS] != nil {
		out[lrRelChunksNS] = chunkList(lrRelChunksNS, rels, relChunks)
	}
	out[lrCacheNS] = stored(lrCacheNS)
	if x.sc != nil {
		for ns, o := range x.sc.KV {
			if _, ok := out[ns]; !ok {
				out[ns] = o
			}
		}
	}
	for _, ns := range slices.Sorted(mapsKeys(out)) {
		p := filepath.Join(dir, "kv_store_"+ns+".json")
		if err := x.write(p, func(w io.Writer) error { return out[ns].encode(w) }); err != nil {
			return fmt.Errorf("lightrag: export: %w", err)
		}
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown_source"
	}
	return s
}

// vdbs writes the three vector stores: imported records as they were, new ones with
// graphloom's vectors when the index is graphloom's own.
func (x *lrExport) vdbs(dir string, g *Graph) error {
	ix := x.ix
	type rec struct {
		id   string
		meta []any
		vec  []float32
	}
	var f16 f16Encoder
	write := func(ns string, recs []rec, dim int) error {
		var prev *vdbFile
		if x.sc != nil {
			prev = x.sc.VDB[ns]
		}
		v := &vdbFile{Dim: dim, Extra: map[string]json.RawMessage{}}
		prevAt := map[string]int{}
		if prev != nil {
			v.Dim, v.Extra = prev.Dim, prev.Extra
			for i, id := range prev.IDs {
				prevAt[id] = i
			}
		} else if x.sc != nil {
			x.rep.drop("vdb_"+ns+" records (the imported index had no such store)", len(recs))
			return nil
		}
		if v.Dim == 0 {
			x.rep.drop("vdb_"+ns+" records (the index has no vectors of that kind)", len(recs))
			return nil
		}
		missing := 0
		for _, r := range recs {
			if i, ok := prevAt[r.id]; ok {
				v.IDs = append(v.IDs, r.id)
				v.Data = append(v.Data, prev.Data[i])
				v.Rows = append(v.Rows, prev.row(i)...)
				continue
			}
			if r.vec == nil || len(r.vec) != v.Dim || prev != nil {
				missing++
				continue
			}
			meta := append([]any{"__id__", r.id, "__created_at__", x.now}, r.meta...)
			meta = append(meta, "vector", f16.encode(r.vec))
			v.IDs = append(v.IDs, r.id)
			v.Data = append(v.Data, orderedJSON(meta...))
			for _, f := range normalized(r.vec) {
				v.Rows = binary.LittleEndian.AppendUint32(v.Rows, math.Float32bits(f))
			}
		}
		x.rep.drop("vdb_"+ns+" vectors for records graphloom added (no vector from LightRAG's embedder; LightRAG re-embeds on its next insert of them)", missing)
		x.rep.Counts["vectors."+ns] = len(v.IDs)
		return x.write(filepath.Join(dir, "vdb_"+ns+".json"), v.encode)
	}
	dimOf := func(k graphio.NodeKind) int {
		if m := ix.Embeddings[k]; m != nil {
			return m.Dim
		}
		return 0
	}
	rowOf := func(k graphio.NodeKind, i int) []float32 {
		if m := ix.Embeddings[k]; m != nil && i < m.Rows() {
			return m.Row(i)
		}
		return nil
	}
	entByName := map[string]int{}
	for i, e := range ix.Entities {
		entByName[e.Name] = i
	}
	var ents []rec
	for _, n := range g.Nodes {
		var vec []float32
		if i, ok := entByName[graphio.NormalizeName(n.ID)]; ok {
			vec = rowOf(graphio.KindEntity, i)
		}
		ents = append(ents, rec{id: "ent-" + md5hex(n.ID), vec: vec, meta: []any{"entity_name", n.ID, "source_id", n.Data["source_id"],
			"content", n.ID + "\n" + n.Data["description"], "file_path", n.Data["file_path"]}})
	}
	if err := write("entities", ents, dimOf(graphio.KindEntity)); err != nil {
		return err
	}
	// Relation vectors: the mean of the vectors of the facts a relation merges.
	factVec := map[string][]float32{}
	if m := ix.Embeddings[graphio.KindFact]; m != nil {
		for i, f := range ix.Facts {
			if i >= m.Rows() {
				break
			}
			key := lrRelKey(x.names[f.Subject][0], x.names[f.Object][0])
			v := factVec[key]
			if v == nil {
				v = make([]float32, m.Dim)
				factVec[key] = v
			}
			for j, a := range m.Row(i) {
				v[j] += a
			}
		}
	}
	var rels []rec
	for _, e := range g.Edges {
		src, tgt := e.Source, e.Target
		if tgt < src {
			src, tgt = tgt, src
		}
		rels = append(rels, rec{id: "rel-" + md5hex(src+tgt), vec: factVec[lrRelKey(src, tgt)], meta: []any{"src_id", src, "tgt_id", tgt,
			"source_id", e.Data["source_id"], "content", e.Data["keywords"] + "\t" + src + "\n" + tgt + "\n" + e.Data["description"], "file_path", e.Data["file_path"]}})
	}
	if err := write("relationships", rels, dimOf(graphio.KindFact)); err != nil {
		return err
	}
	var chunks []rec
	for i := range ix.Chunks {
		c := &ix.Chunks[i]
		doc := ix.Documents[c.Doc]
		ids := x.lrIDs(int32(i))
		for _, alias := range ids[1:] {
			chunks = append(chunks, rec{id: alias})
		}
		chunks = append(chunks, rec{id: ids[0], vec: rowOf(graphio.KindChunk, i), meta: []any{"full_doc_id", doc.ID, "content", chunkContent(c), "file_path", orUnknown(doc.Source)}})
	}
	return write("chunks", chunks, dimOf(graphio.KindChunk))
}

func normalized(v []float32) []float32 {
	var s float64
	for _, a := range v {
		s += float64(a) * float64(a)
	}
	out := slices.Clone(v)
	if s == 0 {
		return out
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range out {
		out[i] *= inv
	}
	return out
}

// orderedJSON renders key, value pairs as a JSON object in that order.
func orderedJSON(kv ...any) json.RawMessage {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			buf.WriteString(", ")
		}
		kb, _ := marshal(kv[i].(string))
		vb, err := marshal(kv[i+1])
		if err != nil {
			vb = []byte("null")
		}
		buf.Write(kb)
		buf.WriteString(": ")
		buf.Write(vb)
	}
	buf.WriteByte('}')
	return buf.Bytes()
}
