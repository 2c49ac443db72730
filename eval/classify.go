package eval

import (
	"regexp"
	"sort"
	"strings"
)

// ParseYesNo reads a yes/no/maybe decision from an answer: the first of the words yes,
// no and maybe in its normalised form. ok is false when there is none.
func ParseYesNo(answer string) (label string, ok bool) {
	for _, w := range strings.Fields(NormalizeAnswer(answer)) {
		if contains(yesNoLabels, w) {
			return w, true
		}
	}
	return "", false
}

var (
	// "Answer: B", "the answer is (B)", "option B", "choice: b": a capital letter, or a
	// lower-case one closed by ")", ".", ":" or the end ("the answer is a town" is not A).
	choiceCue = regexp.MustCompile(`\b((?i:answer|option|choice))\b(?:\s+(?i:is))?\s*[:\-]?\s*\(?(?:([A-J])\b|([a-j])(?:[).:]|\s*$))`)
	// An answer that starts with the letter: "B", "B.", "(B)", "B) …", "B: …", "B, …",
	// "B - …", or a capital other than A or I before a space ("B because …"): not
	// "A town called …" or "I think …".
	choiceLead = regexp.MustCompile(`^\(?(?:([A-Ja-j])(?:[).:,]|\s+[-–—:]|$)|([B-HJ])\s)`)
)

// ParseChoice reads the chosen option letter from an answer to a question with the
// given options, trying in order: a cue ("Answer: B", "the answer is (C)", "option D");
// an answer that starts with a letter ("B", "(B)", "B. Paris"); the one option whose
// normalised text the answer contains. ok is false when none applies.
func ParseChoice(answer string, options []string) (letter string, ok bool) {
	valid := func(l string) (string, bool) {
		u := strings.ToUpper(l)
		if len(u) == 1 && u[0] >= 'A' && int(u[0]-'A') < len(options) {
			return u, true
		}
		return "", false
	}
	a := strings.TrimSpace(answer)
	if ms := choiceCue.FindAllStringSubmatch(a, -1); ms != nil {
		// The last "answer …" cue ("The answer is C, not option A."; "the answer is not
		// A; the answer is C"), else the last cue.
		pick := ms[len(ms)-1]
		for _, m := range ms {
			if strings.EqualFold(m[1], "answer") {
				pick = m
			}
		}
		if l, ok := valid(pick[2] + pick[3]); ok {
			return l, true
		}
	}
	if m := choiceLead.FindStringSubmatch(a); m != nil {
		if l, ok := valid(m[1] + m[2]); ok {
			return l, true
		}
	}
	na := " " + NormalizeAnswer(a) + " "
	found := -1
	for i, o := range options {
		no := NormalizeAnswer(o)
		if no != "" && strings.Contains(na, " "+no+" ") {
			if found >= 0 {
				return "", false // more than one option named
			}
			found = i
		}
	}
	if found >= 0 {
		return string(rune('A' + found)), true
	}
	return "", false
}

// ClassScore is the precision, recall and F1 of one class.
type ClassScore struct {
	Label     string  `json:"label"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
	Support   int     `json:"support"` // gold examples of the class
}

// ClassScores summarises a classification.
type ClassScores struct {
	N        int          `json:"n"`
	Correct  int          `json:"correct"`
	Accuracy float64      `json:"accuracy"`
	Unparsed int          `json:"unparsed"` // predictions that named no class; counted wrong
	Classes  []ClassScore `json:"classes"`
	// Macro averages precision, recall and F1 over the classes present in the gold or
	// the parsed predictions (scikit-learn's macro average, zero_division=0).
	Macro ClassScore `json:"macro"`
}

// Classify scores predicted labels against gold labels; an empty prediction is
// unparsed and wrong. Classes are reported in the order of order, then any other
// class in alphabetical order.
func Classify(gold, pred []string, order []string) ClassScores {
	s := ClassScores{N: len(gold)}
	present := map[string]bool{}
	tp, fp, fn, support := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
	for i, g := range gold {
		p := ""
		if i < len(pred) {
			p = pred[i]
		}
		present[g] = true
		support[g]++
		if p == "" {
			s.Unparsed++
			fn[g]++
			continue
		}
		present[p] = true
		if p == g {
			s.Correct++
			tp[g]++
		} else {
			fp[p]++
			fn[g]++
		}
	}
	if s.N > 0 {
		s.Accuracy = float64(s.Correct) / float64(s.N)
	}
	var labels []string
	for _, l := range order {
		if present[l] {
			labels = append(labels, l)
		}
	}
	var rest []string
	for l := range present {
		if !contains(order, l) {
			rest = append(rest, l)
		}
	}
	sort.Strings(rest)
	labels = append(labels, rest...)
	for _, l := range labels {
		c := ClassScore{Label: l, Support: support[l]}
		if d := tp[l] + fp[l]; d > 0 {
			c.Precision = float64(tp[l]) / float64(d)
		}
		if d := tp[l] + fn[l]; d > 0 {
			c.Recall = float64(tp[l]) / float64(d)
		}
		if c.Precision+c.Recall > 0 {
			c.F1 = 2 * c.Precision * c.Recall / (c.Precision + c.Recall)
		}
		s.Classes = append(s.Classes, c)
		s.Macro.Precision += c.Precision
		s.Macro.Recall += c.Recall
		s.Macro.F1 += c.F1
		s.Macro.Support += c.Support
	}
	s.Macro.Label = "macro"
	if n := float64(len(labels)); n > 0 {
		s.Macro.Precision /= n
		s.Macro.Recall /= n
		s.Macro.F1 /= n
	}
	return s
}
