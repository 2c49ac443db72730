package llmtest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// A test of an extraction stage scripts the answers it needs, injects a failure and
// checks what was sent.
func ExampleServer() {
	srv := llmtest.New() // in a test: srv := llmtest.NewServer(t), closed when it ends
	defer srv.Close()
	srv.On(llmtest.UserContains("Alice")).
		Reply("```json\n{\"entities\": [\"Alice\", \"Bob\"]}\n```")
	srv.FailNext(1, llmtest.RateLimited("1")) // the first request is refused once

	client, _ := llm.New(llm.Config{
		BaseURL:    srv.URL(),
		Model:      "test-model",
		BackoffMax: 10 * time.Millisecond, // caps Retry-After: tests stay fast
	})
	var out struct {
		Entities []string `json:"entities"`
	}
	_, err := client.ChatJSON(context.Background(), llm.ChatRequest{
		Messages: []llm.Message{llm.User("Alice met Bob.")},
		Stage:    "extract",
	}, &out)
	fmt.Println(out.Entities, err)
	fmt.Println("HTTP calls:", srv.Count(), "retries:", client.Usage().Retries)
	fmt.Println("sent:", srv.Requests()[1].LastUser())
	// Output:
	// [Alice Bob] <nil>
	// HTTP calls: 2 retries: 1
	// sent: Alice met Bob.
}
