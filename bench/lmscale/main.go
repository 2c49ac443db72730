// Command lmscale measures the frozen decoder LM of package models/lm at real widths:
// a random model of Qwen2.5-0.5B's shapes (hidden 896, intermediate 4864, 14 heads /
// 2 key-value heads of 64, vocabulary 151,936, tied embeddings, q/k/v biases, bf16
// in two safetensors shards), written by the bench (nothing is downloaded), with
// -layers of its 24 layers (default 4, so that a run fits a 2-core machine; the
// figures it checks scale per layer). It prints, each against its goal from the
// real-checkpoints issue:
//
//   - loading: peak anonymous RSS while lm.Load runs (mapped file pages not counted)
//     ÷ the float32 weight bytes (goal ≤ 1.25);
//   - one G-Retriever training step at V = 151,936, T = 512, B = 4: peak anonymous RSS
//     minus that after loading (goal ≤ 3 GiB);
//   - greedy generation: ms per new token at 64 and 1,024 tokens of context, and the
//     key/value cache bytes the decode step writes per new token against one
//     position's worth (the goal).
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomlx/gomlx/ml/model"

	"github.com/graphloom/graphloom/bench/internal/grdata"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/models/gretriever"
	"github.com/graphloom/graphloom/models/lm"
	"github.com/graphloom/graphloom/models/lm/lmtest"
)

func main() {
	layers := flag.Int("layers", 4, "decoder layers of Qwen2.5-0.5B's 24")
	seqLen := flag.Int("len", 512, "training sequence length T")
	batch := flag.Int("batch", 4, "training batch B")
	newTokens := flag.Int("new", 8, "tokens generated per timing")
	backend := flag.String("backend", "", "backend (default $GOMLX_BACKEND or go)")
	noStep := flag.Bool("no-step", false, "skip the training step (loading and generation only)")
	dtype := flag.String("dtype", "float32", "the LM's weights and compute: float32 or bfloat16 (lm.Options.DType)")
	noCheckpoint := flag.Bool("no-checkpoint", false, "train without gradient checkpointing (every LM activation kept, as PyTorch's default)")
	flag.Parse()
	if err := run(*layers, *seqLen, *batch, *newTokens, *backend, *dtype, *noStep, *noCheckpoint); err != nil {
		fmt.Fprintln(os.Stderr, "lmscale:", err)
		os.Exit(1)
	}
}

// rssAnon reads RssAnon from /proc/self/status, in bytes (0 where unavailable).
func rssAnon() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if rest, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// peakDuring runs fn while sampling RssAnon every 2 ms and returns the peak.
func peakDuring(fn func() error) (int64, error) {
	var peak atomic.Int64
	peak.Store(rssAnon())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if r := rssAnon(); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	err := fn()
	close(stop)
	wg.Wait()
	if r := rssAnon(); r > peak.Load() {
		peak.Store(r)
	}
	return peak.Load(), err
}

func settle() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	return rssAnon()
}

const gib = float64(1 << 30)

func run(layers, seqLen, batch, newTokens int, backend, dtype string, noStep, noCheckpoint bool) error {
	dt, err := lm.ParseDType(dtype)
	if err != nil {
		return fmt.Errorf("-dtype: %w", err)
	}
	dir, err := os.MkdirTemp("", "graphloom-bench-lmscale-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	spec := lmtest.Spec{ModelType: "qwen2", Layers: layers, Hidden: 896, Intermediate: 4864, Heads: 14, KVHeads: 2,
		Tied: true, BF16: true, Shards: 2, Vocab: 151936, MaxPositions: 32768, RopeTheta: 1e6, Seed: 1}
	t0 := time.Now()
	tiny, err := lmtest.Write(dir, spec)
	if err != nil {
		return err
	}
	var params int64
	for _, w := range tiny.Weights {
		n := int64(1)
		for _, d := range w.Shape {
			n *= int64(d)
		}
		params += n
	}
	tiny = nil
	fmt.Printf("Qwen2.5-0.5B shapes, %d of 24 layers: %d parameters (%.2f GiB in float32), written as bf16 in %.1f s\n",
		layers, params, float64(params*4)/gib, time.Since(t0).Seconds())

	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(25) // as graphloom train gretriever (cmd/graphloom lowerGCPercent)
	}
	eng, err := engine.New(engine.Config{Backend: backend})
	if err != nil {
		return err
	}
	defer eng.Close()
	before := settle()
	var l *lm.Model
	t0 = time.Now()
	peak, err := peakDuring(func() error {
		var err error
		l, err = lm.Load(dir, model.NewStore(), lm.Options{DType: dt})
		return err
	})
	if err != nil {
		return err
	}
	ratio := float64(peak-before) / float64(params*4)
	fmt.Printf("load (%s): %.1f s, peak anonymous RSS +%.2f GiB = %.2f × the float32 weights (goal ≤ 1.25: %s)\n",
		dtype, time.Since(t0).Seconds(), float64(peak-before)/gib, ratio, verdict(ratio <= 1.25))

	// One G-Retriever training step through the LM at V = 151,936.
	cfg := gretriever.DefaultConfig(64)
	cfg.BatchSize, cfg.Epochs, cfg.WarmupEpochs, cfg.Patience, cfg.ProjectorHidden = batch, 1, 0, 0, 256
	cfg.MaxTextTokens, cfg.MaxNewTokens = seqLen, 8
	cfg.GradientCheckpointing = !noCheckpoint
	m, err := gretriever.New(l, cfg)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(3, 4))
	exs := grdata.Examples(rng, batch+1, 64, 12, 16, 3*seqLen) // about seqLen tokens of text
	loaded := settle()
	t0 = time.Now()
	if !noStep {
		peak, err = peakDuring(func() error {
			_, err := m.Train(context.Background(), eng, exs[:batch], exs[batch:], gretriever.TrainOptions{Steps: 1})
			return err
		})
		if err != nil {
			return err
		}
		step := float64(peak-loaded) / gib
		fmt.Printf("training step (B %d, T ≈ %d, V %d, gradient checkpointing %v; compile, one step and two validation passes): %.1f s, peak anonymous RSS beyond the loaded model +%.2f GiB (goal ≤ 3 GiB: %s)\n",
			batch, lm.SeqBucket(seqLen), spec.Vocab, cfg.GradientCheckpointing, time.Since(t0).Seconds(), step, verdict(step <= 3))

	}
	// Generation at two context lengths: each decode step timed alone, from one new
	// token to the next (GenerateOptions.Stop is called after each), so the prefill
	// and its variance stay out; the median over the steps is printed.
	c := l.Config()
	for _, ctx := range []int{64, 1024} {
		prompt := make([]int32, ctx)
		for i := range prompt {
			prompt[i] = int32(rng.IntN(256))
		}
		var stamps []time.Time
		opts := lm.GenerateOptions{MaxNewTokens: 1 + newTokens, EOS: []int32{},
			Stop: func(int, []int32) bool { stamps = append(stamps, time.Now()); return false }}
		if _, err := l.GenerateIDs(eng, [][]int32{prompt}, opts); err != nil { // compile
			return err
		}
		stamps = stamps[:0]
		if _, err := l.GenerateIDs(eng, [][]int32{prompt}, opts); err != nil {
			return err
		}
		steps := make([]float64, 0, len(stamps))
		for i := 1; i < len(stamps); i++ {
			steps = append(steps, float64(stamps[i].Sub(stamps[i-1]).Microseconds())/1000)
		}
		sort.Float64s(steps)
		med := math.NaN()
		if len(steps) > 0 {
			med = steps[len(steps)/2]
		}
		cache := lm.SeqBucket(ctx + 1 + newTokens)
		onePos := int64(2 * c.Layers * c.KVHeads * c.HeadDim * 4)
		fmt.Printf("generation, context %d (cache %d slots): %.1f ms/new token (median of %d decode steps); the decode step scatters each new key and value into its slot of the donated per-layer caches: %d bytes written per token, one position's worth (goal: 1; the masked blend before it rewrote all %d slots)\n",
			ctx, cache, med, len(steps), onePos, cache)
	}
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
