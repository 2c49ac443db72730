// Command embed benchmarks the sentence encoder of package models/encoder at
// bge-small-en-v1.5's shapes (12 layers, hidden 384, 12 heads, intermediate 1536,
// 512 tokens per passage, CLS pooling and normalisation) on a random-weight folder
// written by encodertest: passages per second through encoder.Model.Embed, the path
// `--embedder local:DIR` takes (tokenisation, bucketed batches, forward pass, pooling).
// The passages tokenise to at least 512 tokens, so every batch is full length.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/encoder"
	"github.com/graphloom/graphloom/models/encoder/encodertest"
)

func main() {
	passages := flag.Int("passages", 32, "timed passages")
	batch := flag.Int("batch", 8, "passages per forward pass")
	layers := flag.Int("layers", 12, "encoder layers (bge-small: 12)")
	hidden := flag.Int("hidden", 384, "hidden width (bge-small: 384)")
	heads := flag.Int("heads", 12, "attention heads (bge-small: 12)")
	seqLen := flag.Int("len", 512, "tokens per passage (bge-small's maximum: 512)")
	backend := flag.String("backend", "", "backend (default $GOMLX_BACKEND or go)")
	jsonOut := flag.String("json", "", "also write the figures to this JSON file")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the timed passages to this file")
	flag.Parse()
	if err := run(*passages, *batch, *layers, *hidden, *heads, *seqLen, *backend, *jsonOut, *cpuProfile); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(passages, batch, layers, hidden, heads, seqLen int, backend, jsonOut, cpuProfile string) error {
	if passages < 1 || batch < 1 || layers < 1 || heads < 1 || hidden%heads != 0 || seqLen < 8 {
		return fmt.Errorf("want passages, batch, layers, heads ≥ 1, hidden a multiple of heads, len ≥ 8")
	}
	dir, err := os.MkdirTemp("", "graphloom-bench-embed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec := encodertest.Spec{Layers: layers, Hidden: hidden, Heads: heads, Intermediate: 4 * hidden,
		MaxPositions: seqLen, SentenceTransformers: true, Pooling: []string{"cls"}, Normalize: true,
		MaxSeqLength: seqLen, Seed: 1}
	if _, err := encodertest.Write(dir, spec); err != nil {
		return err
	}
	eng, err := engine.New(engine.Config{Backend: backend})
	if err != nil {
		return err
	}
	defer eng.Close()
	m, err := encoder.Load(dir, encoder.Options{BatchSize: batch})
	if err != nil {
		return err
	}
	// Words of random letters: the test vocabulary has every letter as a word and as a
	// ## continuation, so a passage of n letters is at least n tokens.
	rng := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		var b strings.Builder
		for b.Len() < 2*seqLen {
			for range 3 + rng.IntN(6) {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
			b.WriteByte(' ')
		}
		return b.String()
	}
	warm := make([]string, batch)
	for i := range warm {
		warm[i] = text()
	}
	texts := make([]string, passages)
	for i := range texts {
		texts[i] = text()
	}
	t0 := time.Now()
	if _, err := m.Embed(eng, warm, false); err != nil { // compiles the [batch, len] shape
		return err
	}
	compile := time.Since(t0)
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	// Each batch timed on its own: the median batch is the figure (a shared 2-core
	// machine's noise is ±10 % on a whole run; the PyTorch twin does the same).
	var elapsed time.Duration
	var perBatch []float64 // ms per passage
	for lo := 0; lo < passages; lo += batch {
		hi := min(lo+batch, passages)
		t0 := time.Now()
		if _, err := m.Embed(eng, texts[lo:hi], false); err != nil {
			return err
		}
		d := time.Since(t0)
		elapsed += d
		perBatch = append(perBatch, float64(d.Microseconds())/1000/float64(hi-lo))
	}
	sort.Float64s(perBatch)
	median := perBatch[len(perBatch)/2]
	if len(perBatch)%2 == 0 {
		median = (perBatch[len(perBatch)/2-1] + perBatch[len(perBatch)/2]) / 2
	}
	if cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	st := m.Stats()
	if st.Truncated != st.Texts {
		return fmt.Errorf("only %d of %d passages reached %d tokens", st.Truncated, st.Texts, seqLen)
	}
	perS := 1000 / median
	fmt.Printf("encoder %d layers × %d wide, %d heads, %d tokens, batch %d, backend %s\n",
		layers, hidden, heads, seqLen, batch, eng.BackendConfig())
	fmt.Printf("first batch (compile + run): %v\n", compile.Round(time.Millisecond))
	fmt.Printf("%d passages in %v (%d batches, ms per passage %.0f–%.0f); median batch: %.2f passages/s (%.0f ms per passage); %d shapes compiled\n",
		passages, elapsed.Round(time.Millisecond), len(perBatch), perBatch[0], perBatch[len(perBatch)-1], perS, median, st.Shapes)
	if jsonOut != "" {
		data, err := json.Marshal(map[string]any{"passages_per_s": perS, "ms_per_passage": median,
			"passages": passages, "batch": batch, "layers": layers, "hidden": hidden, "heads": heads, "len": seqLen})
		if err != nil {
			return err
		}
		return os.WriteFile(jsonOut, append(data, '\n'), 0o644)
	}
	return nil
}
