// Command serve load-tests `graphloom serve`'s handler on loopback: the index is built
// offline (or read), served by an in-process HTTP server on 127.0.0.1, and a fixed
// number of concurrent clients send a fixed number of questions each — bounded in count
// and time. It prints p50/p99 latency, throughput and the error count per retriever,
// next to the same questions retrieved in-process without HTTP (the reference run).
//
// Usage: go run ./bench/serve -corpus examples/harbour/corpus.json [-index X.gl] [-clients 50] [-requests 20]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
	"github.com/graphloom/graphloom/serve"
)

func main() {
	corpus := flag.String("corpus", "examples/harbour/corpus.json", "corpus to index offline (ignored with -index)")
	index := flag.String("index", "", "an existing index to serve")
	clients := flag.Int("clients", 50, "concurrent clients")
	requests := flag.Int("requests", 20, "requests per client")
	limit := flag.Duration("limit", 2*time.Minute, "stop sending after this long")
	flag.Parse()
	if err := run(*corpus, *index, *clients, *requests, *limit); err != nil {
		fmt.Fprintln(os.Stderr, "bench/serve:", err)
		os.Exit(1)
	}
}

func run(corpus, index string, clients, requests int, limit time.Duration) error {
	ctx := context.Background()
	path := index
	if path == "" {
		dir, err := os.MkdirTemp("", "bench-serve")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = dir + "/x.gl"
		ix, err := kg.BuildOffline(ctx, corpus, kg.DefaultConfig(), extract.DefaultRuleConfig())
		if err != nil {
			return err
		}
		if err := graphio.WriteFile(path, ix); err != nil {
			return err
		}
	}
	ix, err := graphio.ReadFile(path)
	if err != nil {
		return err
	}
	cfg := serve.DefaultConfig()
	cfg.MaxInFlight = clients
	srv, err := serve.New(path, func() (*graphio.Index, error) { return graphio.ReadFile(path) }, nil, cfg)
	if err != nil {
		return err
	}
	ts := httptest.NewServer(srv) // 127.0.0.1
	defer ts.Close()
	// Questions: each chunk's title asked about, cycling.
	var qs []string
	for _, c := range ix.Chunks {
		qs = append(qs, "What is said about "+c.Title+"?")
	}
	s, err := retrieve.Open(ix, nil, cfg.Retrieval, nil)
	if err != nil {
		return err
	}
	fmt.Printf("index %s: %d chunks; %d clients × %d requests on loopback (limit %s)\n", path, len(ix.Chunks), clients, requests, limit)
	fmt.Printf("%-9s %9s %9s %9s %8s %7s | %s\n", "retriever", "p50 ms", "p99 ms", "req/s", "errors", "p99/p50", "in-process p50 ms (no HTTP)")
	for _, name := range []string{"bm25", "ppr", "hyperppr"} {
		r, err := s.Retriever(name)
		if err != nil {
			continue
		}
		var ref []float64
		for i := 0; i < min(len(qs), 200); i++ {
			t0 := time.Now()
			if _, err := r.Retrieve(ctx, qs[i], 5); err != nil {
				return err
			}
			ref = append(ref, ms(time.Since(t0)))
		}
		lat, errs, wall := load(ts.URL, name, qs, clients, requests, limit)
		p50, p99 := pct(lat, 0.5), pct(lat, 0.99)
		fmt.Printf("%-9s %9.2f %9.2f %9.0f %8d %7.1f | %.2f\n", name, p50, p99, float64(len(lat))/wall.Seconds(), errs, p99/max(p50, 1e-9), pct(ref, 0.5))
	}
	return nil
}

func load(url, retriever string, qs []string, clients, requests int, limit time.Duration) ([]float64, int, time.Duration) {
	var mu sync.Mutex
	var lat []float64
	errs := 0
	deadline := time.Now().Add(limit)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	t0 := time.Now()
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Go(func() {
			for i := 0; i < requests && time.Now().Before(deadline); i++ {
				body, _ := json.Marshal(serve.QueryRequest{Question: qs[(c*requests+i)%len(qs)], Retriever: retriever})
				start := time.Now()
				resp, err := hc.Post(url+"/v1/query", "application/json", bytes.NewReader(body))
				d := time.Since(start)
				ok := err == nil && resp.StatusCode == 200
				if resp != nil {
					resp.Body.Close()
				}
				mu.Lock()
				if ok {
					lat = append(lat, ms(d))
				} else {
					errs++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return lat, errs, time.Since(t0)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func pct(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}
