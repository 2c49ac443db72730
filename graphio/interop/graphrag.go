package interop

import (
	"bytes"
	"crypto/rand"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/graphloom/graphloom/graphio"
)

// Microsoft GraphRAG output tables (v3; v2 read too), anchors §F.2. Columns are
// optional, as pandas writes them.
type (
	grDocument struct {
		ID              *string  `parquet:"id,optional"`
		HumanReadableID *int64   `parquet:"human_readable_id,optional"`
		Title           *string  `parquet:"title,optional"`
		Text            *string  `parquet:"text,optional"`
		TextUnitIDs     []string `parquet:"text_unit_ids,optional,list" parquet-element:",optional"`
		CreationDate    *string  `parquet:"creation_date,optional"`
	}
	grTextUnit struct {
		ID              *string  `parquet:"id,optional"`
		HumanReadableID *int64   `parquet:"human_readable_id,optional"`
		Text            *string  `parquet:"text,optional"`
		NTokens         *int64   `parquet:"n_tokens,optional"`
		DocumentID      *string  `parquet:"document_id,optional"`
		DocumentIDs     []string `parquet:"document_ids,optional,list" parquet-element:",optional"` // v2
		EntityIDs       []string `parquet:"entity_ids,optional,list" parquet-element:",optional"`
		RelationshipIDs []string `parquet:"relationship_ids,optional,list" parquet-element:",optional"`
		CovariateIDs    []string `parquet:"covariate_ids,optional,list" parquet-element:",optional"`
	}
	grEntity struct {
		ID              *string  `parquet:"id,optional"`
		HumanReadableID *int64   `parquet:"human_readable_id,optional"`
		Title           *string  `parquet:"title,optional"`
		Type            *string  `parquet:"type,optional"`
		Description     *string  `parquet:"description,optional"`
		TextUnitIDs     []string `parquet:"text_unit_ids,optional,list" parquet-element:",optional"`
		Frequency       *int64   `parquet:"frequency,optional"`
		Degree          *int64   `parquet:"degree,optional"`
	}
	grRelationship struct {
		ID              *string  `parquet:"id,optional"`
		HumanReadableID *int64   `parquet:"human_readable_id,optional"`
		Source          *string  `parquet:"source,optional"`
		Target          *string  `parquet:"target,optional"`
		Description     *string  `parquet:"description,optional"`
		Weight          *float64 `parquet:"weight,optional"`
		CombinedDegree  *int64   `parquet:"combined_degree,optional"`
		TextUnitIDs     []string `parquet:"text_unit_ids,optional,list" parquet-element:",optional"`
	}
)

// The rows an export writes: required columns, because parquet-go writes a pointer to
// a zero value in an optional column as null (human_readable_id 0 would be lost).
type (
	grDocumentOut struct {
		ID              string   `parquet:"id"`
		HumanReadableID int64    `parquet:"human_readable_id"`
		Title           string   `parquet:"title"`
		Text            string   `parquet:"text"`
		TextUnitIDs     []string `parquet:"text_unit_ids,list"`
		CreationDate    string   `parquet:"creation_date"`
	}
	grTextUnitOut struct {
		ID              string   `parquet:"id"`
		HumanReadableID int64    `parquet:"human_readable_id"`
		Text            string   `parquet:"text"`
		NTokens         int64    `parquet:"n_tokens"`
		DocumentID      string   `parquet:"document_id"`
		EntityIDs       []string `parquet:"entity_ids,list"`
		RelationshipIDs []string `parquet:"relationship_ids,list"`
		CovariateIDs    []string `parquet:"covariate_ids,list"`
	}
	grEntityOut struct {
		ID              string   `parquet:"id"`
		HumanReadableID int64    `parquet:"human_readable_id"`
		Title           string   `parquet:"title"`
		Type            string   `parquet:"type"`
		Description     string   `parquet:"description"`
		TextUnitIDs     []string `parquet:"text_unit_ids,list"`
		Frequency       int64    `parquet:"frequency"`
		Degree          int64    `parquet:"degree"`
	}
	grRelationshipOut struct {
		ID              string   `parquet:"id"`
		HumanReadableID int64    `parquet:"human_readable_id"`
		Source          string   `parquet:"source"`
		Target          string   `parquet:"target"`
		Description     string   `parquet:"description"`
		Weight          float64  `parquet:"weight"`
		CombinedDegree  int64    `parquet:"combined_degree"`
		TextUnitIDs     []string `parquet:"text_unit_ids,list"`
	}
)

func i64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func outRows[T, U any](rows []T, f func(T) U) []U {
	out := make([]U, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

// GraphRAGRelation is the predicate of facts imported from GraphRAG relationships,
// which have a description but no predicate.
const GraphRAGRelation = "related to"

const graphragBlob = sidecarPrefix + "graphrag"

var grKept = []string{"communities", "community_reports", "covariates"}

type graphragSidecar struct {
	Documents     []grDocument      `json:"documents"`
	TextUnits     []grTextUnit      `json:"text_units"`
	Entities      []grEntity        `json:"entities"`
	Relationships []grRelationship  `json:"relationships"`
	UnitChunk     []string          `json:"unit_chunk"`   // graphloom chunk id of each text unit
	RelFact       []string          `json:"rel_fact"`     // graphloom fact id of each relationship ("" if none)
	Files         map[string][]byte `json:"files"`        // communities, community_reports, covariates, verbatim
	Unknown       []string          `json:"unknown_cols"` // columns of the input the v3 schema lacks
}

func s(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func ptr[T any](v T) *T { return &v }

func readTable[T any](path string, sc *graphragSidecar, known []string) (rows []T, err error) {
	err = withParquet(path, func(f *os.File, size int64) error {
		pf, err := parquet.OpenFile(f, size)
		if err != nil {
			return fmt.Errorf("%s: malformed parquet: %w", path, err)
		}
		for _, fld := range pf.Schema().Fields() {
			if !slices.Contains(known, fld.Name()) {
				sc.Unknown = append(sc.Unknown, filepath.Base(path)+":"+fld.Name())
			}
		}
		if rows, err = readParquetRows[T](pf); err != nil {
			return fmt.Errorf("%s: malformed parquet: %w", path, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// readParquetRows reads every row of pf a batch at a time. parquet.Read allocates the
// footer's row count up front: a corrupt or hostile count (10¹⁰ in a small file) asks
// for terabytes and the runtime's out-of-memory is fatal, past any recover. Batches
// grow the slice only with rows actually decoded; a count the pages cannot back ends
// in a decoding error.
func readParquetRows[T any](pf *parquet.File) ([]T, error) {
	r := parquet.NewGenericReader[T](pf)
	defer r.Close()
	buf := make([]T, 1024)
	var rows []T
	for {
		n, err := r.Read(buf)
		rows = append(rows, buf[:n]...)
		switch {
		case errors.Is(err, io.EOF):
			if int64(len(rows)) != pf.NumRows() {
				return nil, fmt.Errorf("the footer counts %d rows, the pages hold %d", pf.NumRows(), len(rows))
			}
			return rows, nil
		case err != nil:
			return nil, err
		case n == 0:
			return nil, fmt.Errorf("no progress after %d rows of %d", len(rows), pf.NumRows())
		}
	}
}

// withParquet opens a parquet file and hands it to read, turning the panics the
// parquet decoder raises on some corrupt inputs into errors naming the file.
func withParquet(path string, read func(f *os.File, size int64) error) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: malformed parquet: %v", path, r)
		}
	}()
	return read(f, st.Size())
}

// ImportGraphRAG reads Microsoft GraphRAG's output directory (v3 tables; v2's
// document_ids is read too): documents, text_units, entities and relationships become
// documents, chunks (titled by their document), entities with mentions, and facts
// (predicate "related to": GraphRAG relationships carry a description, kept for
// export, and no predicate). Communities, community reports and covariates are kept
// verbatim for export.
func ImportGraphRAG(dir string) (*graphio.Index, *Report, error) {
	rep := newReport("graphrag")
	sc := &graphragSidecar{Files: map[string][]byte{}}
	var err error
	p := func(name string) string { return filepath.Join(dir, name+".parquet") }
	if sc.Documents, err = readTable[grDocument](p("documents"), sc, []string{"id", "human_readable_id", "title", "text", "text_unit_ids", "creation_date", "raw_data", "metadata"}); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("graphrag: %w", err)
	}
	if sc.TextUnits, err = readTable[grTextUnit](p("text_units"), sc, []string{"id", "human_readable_id", "text", "n_tokens", "document_id", "document_ids", "entity_ids", "relationship_ids", "covariate_ids"}); err != nil {
		return nil, nil, fmt.Errorf("graphrag: %w (is this a GraphRAG output directory?)", err)
	}
	if sc.Entities, err = readTable[grEntity](p("entities"), sc, []string{"id", "human_readable_id", "title", "type", "description", "text_unit_ids", "frequency", "degree"}); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("graphrag: %w", err)
	}
	if sc.Relationships, err = readTable[grRelationship](p("relationships"), sc, []string{"id", "human_readable_id", "source", "target", "description", "weight", "combined_degree", "text_unit_ids"}); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("graphrag: %w", err)
	}
	for _, name := range grKept {
		if b, err := os.ReadFile(p(name)); err == nil {
			sc.Files[name] = b
		}
	}
	ix := &graphio.Index{Meta: graphio.Meta{Created: time.Now().UTC().Format(time.RFC3339), Corpus: dir, Extractor: "graphrag"}}
	b := graphio.NewBuilder(ix, "")
	docAt := map[string]int32{}
	for i, d := range sc.Documents {
		if s(d.ID) == "" {
			return nil, nil, fmt.Errorf("graphrag: %s: row %d has no id", p("documents"), i)
		}
		docAt[s(d.ID)] = int32(len(ix.Documents))
		ix.Documents = append(ix.Documents, graphio.Document{ID: s(d.ID), Title: s(d.Title), Source: fmt.Sprintf("documents.parquet#%d", i), Count: 1})
	}
	unitAt := map[string]int32{}
	order := map[int32]int32{}
	for i, u := range sc.TextUnits {
		id := s(u.ID)
		if id == "" || s(u.Text) == "" {
			return nil, nil, fmt.Errorf("graphrag: %s: row %d has no id or text", p("text_units"), i)
		}
		docID := s(u.DocumentID)
		if docID == "" && len(u.DocumentIDs) > 0 {
			docID = u.DocumentIDs[0]
		}
		d, ok := docAt[docID]
		if !ok {
			d = int32(len(ix.Documents))
			docAt[docID] = d
			ix.Documents = append(ix.Documents, graphio.Document{ID: docID, Source: "text_units.parquet", Count: 1})
			rep.notice("text unit %q names document %q, which documents.parquet lacks", id, docID)
		}
		var tokens int32
		if u.NTokens != nil && *u.NTokens >= 0 && *u.NTokens < 1<<31 {
			tokens = int32(*u.NTokens)
		}
		c, _ := b.AddChunk(d, order[d], ix.Documents[d].Title, s(u.Text), tokens)
		order[d]++
		unitAt[id] = c
		sc.UnitChunk = append(sc.UnitChunk, ix.Chunks[c].ID)
	}
	entAt := map[string]int32{}
	for i, e := range sc.Entities {
		id := b.Entity(s(e.Title), s(e.Type))
		if id < 0 {
			return nil, nil, fmt.Errorf("graphrag: %s: row %d: entity title %q has no letter or digit", p("entities"), i, s(e.Title))
		}
		entAt[s(e.Title)] = id
		for _, u := range e.TextUnitIDs {
			if c, ok := unitAt[u]; ok {
				b.AddMention(id, c)
			}
		}
	}
	weights := map[int32]float64{}
	for i, r := range sc.Relationships {
		sid, ok1 := entAt[s(r.Source)]
		oid, ok2 := entAt[s(r.Target)]
		if !ok1 || !ok2 {
			return nil, nil, fmt.Errorf("graphrag: %s: row %d: relationship %q → %q names an entity entities.parquet lacks", p("relationships"), i, s(r.Source), s(r.Target))
		}
		var cs []int32
		for _, u := range r.TextUnitIDs {
			if c, ok := unitAt[u]; ok {
				cs = append(cs, c)
				b.AddMention(sid, c)
				b.AddMention(oid, c)
			}
		}
		if sid == oid {
			sc.RelFact = append(sc.RelFact, "")
			continue
		}
		fi, _, err := b.AddFactIDs(sid, GraphRAGRelation, oid, cs)
		if err != nil {
			return nil, nil, fmt.Errorf("graphrag: %s: row %d: %w", p("relationships"), i, err)
		}
		w := 1.0
		if r.Weight != nil {
			w = *r.Weight
		}
		weights[fi] += w
		sc.RelFact = append(sc.RelFact, ix.Facts[fi].ID)
	}
	for fi, w := range weights {
		ix.Facts[fi].Weight = float32(w)
	}
	if len(sc.Unknown) > 0 {
		rep.notice("columns outside GraphRAG v3's schema are not kept: %s", strings.Join(sc.Unknown, ", "))
	}
	blob, err := encodeSidecar(sc)
	if err != nil {
		return nil, nil, err
	}
	ix.Blobs = map[string][]byte{graphragBlob: blob}
	rep.Counts["documents"], rep.Counts["text units"], rep.Counts["entities"], rep.Counts["relationships"] = len(sc.Documents), len(sc.TextUnits), len(sc.Entities), len(sc.Relationships)
	rep.Counts["chunks"], rep.Counts["facts"] = len(ix.Chunks), len(ix.Facts)
	if err := ix.Validate(); err != nil {
		return nil, nil, fmt.Errorf("graphrag: %s: %w", dir, err)
	}
	return ix, rep, nil
}

func uuid4() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// ExportGraphRAG writes ix as GraphRAG v3 output tables (documents, text_units,
// entities, relationships). Rows imported from GraphRAG are written back; facts an
// augmentation run added become relationships (new uuid, description naming the run
// and "augmented", text_unit_ids = the cited text units, which list them in their
// relationship_ids), so GraphRAG's BYOG workflows (create_communities,
// create_community_reports) can rebuild the communities, which are kept verbatim and
// are stale after an augmentation.
func ExportGraphRAG(ix *graphio.Index, dir string) (*Report, error) {
	rep := newReport("graphrag")
	sc := &graphragSidecar{}
	imported := false
	if blob, ok := ix.Blobs[graphragBlob]; ok {
		if err := decodeSidecar(blob, sc); err != nil {
			return nil, fmt.Errorf("graphrag: export: the index's GraphRAG records are corrupt: %w", err)
		}
		imported = true
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("graphrag: export: %w", err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	chunkUnit := map[string]int{} // graphloom chunk id → text unit row
	for i, id := range sc.UnitChunk {
		if _, ok := chunkUnit[id]; !ok {
			chunkUnit[id] = i
		}
	}
	docs, units, ents, rels := sc.Documents, sc.TextUnits, sc.Entities, sc.Relationships
	unitOf := make([]int, len(ix.Chunks))
	for i, c := range ix.Chunks {
		if u, ok := chunkUnit[c.ID]; ok {
			unitOf[i] = u
			continue
		}
		// A chunk graphloom made: a new text unit (id = sha512 of its text, as GraphRAG).
		sum := sha512.Sum512([]byte(c.Text))
		doc := ix.Documents[c.Doc]
		unitOf[i] = len(units)
		units = append(units, grTextUnit{ID: ptr(hex.EncodeToString(sum[:])), HumanReadableID: ptr(int64(len(units))), Text: ptr(c.Text),
			NTokens: ptr(int64(c.Tokens)), DocumentID: ptr(doc.ID)})
	}
	if !imported {
		docText := make([][]string, len(ix.Documents))
		docUnits := make([][]string, len(ix.Documents))
		for i, c := range ix.Chunks {
			docText[c.Doc] = append(docText[c.Doc], c.Text)
			docUnits[c.Doc] = append(docUnits[c.Doc], s(units[unitOf[i]].ID))
		}
		for i, d := range ix.Documents {
			docs = append(docs, grDocument{ID: ptr(d.ID), HumanReadableID: ptr(int64(i)), Title: ptr(d.Title), Text: ptr(strings.Join(docText[i], "\n")),
				TextUnitIDs: docUnits[i], CreationDate: ptr(now)})
		}
	}
	title := func(e int32) string {
		if sf := ix.Entities[e].Surface; len(sf) > 0 && sf[0] != "" {
			return strings.ToUpper(sf[0]) // GraphRAG's titles are upper case
		}
		return strings.ToUpper(ix.Entities[e].Name)
	}
	// Entities: imported rows by normalised title; new ones from the model.
	entRow := map[string]int{}
	for i, e := range ents {
		if _, ok := entRow[graphio.NormalizeName(s(e.Title))]; !ok {
			entRow[graphio.NormalizeName(s(e.Title))] = i
		}
	}
	entTitle := make([]string, len(ix.Entities))
	degree := make([]int64, len(ix.Entities))
	for _, f := range ix.Facts {
		degree[f.Subject]++
		degree[f.Object]++
	}
	mentions := make([][]string, len(ix.Entities))
	for _, m := range ix.Mentions {
		id := s(units[unitOf[m.Chunk]].ID)
		if !slices.Contains(mentions[m.Entity], id) {
			mentions[m.Entity] = append(mentions[m.Entity], id)
		}
	}
	for i, e := range ix.Entities {
		if r, ok := entRow[e.Name]; ok && imported {
			entTitle[i] = s(ents[r].Title)
			continue
		}
		entTitle[i] = title(int32(i))
		desc := ""
		if e.Run != "" {
			desc = fmt.Sprintf("%s was introduced by graphloom CrossAug run %s (augmented)", entTitle[i], e.Run)
		}
		ents = append(ents, grEntity{ID: ptr(uuid4()), HumanReadableID: ptr(int64(len(ents))), Title: ptr(entTitle[i]), Type: ptr(e.Type),
			Description: ptr(desc), TextUnitIDs: mentions[i], Frequency: ptr(int64(len(mentions[i]))), Degree: ptr(degree[i])})
	}
	// Relationships.
	relFact := map[string]bool{}
	for _, id := range sc.RelFact {
		relFact[id] = true
	}
	unitRels := map[int][]string{}
	added := 0
	for _, f := range ix.Facts {
		if imported && relFact[f.ID] && f.Run == "" {
			continue
		}
		var tus []string
		for _, c := range f.Chunks {
			tus = append(tus, s(units[unitOf[c]].ID))
		}
		desc := fmt.Sprintf("%s %s %s", entTitle[f.Subject], f.Predicate, entTitle[f.Object])
		if f.Run != "" {
			desc += fmt.Sprintf(" (added by graphloom CrossAug run %s, augmented)", f.Run)
			added++
		}
		id := uuid4()
		for _, c := range f.Chunks {
			unitRels[unitOf[c]] = append(unitRels[unitOf[c]], id)
		}
		rels = append(rels, grRelationship{ID: ptr(id), HumanReadableID: ptr(int64(len(rels))), Source: ptr(entTitle[f.Subject]), Target: ptr(entTitle[f.Object]),
			Description: ptr(desc), Weight: ptr(float64(f.Weight)), CombinedDegree: ptr(degree[f.Subject] + degree[f.Object]), TextUnitIDs: tus})
	}
	for u, ids := range unitRels {
		units[u].RelationshipIDs = append(slices.Clone(units[u].RelationshipIDs), ids...)
	}
	rep.Counts["augmented relationships"] = added
	write := func(name string, fn func(w io.Writer) error) error {
		if err := graphio.AtomicWrite(filepath.Join(dir, name+".parquet"), fn); err != nil {
			return fmt.Errorf("graphrag: export: %w", err)
		}
		return nil
	}
	docRows := outRows(docs, func(d grDocument) grDocumentOut {
		return grDocumentOut{s(d.ID), i64(d.HumanReadableID), s(d.Title), s(d.Text), nonNil(d.TextUnitIDs), s(d.CreationDate)}
	})
	unitRows := outRows(units, func(u grTextUnit) grTextUnitOut {
		doc := s(u.DocumentID)
		if doc == "" && len(u.DocumentIDs) > 0 {
			doc = u.DocumentIDs[0] // v2 → v3
		}
		return grTextUnitOut{s(u.ID), i64(u.HumanReadableID), s(u.Text), i64(u.NTokens), doc, nonNil(u.EntityIDs), nonNil(u.RelationshipIDs), nonNil(u.CovariateIDs)}
	})
	entRows := outRows(ents, func(e grEntity) grEntityOut {
		return grEntityOut{s(e.ID), i64(e.HumanReadableID), s(e.Title), s(e.Type), s(e.Description), nonNil(e.TextUnitIDs), i64(e.Frequency), i64(e.Degree)}
	})
	relRows := outRows(rels, func(r grRelationship) grRelationshipOut {
		w := 0.0
		if r.Weight != nil {
			w = *r.Weight
		}
		return grRelationshipOut{s(r.ID), i64(r.HumanReadableID), s(r.Source), s(r.Target), s(r.Description), w, i64(r.CombinedDegree), nonNil(r.TextUnitIDs)}
	})
	if err := write("documents", func(w io.Writer) error { return parquet.Write(w, docRows) }); err != nil {
		return nil, err
	}
	if err := write("text_units", func(w io.Writer) error { return parquet.Write(w, unitRows) }); err != nil {
		return nil, err
	}
	if err := write("entities", func(w io.Writer) error { return parquet.Write(w, entRows) }); err != nil {
		return nil, err
	}
	if err := write("relationships", func(w io.Writer) error { return parquet.Write(w, relRows) }); err != nil {
		return nil, err
	}
	for name, data := range sc.Files {
		if err := write(name, func(w io.Writer) error { _, err := io.Copy(w, bytes.NewReader(data)); return err }); err != nil {
			return nil, err
		}
	}
	if len(sc.Files) > 0 && len(ix.Runs) > 0 {
		rep.notice("communities and community reports are as imported; after an augmentation rerun GraphRAG's create_communities and create_community_reports workflows")
	}
	rep.Counts["documents"], rep.Counts["text units"], rep.Counts["entities"], rep.Counts["relationships"] = len(docs), len(units), len(ents), len(rels)
	rep.drop("columns outside GraphRAG v3's schema", len(sc.Unknown))
	rep.drop("synonym edges", len(ix.Synonyms))
	rep.drop("hyperedges", len(ix.Hyperedges))
	rep.drop("run records (each augmented relationship names its run)", len(ix.Runs))
	if !imported {
		rep.notice("graphloom builds no communities; run GraphRAG's create_communities and create_community_reports workflows (BYOG)")
	}
	for k, m := range ix.Embeddings {
		rep.drop(k.String()+" vectors (GraphRAG keeps vectors in its own vector store)", m.Rows())
	}
	return rep, nil
}
