package eval

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/retrieve"
)

// The judge prompt follows the protocol of HyperGraphRAG+PPR (seed 002, §4.1): an LLM
// compares the generated answer with a reference answer and scores correctness — how
// far it is logically and factually aligned with the reference, insensitive to missing
// information — and completeness — whether it covers all essential aspects — each on
// 0–10 with a graded rubric, in the style of HyperGraphRAG's evaluation prompts. The
// paper's own prompt (its Appendix A) is not public in text; this one is written for
// graphloom after those definitions. Both scores come from one call.
const judgeSystem = `You are an impartial evaluator of answers to questions. You compare a generated answer with a reference answer to the same question and score it on two dimensions, each an integer from 0 to 10. Be strict and consistent; do not reward length or style.`

const judgeUserFormat = `---Question---
%s

---Reference Answer---
%s

---Generated Answer---
%s

---Evaluation---
Correctness: the extent to which the generated answer is logically and factually aligned with the reference. Judge only what the answer states: missing information does not lower correctness; statements that contradict the reference or are false do.
- 10: fully accurate; nothing contradicts the reference.
- 8-9: accurate, with minor imprecision.
- 6-7: partly correct; some statements are wrong or inconsistent.
- 4-5: noticeable factual errors.
- 1-3: largely wrong or misleading.
- 0: entirely wrong, unrelated, or no answer.

Completeness: whether the generated answer covers all the essential aspects of the reference. Omissions lower completeness; additional correct detail does not.
- 10: covers every essential aspect of the reference.
- 8-9: covers nearly all of it; minor omissions.
- 6-7: covers the main point but misses notable aspects.
- 4-5: covers some aspects and misses several.
- 1-3: covers little of the reference.
- 0: covers nothing of it.

Return only a JSON object: {"correctness": <integer 0-10>, "completeness": <integer 0-10>, "explanation": "<one or two sentences>"}`

// JudgeScore is the judge's verdict on one answer.
type JudgeScore struct {
	Correctness  float64 `json:"correctness"`
	Completeness float64 `json:"completeness"`
	Explanation  string  `json:"explanation,omitempty"`
	// Parsed is false when the reply held no usable scores; such answers are counted
	// as unparseable and left out of the averages.
	Parsed bool `json:"parsed"`
}

// Judge scores answers with an LLM.
type Judge struct {
	chat retrieve.Chatter
	// MaxTokens bounds the judge's reply; default 512.
	MaxTokens int
}

// NewJudge returns a judge asking c.
func NewJudge(c retrieve.Chatter) *Judge { return &Judge{chat: c, MaxTokens: 512} }

// Prompt returns the messages sent to judge answer against the reference answers.
func (j *Judge) Prompt(question string, reference []string, answer string) []llm.Message {
	ref := "(none)"
	switch len(reference) {
	case 0:
	case 1:
		ref = reference[0]
	default:
		ref = "Any of these is a correct reference:\n- " + strings.Join(reference, "\n- ")
	}
	if strings.TrimSpace(answer) == "" {
		answer = "(no answer)"
	}
	return []llm.Message{llm.System(judgeSystem), llm.User(fmt.Sprintf(judgeUserFormat, question, ref, answer))}
}

// Score asks the LLM to judge answer. An error means the request failed; a reply
// without usable scores is not an error but a JudgeScore with Parsed false.
func (j *Judge) Score(ctx context.Context, question string, reference []string, answer string) (JudgeScore, error) {
	resp, err := j.chat.Chat(ctx, llm.ChatRequest{
		Messages: j.Prompt(question, reference, answer), Temperature: llm.Temp(0),
		MaxTokens: j.MaxTokens, JSONMode: true, Stage: "judge",
		Usable: func(r llm.ChatResponse) error {
			if !ParseJudgement(r.Content).Parsed {
				return errors.New("eval: judge reply without both scores")
			}
			return nil
		},
	})
	if err != nil {
		return JudgeScore{}, fmt.Errorf("eval: judge: %w", err)
	}
	return ParseJudgement(resp.Content), nil
}

// ParseJudgement reads the scores from a judge reply, tolerantly: JSON as ParseJSON
// finds it (fences, prose, broken syntax), keys in any case, scores as numbers or
// strings ("8", "8/10"); failing that, "correctness: 8" and "completeness: 7" in the
// text. Scores are clamped to [0, 10]. Parsed is false unless both scores are found.
func ParseJudgement(reply string) JudgeScore {
	var m map[string]any
	var s JudgeScore
	okC, okP := false, false
	if llm.ParseJSON(reply, &m) == nil {
		for k, v := range m {
			switch strings.ToLower(strings.TrimSpace(k)) {
			case "correctness", "correctness_score":
				s.Correctness, okC = judgeNumber(v)
			case "completeness", "completeness_score":
				s.Completeness, okP = judgeNumber(v)
			case "explanation", "reason", "rationale":
				s.Explanation, _ = v.(string)
			}
		}
	}
	if !okC {
		s.Correctness, okC = judgeField(reply, correctnessField)
	}
	if !okP {
		s.Completeness, okP = judgeField(reply, completenessField)
	}
	s.Parsed = okC && okP
	if !s.Parsed {
		s.Correctness, s.Completeness = 0, 0
	}
	return s
}

var leadingNumber = regexp.MustCompile(`^\s*(\d+(?:\.\d+)?)`)

func judgeNumber(v any) (float64, bool) {
	var x float64
	switch t := v.(type) {
	case float64:
		x = t
	case string:
		m := leadingNumber.FindStringSubmatch(t)
		if m == nil {
			return 0, false
		}
		x, _ = strconv.ParseFloat(m[1], 64)
	default:
		return 0, false
	}
	if math.IsNaN(x) {
		return 0, false
	}
	return min(max(x, 0), 10), true
}

// Patterns finding "correctness: 8" and the like in a reply that is not JSON.
var (
	correctnessField  = regexp.MustCompile(`(?i)\bcorrectness\b["'*\s]*(?:score)?["'*\s]*[:=]?\s*["'*]?\s*(\d+(?:\.\d+)?)`)
	completenessField = regexp.MustCompile(`(?i)\bcompleteness\b["'*\s]*(?:score)?["'*\s]*[:=]?\s*["'*]?\s*(\d+(?:\.\d+)?)`)
)

func judgeField(text string, re *regexp.Regexp) (float64, bool) {
	m := re.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	x, _ := strconv.ParseFloat(m[1], 64)
	return min(max(x, 0), 10), true
}
