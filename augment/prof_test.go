package augment

import (
	"math/rand"
	"os"
	"testing"
	"time"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/graphio"
)

func TestProfEpoch(t *testing.T) {
	p := os.Getenv("DBG_INDEX")
	if p == "" {
		t.Skip()
	}
	ix, _ := graphio.ReadFile(p)
	cfg := DefaultConfig()
	g := newMinerGraph(ix, cfg)
	cands := g.rootCandidates()
	rng := rand.New(rand.NewSource(1))
	t0 := time.Now()
	var views []view
	for range 10 {
		views = g.sampleGroups(cands, cfg.TrainRoots, cfg, rng)
	}
	t.Logf("sample: %v per epoch, %d views", time.Since(t0)/10, len(views))
	t0 = time.Now()
	gs, ls := graphsOf(ix, views)
	t.Logf("toGraph: %v", time.Since(t0))
	eng, _ := engine.New(engine.Config{Backend: "go"})
	sc, _ := NewRGCNScorer(eng, ix.Embeddings[graphio.KindEntity].Dim, cfg)
	sc.TrainStep(gs, ls)
	t0 = time.Now()
	for range 5 {
		sc.TrainStep(gs, ls)
	}
	t.Logf("step: %v, nodes %d", time.Since(t0)/5, func() int {
		n := 0
		for _, g := range gs {
			n += g.NumNodes
		}
		return n
	}())
	b, _ := sc.shapes.batch(gs)
	t.Logf("bucket %+v layout %+v", b.Bucket, b.Layout)
	t0 = time.Now()
	sc.Logits(gs)
	t.Logf("predict: %v", time.Since(t0))
}
