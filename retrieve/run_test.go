package retrieve

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/embed"
)

// askedRetriever records the texts it is given; answers says whether it answers
// itself (nil: it is no Answerer).
type askedRetriever struct {
	mu      sync.Mutex
	got     []string
	answers *bool
}

func (r *askedRetriever) Name() string { return "asked" }

func (r *askedRetriever) Retrieve(_ context.Context, q string, _ int) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, q)
	return Result{}, nil
}

type answeringRetriever struct{ *askedRetriever }

func (r answeringRetriever) AnswersItself() bool { return *r.answers }

// TestRunGivesAnswerersTheReaderForm: a retriever that answers itself is given each
// question's reader form (options, answer format) when it has one, as it was trained;
// one that does not answer, or answers nothing now, searches with the question.
func TestRunGivesAnswerersTheReaderForm(t *testing.T) {
	qs := []Question{
		{ID: "a", Question: "Do cats purr?", Reader: "Do cats purr?\nAnswer with yes, no or maybe."},
		{ID: "b", Question: "Who wrote it?"},
	}
	yes, no := true, false
	for _, tc := range []struct {
		name string
		r    Retriever
		rec  *askedRetriever
		want []string
	}{
		{"plain", nil, &askedRetriever{}, []string{"Do cats purr?", "Who wrote it?"}},
		{"answering", nil, &askedRetriever{answers: &yes}, []string{qs[0].Reader, "Who wrote it?"}},
		{"answering off", nil, &askedRetriever{answers: &no}, []string{"Do cats purr?", "Who wrote it?"}},
	} {
		var r Retriever = tc.rec
		if tc.rec.answers != nil {
			r = answeringRetriever{tc.rec}
		}
		lines, err := Run(context.Background(), r, nil, qs, RunConfig{TopK: 3, Workers: 1}, nil)
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, tc.rec.got, tc.name)
		assert.Equal(t, "Do cats purr?", lines[0].Question, "%s: the run file keeps the question", tc.name)
	}
}

// widerEmbedder claims another embedder's identity with vectors one wider: the same
// model name served by another server.
type widerEmbedder struct{ embed.Embedder }

func (w widerEmbedder) Dim() int { return w.Embedder.Dim() + 1 }

// TestSearcherRefusesVectorsOfAnotherWidth: an embedder of the index's identity whose
// vectors have another width is a mismatch error, not a panic in the dot products.
func TestSearcherRefusesVectorsOfAnotherWidth(t *testing.T) {
	ix, emb := tinyIndex(t)
	_, err := NewSearcher(ix, widerEmbedder{emb}, DefaultConfig(), nil)
	require.ErrorIs(t, err, embed.ErrMismatch)
	assert.ErrorContains(t, err, "dimensions")
	_, err = NewSearcher(ix, emb, DefaultConfig(), nil)
	assert.NoError(t, err)
}

type listingRetriever struct{}

func (listingRetriever) Name() string { return "listing" }
func (listingRetriever) Retrieve(context.Context, string, int) (Result, error) {
	a := "malia|sasha"
	return Result{Answer: &a, Answers: []string{"malia", "sasha"}}, nil
}

// TestRunKeepsListedAnswers: the answers a retriever lists reach the run line beside
// its answer, for evaluation to score each.
func TestRunKeepsListedAnswers(t *testing.T) {
	lines, err := Run(context.Background(), listingRetriever{}, nil, []Question{{ID: "q", Question: "Who?"}}, RunConfig{TopK: 1, Workers: 1}, nil)
	require.NoError(t, err)
	require.NotNil(t, lines[0].Answer)
	assert.Equal(t, "malia|sasha", *lines[0].Answer)
	assert.Equal(t, []string{"malia", "sasha"}, lines[0].Answers)
}
