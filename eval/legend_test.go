package eval

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLegendCoversNoData: the recall chart's legend goes to a corner with no curve in
// it, or above the data when every corner is taken (issue 49 row 19).
func TestLegendCoversNoData(t *testing.T) {
	ks := []int{1, 2, 5, 10, 20}
	flat := func(v float64) map[int]float64 {
		m := map[int]float64{}
		for _, k := range ks {
			m[k] = v
		}
		return m
	}
	for _, tc := range []struct {
		name      string
		recall    []map[int]float64
		top, left bool
		raised    bool
	}{
		{"low curves leave the top left", []map[int]float64{flat(0.1), flat(0.2)}, true, true, false},
		{"high from k=1 on: bottom right", []map[int]float64{{1: 0.95, 2: 0.97, 5: 1, 10: 1, 20: 1}, {1: 0.9, 2: 0.95, 5: 0.98, 10: 1, 20: 1}}, false, false, false},
		{"rising from low k to high k: top left is taken, top right too, bottom right free", []map[int]float64{{1: 0.9, 2: 0.9, 5: 0.9, 10: 0.9, 20: 0.9}, {1: 0.4, 2: 0.6, 5: 0.8, 10: 0.9, 20: 0.95}}, false, false, false},
		{"every corner taken: room above 100", []map[int]float64{flat(1), flat(0)}, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Settings: Settings{Ks: ks}}
			for i, rec := range tc.recall {
				r.Retrievers = append(r.Retrievers, Summary{Retriever: []string{"ppr", "bm25"}[i], Recall: rec})
			}
			p, err := RecallChart(r)
			require.NoError(t, err)
			require.NotNil(t, p)
			assert.Equal(t, tc.top, p.Legend.Top, "top")
			assert.Equal(t, tc.left, p.Legend.Left, "left")
			assert.Equal(t, tc.raised, p.Y.Max > 100, "y max %v", p.Y.Max)
		})
	}
}
