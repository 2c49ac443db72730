package llm

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzParseJSON feeds arbitrary text to the tolerant JSON parser: it must never
// panic or hang, whatever it extracts must be strict JSON, and a text that already
// is one JSON object or array must come back meaning the same.
func FuzzParseJSON(f *testing.F) {
	for _, seed := range []string{
		`{"a": 1}`,
		`[1, 2, 3,]`,
		"<think>x</think>```json\n{'a': True, 'b': None,}\n```",
		`Here you go: {"entities": [{"name": "Ali`,
		`{name: "Bob" age: 3 /* c */ // d` + "\n}",
		`{“a”: ‘b’, "c": "He said "hi"", "d": [1., .5, +2, -Infinity, ...]}`,
		`"{\"a\": [1, 2]}"`,
		`{"a": (1, 2), "b": {"c": [}`,
		"{\"a\": \"\\u12\", \"b\": \"\\q\x01\"}",
		`[[[[[[[[[[`,
		`{"": {"": {"": ""}}}`,
		"```\n```",
		"",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		out, err := ExtractJSON(text)
		if err == nil && !json.Valid([]byte(out)) {
			t.Fatalf("ExtractJSON(%q) = %q, which is not valid JSON", text, out)
		}
		var v any
		_ = ParseJSON(text, &v)
		var m map[string]any
		_ = ParseJSON(text, &m)

		trimmed := strings.TrimSpace(text)
		if trimmed != "" && (trimmed[0] == '{' || trimmed[0] == '[') && json.Valid([]byte(trimmed)) {
			if err != nil {
				t.Fatalf("ExtractJSON(%q) failed on valid JSON: %v", text, err)
			}
			var want, got any
			if json.Unmarshal([]byte(trimmed), &want) != nil || json.Unmarshal([]byte(out), &got) != nil {
				return
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("ExtractJSON(%q) = %q, want the same value", text, out)
			}
		}
	})
}
