package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/graphloom/graphloom/augment"
)

// TestPrintAugmentSaysWhenTheScorerIsNotShownToBeatItsShortcut: the training report's
// doubt is printed as a note under the scorer's line, and nothing is printed without one.
func TestPrintAugmentSaysWhenTheScorerIsNotShownToBeatItsShortcut(t *testing.T) {
	for _, doubt := range []string{"", "the test split of 10 roots measures the scorer's ROC-AUC only to ± 0.112"} {
		rep := &augment.Report{Plan: true, Selector: "gnn", Training: augment.TrainReport{
			Epochs: 120, BestEpoch: 110, TestAUC: 0.647, TestAUCSE: 0.112, BestBaseline: 0.5, Doubt: doubt}}
		var out bytes.Buffer
		printAugment(&out, rep, "x.gl", nil, 0)
		if doubt == "" {
			assert.NotContains(t, out.String(), "note:")
			continue
		}
		assert.Contains(t, out.String(), "ROC-AUC 0.647 ± 0.112")
		assert.Contains(t, out.String(), "\nnote: "+doubt+"\n")
	}
}
