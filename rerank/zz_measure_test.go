package rerank

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/retrieve"
)

func TestZZMeasure(t *testing.T) {
	if os.Getenv("CAGE_MEASURE") == "" {
		t.Skip()
	}
	ds, err := eval.ReadDataset("/work/shared/data/corpora/morehopqa_150.json")
	if err != nil {
		t.Fatal(err)
	}
	cs := PoolCandidates(ds, 8, 1)
	cache := NewGraphCache()
	h, _ := embed.NewHashed(embed.DefaultHashedConfig())
	var all []string
	for _, c := range cs {
		all = append(all, c.Texts...)
	}
	h.Fit(all)
	if err := Embed(context.Background(), h, cs); err != nil {
		t.Fatal(err)
	}
	eng := testEngine(t)
	vars := []Variant{{Name: "none"}, {Name: "dense", Dense: true}}
	for _, agg := range []string{AggMean, AggRelevance} {
		for _, a := range []float64{0.5, 0.8} {
			for _, beta := range []float64{1, 2} {
				cfg := DefaultConfig()
				cfg.Alpha, cfg.Aggregation, cfg.Encoder.Beta = a, agg, beta
				r, err := NewUntrained(eng, cfg)
				if err != nil {
					t.Fatal(err)
				}
				r.ShareCache(cache)
				vars = append(vars, Variant{Name: fmt.Sprintf("cage %s α=%.1f β=%g", agg, a, beta), Reranker: r})
			}
		}
	}
	rows, err := EvaluateSets(context.Background(), cs, []string{"dense", "bm25"}, vars, []int{2, 5}, retrieve.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	WriteTable(os.Stdout, rows, []int{2, 5})
	fmt.Println("pool sizes", len(cs[0].Texts), len(cs[1].Texts))
}
