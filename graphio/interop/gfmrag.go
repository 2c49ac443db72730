package interop

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/graphloom/graphloom/graphio"
)

// GFM-RAG layout (anchors §F.4), relative to a dataset directory data/<name>/.
const (
	gfmStage1     = "processed/stage1"
	gfmDocuments  = "raw/documents.json"      // v2: {name: text}
	gfmCorpus     = "raw/dataset_corpus.json" // v1: {title: text}
	gfmMentioned  = "mentioned_in"            // entity → document relation (CrossAug's converter)
	gfmEquivalent = "equivalent"              // synonym relation
	gfmBlob       = sidecarPrefix + "gfmrag"
)

// gfmSidecar keeps an imported GFM-RAG dataset's rows verbatim.
type gfmSidecar struct {
	Version   int                 `json:"version"` // 1 (kg.txt) or 2 (nodes/relations/edges CSV)
	Nodes     [][]string          `json:"nodes"`   // v2 rows without the header
	Relations [][]string          `json:"relations"`
	Edges     [][]string          `json:"edges"`
	KG        []string            `json:"kg"` // v1 lines
	Files     map[string][]byte   `json:"files"`
	DocChunk  map[string]string   `json:"doc_chunk"` // document name → graphloom chunk id
	EdgeFact  map[int]string      `json:"edge_fact"` // edge row (v2) or kg line (v1) → fact id
	Extra     map[string][]string `json:"extra,omitempty"`
}

func readCSV(path string, header []string) ([][]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = len(header)
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(rows) > 0 && slices.Equal(rows[0], header) {
		rows = rows[1:]
	}
	return rows, nil
}

func attrs(s string) (map[string]any, error) {
	if strings.TrimSpace(s) == "" {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, err
	}
	return m, nil
}

func readJSONMap(path string) (map[string]string, *object, error) {
	o, err := readObject(path)
	if err != nil {
		return nil, nil, err
	}
	m := map[string]string{}
	for _, k := range o.Keys {
		var s string
		if err := json.Unmarshal(o.Records[k], &s); err != nil {
			return nil, nil, fmt.Errorf("%s: %q: want a string: %v", path, k, err)
		}
		m[k] = s
	}
	return m, o, nil
}

// ImportGFMRAG reads a GFM-RAG dataset directory (data/<name>): the v2 stage-1 graph
// (processed/stage1/nodes.csv, relations.csv, edges.csv with raw/documents.json) or,
// without it, the v1 one (processed/stage1/kg.txt, document2entities.json with
// raw/dataset_corpus.json). Document nodes become chunks, entity nodes entities,
// mentioned_in edges mentions, equivalent edges synonym edges and every other edge a
// fact whose chunk is its chunk_id attribute. v1's kg.txt records no provenance, so its
// facts cite no chunk.
func ImportGFMRAG(dir string) (*graphio.Index, *Report, error) {
	rep := newReport("gfmrag")
	sc := &gfmSidecar{Files: map[string][]byte{}, DocChunk: map[string]string{}, EdgeFact: map[int]string{}}
	ix := &graphio.Index{Meta: graphio.Meta{Created: time.Now().UTC().Format(time.RFC3339), Corpus: dir, Extractor: "gfmrag"}}
	b := graphio.NewBuilder(ix, "")
	stage := filepath.Join(dir, gfmStage1)
	keep := func(rel string) error {
		data, err := os.ReadFile(filepath.Join(dir, rel))
		if err == nil {
			sc.Files[rel] = data
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	addDoc := func(name, title, text string) int32 {
		d, _ := b.AddDocument(title, text, name)
		c, _ := b.AddChunk(d, 0, title, text, 0)
		sc.DocChunk[name] = ix.Chunks[c].ID
		return c
	}
	if _, err := os.Stat(filepath.Join(stage, "nodes.csv")); err == nil {
		sc.Version = 2
		p := filepath.Join(stage, "nodes.csv")
		nodes, err := readCSV(p, []string{"name", "type", "attributes"})
		if err != nil {
			return nil, nil, fmt.Errorf("gfmrag: %w", err)
		}
		if sc.Relations, err = readCSV(filepath.Join(stage, "relations.csv"), []string{"name", "attributes"}); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("gfmrag: %w", err)
		}
		edges, err := readCSV(filepath.Join(stage, "edges.csv"), []string{"source", "relation", "target", "attributes"})
		if err != nil {
			return nil, nil, fmt.Errorf("gfmrag: %w", err)
		}
		docs := map[string]string{}
		if _, err := os.Stat(filepath.Join(dir, gfmDocuments)); err == nil {
			if docs, _, err = readJSONMap(filepath.Join(dir, gfmDocuments)); err != nil {
				return nil, nil, fmt.Errorf("gfmrag: %w", err)
			}
			if err := keep(gfmDocuments); err != nil {
				return nil, nil, fmt.Errorf("gfmrag: %w", err)
			}
		}
		sc.Nodes, sc.Edges = nodes, edges
		kind := map[string]string{}
		chunkOf := map[string]int32{}
		entOf := map[string]int32{}
		other := 0
		for i, n := range nodes {
			a, err := attrs(n[2])
			if err != nil {
				return nil, nil, fmt.Errorf("gfmrag: %s: row %d (%q): attributes: %v", p, i+2, n[0], err)
			}
			kind[n[0]] = n[1]
			switch n[1] {
			case "document":
				text, _ := a["text"].(string)
				if t, ok := docs[n[0]]; ok && text == "" {
					text = t
				}
				title, _ := a["title"].(string)
				if text == "" {
					text = n[0]
				} else if title != "" && strings.HasPrefix(text, title+"\n") {
					text = strings.TrimPrefix(text, title+"\n") // CrossAug's converter: text is the whole passage
				}
				chunkOf[n[0]] = addDoc(n[0], title, text)
			case "entity":
				e := b.Entity(n[0], "")
				if e < 0 {
					return nil, nil, fmt.Errorf("gfmrag: %s: row %d: entity %q has no letter or digit", p, i+2, n[0])
				}
				entOf[n[0]] = e
			default:
				other++
			}
		}
		if other > 0 {
			rep.notice("%d nodes of other types (e.g. summary) are kept for export only", other)
		}
		ep := filepath.Join(stage, "edges.csv")
		skipped := 0
		for i, e := range edges {
			a, err := attrs(e[3])
			if err != nil {
				return nil, nil, fmt.Errorf("gfmrag: %s: row %d (%s -%s-> %s): attributes: %v", ep, i+2, e[0], e[1], e[2], err)
			}
			for _, end := range []string{e[0], e[2]} {
				if _, ok := kind[end]; !ok {
					return nil, nil, fmt.Errorf("gfmrag: %s: row %d: unknown node %q", ep, i+2, end)
				}
			}
			s, sok := entOf[e[0]]
			switch {
			case e[1] == gfmMentioned && sok && kind[e[2]] == "document":
				b.AddMention(s, chunkOf[e[2]])
			case e[1] == gfmEquivalent && sok && kind[e[2]] == "entity":
				cos := float32(0.8) // the threshold the synonym edge passed; the file keeps no score
				if v, ok := a["score"].(float64); ok {
					cos = float32(v)
				}
				b.AddSynonym(s, entOf[e[2]], cos)
			case sok && kind[e[2]] == "entity":
				var cs []int32
				if id, ok := a["chunk_id"].(string); ok {
					if c, ok := chunkOf[id]; ok {
						cs = append(cs, c)
					}
				}
				o := entOf[e[2]]
				if s == o {
					skipped++
					continue
				}
				for _, c := range cs {
					b.AddMention(s, c)
					b.AddMention(o, c)
				}
				p := graphio.NormalizeName(e[1])
				if p == "" {
					skipped++
					continue
				}
				fi, _, err := b.AddFactIDs(s, p, o, cs)
				if err != nil {
					return nil, nil, fmt.Errorf("gfmrag: %s: row %d: %w", ep, i+2, err)
				}
				sc.EdgeFact[i] = ix.Facts[fi].ID
			default:
				skipped++
			}
		}
		if skipped > 0 {
			rep.notice("%d edges are not entity–entity facts, mentions or synonyms graphloom holds; kept for export only", skipped)
		}
		rep.Counts["nodes"], rep.Counts["edges"] = len(nodes), len(edges)
	} else {
		sc.Version = 1
		kgPath := filepath.Join(stage, "kg.txt")
		data, err := os.ReadFile(kgPath)
		if err != nil {
			return nil, nil, fmt.Errorf("gfmrag: %s: neither nodes.csv nor kg.txt (is this a GFM-RAG dataset directory?): %w", stage, err)
		}
		corpus := map[string]string{}
		if _, err := os.Stat(filepath.Join(dir, gfmCorpus)); err == nil {
			if corpus, _, err = readJSONMap(filepath.Join(dir, gfmCorpus)); err != nil {
				return nil, nil, fmt.Errorf("gfmrag: %w", err)
			}
			if err := keep(gfmCorpus); err != nil {
				return nil, nil, fmt.Errorf("gfmrag: %w", err)
			}
		}
		chunkOf := map[string]int32{}
		var corpusObj *object
		if o, err := readObject(filepath.Join(dir, gfmCorpus)); err == nil {
			corpusObj = o
		}
		if corpusObj != nil {
			for _, title := range corpusObj.Keys {
				chunkOf[title] = addDoc(title, title, corpus[title])
			}
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		skipped := 0
		for i, l := range lines {
			if strings.TrimSpace(l) == "" {
				continue
			}
			parts := strings.Split(l, ",")
			if len(parts) != 3 {
				return nil, nil, fmt.Errorf("gfmrag: %s:%d: want head,relation,tail, got %d fields", kgPath, i+1, len(parts))
			}
			sc.KG = append(sc.KG, l)
			if parts[1] == gfmEquivalent {
				s, o := b.Entity(parts[0], ""), b.Entity(parts[2], "")
				if s >= 0 && o >= 0 {
					b.AddSynonym(s, o, 0.8)
				}
				continue
			}
			s, p, o := b.Entity(parts[0], ""), graphio.NormalizeName(parts[1]), b.Entity(parts[2], "")
			if s < 0 || o < 0 || s == o || p == "" { // as edges.csv's: kept for export only
				skipped++
				continue
			}
			fi, _, err := b.AddFactIDs(s, p, o, nil)
			if err != nil {
				return nil, nil, fmt.Errorf("gfmrag: %s:%d: %w", kgPath, i+1, err)
			}
			sc.EdgeFact[len(sc.KG)-1] = ix.Facts[fi].ID
		}
		if skipped > 0 {
			rep.notice("%d lines of %s are not facts graphloom holds (an empty or symbol-only head, tail or relation, or head = tail); kept for export only", skipped, kgPath)
		}
		d2e := filepath.Join(stage, "document2entities.json")
		if o, err := readObject(d2e); err == nil {
			if err := keep(filepath.Join(gfmStage1, "document2entities.json")); err != nil {
				return nil, nil, fmt.Errorf("gfmrag: %w", err)
			}
			for _, doc := range o.Keys {
				var ents []string
				if err := json.Unmarshal(o.Records[doc], &ents); err != nil {
					return nil, nil, fmt.Errorf("gfmrag: %s: %q: want a list of entities: %v", d2e, doc, err)
				}
				c, ok := chunkOf[doc]
				if !ok {
					continue
				}
				for _, e := range ents {
					if id := b.Entity(e, ""); id >= 0 {
						b.AddMention(id, c)
					}
				}
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("gfmrag: %w", err)
		}
		rep.notice("GFM-RAG v1's kg.txt records no source passage: its %d facts cite no chunk", len(ix.Facts))
		rep.Counts["kg lines"] = len(sc.KG)
	}
	if len(ix.Chunks) == 0 {
		return nil, nil, fmt.Errorf("gfmrag: %s: no documents", dir)
	}
	blob, err := encodeSidecar(sc)
	if err != nil {
		return nil, nil, err
	}
	ix.Blobs = map[string][]byte{gfmBlob: blob}
	rep.Counts["chunks"], rep.Counts["entities"], rep.Counts["facts"], rep.Counts["synonym edges"] = len(ix.Chunks), len(ix.Entities), len(ix.Facts), len(ix.Synonyms)
	if err := ix.Validate(); err != nil {
		return nil, nil, fmt.Errorf("gfmrag: %s: %w", dir, err)
	}
	return ix, rep, nil
}

// ExportGFMRAG writes ix as a GFM-RAG dataset directory in both stage-1 layouts, as
// CrossAug's converter does: v2 (raw/documents.json; processed/stage1/nodes.csv,
// relations.csv, edges.csv) and v1 (raw/dataset_corpus.json; processed/stage1/kg.txt,
// document2entities.json). Rows imported from GFM-RAG are written back as read; facts
// an augmentation run added become one edge per cited chunk with attributes
// {chunk_id, source: "graphloom_augmented", run}.
func ExportGFMRAG(ix *graphio.Index, dir string) (*Report, error) {
	rep := newReport("gfmrag")
	var sc *gfmSidecar
	if blob, ok := ix.Blobs[gfmBlob]; ok {
		sc = &gfmSidecar{}
		if err := decodeSidecar(blob, sc); err != nil {
			return nil, fmt.Errorf("gfmrag: export: the index's GFM-RAG records are corrupt: %w", err)
		}
	}
	for _, d := range []string{"raw", gfmStage1} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, fmt.Errorf("gfmrag: export: %w", err)
		}
	}
	name := func(e int32) string { return ix.Entities[e].Name }
	// Document names: imported names, else the chunk id (as CrossAug's converter).
	docName := make([]string, len(ix.Chunks))
	byChunk := map[string]string{}
	if sc != nil {
		for n, id := range sc.DocChunk {
			if old, ok := byChunk[id]; !ok || n < old {
				byChunk[id] = n
			}
		}
	}
	for i, c := range ix.Chunks {
		docName[i] = c.ID
		if n, ok := byChunk[c.ID]; ok {
			docName[i] = n
		}
	}
	files := map[string][]byte{}
	var nodes, relations, edges [][]string
	var kgLines []string
	if sc != nil {
		for k, v := range sc.Files {
			files[k] = v
		}
		nodes, relations, edges, kgLines = sc.Nodes, sc.Relations, sc.Edges, sc.KG
	}
	have := map[string]bool{}
	facts := map[string]bool{}
	for _, f := range ix.Facts {
		facts[f.ID] = true
	}
	if sc != nil {
		// Drop kept rows whose fact is gone (a rolled-back run cannot reach them, but be exact).
		var kept [][]string
		for i, e := range edges {
			if id, ok := sc.EdgeFact[i]; ok && !facts[id] {
				continue
			}
			kept = append(kept, e)
		}
		edges = kept
		for _, n := range nodes {
			have[n[0]] = true
		}
	}
	relSeen := map[string]bool{}
	for _, r := range relations {
		relSeen[r[0]] = true
	}
	addRel := func(r string) {
		if !relSeen[r] {
			relSeen[r] = true
			relations = append(relations, []string{r, "{}"})
		}
	}
	attr := func(kv ...any) string { return string(orderedJSON(kv...)) }
	native := sc == nil || sc.Version == 1
	if native {
		nodes, edges = nil, nil
		for i, c := range ix.Chunks {
			nodes = append(nodes, []string{docName[i], "document", attr("idx", c.ID, "title", c.Title, "text", chunkContent(&c))})
		}
		for _, e := range ix.Entities {
			nodes = append(nodes, []string{e.Name, "entity", "{}"})
		}
		for _, m := range ix.Mentions {
			if m.Run == "" {
				addRel(gfmMentioned)
				edges = append(edges, []string{name(m.Entity), gfmMentioned, docName[m.Chunk], attr("chunk_id", docName[m.Chunk], "source", "extracted_entities")})
			}
		}
		for _, f := range ix.Facts {
			if f.Run != "" {
				continue
			}
			addRel(f.Predicate)
			for _, c := range f.Chunks {
				edges = append(edges, []string{name(f.Subject), f.Predicate, name(f.Object), attr("chunk_id", docName[c], "source", "openie_triple")})
			}
			if len(f.Chunks) == 0 {
				edges = append(edges, []string{name(f.Subject), f.Predicate, name(f.Object), "{}"})
			}
		}
		for _, s := range ix.Synonyms {
			if s.Run == "" {
				addRel(gfmEquivalent)
				edges = append(edges, []string{name(s.A), gfmEquivalent, name(s.B), attr("score", s.Cosine)})
			}
		}
	} else {
		for _, e := range ix.Entities {
			if !have[e.Name] {
				nodes = append(nodes, []string{e.Name, "entity", attr("run", e.Run)})
			}
		}
	}
	added := 0
	for _, f := range ix.Facts {
		if f.Run == "" {
			continue
		}
		addRel(f.Predicate)
		for _, c := range f.Chunks {
			edges = append(edges, []string{name(f.Subject), f.Predicate, name(f.Object), attr("chunk_id", docName[c], "source", "graphloom_augmented", "run", f.Run)})
			added++
		}
	}
	rep.Counts["augmented edges"] = added
	// CSV files.
	writeCSV := func(rel string, header []string, rows [][]string) error {
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		if err := w.Write(header); err != nil {
			return err
		}
		if err := w.WriteAll(rows); err != nil {
			return err
		}
		files[rel] = buf.Bytes()
		return nil
	}
	if err := writeCSV(gfmStage1+"/nodes.csv", []string{"name", "type", "attributes"}, nodes); err != nil {
		return nil, err
	}
	if err := writeCSV(gfmStage1+"/relations.csv", []string{"name", "attributes"}, relations); err != nil {
		return nil, err
	}
	if err := writeCSV(gfmStage1+"/edges.csv", []string{"source", "relation", "target", "attributes"}, edges); err != nil {
		return nil, err
	}
	if native {
		docs, corpus, d2e := newObject(), newObject(), newObject()
		ents := make([][]string, len(ix.Chunks))
		for _, m := range ix.Mentions {
			if !slices.Contains(ents[m.Chunk], name(m.Entity)) {
				ents[m.Chunk] = append(ents[m.Chunk], name(m.Entity))
			}
		}
		used, renamed := map[string]bool{}, 0
		for i := range ix.Chunks {
			c := &ix.Chunks[i]
			docs.set(docName[i], mustMarshal(chunkContent(c)))
			title := c.Title
			if title == "" {
				title = docName[i]
			}
			// dataset_corpus.json is keyed by title: a second passage of the same
			// title would overwrite the first (two README.md files without a heading).
			if used[title] {
				base := title
				for n := 2; used[title]; n++ {
					title = fmt.Sprintf("%s (%d)", base, n)
				}
				renamed++
			}
			used[title] = true
			corpus.set(title, mustMarshal(c.Text))
			if ents[i] == nil {
				ents[i] = []string{}
			}
			d2e.set(title, mustMarshal(ents[i]))
		}
		if renamed > 0 {
			rep.notice("%d passages share a title with an earlier one: dataset_corpus.json, keyed by title, has them as \"TITLE (2)\", \"TITLE (3)\", …", renamed)
		}
		var kb strings.Builder
		if sc == nil {
			for _, f := range ix.Facts {
				fmt.Fprintf(&kb, "%s,%s,%s\n", name(f.Subject), f.Predicate, name(f.Object))
			}
			for _, s := range ix.Synonyms {
				fmt.Fprintf(&kb, "%s,%s,%s\n", name(s.A), gfmEquivalent, name(s.B))
			}
		} else {
			for i, l := range kgLines {
				if id, ok := sc.EdgeFact[i]; ok && !facts[id] {
					continue
				}
				kb.WriteString(l + "\n")
			}
			for _, f := range ix.Facts {
				if f.Run != "" {
					fmt.Fprintf(&kb, "%s,%s,%s\n", name(f.Subject), f.Predicate, name(f.Object))
				}
			}
		}
		files[gfmStage1+"/kg.txt"] = []byte(kb.String())
		for rel, o := range map[string]*object{gfmDocuments: docs, gfmCorpus: corpus, gfmStage1 + "/document2entities.json": d2e} {
			if _, ok := files[rel]; ok && sc != nil {
				continue // imported: kept verbatim
			}
			var buf bytes.Buffer
			if err := o.encode(&buf); err != nil {
				return nil, err
			}
			files[rel] = buf.Bytes()
		}
	}
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, fmt.Errorf("gfmrag: export: %w", err)
		}
		if err := graphio.AtomicWrite(p, func(w io.Writer) error { _, err := w.Write(data); return err }); err != nil {
			return nil, fmt.Errorf("gfmrag: export: %w", err)
		}
	}
	rep.Counts["nodes"], rep.Counts["edges"], rep.Counts["relations"] = len(nodes), len(edges), len(relations)
	rep.drop("hyperedges", len(ix.Hyperedges))
	rep.drop("fact weights (GFM-RAG edges are unweighted)", len(ix.Facts))
	rep.drop("run records (each augmented edge names its run)", len(ix.Runs))
	for k, m := range ix.Embeddings {
		rep.drop(k.String()+" vectors (GFM-RAG embeds with its own model)", m.Rows())
	}
	return rep, nil
}
