package eval

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteTableDisplayWidth: the terminal table pads by display width, so accented,
// decomposed and East Asian retriever names keep the number columns straight.
func TestWriteTableDisplayWidth(t *testing.T) {
	for _, tc := range []struct {
		name  string
		names []string
		want  string
	}{
		{"ascii", []string{"ppr", "bm25"},
			"  retriever   R@1   R@10\n" +
				"  ppr        50.0  100.0\n" +
				"  bm25       25.0    n/a\n"},
		{"precomposed accent (8 bytes, 7 columns)", []string{"ppr", "réponse"},
			"  retriever   R@1   R@10\n" +
				"  ppr        50.0  100.0\n" +
				"  réponse    25.0    n/a\n"},
		{"combining accent (9 bytes, 7 columns)", []string{"ppr", "re\u0301ponse"},
			"  retriever   R@1   R@10\n" +
				"  ppr        50.0  100.0\n" +
				"  re\u0301ponse    25.0    n/a\n"},
		{"wide CJK (6 bytes, 4 columns)", []string{"ppr", "检索"},
			"  retriever   R@1   R@10\n" +
				"  ppr        50.0  100.0\n" +
				"  检索       25.0    n/a\n"},
		{"the widest name sets the column", []string{"检索检索检索", "ppr"},
			"  retriever      R@1   R@10\n" +
				"  检索检索检索  50.0  100.0\n" +
				"  ppr           25.0    n/a\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{Settings: Settings{Ks: []int{1, 10}}, Retrievers: []Summary{
				{Retriever: tc.names[0], Recall: map[int]float64{1: 0.5, 10: 1}},
				{Retriever: tc.names[1], Recall: map[int]float64{1: 0.25}},
			}}
			var b bytes.Buffer
			require.NoError(t, r.WriteTable(&b))
			assert.Equal(t, tc.want, b.String())
		})
	}
}
