package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/graphloom/graphloom/augment"
)

// TestPrintAugmentSaysWhenTheScorerIsNotShownToBeatItsShortcut: the training report's
// doubt is printed as a note under the scorer's line, and nothing is printed without
// one; the lead over the best shortcut baseline is printed with its paired error when
// the report has one (reports of earlier checkpoints do not).
func TestPrintAugmentSaysWhenTheScorerIsNotShownToBeatItsShortcut(t *testing.T) {
	for _, tc := range []struct {
		doubt string
		gapSE float64
		lead  string // "" for no lead printed
	}{
		{"", 0, ""},
		{"the test split of 10 roots measures the scorer's ROC-AUC only to ± 0.112", 0, ""},
		{"the test split of 10 roots measures the scorer's lead over its best shortcut baseline", 0.081, "best shortcut baseline ROC-AUC 0.500 (lead +0.147 ± 0.081, paired over the test roots)\n"},
	} {
		rep := &augment.Report{Plan: true, Selector: "gnn", Training: augment.TrainReport{
			Epochs: 120, BestEpoch: 110, TestAUC: 0.647, TestAUCSE: 0.112, BestBaseline: 0.5, ShortcutGapSE: tc.gapSE, Doubt: tc.doubt}}
		var out bytes.Buffer
		printAugment(&out, rep, "x.gl", nil, 0)
		if tc.lead == "" {
			assert.Contains(t, out.String(), "best shortcut baseline ROC-AUC 0.500\n")
		} else {
			assert.Contains(t, out.String(), tc.lead)
		}
		if tc.doubt == "" {
			assert.NotContains(t, out.String(), "note:")
			continue
		}
		assert.Contains(t, out.String(), "ROC-AUC 0.647 ± 0.112")
		assert.Contains(t, out.String(), "\nnote: "+tc.doubt+"\n")
	}
}
