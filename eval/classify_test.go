package eval

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseYesNo(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"Yes.", "yes", true},
		{"No, the trial showed no benefit.", "no", true},
		{"It is unclear — maybe.", "maybe", true},
		{"Answer: YES", "yes", true},
		{"Nobody knows", "", false}, // "nobody" is not "no"
		{"", "", false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseYesNo(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.ok, ok)
		})
	}
}

func TestParseChoice(t *testing.T) {
	opts := []string{"Aldwick", "Port Keswyn", "Fennmouth", "Saint Ebba"}
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"B", "B", true},
		{"(C)", "C", true},
		{"d. Saint Ebba", "D", true},
		{"Answer: C", "C", true},
		{"Thought: A is wrong because… the answer is (B).", "B", true},
		{"The correct option is D", "D", true},
		{"He was born in Aldwick.", "A", true}, // option text
		{"a town called Fennmouth", "C", true}, // leading "a" is an article
		{"Aldwick or Fennmouth", "", false},    // two options named
		{"E", "", false},                       // out of range
		{"I do not know", "", false},
		{"Answer: port keswyn", "B", true},               // no letter cue; option text
		{"A town called Fennmouth", "C", true},           // capital "A" as the article
		{"The answer is C, not option A.", "C", true},    // the answer cue, not the last cue
		{"choice: b", "B", true},                         // a lower-case letter closed by the end
		{"Answer: b) Port Keswyn", "B", true},            // … or by ")"
		{"The answer is a town on the coast", "", false}, // "a" the article, no option named
		{"B because the passage says so", "B", true},
		{"C - Fennmouth", "C", true},
		{"D, as the text says", "D", true},
		{"The answer is not A; the answer is C", "C", true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, ok := ParseChoice(tc.in, opts)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.ok, ok)
		})
	}
}

func TestClassify(t *testing.T) {
	gold := []string{"yes", "yes", "yes", "no", "no", "maybe"}
	pred := []string{"yes", "yes", "no", "no", "", "yes"}
	s := Classify(gold, pred, yesNoLabels)
	// Correct: 3 of 6. yes: TP 2, FP 1 (maybe→yes), FN 1 → P 2/3, R 2/3, F1 2/3.
	// no: TP 1, FP 1 (yes→no), FN 1 (unparsed) → P 1/2, R 1/2, F1 1/2.
	// maybe: TP 0, FN 1 → P 0, R 0, F1 0. Macro F1 = (2/3 + 1/2 + 0) / 3 = 7/18.
	assert.Equal(t, 6, s.N)
	assert.Equal(t, 3, s.Correct)
	assert.Equal(t, 1, s.Unparsed)
	assert.InDelta(t, 0.5, s.Accuracy, 1e-12)
	want := []ClassScore{
		{Label: "yes", Precision: 2.0 / 3, Recall: 2.0 / 3, F1: 2.0 / 3, Support: 3},
		{Label: "no", Precision: 0.5, Recall: 0.5, F1: 0.5, Support: 2},
		{Label: "maybe", Precision: 0, Recall: 0, F1: 0, Support: 1},
	}
	assert.Len(t, s.Classes, len(want))
	for i, w := range want {
		assert.Equal(t, w.Label, s.Classes[i].Label)
		assert.Equal(t, w.Support, s.Classes[i].Support)
		assert.InDelta(t, w.Precision, s.Classes[i].Precision, 1e-12, w.Label)
		assert.InDelta(t, w.Recall, s.Classes[i].Recall, 1e-12, w.Label)
		assert.InDelta(t, w.F1, s.Classes[i].F1, 1e-12, w.Label)
	}
	assert.InDelta(t, (2.0/3+0.5)/3, s.Macro.Precision, 1e-12)
	assert.InDelta(t, 7.0/18, s.Macro.F1, 1e-12)

	// Letters outside the given order come after it, alphabetically.
	c := Classify([]string{"B", "A"}, []string{"B", "B"}, []string{"A", "B"})
	assert.Equal(t, "A", c.Classes[0].Label)
	assert.InDelta(t, 0.5, c.Classes[1].Precision, 1e-12)
}
