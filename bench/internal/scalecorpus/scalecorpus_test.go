package scalecorpus

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSynthesiseRenamesPerReplica(t *testing.T) {
	base := []Passage{{Title: "Paris", Text: "Paris is the capital of France. it rains"}, {Title: "Émile Zola", Text: "Émile Zola wrote."}}
	got := Synthesise(base, 5)
	assert.Equal(t, []Passage{
		base[0], base[1],
		{Title: "Parisqb", Text: "Parisqb is the capital of Franceqb. it rains"},
		{Title: "Émileqb Zolaqb", Text: "Émileqb Zolaqb wrote."},
		{Title: "Parisqc", Text: "Parisqc is the capital of Franceqc. it rains"},
	}, got)
	assert.Equal(t, "ba", ReplicaLetters(26))
}
