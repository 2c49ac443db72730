package augment

import (
	"context"
	"encoding/json"
	"github.com/graphloom/graphloom/engine"
	"math/rand"
	"os"
	"testing"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/models/train"
)

func TestDiagFeatures(t *testing.T) {
	path := os.Getenv("DIAG_INDEX")
	if path == "" {
		t.Skip()
	}
	ix, err := graphio.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	g := newMinerGraph(ix, cfg)
	feat, err := newFeaturizer(ix, FeaturesEvidence)
	if err != nil {
		t.Fatal(err)
	}
	cands := g.rootCandidates()
	part := g.partition(cfg.ValFraction, cfg.TestFraction, cfg.Seed+104729)
	sets := [3][]view{}
	for split := range 3 {
		gs := g.restrict(part, int8(split))
		var in []int32
		for _, c := range cands {
			if part[c] == int8(split) {
				in = append(in, c)
			}
		}
		n := 256
		if split == 0 {
			n = 2000
		}
		sets[split] = gs.sampleGroups(gs.rootsIn(in), n, cfg, rand.New(rand.NewSource(int64(split))))
	}
	vec := func(v view) []float64 {
		gr := feat.graph(v.sg, v.mask)
		d := feat.dim
		out := make([]float64, 3*d)
		for i := 0; i < gr.NumNodes; i++ {
			row := gr.X[i*d : (i+1)*d]
			for j, x := range row {
				out[d+j] += float64(x) / float64(gr.NumNodes)
				out[2*d+j] = max(out[2*d+j], float64(x))
				if gr.NodeType[i] == nodeTypeRoot {
					out[j] = float64(x)
				}
			}
		}
		return out
	}
	xy := func(vs []view) ([][]float64, []bool) {
		var x [][]float64
		var y []bool
		for _, v := range vs {
			x = append(x, vec(v))
			y = append(y, v.label == 1)
		}
		return x, y
	}
	xt, yt := xy(sets[0])
	xs, ys := xy(sets[2])
	lr := fitLogistic(xt, yt)
	t.Logf("views train %d test %d: logistic(root,mean,max) train AUC %.3f test AUC %.3f", len(xt), len(xs), train.ROCAUC(lr.scores(xt), yt), train.ROCAUC(lr.scores(xs), ys))
	for j, name := range evidenceFeatureNames {
		col := func(x [][]float64, k int) []float64 {
			o := make([]float64, len(x))
			for i := range x {
				o[i] = x[i][k]
			}
			return o
		}
		if j >= numEvidence {
			break
		}
		t.Logf("%-36s root %.3f mean %.3f max %.3f", name, train.ROCAUC(col(xs, j), ys), train.ROCAUC(col(xs, feat.dim+j), ys), train.ROCAUC(col(xs, 2*feat.dim+j), ys))
	}
	kinds := map[string]int{}
	for _, v := range sets[2] {
		kinds[v.kind]++
	}
	t.Log(kinds)
}

func TestDiagTrain(t *testing.T) {
	path := os.Getenv("DIAG_INDEX")
	if path == "" || os.Getenv("DIAG_TRAIN") == "" {
		t.Skip()
	}
	ix, err := graphio.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	if err := json.Unmarshal([]byte(os.Getenv("DIAG_TRAIN")), &cfg); err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Backend: "go"})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	feat, err := newFeaturizer(ix, cfg.NodeFeatures)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := NewRGCNScorer(eng, feat.dim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := newMinerGraph(ix, cfg)
	tr, err := trainScorer(context.Background(), g, feat, g.rootCandidates(), sc, cfg, trainLogs{text: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("test AUC %.3f ranking %.3f (best epoch %d of %d, %.1fs)", tr.TestAUC, tr.TestRanking, tr.BestEpoch, tr.Epochs, tr.Seconds)
}
