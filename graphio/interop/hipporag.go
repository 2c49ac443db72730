package interop

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/graphloom/graphloom/graphio"
)

// HippoRAG 2 layout (anchors §A.5): save_dir/openie_results_ner_<llm>.json and
// save_dir/<llm>_<embedder>/{chunk,entity,fact}_embeddings/vdb_<kind>.parquet.
var hippoStores = []string{"chunk", "entity", "fact"}

const hippoBlob = sidecarPrefix + "hipporag"

// hippoRow is a row of a HippoRAG embedding store as pandas.to_parquet writes it.
type hippoRow struct {
	HashID    *string   `parquet:"hash_id,optional"`
	Content   *string   `parquet:"content,optional"`
	Embedding []float32 `parquet:"embedding,optional,list" parquet-element:",optional"`
}

type hippoStore struct {
	Dim      int      `json:"dim"`
	IDs      []string `json:"ids"`
	Contents []string `json:"contents"`
	Rows     []byte   `json:"rows"` // little-endian float32, len(IDs) × Dim
}

type hippoSidecar struct {
	OpenIEFile string                     `json:"openie_file"` // base name of the OpenIE results
	Top        *object                    `json:"top"`         // the OpenIE JSON's members but "docs"
	Docs       []json.RawMessage          `json:"docs"`        // its docs, verbatim
	DocChunk   []string                   `json:"doc_chunk"`   // graphloom chunk id of each doc
	WorkingDir string                     `json:"working_dir,omitempty"`
	Stores     map[string]*hippoStore     `json:"stores,omitempty"`
	Extra      map[string]json.RawMessage `json:"extra,omitempty"` // other working-dir JSON files (chunk_metadata.json)
}

type hippoDoc struct {
	Idx       string            `json:"idx"`
	Passage   string            `json:"passage"`
	Entities  []string          `json:"extracted_entities"`
	Triples   []json.RawMessage `json:"extracted_triples"`
	keyObject *object
}

// ImportHippoRAG reads a HippoRAG 2 save directory: the OpenIE results (passages, NER
// entities, triples) and, if present, the parquet embedding stores of its working
// directory. Passages become chunks (and one document each), NER entities and triple
// ends become entities with mentions, triples become facts. The igraph pickle is not
// read (Python pickle); HippoRAG rebuilds the same graph from the OpenIE results, and so
// does graphloom. Everything is kept for export, the stores' vectors included.
func ImportHippoRAG(src string) (*graphio.Index, *Report, error) {
	rep := newReport("hipporag")
	matches, err := filepath.Glob(filepath.Join(src, "openie_results_ner_*.json"))
	if err != nil {
		return nil, nil, err
	}
	if len(matches) == 0 {
		return nil, nil, fmt.Errorf("hipporag: %s: no openie_results_ner_*.json (is this a HippoRAG save_dir?)", src)
	}
	if len(matches) > 1 {
		return nil, nil, fmt.Errorf("hipporag: %s: several OpenIE results (%s); keep one", src, strings.Join(matches, ", "))
	}
	path := matches[0]
	top, err := readObject(path)
	if err != nil {
		return nil, nil, fmt.Errorf("hipporag: %w", err)
	}
	var docs []json.RawMessage
	if err := json.Unmarshal(top.Records["docs"], &docs); err != nil {
		return nil, nil, fmt.Errorf("hipporag: %s: docs: want a list of records: %v", path, err)
	}
	rest := newObject()
	for _, k := range top.Keys {
		if k != "docs" {
			rest.set(k, top.Records[k])
		}
	}
	sc := &hippoSidecar{OpenIEFile: filepath.Base(path), Top: rest, Docs: docs, Stores: map[string]*hippoStore{}, Extra: map[string]json.RawMessage{}}
	ix := &graphio.Index{Meta: graphio.Meta{Created: time.Now().UTC().Format(time.RFC3339), Corpus: src, Extractor: "hipporag:" + strings.TrimSuffix(strings.TrimPrefix(sc.OpenIEFile, "openie_results_ner_"), ".json")}}
	b := graphio.NewBuilder(ix, "")
	invalid, dupPassages := 0, 0
	for i, raw := range docs {
		var cb bytes.Buffer
		if err := json.Compact(&cb, raw); err == nil {
			docs[i], raw = cb.Bytes(), cb.Bytes() // canonical, so a re-import compares equal
		}
		var d hippoDoc
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, nil, fmt.Errorf("hipporag: %s: docs[%d]: %v", path, i, err)
		}
		title, text := splitTitle(d.Passage)
		dc, _ := b.AddDocument(title, text, fmt.Sprintf("%s#%d", sc.OpenIEFile, i))
		c, isNew := b.AddChunk(dc, 0, title, text, 0)
		if !isNew {
			dupPassages++
		}
		sc.DocChunk = append(sc.DocChunk, ix.Chunks[c].ID)
		for _, e := range d.Entities {
			if id := b.Entity(e, ""); id >= 0 {
				b.AddMention(id, c)
			}
		}
		for _, t := range d.Triples {
			var spo []string
			if err := json.Unmarshal(t, &spo); err != nil || len(spo) != 3 {
				invalid++ // HippoRAG's filter_invalid_triples drops these too
				continue
			}
			if _, _, err := b.AddFact(spo[0], spo[1], spo[2], c); err != nil {
				invalid++
			}
		}
	}
	if invalid > 0 {
		rep.notice("%d triples are not three non-empty, distinct parts (HippoRAG drops them too); kept for export only", invalid)
	}
	if dupPassages > 0 {
		rep.notice("%d passages repeat another; graphloom keeps one chunk (all are written back)", dupPassages)
	}
	// Embedding stores.
	wd, err := hippoWorkingDir(src)
	if err != nil {
		return nil, nil, fmt.Errorf("hipporag: %w", err)
	}
	if wd != "" {
		sc.WorkingDir = filepath.Base(wd)
		if wd == src {
			sc.WorkingDir = "."
		}
		for _, kind := range hippoStores {
			p := filepath.Join(wd, kind+"_embeddings", "vdb_"+kind+".parquet")
			s, err := readHippoStore(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, nil, fmt.Errorf("hipporag: %w", err)
			}
			sc.Stores[kind] = s
			rep.Counts["vectors."+kind] = len(s.IDs)
		}
		if b, err := os.ReadFile(filepath.Join(wd, "chunk_metadata.json")); err == nil {
			if !json.Valid(b) {
				return nil, nil, fmt.Errorf("hipporag: %s: malformed JSON", filepath.Join(wd, "chunk_metadata.json"))
			}
			sc.Extra["chunk_metadata.json"] = b
		}
		rep.notice("HippoRAG's vectors (from %s) are kept for export; graphloom embeds the index itself for its queries", sc.WorkingDir)
	} else {
		rep.notice("no embedding stores found under %s", src)
	}
	blob, err := encodeSidecar(sc)
	if err != nil {
		return nil, nil, err
	}
	ix.Blobs = map[string][]byte{hippoBlob: blob}
	rep.Counts["passages"], rep.Counts["chunks"], rep.Counts["entities"], rep.Counts["facts"] = len(docs), len(ix.Chunks), len(ix.Entities), len(ix.Facts)
	if err := ix.Validate(); err != nil {
		return nil, nil, fmt.Errorf("hipporag: %s: %w", src, err)
	}
	return ix, rep, nil
}

// hippoWorkingDir finds the directory holding the embedding stores: src itself or one
// subdirectory of it ("" when there is none).
func hippoWorkingDir(src string) (string, error) {
	has := func(d string) bool {
		for _, k := range hippoStores {
			if _, err := os.Stat(filepath.Join(d, k+"_embeddings")); err == nil {
				return true
			}
		}
		return false
	}
	if has(src) {
		return src, nil
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range ents {
		if e.IsDir() && has(filepath.Join(src, e.Name())) {
			found = append(found, filepath.Join(src, e.Name()))
		}
	}
	if len(found) > 1 {
		return "", fmt.Errorf("%s: several working directories with embedding stores (%s); import a save_dir with one", src, strings.Join(found, ", "))
	}
	if len(found) == 1 {
		return found[0], nil
	}
	return "", nil
}

func readHippoStore(path string) (s *hippoStore, err error) {
	var rows []hippoRow
	if err := withParquet(path, func(f *os.File, size int64) error {
		pf, err := parquet.OpenFile(f, size)
		if err != nil {
			return fmt.Errorf("%s: malformed parquet: %w", path, err)
		}
		if rows, err = readParquetRows[hippoRow](pf); err != nil {
			return fmt.Errorf("%s: malformed parquet (want columns hash_id, content, embedding): %w", path, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	s = &hippoStore{}
	for i, r := range rows {
		if r.HashID == nil || *r.HashID == "" {
			return nil, fmt.Errorf("%s: row %d has no hash_id", path, i)
		}
		if i == 0 {
			s.Dim = len(r.Embedding)
		}
		if len(r.Embedding) != s.Dim || s.Dim == 0 {
			return nil, fmt.Errorf("%s: row %d (%q): embedding has %d values, want %d", path, i, *r.HashID, len(r.Embedding), s.Dim)
		}
		content := ""
		if r.Content != nil {
			content = *r.Content
		}
		s.IDs = append(s.IDs, *r.HashID)
		s.Contents = append(s.Contents, content)
		for _, v := range r.Embedding {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("%s: row %d (%q): embedding holds %v", path, i, *r.HashID, v)
			}
			s.Rows = binary.LittleEndian.AppendUint32(s.Rows, math.Float32bits(v))
		}
	}
	return s, nil
}

func writeHippoStore(w io.Writer, s *hippoStore) error {
	rows := make([]hippoRow, len(s.IDs))
	for i := range s.IDs {
		id, content := s.IDs[i], s.Contents[i]
		emb := make([]float32, s.Dim)
		for j := range emb {
			emb[j] = math.Float32frombits(binary.LittleEndian.Uint32(s.Rows[(i*s.Dim+j)*4:]))
		}
		rows[i] = hippoRow{HashID: &id, Content: &content, Embedding: emb}
	}
	return parquet.Write(w, rows)
}

// ExportHippoRAG writes ix as a HippoRAG 2 save directory: the OpenIE results and the
// parquet embedding stores in a working directory. Passages imported from HippoRAG are
// written back as they were read; a fact an augmentation run added is appended to the
// extracted_triples (its two ends to extracted_entities) of every chunk it cites, as
// CrossAug merges hidden triples, and listed with its chunk ids and run in
// hidden_triplet_results_<llm>.json. HippoRAG embeds store rows it lacks on its next
// index(), so records graphloom added get no row in the stores of an imported index.
func ExportHippoRAG(ix *graphio.Index, dst string) (*Report, error) {
	rep := newReport("hipporag")
	var sc *hippoSidecar
	if blob, ok := ix.Blobs[hippoBlob]; ok {
		sc = &hippoSidecar{}
		if err := decodeSidecar(blob, sc); err != nil {
			return nil, fmt.Errorf("hipporag: export: the index's HippoRAG records are corrupt: %w", err)
		}
	}
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return nil, fmt.Errorf("hipporag: export: %w", err)
	}
	chunkAt := make(map[string]int32, len(ix.Chunks))
	for i, c := range ix.Chunks {
		chunkAt[c.ID] = int32(i)
	}
	name := func(e int32) string { return ix.Entities[e].Name }
	surface := func(e int32) string {
		if s := ix.Entities[e].Surface; len(s) > 0 && s[0] != "" {
			return s[0]
		}
		return ix.Entities[e].Name
	}
	// Run facts per chunk.
	added := map[int32][]int{}
	var runFacts []int
	for i, f := range ix.Facts {
		if f.Run == "" {
			continue
		}
		runFacts = append(runFacts, i)
		for _, c := range f.Chunks {
			added[c] = append(added[c], i)
		}
	}
	appendAdded := func(d *hippoDoc, c int32) {
		for _, fi := range added[c] {
			f := ix.Facts[fi]
			t, _ := marshal([]string{name(f.Subject), f.Predicate, name(f.Object)})
			d.Triples = append(d.Triples, t)
			for _, e := range []string{name(f.Subject), name(f.Object)} {
				if !slices.Contains(d.Entities, e) {
					d.Entities = append(d.Entities, e)
				}
			}
		}
	}
	var docs []json.RawMessage
	done := map[int32]bool{}
	if sc != nil {
		for i, raw := range sc.Docs {
			c, ok := chunkAt[sc.DocChunk[i]]
			if !ok {
				continue
			}
			if len(added[c]) == 0 || done[c] {
				docs = append(docs, raw)
				done[c] = true
				continue
			}
			done[c] = true
			o, err := decodeObject(bytes.NewReader(raw), sc.OpenIEFile)
			if err != nil {
				return nil, err
			}
			var d hippoDoc
			if err := json.Unmarshal(raw, &d); err != nil {
				return nil, err
			}
			appendAdded(&d, c)
			o.set("extracted_entities", mustMarshal(d.Entities))
			o.set("extracted_triples", mustMarshal(d.Triples))
			var buf bytes.Buffer
			if err := o.encode(&buf); err != nil {
				return nil, err
			}
			docs = append(docs, buf.Bytes())
		}
	}
	// Chunks graphloom made (a native index, or chunks added later).
	chunkEnts := make([][]string, len(ix.Chunks))
	for _, m := range ix.Mentions {
		if m.Run == "" && !done[m.Chunk] {
			chunkEnts[m.Chunk] = append(chunkEnts[m.Chunk], surface(m.Entity))
		}
	}
	chunkTriples := make([][]json.RawMessage, len(ix.Chunks))
	for _, f := range ix.Facts {
		if f.Run != "" {
			continue
		}
		for _, c := range f.Chunks {
			if !done[c] {
				t, _ := marshal([]string{surface(f.Subject), f.Predicate, surface(f.Object)})
				chunkTriples[c] = append(chunkTriples[c], t)
			}
		}
	}
	var entChars, entWords, nEnts float64
	for i := range ix.Chunks {
		c := int32(i)
		if done[c] {
			continue
		}
		p := chunkContent(&ix.Chunks[i])
		d := hippoDoc{Idx: "chunk-" + md5hex(p), Passage: p, Entities: chunkEnts[i], Triples: chunkTriples[i]}
		if d.Entities == nil {
			d.Entities = []string{}
		}
		if d.Triples == nil {
			d.Triples = []json.RawMessage{}
		}
		appendAdded(&d, c)
		for _, e := range d.Entities {
			entChars += float64(len(e))
			entWords += float64(len(strings.Fields(e)))
			nEnts++
		}
		docs = append(docs, orderedJSON("idx", d.Idx, "passage", d.Passage, "extracted_entities", d.Entities, "extracted_triples", d.Triples))
	}
	top := newObject()
	top.set("docs", mustMarshal(docs))
	if sc != nil {
		for _, k := range sc.Top.Keys {
			top.set(k, sc.Top.Records[k])
		}
	} else {
		avg := func(x float64) float64 {
			if nEnts == 0 {
				return 0
			}
			return math.Round(x/nEnts*10000) / 10000
		}
		top.set("avg_ent_chars", mustMarshal(avg(entChars)))
		top.set("avg_ent_words", mustMarshal(avg(entWords)))
	}
	label := "graphloom"
	openie := "openie_results_ner_graphloom.json"
	if sc != nil {
		openie = sc.OpenIEFile
		label = strings.TrimSuffix(strings.TrimPrefix(openie, "openie_results_ner_"), ".json")
	}
	if err := graphio.AtomicWrite(filepath.Join(dst, openie), top.encode); err != nil {
		return nil, fmt.Errorf("hipporag: export: %w", err)
	}
	rep.Counts["passages"] = len(docs)
	if len(runFacts) > 0 {
		type hidden struct {
			Triple   []string `json:"triple"`
			ChunkIDs []string `json:"chunk_ids"`
			Run      string   `json:"run"`
		}
		var hs []hidden
		for _, fi := range runFacts {
			f := ix.Facts[fi]
			var ids []string
			for _, c := range f.Chunks {
				ids = append(ids, "chunk-"+md5hex(chunkContent(&ix.Chunks[c])))
			}
			hs = append(hs, hidden{[]string{name(f.Subject), f.Predicate, name(f.Object)}, ids, f.Run})
		}
		b, err := marshal(map[string]any{"triples": hs})
		if err != nil {
			return nil, err
		}
		if err := graphio.AtomicWrite(filepath.Join(dst, "hidden_triplet_results_"+label+".json"), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
			return nil, fmt.Errorf("hipporag: export: %w", err)
		}
		rep.Counts["augmented triples"] = len(hs)
	}
	// Stores.
	wd := "graphloom_" + strings.NewReplacer("/", "_", ":", "_").Replace(ix.Meta.Embedder)
	if sc != nil && sc.WorkingDir != "" {
		wd = sc.WorkingDir
	}
	stores := map[string]*hippoStore{}
	if sc != nil {
		for kind, s := range sc.Stores {
			stores[kind] = s
		}
		missing := 0
		have := map[string]bool{}
		for _, s := range stores {
			for _, id := range s.IDs {
				have[id] = true
			}
		}
		for _, e := range ix.Entities {
			if e.Run != "" && !have[e.ID] {
				missing++
			}
		}
		for _, fi := range runFacts {
			if !have[ix.Facts[fi].ID] {
				missing++
			}
		}
		rep.drop("store rows for entities and facts graphloom added (HippoRAG embeds missing rows on its next index())", missing)
		for k, m := range ix.Embeddings {
			rep.drop("graphloom "+k.String()+" vectors (the imported HippoRAG vectors are written instead)", m.Rows())
		}
		for name, b := range sc.Extra {
			if err := os.MkdirAll(filepath.Join(dst, wd), 0o755); err != nil {
				return nil, err
			}
			if err := graphio.AtomicWrite(filepath.Join(dst, wd, name), func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
				return nil, fmt.Errorf("hipporag: export: %w", err)
			}
		}
	} else {
		mk := func(k graphio.NodeKind, ids, contents []string) {
			m := ix.Embeddings[k]
			if m == nil || m.Rows() != len(ids) {
				rep.drop(k.String()+" store rows (the index has no such vectors)", len(ids))
				return
			}
			s := &hippoStore{Dim: m.Dim, IDs: ids, Contents: contents}
			for _, v := range m.Dense() {
				s.Rows = binary.LittleEndian.AppendUint32(s.Rows, math.Float32bits(v))
			}
			stores[map[graphio.NodeKind]string{graphio.KindChunk: "chunk", graphio.KindEntity: "entity", graphio.KindFact: "fact"}[k]] = s
		}
		var ids, contents []string
		for i := range ix.Chunks {
			p := chunkContent(&ix.Chunks[i])
			ids, contents = append(ids, "chunk-"+md5hex(p)), append(contents, p)
		}
		mk(graphio.KindChunk, ids, contents)
		ids, contents = nil, nil
		for _, e := range ix.Entities {
			ids, contents = append(ids, e.ID), append(contents, e.Name)
		}
		mk(graphio.KindEntity, ids, contents)
		ids, contents = nil, nil
		for _, f := range ix.Facts {
			ids, contents = append(ids, f.ID), append(contents, graphio.FactString(name(f.Subject), f.Predicate, name(f.Object)))
		}
		mk(graphio.KindFact, ids, contents)
	}
	for _, kind := range hippoStores {
		s := stores[kind]
		if s == nil {
			continue
		}
		dir := filepath.Join(dst, wd, kind+"_embeddings")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("hipporag: export: %w", err)
		}
		if err := graphio.AtomicWrite(filepath.Join(dir, "vdb_"+kind+".parquet"), func(w io.Writer) error { return writeHippoStore(w, s) }); err != nil {
			return nil, fmt.Errorf("hipporag: export: %w", err)
		}
		rep.Counts["vectors."+kind] = len(s.IDs)
	}
	rep.drop("synonym edges (HippoRAG recomputes them from entity vectors)", len(ix.Synonyms))
	rep.drop("hyperedges", len(ix.Hyperedges))
	rep.drop("run records (the run of each added triple is in hidden_triplet_results)", len(ix.Runs))
	return rep, nil
}
