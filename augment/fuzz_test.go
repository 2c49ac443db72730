package augment

import (
	"testing"

	"github.com/graphloom/graphloom/llm"
)

// FuzzParseCompletion feeds arbitrary model answers to the completion parser: it must
// return proposals or a counted failure, never panic.
func FuzzParseCompletion(f *testing.F) {
	for _, s := range []string{
		completionExampleAssistant,
		"```json\n{\"new_triples\": [{\"triple\": [\"a\", \"b\"], \"chunk_ids\": [3]}]}\n```",
		"<think>hmm</think>{\"new_triples\": [{\"triple\": [\"a\", 1, null], \"chunk_ids\": \"chunk-x\"}], \"new_hyperedges\": [{\"text\": 5}]}",
		"no json", "{\"new_triples\": ",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, content string) {
		c := parseCompletion(llm.ChatResponse{Content: content})
		if c.Failed != "" && (len(c.Triples) > 0 || len(c.Hyperedges) > 0) {
			t.Fatalf("a failed parse returned proposals")
		}
		// Citation resolution must cope with whatever parsed.
		for _, p := range c.Triples {
			if got, _, ok := resolveCitations(p.ChunkIDs, []string{"chunk-a"}, []int32{0}); ok && len(got) > 1 {
				t.Fatalf("resolved to %v", got)
			}
		}
	})
}
