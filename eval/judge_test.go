package eval

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

func TestParseJudgement(t *testing.T) {
	for _, tc := range []struct {
		name        string
		reply       string
		corr, compl float64
		parsed      bool
	}{
		{"JSON", `{"correctness": 8, "completeness": 6, "explanation": "Misses the date."}`, 8, 6, true},
		{"fenced, keys in any case, scores as strings", "```json\n{\"Correctness\": \"9/10\", \"Completeness\": \"7\"}\n```", 9, 7, true},
		{"think block and a trailing comma", "<think>compare</think>{\"correctness\": 5, \"completeness\": 4.5,}", 5, 4.5, true},
		{"prose", "**Correctness**: 7\nCompleteness score: 4\nThe answer names the town only.", 7, 4, true},
		{"clamped to 0-10", `{"correctness": 12, "completeness": -3}`, 10, 0, true},
		{"one score missing", `{"correctness": 8, "explanation": "fine"}`, 0, 0, false},
		{"no scores", "I cannot evaluate this answer.", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ParseJudgement(tc.reply)
			assert.Equal(t, tc.parsed, s.Parsed)
			assert.InDelta(t, tc.corr, s.Correctness, 1e-12)
			assert.InDelta(t, tc.compl, s.Completeness, 1e-12)
		})
	}
	assert.Equal(t, "Misses the date.", ParseJudgement(`{"correctness": 8, "completeness": 6, "explanation": "Misses the date."}`).Explanation)
}

// newClient returns an LLM client of srv that does not retry for long.
func newClient(t *testing.T, srv *llmtest.Server) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "judge-model", MaxRetries: 1, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func TestJudgeAgainstScriptedServer(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.On(llmtest.UserContains("born in Aldwick")).Reply("Here is my verdict:\n```json\n{\"correctness\": 10, \"completeness\": 9, \"explanation\": \"Right town.\"}\n```")
	srv.On(llmtest.UserContains("Fennmouth")).Reply("The answer is wrong.")
	srv.On(llmtest.UserContains("crash")).Fault(llmtest.ServerError(500))
	j := NewJudge(newClient(t, srv))
	ctx := context.Background()

	s, err := j.Score(ctx, "Where was Tomas Brell born?", []string{"Aldwick", "Aldwick town"}, "He was born in Aldwick.")
	require.NoError(t, err)
	assert.Equal(t, JudgeScore{Correctness: 10, Completeness: 9, Explanation: "Right town.", Parsed: true}, s)
	req := srv.Requests()[0]
	require.Len(t, req.Messages, 2)
	assert.Equal(t, "system", req.Messages[0].Role)
	assert.Contains(t, req.Messages[0].Content, "impartial evaluator")
	assert.Contains(t, req.LastUser(), "---Question---\nWhere was Tomas Brell born?")
	assert.Contains(t, req.LastUser(), "---Reference Answer---\nAny of these is a correct reference:\n- Aldwick\n- Aldwick town")
	assert.Contains(t, req.LastUser(), "---Generated Answer---\nHe was born in Aldwick.")
	assert.Contains(t, req.LastUser(), "Correctness: the extent to which")
	assert.Contains(t, req.LastUser(), "Completeness: whether")
	assert.True(t, req.JSONMode)
	require.NotNil(t, req.Temperature)
	assert.Zero(t, *req.Temperature)

	s, err = j.Score(ctx, "Where?", []string{"Aldwick"}, "Fennmouth")
	require.NoError(t, err, "an unparseable reply is not an error")
	assert.False(t, s.Parsed)

	_, err = j.Score(ctx, "Where?", []string{"Aldwick"}, "crash")
	assert.ErrorContains(t, err, "eval: judge")
}
