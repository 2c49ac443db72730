package interoptest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// HippoDoc is one passage of HippoRAG's OpenIE results.
type HippoDoc struct {
	Passage  string
	Entities []string
	Triples  [][]string // raw, as the LLM returned them (may be malformed)
}

// HippoRAG describes a HippoRAG 2 save directory.
type HippoRAG struct {
	LLM, Embedder string // name parts of the files and the working directory
	Docs          []HippoDoc
	Dim           int // 0 writes no embedding stores
}

// HippoSample is the harbour passages as HippoRAG 2 would have indexed them, with one
// malformed triple.
func HippoSample() *HippoRAG {
	return &HippoRAG{LLM: "Qwen/Qwen3-32B", Embedder: "BAAI/bge-m3", Dim: 6, Docs: []HippoDoc{
		{"Port Keswyn\nPort Keswyn is a harbour town on the Brackwater Coast. Tomas Brell was the harbourmaster of Port Keswyn from 1785.",
			[]string{"Port Keswyn", "Brackwater Coast", "Tomas Brell", "1785"},
			[][]string{{"Port Keswyn", "is a harbour town on", "Brackwater Coast"}, {"Tomas Brell", "was harbourmaster of", "Port Keswyn"}, {"Tomas Brell", "harbourmaster from"}}},
		{"Tomas Brell\nTomas Brell was born in Fennmouth. He bought the brig Gannet.",
			[]string{"Tomas Brell", "Fennmouth", "Gannet"},
			[][]string{{"Tomas Brell", "born in", "Fennmouth"}, {"Tomas Brell", "bought", "Gannet"}}},
		{"The brig Gannet was wrecked on Gull Rock in 1790.",
			[]string{"Gannet", "Gull Rock", "1790"},
			[][]string{{"Gannet", "wrecked on", "Gull Rock"}, {"Gannet", "wrecked in", "1790"}}},
	}}
}

var nonAlnum = regexp.MustCompile(`[^A-Za-z0-9 ]`)

// textProcessing is HippoRAG's text_processing (ASCII text only).
func textProcessing(s string) string {
	return strings.TrimSpace(nonAlnum.ReplaceAllString(strings.ToLower(s), " "))
}

type hippoRow struct {
	HashID    *string   `parquet:"hash_id,optional"`
	Content   *string   `parquet:"content,optional"`
	Embedding []float32 `parquet:"embedding,optional,list" parquet-element:",optional"`
}

// WorkingDir is HippoRAG's working directory name.
func (h *HippoRAG) WorkingDir() string {
	return strings.ReplaceAll(h.LLM, "/", "_") + "_" + strings.ReplaceAll(h.Embedder, "/", "_")
}

// OpenIEFile is the name of the OpenIE results.
func (h *HippoRAG) OpenIEFile() string {
	return "openie_results_ner_" + strings.ReplaceAll(h.LLM, "/", "_") + ".json"
}

// Write writes the save directory to dir.
func (h *HippoRAG) Write(dir string) error {
	type doc struct {
		Idx      string     `json:"idx"`
		Passage  string     `json:"passage"`
		Entities []string   `json:"extracted_entities"`
		Triples  [][]string `json:"extracted_triples"`
	}
	var docs []doc
	chars, words, n := 0.0, 0.0, 0.0
	for _, d := range h.Docs {
		docs = append(docs, doc{"chunk-" + md5hex(d.Passage), d.Passage, d.Entities, d.Triples})
		for _, e := range d.Entities {
			chars += float64(len(e))
			words += float64(len(strings.Fields(e)))
			n++
		}
	}
	b, err := json.Marshal(map[string]any{"docs": docs, "avg_ent_chars": chars / n, "avg_ent_words": words / n})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, h.OpenIEFile()), b, 0o644); err != nil {
		return err
	}
	if h.Dim == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(3, 4))
	vec := func() []float32 {
		v := make([]float32, h.Dim)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	stores := map[string][]hippoRow{}
	seen := map[string]bool{}
	add := func(kind, id, content string) {
		if seen[id] {
			return
		}
		seen[id] = true
		stores[kind] = append(stores[kind], hippoRow{&id, &content, vec()})
	}
	for _, d := range h.Docs {
		add("chunk", "chunk-"+md5hex(d.Passage), d.Passage)
	}
	for _, d := range h.Docs {
		for _, t := range d.Triples {
			if len(t) != 3 {
				continue
			}
			p := []string{textProcessing(t[0]), textProcessing(t[1]), textProcessing(t[2])}
			add("entity", "entity-"+md5hex(p[0]), p[0])
			add("entity", "entity-"+md5hex(p[2]), p[2])
			fact := fmt.Sprintf("('%s', '%s', '%s')", p[0], p[1], p[2])
			add("fact", "fact-"+md5hex(fact), fact)
		}
	}
	for kind, rows := range stores {
		d := filepath.Join(dir, h.WorkingDir(), kind+"_embeddings")
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := parquet.WriteFile(filepath.Join(d, "vdb_"+kind+".parquet"), rows); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, h.WorkingDir(), "chunk_metadata.json"), []byte(`{}`), 0o644)
}
