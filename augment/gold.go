package augment

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/internal/jsonmsg"
)

// GoldFact is one cross-chunk fact a perfect index would hold (examples/*/facts.json).
type GoldFact struct {
	ID     string   `json:"id"`
	Triple []string `json:"triple"`
	Chunks []string `json:"chunks"`
	Kind   string   `json:"kind"`
}

// ReadGold reads a facts.json file.
func ReadGold(path string) ([]GoldFact, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("augment: %w", err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("augment: %s: want a JSON array of facts: %s", path, jsonmsg.Describe(err))
	}
	g := make([]GoldFact, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &g[i]); err != nil {
			return nil, fmt.Errorf("augment: %s: fact %d: %s", path, i+1, jsonmsg.Describe(err))
		}
		if len(g[i].Triple) != 3 {
			return nil, fmt.Errorf("augment: %s: fact %d: field \"triple\" has %d parts, want 3", path, i+1, len(g[i].Triple))
		}
	}
	return g, nil
}

// Recovered returns the gold facts whose subject and object (normalised, in either
// order) are joined by an accepted fact, whatever its predicate: predicates are free
// text, so they are not compared.
func Recovered(accepted []Accepted, gold []GoldFact) []GoldFact {
	pairs := map[[2]string]bool{}
	for _, a := range accepted {
		s, o := graphio.NormalizeName(a.Triple[0]), graphio.NormalizeName(a.Triple[2])
		pairs[[2]string{s, o}], pairs[[2]string{o, s}] = true, true
	}
	var out []GoldFact
	for _, g := range gold {
		if pairs[[2]string{graphio.NormalizeName(g.Triple[0]), graphio.NormalizeName(g.Triple[2])}] {
			out = append(out, g)
		}
	}
	return out
}
