// Command index benchmarks corpus ingestion and offline indexing: passages per second,
// peak memory, and the size of graphloom's index against the same content written in
// LightRAG's on-disk JSON layout (kv_store_*.json, vdb_*.json as nano-vectordb writes
// them: a base64 float32 matrix plus a zlib'd float16 vector per row).
//
// Usage: go run ./bench/index -corpus ../shared/data/corpora/2wikimultihopqa_corpus.json -out DIR
package main

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"time"

	"github.com/x448/float16"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
)

func main() {
	corpus := flag.String("corpus", "", "corpus file")
	out := flag.String("out", "out/bench", "output directory")
	flag.Parse()
	if err := run(*corpus, *out); err != nil {
		fmt.Fprintln(os.Stderr, "bench/index:", err)
		os.Exit(1)
	}
}

func maxRSSMiB() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return math.NaN()
	}
	return float64(ru.Maxrss) / 1024
}

func size(path string) int64 {
	var total int64
	filepath.Walk(path, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			total += info.Size()
		}
		return nil
	})
	return total
}

func run(corpus, out string) error {
	if corpus == "" {
		return fmt.Errorf("-corpus is required")
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	fmt.Printf("machine: %d cores (GOMAXPROCS %d)\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))

	// 1. Ingestion only.
	t0 := time.Now()
	ix, rep, err := ingest.Build(ctx, corpus, ingest.DefaultConfig(), nil)
	if err != nil {
		return err
	}
	ingestSecs := time.Since(t0).Seconds()
	chunksOnly := filepath.Join(out, "ingest.gl")
	if err := graphio.WriteFile(chunksOnly, ix); err != nil {
		return err
	}
	lrChunks := filepath.Join(out, "lightrag_chunks")
	if err := writeLightRAG(lrChunks, ix, false); err != nil {
		return err
	}
	fmt.Printf("ingest: %d passages → %d chunks in %.2fs: %.0f passages/s\n", rep.Documents, rep.Chunks, ingestSecs, float64(rep.Records)/ingestSecs)
	a, b := size(chunksOnly), size(lrChunks)
	fmt.Printf("size (documents + chunks): graphloom %.2f MiB, LightRAG JSON %.2f MiB, ratio 1/%.1f (goal ≤ 1/5)\n",
		mib(a), mib(b), float64(b)/float64(a))

	// 2. Offline indexing: rule extraction, hashed embeddings, synonym edges.
	t0 = time.Now()
	krep, err := kg.Build(ctx, ix, extract.NewRule(extract.DefaultRuleConfig()), nil, kg.DefaultConfig(), nil)
	if err != nil {
		return err
	}
	total := ingestSecs + time.Since(t0).Seconds()
	full := filepath.Join(out, "full.gl")
	if err := graphio.WriteFile(full, ix); err != nil {
		return err
	}
	fmt.Printf("offline index: %.1fs total, %.0f passages/s (goal ≥ 200 on 2 cores); stages %v; peak RSS %.0f MiB\n",
		total, float64(rep.Records)/total, krep.StageSeconds, maxRSSMiB())
	fmt.Printf("graph: %d entities, %d facts, %d hyperedges, %d synonym edges\n", krep.Entities, krep.Facts, krep.Hyperedges, krep.SynonymEdges)
	lrFull := filepath.Join(out, "lightrag_full")
	if err := writeLightRAG(lrFull, ix, true); err != nil {
		return err
	}
	a, b = size(full), size(lrFull)
	fmt.Printf("size (graph + embeddings): graphloom %.2f MiB, LightRAG JSON %.2f MiB, ratio 1/%.1f\n", mib(a), mib(b), float64(b)/float64(a))
	return nil
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func writeJSON(path string, v any) error {
	return graphio.AtomicWrite(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	})
}

// writeLightRAG writes ix as LightRAG 1.4 stores it (anchors §F.1): documents and
// chunks in kv_store_full_docs.json and kv_store_text_chunks.json, and with vectors the
// nano-vectordb files vdb_chunks/entities/relationships.json.
func writeLightRAG(dir string, ix *graphio.Index, vectors bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	now := time.Now().Unix()
	docs := map[string]any{}
	docText := map[int32][]byte{}
	for _, c := range ix.Chunks {
		docText[c.Doc] = append(docText[c.Doc], c.Text...)
	}
	for i, d := range ix.Documents {
		docs[d.ID] = map[string]any{"content": string(docText[int32(i)]), "file_path": d.Source, "create_time": now, "update_time": now, "_id": d.ID}
	}
	chunks := map[string]any{}
	for _, c := range ix.Chunks {
		chunks[c.ID] = map[string]any{"tokens": c.Tokens, "content": c.Text, "chunk_order_index": c.Order,
			"full_doc_id": ix.Documents[c.Doc].ID, "file_path": ix.Documents[c.Doc].Source, "llm_cache_list": []string{},
			"create_time": now, "update_time": now, "_id": c.ID}
	}
	if err := writeJSON(filepath.Join(dir, "kv_store_full_docs.json"), docs); err != nil {
		return err
	}
	if err := writeJSON(filepath.Join(dir, "kv_store_text_chunks.json"), chunks); err != nil {
		return err
	}
	if !vectors {
		return nil
	}
	vdb := func(name string, m *graphio.Embedding, row func(i int) map[string]any) error {
		var data []map[string]any
		var mat bytes.Buffer
		for i := 0; i < m.Rows(); i++ {
			r := row(i)
			r["__created_at__"] = now
			r["vector"] = f16zlib(m.Row(i))
			data = append(data, r)
			binary.Write(&mat, binary.LittleEndian, m.Row(i))
		}
		return writeJSON(filepath.Join(dir, "vdb_"+name+".json"), map[string]any{"embedding_dim": m.Dim, "data": data,
			"matrix": base64.StdEncoding.EncodeToString(mat.Bytes())})
	}
	if err := vdb("chunks", ix.Embeddings[graphio.KindChunk], func(i int) map[string]any {
		c := ix.Chunks[i]
		return map[string]any{"__id__": c.ID, "full_doc_id": ix.Documents[c.Doc].ID, "content": c.Text, "file_path": ix.Documents[c.Doc].Source}
	}); err != nil {
		return err
	}
	if err := vdb("entities", ix.Embeddings[graphio.KindEntity], func(i int) map[string]any {
		e := ix.Entities[i]
		return map[string]any{"__id__": "ent-" + e.ID, "entity_name": e.Name, "content": e.Name, "source_id": "", "file_path": ""}
	}); err != nil {
		return err
	}
	return vdb("relationships", ix.Embeddings[graphio.KindFact], func(i int) map[string]any {
		f := ix.Facts[i]
		return map[string]any{"__id__": "rel-" + f.ID, "src_id": ix.Entities[f.Subject].Name, "tgt_id": ix.Entities[f.Object].Name,
			"content": f.Predicate + "\t" + ix.Entities[f.Subject].Name + "\n" + ix.Entities[f.Object].Name, "source_id": "", "file_path": ""}
	})
}

// f16zlib is nano-vectordb's per-row vector: float16 bytes, zlib-compressed, base64.
func f16zlib(v []float32) string {
	raw := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(raw[2*i:], float16.Fromfloat32(x).Bits())
	}
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	zw.Write(raw)
	zw.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}
