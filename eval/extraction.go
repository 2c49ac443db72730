package eval

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/graphloom/graphloom/graphio"
)

// GoldTriples are the gold within-passage triples of one passage, as in
// examples/harbour/gold_triples.json: {"title", "triples": [[s, p, o], ...]}.
type GoldTriples struct {
	Title   string     `json:"title"`
	Triples [][]string `json:"triples"`
}

// ReadGoldTriples reads a JSON array of GoldTriples; a triple without exactly three
// elements is an error naming its passage.
func ReadGoldTriples(path string) ([]GoldTriples, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	var gold []GoldTriples
	if err := json.Unmarshal(data, &gold); err != nil {
		return nil, fmt.Errorf("eval: %s: want [{\"title\", \"triples\": [[s, p, o], ...]}]: %w", path, err)
	}
	for _, g := range gold {
		for i, t := range g.Triples {
			if len(t) != 3 {
				return nil, fmt.Errorf("eval: %s: %q: triple %d has %d elements, want 3", path, g.Title, i, len(t))
			}
		}
	}
	return gold, nil
}

// PRF is a precision/recall/F1 triple with the count of matched items.
type PRF struct {
	Matched   int     `json:"matched"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
}

func prf(matched, predicted, gold int) PRF {
	s := PRF{Matched: matched}
	if predicted > 0 {
		s.Precision = float64(matched) / float64(predicted)
	}
	if gold > 0 {
		s.Recall = float64(matched) / float64(gold)
	}
	if s.Precision+s.Recall > 0 {
		s.F1 = 2 * s.Precision * s.Recall / (s.Precision + s.Recall)
	}
	return s
}

// PassageExtraction scores the triples extracted from one gold passage.
type PassageExtraction struct {
	Title     string `json:"title"`
	Gold      int    `json:"gold"`
	Predicted int    `json:"predicted"`
	Pair      PRF    `json:"pair"`
	Predicate PRF    `json:"predicate"`
}

// ExtractionReport scores an index's extracted triples against gold triples.
type ExtractionReport struct {
	Extractor string `json:"extractor"`
	Passages  int    `json:"passages"`
	// Missing lists gold passages no chunk of the index carries; their gold triples
	// count against recall.
	Missing   []string `json:"missing,omitempty"`
	Gold      int      `json:"gold"`
	Predicted int      `json:"predicted"`
	// Pair is predicate-agnostic: a predicted triple matches a gold one when their
	// subjects and objects are the same names, in either order.
	Pair PRF `json:"pair"`
	// Predicate also requires the order (subject → object) and at least one shared
	// predicate token.
	Predicate  PRF                 `json:"predicate"`
	PerPassage []PassageExtraction `json:"per_passage"`
}

// entityKey is the name a triple element is matched on: graphio.NormalizeName (the
// index's entity identity), then without a leading article, so "the Grey Widow" and
// "Grey Widow" are one name.
func entityKey(s string) string {
	n := graphio.NormalizeName(s)
	for _, a := range []string{"the ", "a ", "an "} {
		if strings.HasPrefix(n, a) && len(n) > len(a) {
			return n[len(a):]
		}
	}
	return n
}

// predicateStop reports the function words left out when comparing predicates.
func predicateStop(w string) bool {
	switch w {
	case "is", "are", "was", "were", "be", "been", "a", "an", "the", "of", "in", "on", "at", "to", "by",
		"for", "as", "with", "from", "and", "has", "had", "have", "its", "his", "her":
		return true
	}
	return false
}

// predicateTokens returns the content words of a normalised predicate, or all its
// words when it has only function words ("is a").
func predicateTokens(p string) []string {
	all := strings.Fields(graphio.NormalizeName(p))
	var content []string
	for _, w := range all {
		if !predicateStop(w) {
			content = append(content, w)
		}
	}
	if len(content) == 0 {
		return all
	}
	return content
}

func sharesToken(a, b []string) bool {
	for _, x := range a {
		if contains(b, x) {
			return true
		}
	}
	return false
}

type keyedTriple struct {
	s, o  string
	ptoks []string
}

func keyed(s, p, o string) keyedTriple {
	return keyedTriple{s: entityKey(s), o: entityKey(o), ptoks: predicateTokens(p)}
}

// matchTriples greedily pairs each gold triple with the first unused predicted triple
// accepted by same, and returns the number of pairs.
func matchTriples(gold, pred []keyedTriple, same func(g, p keyedTriple) bool) int {
	used := make([]bool, len(pred))
	n := 0
	for _, g := range gold {
		for j, p := range pred {
			if !used[j] && same(g, p) {
				used[j] = true
				n++
				break
			}
		}
	}
	return n
}

func samePair(g, p keyedTriple) bool {
	return (g.s == p.s && g.o == p.o) || (g.s == p.o && g.o == p.s)
}

func samePredicate(g, p keyedTriple) bool {
	return g.s == p.s && g.o == p.o && sharesToken(g.ptoks, p.ptoks)
}

// ExtractionScore measures the extractor that built ix against gold within-passage
// triples. The predicted triples of a gold passage are the distinct extracted facts
// (augmented ones excluded) whose Fact.Chunks include a chunk titled with the
// passage's title, or a piece of it ("<title> [chunk k]"). Subjects and objects are
// compared by entityKey; each predicted triple matches at most one gold triple
// (greedy, in gold order). Precision and recall are micro-averaged over passages.
func ExtractionScore(ix *graphio.Index, gold []GoldTriples) ExtractionReport {
	rep := ExtractionReport{Extractor: ix.Meta.Extractor, Passages: len(gold)}
	chunksOf := map[string][]int32{}
	for i := range ix.Chunks {
		t := nfcTitle(ix.Chunks[i].Title)
		chunksOf[t] = append(chunksOf[t], int32(i))
		if b := BaseTitle(t); b != t {
			chunksOf[b] = append(chunksOf[b], int32(i))
		}
	}
	factsOf := map[int32][]int32{}
	for f := range ix.Facts {
		if ix.Facts[f].Run != "" {
			continue
		}
		for _, c := range ix.Facts[f].Chunks {
			factsOf[c] = append(factsOf[c], int32(f))
		}
	}
	pairM, predM := 0, 0
	for _, g := range gold {
		var gk []keyedTriple
		for _, t := range g.Triples {
			gk = append(gk, keyed(t[0], t[1], t[2]))
		}
		chunks := chunksOf[nfcTitle(g.Title)]
		if len(chunks) == 0 {
			rep.Missing = append(rep.Missing, g.Title)
		}
		var pk []keyedTriple
		seen := map[int32]bool{}
		for _, c := range chunks {
			for _, f := range factsOf[c] {
				if seen[f] {
					continue
				}
				seen[f] = true
				x := &ix.Facts[f]
				pk = append(pk, keyed(ix.Entities[x.Subject].Name, x.Predicate, ix.Entities[x.Object].Name))
			}
		}
		pm, qm := matchTriples(gk, pk, samePair), matchTriples(gk, pk, samePredicate)
		pairM += pm
		predM += qm
		rep.Gold += len(gk)
		rep.Predicted += len(pk)
		rep.PerPassage = append(rep.PerPassage, PassageExtraction{
			Title: g.Title, Gold: len(gk), Predicted: len(pk),
			Pair: prf(pm, len(pk), len(gk)), Predicate: prf(qm, len(pk), len(gk)),
		})
	}
	rep.Pair = prf(pairM, rep.Predicted, rep.Gold)
	rep.Predicate = prf(predM, rep.Predicted, rep.Gold)
	return rep
}
