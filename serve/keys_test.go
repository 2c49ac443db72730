package serve

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzExactKeys: the key check ends on every input, malformed or not (it once spun on
// malformed JSON inside a list), and never answers malformed JSON itself, which it
// leaves to the decoder: its only refusals are a key in another case or given twice.
func FuzzExactKeys(f *testing.F) {
	for _, s := range []string{
		`{"questions": [{"question": "a"}, {"id": "b", "question": "b"}], "top_k": 3}`,
		`{"questions": [{"question":"a"} {"question":"b"}]}`,
		`{"questions": [@]}`, `[1 2]`, `{"a": {"b": [[{"c": 1}]]}}`, `{"question": "x", "question": "y"}`,
		`{"Question": "x"}`, `{`, `]`, `"x"`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		done := make(chan error, 1)
		go func() { done <- exactKeys(data, reflect.TypeOf(&BatchRequest{})) }()
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("exactKeys(%q) did not end", data)
		}
		if err != nil && !strings.Contains(err.Error(), "keys are case-sensitive") && !strings.Contains(err.Error(), "given twice") {
			t.Fatalf("exactKeys(%q): %v", data, err)
		}
	})
}
