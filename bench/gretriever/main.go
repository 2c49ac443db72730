// Command gretriever benchmarks one G-Retriever training step (models/gretriever:
// Graph Transformer encoder, MLP projector, graph token through the frozen LM,
// backward through both, AdamW update) on the tiny random Llama-layout LM that lmtest
// writes (2 layers, hidden 64), with random subgraphs of PCST's size on WebQSP and
// G-Retriever's encoder and projector sizes, and prints the time per example.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/bench/internal/grdata"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/gretriever"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

func main() {
	dim := flag.Int("dim", 256, "node and edge feature width (G-Retriever: 1024)")
	nodes := flag.Int("nodes", 24, "nodes per subgraph")
	edges := flag.Int("edges", 32, "edges per subgraph")
	batch := flag.Int("batch", 8, "examples per step (G-Retriever batch 8)")
	steps := flag.Int("steps", 4, "timed optimizer steps")
	backend := flag.String("backend", "", "backend (default $GOMLX_BACKEND or go)")
	flag.Parse()
	if err := run(*dim, *nodes, *edges, *batch, *steps, *backend); err != nil {
		fmt.Fprintln(os.Stderr, "gretriever:", err)
		os.Exit(1)
	}
}

func run(dim, nodes, edges, batch, steps int, backend string) error {
	dir, err := os.MkdirTemp("", "graphloom-bench-gretriever-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if _, err := lmtest.Write(dir, lmtest.Spec{Seed: 1}); err != nil {
		return err
	}
	eng, err := engine.New(engine.Config{Backend: backend})
	if err != nil {
		return err
	}
	defer eng.Close()
	l, err := lm.Load(dir, model.NewStore(), lm.Options{})
	if err != nil {
		return err
	}
	cfg := gretriever.DefaultConfig(dim)
	cfg.BatchSize, cfg.GradSteps, cfg.Epochs, cfg.WarmupEpochs, cfg.Patience, cfg.MaxTextTokens = batch, 1, 1, 0, 0, 128
	m, err := gretriever.New(l, cfg)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// One epoch of steps·batch examples is `steps` optimizer steps, evaluated once on
	// a one-example validation set (timed apart and subtracted).
	trainSet, val := grdata.Examples(rng, steps*batch, dim, nodes, edges, 0), grdata.Examples(rng, 1, dim, nodes, edges, 0)
	ctx := context.Background()
	t0 := time.Now()
	if _, err := m.Train(ctx, eng, trainSet[:batch], val, gretriever.TrainOptions{Steps: 1}); err != nil { // compile
		return err
	}
	compile := time.Since(t0)
	t0 = time.Now()
	if _, err := m.Loss(eng, val); err != nil {
		return err
	}
	evalTime := time.Since(t0)
	t0 = time.Now()
	if _, err := m.Train(ctx, eng, trainSet, val, gretriever.TrainOptions{}); err != nil {
		return err
	}
	total := time.Since(t0) - 2*evalTime
	fmt.Printf("backend %s; tiny Llama layout (2 layers, hidden 64); GT %d layers × %d, projector %d\n",
		eng.BackendConfig(), cfg.GT.Layers, dim, cfg.ProjectorHidden)
	fmt.Printf("training step, batch %d, subgraphs of %d nodes / %d edges, text ≤ %d tokens: %.2f ms/example (%.1f ms/step; first step incl. compile %.0f ms)\n",
		batch, nodes, edges, cfg.MaxTextTokens, float64(total.Microseconds())/1000/float64(steps*batch),
		float64(total.Microseconds())/1000/float64(steps), float64(compile.Milliseconds()))
	return nil
}
