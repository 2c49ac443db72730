package interoptest

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// GFMDoc is a passage of a GFM-RAG dataset with its entities and triples.
type GFMDoc struct {
	Title, Text string
	Entities    []string
	Triples     [][3]string
}

// GFMRAG describes a GFM-RAG dataset directory.
type GFMRAG struct {
	Docs     []GFMDoc
	Synonyms [][2]string
}

// GFMSample is the harbour passages as CrossAug's converter writes them.
func GFMSample() *GFMRAG {
	return &GFMRAG{Docs: []GFMDoc{
		{"Port Keswyn", "Port Keswyn is a harbour town on the Brackwater Coast.", []string{"port keswyn", "brackwater coast"}, [][3]string{{"port keswyn", "is a harbour town on", "brackwater coast"}}},
		{"Tomas Brell", "Tomas Brell was born in Fennmouth. He bought the brig Gannet.", []string{"tomas brell", "fennmouth", "gannet"}, [][3]string{{"tomas brell", "born in", "fennmouth"}, {"tomas brell", "bought", "gannet"}}},
		{"Gannet", "The brig Gannet was wrecked on Gull Rock.", []string{"gannet", "gull rock"}, [][3]string{{"gannet", "wrecked on", "gull rock"}}},
	}, Synonyms: [][2]string{{"gannet", "brig gannet"}}}
}

// DocName is the document node name CrossAug's converter uses: the HippoRAG chunk id.
func (d GFMDoc) DocName() string { return "chunk-" + md5hex(d.Title+"\n"+d.Text) }

func writeCSV(path string, rows [][]string) error {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.WriteAll(rows); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// WriteV2 writes the v2 layout: raw/documents.json and processed/stage1/{nodes,
// relations,edges}.csv.
func (g *GFMRAG) WriteV2(dir string) error {
	stage := filepath.Join(dir, "processed", "stage1")
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "raw"), 0o755); err != nil {
		return err
	}
	docs := map[string]string{}
	nodes := [][]string{{"name", "type", "attributes"}}
	edges := [][]string{{"source", "relation", "target", "attributes"}}
	rels := [][]string{{"name", "attributes"}}
	seenEnt, seenRel := map[string]bool{}, map[string]bool{}
	rel := func(r string) {
		if !seenRel[r] {
			seenRel[r] = true
			rels = append(rels, []string{r, "{}"})
		}
	}
	ent := func(e string) {
		if !seenEnt[e] {
			seenEnt[e] = true
			nodes = append(nodes, []string{e, "entity", "{}"})
		}
	}
	for _, d := range g.Docs {
		name := d.DocName()
		docs[name] = d.Title + "\n" + d.Text
		nodes = append(nodes, []string{name, "document", js(map[string]string{"idx": name, "title": d.Title, "text": d.Title + "\n" + d.Text})})
	}
	for _, d := range g.Docs {
		for _, e := range d.Entities {
			ent(e)
			rel("mentioned_in")
			edges = append(edges, []string{e, "mentioned_in", d.DocName(), js(map[string]string{"chunk_id": d.DocName(), "source": "extracted_entities"})})
		}
		for _, t := range d.Triples {
			ent(t[0])
			ent(t[2])
			rel(t[1])
			edges = append(edges, []string{t[0], t[1], t[2], js(map[string]string{"chunk_id": d.DocName(), "source": "openie_triple"})})
		}
	}
	for _, s := range g.Synonyms {
		ent(s[0])
		ent(s[1])
		rel("equivalent")
		edges = append(edges, []string{s[0], "equivalent", s[1], "{}"})
	}
	nodes = append(nodes, []string{"harbour towns", "summary", `{"text": "A summary node."}`})
	b, err := json.MarshalIndent(docs, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "raw", "documents.json"), b, 0o644); err != nil {
		return err
	}
	for name, rows := range map[string][][]string{"nodes.csv": nodes, "relations.csv": rels, "edges.csv": edges} {
		if err := writeCSV(filepath.Join(stage, name), rows); err != nil {
			return err
		}
	}
	return nil
}

// WriteV1 writes the v1 layout: raw/dataset_corpus.json and processed/stage1/kg.txt,
// document2entities.json.
func (g *GFMRAG) WriteV1(dir string) error {
	stage := filepath.Join(dir, "processed", "stage1")
	if err := os.MkdirAll(stage, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "raw"), 0o755); err != nil {
		return err
	}
	corpus, d2e := map[string]string{}, map[string][]string{}
	var kg strings.Builder
	for _, d := range g.Docs {
		corpus[d.Title] = d.Text
		d2e[d.Title] = d.Entities
		for _, t := range d.Triples {
			fmt.Fprintf(&kg, "%s,%s,%s\n", t[0], t[1], t[2])
		}
	}
	for _, s := range g.Synonyms {
		fmt.Fprintf(&kg, "%s,equivalent,%s\n", s[0], s[1])
	}
	for p, v := range map[string]any{filepath.Join(dir, "raw", "dataset_corpus.json"): corpus, filepath.Join(stage, "document2entities.json"): d2e} {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(stage, "kg.txt"), []byte(kg.String()), 0o644)
}
