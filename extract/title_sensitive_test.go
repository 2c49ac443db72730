package extract

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// titleSensitiveReference is TitleSensitive's rule checked the obvious way: a text is
// sensitive when it holds every word of some title present on one side only.
func titleSensitiveReference(before, after, texts []string) []bool {
	a, b := NewTitles(before), NewTitles(after)
	var changed [][]string
	for k := range a.keys {
		if _, ok := b.keys[k]; !ok {
			changed = append(changed, strings.Fields(k))
		}
	}
	for k := range b.keys {
		if _, ok := a.keys[k]; !ok {
			changed = append(changed, strings.Fields(k))
		}
	}
	out := make([]bool, len(texts))
	for i, t := range texts {
		words := map[string]bool{}
		for _, w := range titleWords(t) {
			words[w] = true
		}
		for _, key := range changed {
			all := true
			for _, w := range key {
				all = all && words[w]
			}
			out[i] = out[i] || all
		}
	}
	return out
}

// TestTitleSensitiveMatchesReference holds TitleSensitive to the reference on random
// titles and texts drawn from a small vocabulary (so titles share words and texts hold
// some titles whole), titles arriving and leaving.
func TestTitleSensitiveMatchesReference(t *testing.T) {
	r := NewRule(DefaultRuleConfig())
	vocab := []string{"Port", "Keswyn", "Gull", "Rock", "Tallow", "Point", "Fenmouth", "Quay", "Mara", "Oduya", "Harbour", "Light"}
	rng := rand.New(rand.NewPCG(1, 2))
	phrase := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(ws, " ")
	}
	seen := map[bool]int{}
	for trial := range 20 {
		var before, after, texts []string
		for range 15 {
			before = append(before, phrase(1+rng.IntN(3)))
		}
		after = append(after, before[rng.IntN(5):]...)
		for range 1 + rng.IntN(4) {
			after = append(after, phrase(1+rng.IntN(3)))
		}
		for range 40 {
			texts = append(texts, phrase(3+rng.IntN(6))+" was built.")
		}
		got := r.TitleSensitive(before, after, texts)
		assert.Equal(t, titleSensitiveReference(before, after, texts), got, fmt.Sprintf("trial %d", trial))
		for _, s := range got {
			seen[s]++
		}
	}
	assert.Positive(t, seen[true], "some texts hold a changed title")
	assert.Positive(t, seen[false], "some do not")
}
