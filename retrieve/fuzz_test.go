package retrieve

import "testing"

// FuzzMatchFacts feeds arbitrary recognition-memory answers to the parser: every fact
// it keeps must be one of the candidates, at most keep of them, none twice.
func FuzzMatchFacts(f *testing.F) {
	f.Add("[[ ## fact_after_filter ## ]]\n{\"fact\": [[\"a\", \"rel\", \"b\"]]}\n[[ ## completed ## ]]")
	f.Add("{\"fact\": [[1, 2, 3], \"x\", []]}")
	f.Add("[[ ## fact_after_filter ## ]]")
	f.Fuzz(func(t *testing.T, answer string) {
		cands := []int32{7, 8, 9}
		got := matchFacts(answer, []string{`["a","rel","b"]`, `["b","rel","c"]`, `["c","rel","d"]`}, cands, 2)
		if len(got) > 2 {
			t.Fatalf("kept %d facts, want ≤ 2", len(got))
		}
		seen := map[int32]bool{}
		for _, g := range got {
			if g < 7 || g > 9 || seen[g] {
				t.Fatalf("kept %v", got)
			}
			seen[g] = true
		}
	})
}

// FuzzParseAnswer checks the reader's answer extraction never panics and trims.
func FuzzParseAnswer(f *testing.F) {
	f.Add("Thought: x\nAnswer: Aldwick")
	f.Fuzz(func(t *testing.T, reply string) {
		a := ParseAnswer(reply)
		if len(a) > len(reply) {
			t.Fatalf("answer longer than the reply")
		}
	})
}

// FuzzDecodeBM25 feeds arbitrary postings to the stored-BM25 reader, past its digest:
// a blob is refused or its every term decodes, in document range, and scores.
func FuzzDecodeBM25(f *testing.F) {
	idx := newLexIndex([]string{"harbour keeper", "keeper of the lamp", "salt rope harbour harbour"}, Analyzer{Stem: true}, 1.2, 0.75)
	var digest [32]byte
	good, _ := encodeBM25(idx, digest)
	header := len(bm25BlobMagic) + 32
	f.Add(good[header:])
	f.Add(good[header : len(good)-1])
	f.Fuzz(func(t *testing.T, body []byte) {
		blob := append(append([]byte{}, good[:header]...), body...)
		got, err := decodeBM25(blob, digest, 3, Analyzer{Stem: true}, 1.2, 0.75)
		if err != nil {
			return
		}
		for term, ps := range got.materialized() {
			if len(ps) == 0 {
				t.Fatalf("term %q without postings", term)
			}
			for _, p := range ps {
				if p.doc < 0 || p.doc >= 3 || p.tf <= 0 {
					t.Fatalf("term %q: posting %+v", term, p)
				}
			}
		}
		_ = got.scores("harbour keeper lamp")
	})
}
