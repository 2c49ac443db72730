package eval

import (
	"math"
	"testing"
)

// FuzzParseJudgement feeds arbitrary judge replies to the parser: scores are in
// [0, 10] when parsed, zero otherwise, and it never panics.
func FuzzParseJudgement(f *testing.F) {
	for _, s := range []string{`{"correctness": 8, "completeness": "7/10", "explanation": "ok"}`,
		"Correctness: 9\nCompleteness: 11", "{\"correctness\": -3, \"completeness\": 1e400}", "nothing"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		s := ParseJudgement(reply)
		for _, x := range []float64{s.Correctness, s.Completeness} {
			if math.IsNaN(x) || x < 0 || x > 10 || (!s.Parsed && x != 0) {
				t.Fatalf("score %v (parsed %v) from %q", x, s.Parsed, reply)
			}
		}
	})
}

// FuzzDataset feeds arbitrary files to the dataset reader: it returns a dataset or an
// error, never panics.
func FuzzDataset(f *testing.F) {
	f.Add([]byte(`[{"question": "Q?", "answer": ["a"], "paragraphs": [{"title": "t", "text": "x", "is_supporting": true}]}]`))
	f.Add([]byte("{\"question\": \"Q\", \"context\": [[\"t\", [\"s1\", \"s2\"]]], \"supporting_facts\": [[\"t\", 0]]}\n{oops\n"))
	f.Add([]byte(`[{"query": "Q?", "answer": "Yes", "evidence_list": [{"title": "t", "fact": "f"}, {"fact": null}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := ParseDataset(data, "fuzz.json")
		if err == nil && ds == nil {
			t.Fatal("nil dataset without an error")
		}
	})
}
