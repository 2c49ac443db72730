package retrieve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/graphloom/graphloom/llm"
)

// recognize is HippoRAG 2's recognition memory: the LLM keeps the candidate facts
// relevant to the question; each fact it returns is mapped to the closest candidate
// (as difflib.get_close_matches does), and at most RecognitionKeep are kept. An answer
// that cannot be parsed keeps nothing (the caller then falls back to dense retrieval).
func (s *Searcher) recognize(ctx context.Context, q string, cands []int32) ([]int32, error) {
	if len(cands) == 0 {
		return nil, nil
	}
	strs := make([]string, len(cands))
	triples := make([][]string, len(cands))
	for i, f := range cands {
		triples[i] = s.factTriple(f)
		b, _ := json.Marshal(triples[i])
		strs[i] = string(b)
	}
	before, _ := json.Marshal(map[string]any{"fact": triples})
	msgs := []llm.Message{llm.System(filterSystem)}
	for _, d := range filterDemos {
		msgs = append(msgs, llm.User(d[0]), llm.Assistant(d[1]))
	}
	msgs = append(msgs, llm.User(fmt.Sprintf(filterUserFormat, q, before)))
	resp, err := s.llm.Chat(ctx, llm.ChatRequest{Messages: msgs, MaxTokens: 512, Stage: "recognition-memory"})
	if err != nil {
		if llm.Classify(err) == llm.KindUnparseable {
			return nil, nil
		}
		return nil, fmt.Errorf("retrieve: recognition memory: %w", err)
	}
	answer := resp.Content
	if resp.FinishReason == llm.FinishLength { // a fact cut mid-way would match the nearest candidate
		if answer, _ = llm.DropUnfinished(answer); answer == "" {
			return nil, nil
		}
	}
	return matchFacts(answer, strs, cands, s.cfg.RecognitionKeep), nil
}

// matchFacts parses the fact_after_filter field and maps each fact to its closest
// candidate, keeping order and dropping repeats.
func matchFacts(answer string, strs []string, cands []int32, keep int) []int32 {
	field := answer
	if _, after, ok := strings.Cut(answer, "[[ ## fact_after_filter ## ]]"); ok {
		field = after
	}
	field, _, _ = strings.Cut(field, "[[ ## completed ## ]]")
	var parsed struct {
		Fact [][]any `json:"fact"`
	}
	if llm.ParseJSON(field, &parsed) != nil {
		return nil
	}
	var out []int32
	used := map[int]bool{}
	for _, f := range parsed.Fact {
		b, _ := json.Marshal(stringsOfAny(f))
		best, bestScore := -1, -1.0
		for i, c := range strs {
			if sc := similarity(string(b), c); sc > bestScore {
				best, bestScore = i, sc
			}
		}
		if best >= 0 && !used[best] {
			used[best] = true
			out = append(out, cands[best])
		}
		if len(out) == keep {
			break
		}
	}
	return out
}

func stringsOfAny(xs []any) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		out = append(out, strings.ToLower(strings.TrimSpace(fmt.Sprint(x))))
	}
	return out
}

// similarity is the Ratcliff/Obershelp-style ratio 2·M/T difflib uses, with M the
// length of a longest common subsequence (a close, simpler stand-in for difflib's
// matching blocks).
func similarity(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	if len(ra)+len(rb) == 0 {
		return 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			switch {
			case ra[i-1] == rb[j-1]:
				cur[j] = prev[j-1] + 1
			case prev[j] >= cur[j-1]:
				cur[j] = prev[j]
			default:
				cur[j] = cur[j-1]
			}
		}
		prev, cur = cur, prev
	}
	return 2 * float64(prev[len(rb)]) / float64(len(ra)+len(rb))
}
