package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/bench/internal/grdata"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/encoder"
	"github.com/graphloom/graphloom/models/gretriever"
	"github.com/graphloom/graphloom/models/lm"
)

// G-Retriever step sizes: the paper's encoder and projector (1024-wide Graph
// Transformer, 2048-wide projector) on subgraphs of PCST's size on WebQSP, batch 8,
// through the tiny LM folder.
const (
	grDim, grNodes, grEdges, grBatch, grSteps, grTextTokens = 1024, 24, 32, 8, 4, 128
)

// exampleJSON is one G-Retriever example as bench/gpu_gretriever.py reads it.
type exampleJSON struct {
	Question string  `json:"question"`
	Answer   string  `json:"answer"`
	Text     string  `json:"text"`
	N        int     `json:"n"`
	Src      []int32 `json:"src"`
	Dst      []int32 `json:"dst"`
}

// grSets returns the training set (grSteps·grBatch examples) and a one-example validation set.
func grSets() (trainSet, val []gretriever.Example) {
	rng := rand.New(rand.NewPCG(1, 2))
	return grExamples(rng, grSteps*grBatch), grExamples(rng, 1)
}

func grConfig() gretriever.Config {
	cfg := gretriever.DefaultConfig(grDim)
	cfg.BatchSize, cfg.GradSteps, cfg.Epochs, cfg.WarmupEpochs, cfg.Patience, cfg.MaxTextTokens = grBatch, 1, 1, 0, 0, grTextTokens
	return cfg
}

// runGRetriever times G-Retriever training steps (encoder, projector, graph token
// through the frozen LM, backward, AdamW) on the LM folder -lm.
func runGRetriever(args []string) (map[string]any, error) {
	fs := newFlags("gretriever")
	dir := fs.String("lm", "", "LM folder (Hugging Face layout)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *dir == "" {
		return nil, errors.New("need -lm DIR")
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	l, err := lm.Load(*dir, model.NewStore(), lm.Options{})
	if err != nil {
		return nil, err
	}
	m, err := gretriever.New(l, grConfig())
	if err != nil {
		return nil, err
	}
	trainSet, val := grSets()
	ctx := context.Background()
	t0 := time.Now()
	if _, err := m.Train(ctx, eng, trainSet[:grBatch], val, gretriever.TrainOptions{Steps: 1}); err != nil { // compiles
		return nil, err
	}
	compile := time.Since(t0).Seconds()
	t0 = time.Now()
	if _, err := m.Loss(eng, val); err != nil {
		return nil, err
	}
	evalTime := time.Since(t0)
	t0 = time.Now()
	res, err := m.Train(ctx, eng, trainSet, val, gretriever.TrainOptions{})
	if err != nil {
		return nil, err
	}
	// Train evaluates the validation set before and after the epoch: subtract both.
	total := time.Since(t0) - 2*evalTime
	return map[string]any{"backend": eng.BackendConfig(), "lm": *dir, "ms_per_step": float64(total.Microseconds()) / 1000 / grSteps,
		"batch": grBatch, "steps": grSteps, "compile_secs": compile, "result": res}, nil
}

// runEmbed times the local sentence encoder on the folder -dir and writes the
// embeddings of the fixed probe texts to -out for the sentence-transformers comparison.
func runEmbed(args []string) (map[string]any, error) {
	fs := newFlags("embed")
	dir := fs.String("dir", "", "sentence-transformers folder")
	out := fs.String("out", "", "write the probe texts' embeddings here (JSON)")
	passages := fs.Int("passages", 64, "timed passages")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *dir == "" {
		return nil, errors.New("need -dir DIR")
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	m, err := encoder.Load(*dir, encoder.Options{BatchSize: 8})
	if err != nil {
		return nil, err
	}
	probes := probeTexts()
	emb, err := m.Embed(eng, probes, false) // also compiles
	if err != nil {
		return nil, err
	}
	if *out != "" {
		if err := writeJSON(*out, map[string]any{"texts": probes, "embeddings": emb}); err != nil {
			return nil, err
		}
	}
	texts := longTexts(*passages, m.Config().MaxTokens())
	if _, err := m.Embed(eng, texts[:8], false); err != nil { // compiles the full-length shape
		return nil, err
	}
	t0 := time.Now()
	if _, err := m.Embed(eng, texts, false); err != nil {
		return nil, err
	}
	perS := float64(len(texts)) / time.Since(t0).Seconds()
	return map[string]any{"backend": eng.BackendConfig(), "passages_per_s": perS, "passages": len(texts),
		"max_tokens": m.Config().MaxTokens(), "shapes": m.Stats().Shapes}, nil
}

// probeTexts are the texts both sides embed for the comparison.
func probeTexts() []string {
	return []string{"the harbour opens at dawn", "a ship leaves the port", "graph retrieval with pagerank",
		"kernels and tensors", "b", "the quick brown fox jumps over the lazy dog"}
}

// longTexts returns n texts of random letter words of at least maxTokens tokens
// (every letter is a word and a ## continuation in the test vocabulary).
func longTexts(n, maxTokens int) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for b.Len() < 2*maxTokens {
			for range 3 + rng.IntN(6) {
				b.WriteByte(byte('a' + rng.IntN(26)))
			}
			b.WriteByte(' ')
		}
		out[i] = b.String()
	}
	return out
}

// parityIDs are the prompts of the HF parity check: 2 rows of 12 byte-level ids.
func parityIDs() [][]int32 {
	rng := rand.New(rand.NewPCG(3, 4))
	ids := make([][]int32, 2)
	for i := range ids {
		for range 12 {
			ids[i] = append(ids[i], int32(rng.IntN(256)))
		}
	}
	return ids
}

// runLM writes the logits of the parity prompts and 8 greedy tokens after each
// (no EOS stop) to -out, for bench/hf_parity.py.
func runLM(args []string) (map[string]any, error) {
	fs := newFlags("lm")
	dir := fs.String("dir", "", "LM folder (Hugging Face layout)")
	out := fs.String("out", "", "output JSON")
	dtype := fs.String("dtype", "float32", "weights and compute: float32 or bfloat16 (lm.Options.DType)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *dir == "" || *out == "" {
		return nil, errors.New("need -dir DIR -out FILE")
	}
	dt, err := lm.ParseDType(*dtype)
	if err != nil {
		return nil, fmt.Errorf("-dtype: %w", err)
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	m, err := lm.Load(*dir, model.NewStore(), lm.Options{DType: dt})
	if err != nil {
		return nil, err
	}
	ids := parityIDs()
	logits, err := m.ForwardIDs(eng, ids)
	if err != nil {
		return nil, err
	}
	greedy, err := m.GenerateIDs(eng, ids, lm.GenerateOptions{MaxNewTokens: 8, EOS: []int32{}})
	if err != nil {
		return nil, err
	}
	if err := writeJSON(*out, map[string]any{"dir": *dir, "dtype": *dtype, "ids": ids, "logits": logits, "greedy": greedy}); err != nil {
		return nil, err
	}
	return map[string]any{"backend": eng.BackendConfig(), "lm": *dir, "dtype": *dtype, "out": *out, "greedy": greedy}, nil
}

// readJSON decodes the JSON file path into v, naming the file on error.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// grExamples draws n examples of the job's subgraph size.
func grExamples(rng *rand.Rand, n int) []gretriever.Example {
	return grdata.Examples(rng, n, grDim, grNodes, grEdges, 0)
}
