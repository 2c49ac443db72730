package extract

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Titles are the corpus's document titles used as a gazetteer: a title (without a
// trailing parenthetical disambiguator such as "(film)" and without the " [chunk k]"
// suffix of a long document's pieces) names the thing its document is about, so
// every occurrence of one in any chunk is an entity span, and each chunk mentions its
// own document's title. Encyclopaedic corpora (Wikipedia, the multi-hop QA sets)
// link passages through exactly these names; in a book, the one title every chunk
// shares is a generic entity that the generic-entity filter of package kg removes.
type Titles struct {
	keys   map[string]string // token key → title as written
	maxLen int               // most words in a key
}

var (
	chunkSuffix   = regexp.MustCompile(`\s*\[chunk \d+\]$`)
	disambiguator = regexp.MustCompile(`\s*\([^()]*\)$`)
)

// CleanTitle strips a chunk suffix and a trailing parenthetical disambiguator:
// "Boy (album) [chunk 2]" becomes "Boy".
func CleanTitle(t string) string {
	t = chunkSuffix.ReplaceAllString(strings.TrimSpace(t), "")
	if s := disambiguator.ReplaceAllString(t, ""); s != "" {
		t = s
	}
	return strings.TrimSpace(t)
}

// titleWords splits s into its letter/digit runs, case kept.
func titleWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// NewTitles builds the gazetteer of the given titles. A title qualifies when it has
// a capital letter, at least three letters or digits, at most 12 words and is not a
// single stop word ("The", "Introduction" stays: it is a name of a section).
func NewTitles(titles []string) *Titles {
	g := &Titles{keys: map[string]string{}}
	for _, t := range titles {
		t = CleanTitle(t)
		ws := titleWords(t)
		if len(ws) == 0 || len(ws) > 12 || !hasUpper(t) || alnum(t) < 3 {
			continue
		}
		if len(ws) == 1 && (nameStop[ws[0]] || months[ws[0]]) {
			continue
		}
		key := strings.Join(ws, " ")
		if _, ok := g.keys[key]; !ok {
			g.keys[key] = t
		}
		g.maxLen = max(g.maxLen, len(ws))
	}
	return g
}

// Len returns the number of titles in the gazetteer.
func (g *Titles) Len() int {
	if g == nil {
		return 0
	}
	return len(g.keys)
}

func hasUpper(s string) bool {
	for _, r := range s {
		if unicode.IsUpper(r) {
			return true
		}
	}
	return false
}

func alnum(s string) int {
	n := 0
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n
}

// match returns the end j of the longest title starting at token i, or i when none
// does. A title of one word must be a capitalised word that is not the sentence's
// first (where every word is capitalised) unless the tagger calls it a proper noun.
func (g *Titles) match(toks []token, i int) int {
	if g == nil || len(g.keys) == 0 {
		return i
	}
	if r, _ := utf8.DecodeRuneInString(toks[i].text); !unicode.IsUpper(r) && !unicode.IsDigit(r) {
		return i
	}
	var words []string
	best := i
	for j := i; j < len(toks) && len(words) < g.maxLen; j++ {
		ws := titleWords(toks[j].text)
		if len(ws) == 0 {
			if toks[j].text == "\"" || toks[j].text == "``" || toks[j].text == "''" {
				break // a quote ends a title
			}
			continue // punctuation inside a title ("Philipp, Duke of …")
		}
		words = append(words, ws...)
		if _, ok := g.keys[strings.Join(words, " ")]; ok {
			best = j + 1
		}
	}
	if best == i+1 && i == 0 && toks[i].tag != "NNP" && toks[i].tag != "NNPS" {
		return i
	}
	return best
}
