package retrieve

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/graphloom/graphloom/llm"
)

// Answer asks the LLM to answer q from the top passages, with HippoRAG's reader
// contract: each passage as "Wikipedia Title: <title>\n<text>", then "Question: …\nThought: ";
// the answer is the text after the last "Answer:". A reply cut at the token limit
// before any "Answer:" is an error (its thought is not an answer).
func Answer(ctx context.Context, c Chatter, q string, passages []Passage, top int) (string, error) {
	var b strings.Builder
	for i, p := range passages {
		if i == top {
			break
		}
		fmt.Fprintf(&b, "Wikipedia Title: %s\n%s\n\n", p.Title, p.Text)
	}
	fmt.Fprintf(&b, "Question: %s\nThought: ", q)
	resp, err := c.Chat(ctx, llm.ChatRequest{Stage: "answer", Messages: []llm.Message{
		llm.System(readerSystem), llm.User(readerDemoUser), llm.Assistant(readerDemoAssistant), llm.User(b.String()),
	}})
	if err != nil {
		return "", fmt.Errorf("retrieve: answer: %w", err)
	}
	if resp.FinishReason == llm.FinishLength && !strings.Contains(resp.Content, "Answer:") {
		// The reply stopped at the server's token limit in its thought: what is there
		// is no answer (and the cache gives a rerun the same reply).
		return "", fmt.Errorf("retrieve: answer: %w (%d tokens) before its \"Answer:\": raise the server's max tokens", ErrAnswerCut, resp.CompletionTokens)
	}
	return ParseAnswer(resp.Content), nil
}

// ErrAnswerCut is the error of a reader reply cut at the token limit before its
// answer. Callers score the question as answered with nothing (the reader did not
// answer within its budget) and keep the error beside it.
var ErrAnswerCut = errors.New("the reply was cut at the token limit")

// ParseAnswer returns the text after the last "Answer:" (the whole reply if there is
// none), trimmed.
func ParseAnswer(reply string) string {
	if i := strings.LastIndex(reply, "Answer:"); i >= 0 {
		reply = reply[i+len("Answer:"):]
	}
	return strings.TrimSpace(reply)
}
