package serve

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// FuzzExactKeys: the key check ends on every input, malformed or not, and refuses
// nothing the decoder (keys matched exactly, each once) would read.
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
		case <-time.After(5 * time.Second):
			t.Fatalf("exactKeys(%q) did not end", data)
		}
		if err == nil {
			return
		}
		// A refused body holds a key in another case or a key twice: re-encoding
		// what the strict decoder reads must differ from the body's own keys.
		var req BatchRequest
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if dec.Decode(&req) != nil {
			return // the decoder refuses it too
		}
		var generic any
		if json.Unmarshal(data, &generic) != nil {
			return
		}
		a, _ := json.Marshal(generic)
		b, _ := json.Marshal(req)
		if bytes.Equal(a, b) {
			t.Fatalf("exactKeys refused %q (%v), which reads the same either way", data, err)
		}
	})
}
