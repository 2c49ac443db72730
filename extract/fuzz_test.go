package extract

import (
	"testing"

	"github.com/graphloom/graphloom/llm"
)

// FuzzLLMAnswers feeds arbitrary model answers through the NER, triple and EXT++
// hyperedge parsers and validators: they must return valid items or nothing, never
// panic.
func FuzzLLMAnswers(f *testing.F) {
	for _, s := range []string{nerExampleOutput, tripleExampleOutput, hyperExampleOutput,
		`{"triples": [["a", "b"], ["a", "b", "c", "d"], [1, 2, 3], ["", "x", "y"]]}`,
		`{"hyperedges": [{"text": "zz", "entities": [{"name": ""}], "score": 1e309}]}`,
		`{"hyperedges": [{"text": "Ilse Moravec", "entities": ["Ilse Moravec"], "score": "NaN"}]}`} {
		f.Add(s, "Ilse Moravec (born 1931 in Brno) was a Czech glass engraver.")
	}
	f.Fuzz(func(t *testing.T, answer, text string) {
		var na nerAnswer
		if llm.ParseJSON(answer, &na) == nil && na.NamedEntities != nil {
			for _, s := range stringsOf(*na.NamedEntities) {
				if s == "" {
					t.Fatal("empty entity kept")
				}
			}
		}
		var ta tripleAnswer
		if llm.ParseJSON(answer, &ta) == nil && ta.Triples != nil {
			for _, tr := range ValidTriples(*ta.Triples) {
				if tr.Subject == "" || tr.Predicate == "" || tr.Object == "" {
					t.Fatalf("invalid triple kept: %+v", tr)
				}
			}
		}
		var ha hyperAnswer
		if llm.ParseJSON(answer, &ha) == nil && ha.Hyperedges != nil {
			hs, dropped := validHyperedges(text, ha)
			if len(hs)+dropped != len(*ha.Hyperedges) {
				t.Fatalf("%d kept + %d dropped ≠ %d", len(hs), dropped, len(*ha.Hyperedges))
			}
			for _, h := range hs {
				if !(h.Score >= 0 && h.Score <= 10) || len(h.Entities) == 0 { // NaN fails too
					t.Fatalf("invalid hyperedge kept: %+v", h)
				}
			}
		}
	})
}
