package retrieve

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/graphloom/graphloom/graphio"
)

// nameIndex finds the entities of an index that a question names verbatim: every
// entity name, as its normalised word sequence, in a map, matched against the
// question's word n-grams. It is the offline counterpart of HippoRAG's query NER and
// node linking (HippoRAG 1), used when Config.QueryEntities is on.
type nameIndex struct {
	names  map[string]int32 // normalised name → entity
	maxLen int              // most words in a name
}

func newNameIndex(ix *graphio.Index) *nameIndex {
	n := &nameIndex{names: make(map[string]int32, len(ix.Entities))}
	for i := range ix.Entities {
		name := ix.Entities[i].Name
		if name == "" {
			continue
		}
		if _, dup := n.names[name]; !dup {
			n.names[name] = int32(i)
		}
		n.maxLen = max(n.maxLen, strings.Count(name, " ")+1)
	}
	return n
}

// queryWord is a word of the question with what linking needs to know of it.
type queryWord struct {
	norm    string // lower-cased letters, digits and combining marks
	capital bool   // starts with a capital letter or is a number
	first   bool   // first word of the question or of a sentence in it
}

func queryWords(q string) []queryWord {
	var out []queryWord
	first := true
	var cur []rune
	flush := func(next rune) {
		if len(cur) > 0 {
			w := string(cur)
			r, _ := utf8.DecodeRuneInString(w)
			out = append(out, queryWord{norm: strings.ToLower(w), capital: unicode.IsUpper(r) || unicode.IsDigit(r), first: first})
			first = false
			cur = cur[:0]
		}
		if next == '.' || next == '?' || next == '!' || next == ':' {
			first = true
		}
	}
	for _, r := range norm.NFC.String(q) { // as graphio.NormalizeName reads names
		if graphio.IsWordRune(r) {
			if len(cur) > 0 || !graphio.ContinuesWord(r) { // a mark after no word character belongs to none
				cur = append(cur, r)
			}
			continue
		}
		flush(r)
	}
	flush(0)
	return out
}

// link returns the entities the question names, longest match first and without
// overlaps. A match must look like a name in the question: it holds a capitalised
// word or a number that is not the question's first word ("Which", "How") and is not
// a lone stop word; a lower-case common word ("director") never links, since a
// question's generic words are exactly what drags PPR to the wrong hub.
func (n *nameIndex) link(q string) []int32 {
	ws := queryWords(q)
	var out []int32
	for i := 0; i < len(ws); {
		best, bestEnd := int32(-1), i
		key := ""
		for j := i; j < len(ws) && j-i < n.maxLen; j++ {
			if j > i {
				key += " "
			}
			key += ws[j].norm
			e, ok := n.names[key]
			if !ok || !nameLike(ws[i:j+1]) {
				continue
			}
			best, bestEnd = e, j+1
		}
		if best < 0 {
			i++
			continue
		}
		out = append(out, best)
		i = bestEnd
	}
	return out
}

func nameLike(ws []queryWord) bool {
	content := false
	for _, w := range ws {
		if w.capital && !w.first && !stopwords[w.norm] {
			content = true
		}
	}
	return content
}

// queryEntities returns the entities q names when Config.QueryEntities is on.
func (s *Searcher) queryEntities(q string) []int32 {
	if !s.cfg.QueryEntities {
		return nil
	}
	s.namesOnce.Do(func() { s.names = newNameIndex(s.ix) })
	return s.names.link(q)
}
