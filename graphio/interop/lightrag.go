package interop

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/x448/float16"

	"github.com/graphloom/graphloom/graphio"
)

// LightRAG file names (v1.4 layout, anchors §F.1).
const (
	LightRAGGraphFile = "graph_chunk_entity_relation.graphml"
	lrChunksNS        = "text_chunks"
	lrDocsNS          = "full_docs"
	lrEntityChunksNS  = "entity_chunks"
	lrRelChunksNS     = "relation_chunks"
	lrFullEntitiesNS  = "full_entities"
	lrFullRelsNS      = "full_relations"
	lrDocStatusNS     = "doc_status"
	lrCacheNS         = "llm_response_cache"
)

var lrVDBs = []string{"entities", "relationships", "chunks"}

// sidecarPrefix starts the names of the blobs that keep foreign records.
const sidecarPrefix = "interop."

const lightragBlob = sidecarPrefix + "lightrag"

// lightragSidecar keeps what graphloom does not model of an imported LightRAG index.
type lightragSidecar struct {
	NodeKeys  []Key                        `json:"node_keys"`  // graphml keys of the source file
	Nodes     map[string]map[string]string `json:"nodes"`      // entity name → node attributes
	NodeOrder []string                     `json:"node_order"` // node order of the source file
	Edges     []lrEdge                     `json:"edges"`
	// Names maps a graphloom entity id to the LightRAG names merged into it.
	Names map[string][]string `json:"names"`
	// ChunkIDs maps a graphloom chunk id (computed from the chunk's text, see
	// graphio.ChunkID) to the LightRAG keys of the chunks with that text, where they differ.
	ChunkIDs map[string][]string `json:"chunk_ids,omitempty"`
	KV       map[string]*object  `json:"kv"`  // namespace → records
	VDB      map[string]*vdbFile `json:"vdb"` // namespace → store
}

type lrEdge struct {
	Source string            `json:"source"`
	Target string            `json:"target"`
	Data   map[string]string `json:"data"`
	Fact   string            `json:"fact,omitempty"` // graphloom fact id ("" when both ends are one entity)
}

// vdbFile is a nano-vectordb store: its records (verbatim) and their float32 rows.
type vdbFile struct {
	Dim   int                        `json:"dim"`
	Extra map[string]json.RawMessage `json:"extra,omitempty"` // top-level members besides embedding_dim, data, matrix
	IDs   []string                   `json:"ids"`
	Data  []json.RawMessage          `json:"data"`
	Rows  []byte                     `json:"rows"` // row-major little-endian float32, len(IDs) × Dim
}

func (v *vdbFile) row(i int) []byte { return v.Rows[i*v.Dim*4 : (i+1)*v.Dim*4] }

// ImportLightRAG reads a LightRAG v1.4 working directory: the entity–relation GraphML,
// the kv_store_*.json stores and the vdb_*.json vector stores. Entities become
// graphloom entities (names normalised; their source_id chunks become mentions),
// relations become facts (keywords as predicate, weight, source_id chunks), text
// chunks and full docs become chunks and documents. Every record is also kept
// verbatim (see the package doc), including the vectors, which graphloom cannot use
// for queries because LightRAG does not record which model made them: the index has
// no embeddings, and the caller embeds it (the CLI uses the built-in embedder).
func ImportLightRAG(dir string) (*graphio.Index, *Report, error) {
	rep := newReport("lightrag")
	sc := &lightragSidecar{Nodes: map[string]map[string]string{}, Names: map[string][]string{}, ChunkIDs: map[string][]string{}, KV: map[string]*object{}, VDB: map[string]*vdbFile{}}
	// Key-value stores.
	kvs, err := filepath.Glob(filepath.Join(dir, "kv_store_*.json"))
	if err != nil {
		return nil, nil, err
	}
	for _, p := range kvs {
		ns := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "kv_store_"), ".json")
		o, err := readObject(p)
		if err != nil {
			return nil, nil, fmt.Errorf("lightrag: %w", err)
		}
		sc.KV[ns] = o
	}
	chunks := sc.KV[lrChunksNS]
	if chunks == nil {
		return nil, nil, fmt.Errorf("lightrag: %s: no kv_store_%s.json (is this a LightRAG working directory?)", dir, lrChunksNS)
	}
	ix := &graphio.Index{Meta: graphio.Meta{Created: time.Now().UTC().Format(time.RFC3339), Corpus: dir, Tokenizer: "o200k_base", Extractor: "lightrag"}}
	docIdx := map[string]int32{}
	if docs := sc.KV[lrDocsNS]; docs != nil {
		for _, id := range docs.Keys {
			var d struct {
				Content  string `json:"content"`
				FilePath string `json:"file_path"`
			}
			if err := json.Unmarshal(docs.Records[id], &d); err != nil {
				return nil, nil, fmt.Errorf("lightrag: %s: record %q: %w", filepath.Join(dir, "kv_store_full_docs.json"), id, err)
			}
			docIdx[id] = int32(len(ix.Documents))
			ix.Documents = append(ix.Documents, graphio.Document{ID: id, Title: firstLine(d.Content), Source: d.FilePath, Count: 1})
		}
	}
	chunkIdx := map[string]int32{}
	chunkFile := filepath.Join(dir, "kv_store_text_chunks.json")
	orphanDocs, sameText := 0, 0
	byGID := map[string]int32{}
	for _, id := range chunks.Keys {
		var c struct {
			Tokens          int    `json:"tokens"`
			Content         string `json:"content"`
			ChunkOrderIndex int    `json:"chunk_order_index"`
			FullDocID       string `json:"full_doc_id"`
			FilePath        string `json:"file_path"`
		}
		if err := json.Unmarshal(chunks.Records[id], &c); err != nil {
			return nil, nil, fmt.Errorf("lightrag: %s: record %q: %w", chunkFile, id, err)
		}
		if c.Tokens < 0 || c.Tokens > math.MaxInt32 || c.ChunkOrderIndex < 0 || c.ChunkOrderIndex > math.MaxInt32 {
			return nil, nil, fmt.Errorf("lightrag: %s: record %q: tokens %d or chunk_order_index %d out of range", chunkFile, id, c.Tokens, c.ChunkOrderIndex)
		}
		d, ok := docIdx[c.FullDocID]
		if !ok {
			orphanDocs++
			d = int32(len(ix.Documents))
			docIdx[c.FullDocID] = d
			ix.Documents = append(ix.Documents, graphio.Document{ID: c.FullDocID, Source: c.FilePath, Count: 1})
		}
		title, text := splitTitle(c.Content)
		gid := graphio.ChunkID(title, text)
		if gid != id {
			sc.ChunkIDs[gid] = append(sc.ChunkIDs[gid], id)
		}
		if at, dup := byGID[gid]; dup {
			// Another key with the same text: one graphloom chunk, both written back.
			chunkIdx[id] = at
			sameText++
			continue
		}
		byGID[gid] = int32(len(ix.Chunks))
		chunkIdx[id] = int32(len(ix.Chunks))
		ix.Chunks = append(ix.Chunks, graphio.Chunk{ID: gid, Doc: d, Order: int32(c.ChunkOrderIndex), Title: title, Text: text, Tokens: int32(c.Tokens)})
	}
	if sameText > 0 {
		rep.notice("%d chunks repeat the text of another chunk under another key; graphloom keeps one chunk for both (both are written back on export)", sameText)
	}
	if orphanDocs > 0 {
		rep.notice("%d documents named by chunks are not in kv_store_full_docs.json; they were added without text", orphanDocs)
	}
	// The graph.
	gpath := filepath.Join(dir, LightRAGGraphFile)
	f, err := os.Open(gpath)
	if err != nil {
		return nil, nil, fmt.Errorf("lightrag: %w", err)
	}
	g, err := DecodeGraphML(f, gpath)
	f.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("lightrag: %w", err)
	}
	if err := g.check(gpath); err != nil {
		return nil, nil, fmt.Errorf("lightrag: %w", err)
	}
	sc.NodeKeys = g.Keys
	b := graphio.NewBuilder(ix, "")
	entOf := map[string]int32{}
	unknownChunks := map[string]struct{}{}
	chunkList := func(s string) []int32 {
		var out []int32
		for _, id := range splitSep(s) {
			if c, ok := chunkIdx[id]; ok {
				out = append(out, c)
			} else {
				unknownChunks[id] = struct{}{}
			}
		}
		return out
	}
	merged := 0
	for _, n := range g.Nodes {
		e := b.Entity(n.ID, n.Data["entity_type"])
		if e < 0 {
			return nil, nil, fmt.Errorf("lightrag: %s:%d: node %q: the entity name has no letter or digit", gpath, n.Line, n.ID)
		}
		if _, err := optInt(n.Data["created_at"]); err != nil {
			return nil, nil, fmt.Errorf("lightrag: %s:%d: node %q: created_at: %w", gpath, n.Line, n.ID, err)
		}
		id := ix.Entities[e].ID
		if len(sc.Names[id]) > 0 {
			merged++
		}
		sc.Names[id] = append(sc.Names[id], n.ID)
		sc.Nodes[n.ID] = n.Data
		sc.NodeOrder = append(sc.NodeOrder, n.ID)
		entOf[n.ID] = e
		for _, c := range chunkList(n.Data["source_id"]) {
			b.AddMention(e, c)
		}
	}
	if merged > 0 {
		rep.notice("%d LightRAG entities share a normalised name with another and were merged into one graphloom entity (all are written back on export)", merged)
	}
	loops := 0
	weights := map[int32]float64{}
	for i, ed := range g.Edges {
		w := 1.0
		if s, ok := ed.Data["weight"]; ok {
			if w, err = strconv.ParseFloat(strings.TrimSpace(s), 64); err != nil || math.IsNaN(w) || math.IsInf(w, 0) {
				return nil, nil, fmt.Errorf("lightrag: %s:%d: edge %d (%s → %s): weight %q is not a finite number", gpath, ed.Line, i, ed.Source, ed.Target, s)
			}
		}
		if _, err := optInt(ed.Data["created_at"]); err != nil {
			return nil, nil, fmt.Errorf("lightrag: %s:%d: edge %d (%s → %s): created_at: %w", gpath, ed.Line, i, ed.Source, ed.Target, err)
		}
		s, o := entOf[ed.Source], entOf[ed.Target]
		le := lrEdge{Source: ed.Source, Target: ed.Target, Data: ed.Data}
		if s == o {
			loops++
			sc.Edges = append(sc.Edges, le)
			continue
		}
		cs := chunkList(ed.Data["source_id"])
		for _, c := range cs {
			b.AddMention(s, c)
			b.AddMention(o, c)
		}
		p := graphio.NormalizeName(ed.Data["keywords"])
		if p == "" {
			p = "related to"
		}
		fi, _, err := b.AddFactIDs(s, p, o, cs)
		if err != nil {
			return nil, nil, fmt.Errorf("lightrag: %s:%d: edge %d: %w", gpath, ed.Line, i, err)
		}
		le.Fact = ix.Facts[fi].ID
		weights[fi] += w // LightRAG relation weights, summed over relations that map to one fact
		sc.Edges = append(sc.Edges, le)
	}
	for fi, w := range weights {
		ix.Facts[fi].Weight = float32(w)
	}
	if loops > 0 {
		rep.notice("%d relations join names that normalise to one entity; graphloom has no self-loops, they are kept for export only", loops)
	}
	if len(unknownChunks) > 0 {
		rep.notice("%d chunk ids in source_id fields are not in kv_store_text_chunks.json (kept verbatim for export)", len(unknownChunks))
	}
	// Vector stores, read concurrently (they are most of the bytes).
	vdbs := make([]*vdbFile, len(lrVDBs))
	errs := make([]error, len(lrVDBs))
	var wg sync.WaitGroup
	for i, ns := range lrVDBs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vdbs[i], errs[i] = readVDB(filepath.Join(dir, "vdb_"+ns+".json"))
		}()
	}
	wg.Wait()
	for i, ns := range lrVDBs {
		if errors.Is(errs[i], fs.ErrNotExist) {
			continue
		}
		if errs[i] != nil {
			return nil, nil, fmt.Errorf("lightrag: %w", errs[i])
		}
		sc.VDB[ns] = vdbs[i]
		rep.Counts["vectors."+ns] = len(vdbs[i].IDs)
	}
	if len(sc.VDB) > 0 {
		rep.notice("LightRAG's vectors (made by a model it does not name) are kept for export but cannot embed graphloom's queries")
	}
	blob, err := encodeSidecar(sc)
	if err != nil {
		return nil, nil, err
	}
	ix.Blobs = map[string][]byte{lightragBlob: blob}
	rep.Counts["documents"], rep.Counts["chunks"], rep.Counts["entities"] = len(ix.Documents), len(ix.Chunks), len(ix.Entities)
	rep.Counts["relations"], rep.Counts["facts"], rep.Counts["mentions"] = len(g.Edges), len(ix.Facts), len(ix.Mentions)
	if err := ix.Validate(); err != nil {
		return nil, nil, fmt.Errorf("lightrag: %s: %w", dir, err)
	}
	return ix, rep, nil
}

func optInt(s string) (int64, error) {
	if strings.TrimSpace(s) == "" {
		return 0, nil
	}
	return strconv.ParseInt(strings.TrimSpace(s), 10, 64)
}

// firstLine returns the first line of s when it is short enough to be a title.
func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	if len(l) > 120 {
		return ""
	}
	return l
}

// splitTitle splits chunk content "title\ntext" (the layout LightRAG's multi-hop
// evaluations insert) so that Chunk.Content() gives it back; content with no short
// first line is all text.
func splitTitle(content string) (title, text string) {
	if t, rest, ok := strings.Cut(content, "\n"); ok && t != "" && len(t) <= 200 {
		return t, rest
	}
	return "", content
}

// chunkContent inverts splitTitle.
func chunkContent(c *graphio.Chunk) string {
	if c.Title == "" {
		return c.Text
	}
	return c.Content()
}

func readVDB(path string) (*vdbFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeVDB(f, path)
}

// decodeVDB reads a nano-vectordb JSON store and checks its matrix and vectors.
func decodeVDB(r io.Reader, file string) (*vdbFile, error) {
	d := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	v := &vdbFile{Extra: map[string]json.RawMessage{}}
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("%s: malformed JSON: want an object", file)
	}
	var mat string
	var data []json.RawMessage
	sawDim := false
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: malformed JSON: %w", file, err)
		}
		key, _ := t.(string)
		switch key {
		case "embedding_dim":
			if err := d.Decode(&v.Dim); err != nil {
				return nil, fmt.Errorf("%s: embedding_dim: %w", file, err)
			}
			sawDim = true
		case "matrix":
			if err := d.Decode(&mat); err != nil {
				return nil, fmt.Errorf("%s: matrix: %w", file, err)
			}
		case "data":
			if t, err := d.Token(); err != nil || t != json.Delim('[') {
				return nil, fmt.Errorf("%s: data: want a list", file)
			}
			for d.More() {
				var rec json.RawMessage
				if err := d.Decode(&rec); err != nil {
					return nil, fmt.Errorf("%s: data record %d: %w", file, len(data), err)
				}
				data = append(data, rec)
			}
			if _, err := d.Token(); err != nil {
				return nil, fmt.Errorf("%s: data: %w", file, err)
			}
		default:
			var raw json.RawMessage
			if err := d.Decode(&raw); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", file, key, err)
			}
			v.Extra[key] = raw
		}
	}
	if _, err := d.Token(); err != nil {
		return nil, fmt.Errorf("%s: malformed JSON at the end: %w", file, err)
	}
	if !sawDim || v.Dim <= 0 || v.Dim > 1<<16 {
		return nil, fmt.Errorf("%s: embedding_dim missing or invalid", file)
	}
	rows, err := base64.StdEncoding.DecodeString(mat)
	if err != nil {
		return nil, fmt.Errorf("%s: matrix is not base64: %w", file, err)
	}
	if len(rows) != len(data)*v.Dim*4 {
		return nil, fmt.Errorf("%s: matrix holds %d bytes, want %d records × %d dims × 4", file, len(rows), len(data), v.Dim)
	}
	v.Rows, v.Data = rows, data
	for i, d := range data {
		var rec struct {
			ID     *string `json:"__id__"`
			Vector *string `json:"vector"`
		}
		if err := json.Unmarshal(d, &rec); err != nil {
			return nil, fmt.Errorf("%s: data record %d: %w", file, i, err)
		}
		if rec.ID == nil {
			return nil, fmt.Errorf("%s: data record %d has no __id__", file, i)
		}
		if rec.Vector != nil {
			vec, err := decodeFloat16Vector(*rec.Vector)
			if err != nil {
				return nil, fmt.Errorf("%s: data record %d (%q): vector: %w", file, i, *rec.ID, err)
			}
			if len(vec) != v.Dim {
				return nil, fmt.Errorf("%s: data record %d (%q): vector has %d dims, want %d", file, i, *rec.ID, len(vec), v.Dim)
			}
		}
		v.IDs = append(v.IDs, *rec.ID)
	}
	return v, nil
}

// encodeVDB writes a nano-vectordb store (keys sorted like json.dump of a dict built
// in that order: embedding_dim, data, matrix).
func (v *vdbFile) encode(w io.Writer) error {
	var buf bytes.Buffer
	buf.WriteString(`{"embedding_dim": `)
	buf.WriteString(strconv.Itoa(v.Dim))
	buf.WriteString(`, "data": [`)
	for i, d := range v.Data {
		if i > 0 {
			buf.WriteString(", ")
		}
		buf.Write(d)
	}
	buf.WriteString(`], "matrix": "`)
	buf.WriteString(base64.StdEncoding.EncodeToString(v.Rows))
	buf.WriteString(`"`)
	for _, k := range slices.Sorted(mapsKeys(v.Extra)) {
		kb, _ := marshal(k)
		buf.WriteString(", ")
		buf.Write(kb)
		buf.WriteString(": ")
		buf.Write(v.Extra[k])
	}
	buf.WriteString("}")
	_, err := w.Write(buf.Bytes())
	return err
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// decodeFloat16Vector decodes LightRAG's per-record vector: base64 of zlib-compressed
// little-endian float16 values.
func decodeFloat16Vector(s string) ([]float32, error) {
	z, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	zr, err := zlib.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("not zlib: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("not zlib: %w", err)
	}
	if len(raw)%2 != 0 {
		return nil, fmt.Errorf("odd number of bytes (%d) for float16 values", len(raw))
	}
	out := make([]float32, len(raw)/2)
	for i := range out {
		out[i] = float16.Frombits(binary.LittleEndian.Uint16(raw[2*i:])).Float32()
	}
	return out, nil
}

// f16Encoder encodes LightRAG per-record vectors, reusing its zlib writer (a new one
// allocates about a megabyte).
type f16Encoder struct {
	raw []byte
	buf bytes.Buffer
	zw  *zlib.Writer
}

// encode is the inverse of decodeFloat16Vector. Values round to the nearest float16,
// ties to even, as numpy's astype does (x448/float16; out of range → ±Inf).
func (e *f16Encoder) encode(v []float32) string {
	e.raw = e.raw[:0]
	for _, x := range v {
		e.raw = binary.LittleEndian.AppendUint16(e.raw, float16.Fromfloat32(x).Bits())
	}
	e.buf.Reset()
	if e.zw == nil {
		e.zw = zlib.NewWriter(&e.buf)
	} else {
		e.zw.Reset(&e.buf)
	}
	e.zw.Write(e.raw)
	e.zw.Close()
	return base64.StdEncoding.EncodeToString(e.buf.Bytes())
}

func encodeFloat16Vector(v []float32) string { return new(f16Encoder).encode(v) }

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func lrRelKey(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + SEP + b
}

func sortedUnion(base []string, add []string) []string {
	out := slices.Clone(base)
	for _, a := range add {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}
