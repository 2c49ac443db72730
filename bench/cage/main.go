// Command cage measures CAGE reranking latency on one core: per query, 20 candidate
// passages are parsed into graphs (no cache), encoded by the R-GCN and fused. The issue
// asks for well under 0.5 s per query.
//
//	go run ./bench/cage -corpus examples/harbour/corpus.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/rerank"
)

func main() {
	corpus := flag.String("corpus", "examples/harbour/corpus.json", "corpus JSON ([{title, text}])")
	queries := flag.Int("queries", 30, "queries timed")
	candidates := flag.Int("candidates", 20, "candidates per query")
	flag.Parse()
	runtime.GOMAXPROCS(1)
	data, err := os.ReadFile(*corpus)
	if err != nil {
		log.Fatal(err)
	}
	var docs []struct{ Title, Text string }
	if err := json.Unmarshal(data, &docs); err != nil {
		log.Fatalf("%s: %v", *corpus, err)
	}
	if len(docs) < *candidates {
		log.Fatalf("%s: %d passages, need %d", *corpus, len(docs), *candidates)
	}
	eng, err := engine.New(engine.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer eng.Close()
	cfg := rerank.DefaultConfig()
	rng := rand.New(rand.NewPCG(1, 2))
	sample := func() ([]string, []float64) {
		texts := make([]string, *candidates)
		rel := make([]float64, *candidates)
		for i, j := range rng.Perm(len(docs))[:*candidates] {
			texts[i], rel[i] = docs[j].Text, rng.Float64()
		}
		return texts, rel
	}
	// Warm-up: compile the buckets a 20-candidate set uses.
	r, err := rerank.NewUntrained(eng, cfg)
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		t, rel := sample()
		if _, err := r.Scores(t, rel); err != nil {
			log.Fatal(err)
		}
	}
	var cold, warm []float64
	for range *queries {
		texts, rel := sample()
		r.ShareCache(rerank.NewGraphCache()) // parse every passage again
		t0 := time.Now()
		if _, err := r.Scores(texts, rel); err != nil {
			log.Fatal(err)
		}
		cold = append(cold, float64(time.Since(t0).Microseconds())/1000)
		t0 = time.Now()
		if _, err := r.Scores(texts, rel); err != nil {
			log.Fatal(err)
		}
		warm = append(warm, float64(time.Since(t0).Microseconds())/1000)
	}
	pct := func(v []float64, p float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[int(p*float64(len(s)-1))]
	}
	fmt.Printf("CAGE rerank of %d candidates, one core, %d queries (%s):\n", *candidates, *queries, *corpus)
	fmt.Printf("  parse + encode + fuse: median %.1f ms, p90 %.1f ms\n", pct(cold, 0.5), pct(cold, 0.9))
	fmt.Printf("  encode + fuse (graphs cached): median %.1f ms, p90 %.1f ms\n", pct(warm, 0.5), pct(warm, 0.9))
	fmt.Printf("  compilations: %d\n", eng.Stats().Compilations)
}
