package ingest

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/graphloom/graphloom/graphio"
)

// Config holds the ingestion knobs.
type Config struct {
	// ChunkTokens is the most tokens a chunk holds; LightRAG and HyperGraphRAG: 1200.
	// The HippoRAG 2 path (ppr) uses the same chunks, a deviation: HippoRAG 2 keeps a
	// document whole.
	ChunkTokens int
	// OverlapTokens is the most tokens a chunk repeats from the previous one; LightRAG: 100.
	OverlapTokens int
	// Encoding is the tiktoken encoding tokens are counted in; LightRAG uses gpt-4o-mini's
	// o200k, HippoRAG 2 and graphloom default to cl100k_base.
	Encoding string
	// Strict makes a skipped input an error instead of a warning.
	Strict bool
	// Workers is the number of goroutines chunking passages; 0 means GOMAXPROCS.
	Workers int
}

// DefaultConfig returns the defaults: 1,200-token chunks with 100-token overlap in cl100k_base.
func DefaultConfig() Config {
	return Config{ChunkTokens: 1200, OverlapTokens: 100, Encoding: "cl100k_base"}
}

// Describe names the chunking settings, as recorded in graphio.Meta.Chunking: an index
// grows only with chunks cut the same way.
func (c Config) Describe() string {
	return fmt.Sprintf("chunk-tokens=%d overlap-tokens=%d encoding=%s", c.ChunkTokens, c.OverlapTokens, c.Encoding)
}

// Report summarises an ingestion.
type Report struct {
	Records    int       `json:"records"`    // input records read, skipped ones included
	Documents  int       `json:"documents"`  // distinct passages kept
	Duplicates int       `json:"duplicates"` // passages merged into an identical earlier one
	Chunks     int       `json:"chunks"`
	Tokens     int       `json:"tokens"` // tokens over all chunks
	Skipped    []Skipped `json:"skipped,omitempty"`
}

// Progress is called as passages are chunked, with the number done and the total.
type Progress func(done, total int)

// Build loads the corpus at path and returns a new index holding its documents and
// chunks. Chunk ids depend only on chunk title and text, so they are stable across runs.
func Build(ctx context.Context, path string, cfg Config, progress Progress) (*graphio.Index, *Report, error) {
	passages, skipped, err := Load(path, cfg.Strict)
	if err != nil {
		return nil, &Report{Skipped: skipped}, err
	}
	rep := &Report{Records: len(passages) + len(skipped), Skipped: skipped}
	ix := &graphio.Index{Meta: graphio.Meta{
		Created:   time.Now().UTC().Format(time.RFC3339),
		Corpus:    path,
		Tokenizer: cfg.Encoding,
		Chunking:  cfg.Describe(),
	}}
	if err := AddPassages(ctx, ix, passages, cfg, progress, rep); err != nil {
		return nil, rep, err
	}
	return ix, rep, nil
}

// AddPassages chunks passages into ix, merging duplicates, and adds the counts to rep.
func AddPassages(ctx context.Context, ix *graphio.Index, passages []Passage, cfg Config, progress Progress, rep *Report) error {
	tok, err := NewTokenizer(cfg.Encoding)
	if err != nil {
		return err
	}
	b := graphio.NewBuilder(ix, "")
	// Merge duplicates first so each distinct passage is chunked once.
	var unique []Passage
	var docs []int32
	for _, p := range passages {
		d, isNew := b.AddDocument(p.Title, p.Text, p.Source)
		if !isNew {
			rep.Duplicates++
			continue
		}
		ix.Documents[d].Key = p.Key
		unique = append(unique, p)
		docs = append(docs, d)
	}
	rep.Documents += len(unique)

	pieces := make([][]Piece, len(unique))
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done, firstErr := 0, error(nil)
	for w := 0; w < workers; w++ {
		ch, err := NewChunker(cfg, tok)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				pieces[i] = ch.Split(unique[i].Title, unique[i].Text)
				mu.Lock()
				done++
				if progress != nil {
					progress(done, len(unique))
				}
				mu.Unlock()
			}
		}()
	}
	for i := range unique {
		if err := ctx.Err(); err != nil {
			firstErr = err
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("ingest: %w", firstErr)
	}
	for i, ps := range pieces {
		for k, p := range ps {
			if _, isNew := b.AddChunk(docs[i], int32(k), p.Title, p.Text, int32(p.Tokens)); isNew {
				rep.Chunks++
				rep.Tokens += p.Tokens
			}
		}
	}
	return nil
}
