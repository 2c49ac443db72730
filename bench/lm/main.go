// Command lm benchmarks the frozen decoder LM of package models/lm on a tiny random
// Llama-layout model (written to a temporary directory by lmtest: 2 layers, hidden 64,
// 4 heads, 2 KV heads, intermediate 128, 268-token vocabulary): the full forward pass
// (logits of a right-padded batch, time per token) and greedy generation with the KV
// cache (time per new token).
package main

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

func main() {
	batch := flag.Int("batch", 8, "sequences per batch")
	seqLen := flag.Int("len", 64, "tokens per sequence")
	layers := flag.Int("layers", 2, "decoder layers")
	hidden := flag.Int("hidden", 64, "hidden width")
	newTokens := flag.Int("new", 32, "tokens generated per prompt (G-Retriever: 32)")
	steps := flag.Int("steps", 10, "timed forward passes")
	backend := flag.String("backend", "", "backend (default $GOMLX_BACKEND or go)")
	flag.Parse()
	if err := run(*batch, *seqLen, *layers, *hidden, *newTokens, *steps, *backend); err != nil {
		fmt.Fprintln(os.Stderr, "lm:", err)
		os.Exit(1)
	}
}

func run(batch, seqLen, layers, hidden, newTokens, steps int, backend string) error {
	dir, err := os.MkdirTemp("", "graphloom-bench-lm-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec := lmtest.Spec{Layers: layers, Hidden: hidden, Intermediate: 2 * hidden, Seed: 1}
	if _, err := lmtest.Write(dir, spec); err != nil {
		return err
	}
	eng, err := engine.New(engine.Config{Backend: backend})
	if err != nil {
		return err
	}
	defer eng.Close()
	m, err := lm.Load(dir, model.NewStore(), lm.Options{})
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([][]int32, batch)
	for i := range ids {
		ids[i] = make([]int32, seqLen)
		for j := range ids[i] {
			ids[i][j] = int32(rng.IntN(256))
		}
	}
	t0 := time.Now()
	if _, err := m.ForwardIDs(eng, ids); err != nil { // compile
		return err
	}
	compile := time.Since(t0)
	t0 = time.Now()
	for range steps {
		if _, err := m.ForwardIDs(eng, ids); err != nil {
			return err
		}
	}
	fwd := time.Since(t0)
	tokens := steps * batch * seqLen
	prompts := make([][]int32, batch)
	for i := range prompts {
		prompts[i] = ids[i][:seqLen/2]
	}
	opts := lm.GenerateOptions{MaxNewTokens: newTokens, EOS: []int32{}}
	if _, err := m.GenerateIDs(eng, prompts, opts); err != nil { // compile
		return err
	}
	t0 = time.Now()
	out, err := m.GenerateIDs(eng, prompts, opts)
	if err != nil {
		return err
	}
	gen := time.Since(t0)
	generated := 0
	for _, o := range out {
		generated += len(o)
	}
	fmt.Printf("backend %s; tiny Llama layout: %d layers, hidden %d, 4 heads / 2 KV heads, vocab %d\n",
		eng.BackendConfig(), layers, hidden, m.Config().VocabSize)
	fmt.Printf("forward (logits), batch %d × %d tokens: %.1f µs/token (%.2f ms/batch; first call incl. compile %.0f ms)\n",
		batch, seqLen, float64(fwd.Microseconds())/float64(tokens), float64(fwd.Microseconds())/1000/float64(steps),
		float64(compile.Milliseconds()))
	fmt.Printf("greedy generation with KV cache, batch %d, prompt %d, %d new tokens: %.1f µs/new token (%.1f ms total)\n",
		batch, seqLen/2, newTokens, float64(gen.Microseconds())/float64(generated), float64(gen.Microseconds())/1000)
	return nil
}
