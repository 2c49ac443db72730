package eval

import (
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/text/unicode/norm"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/retrieve"
)

// RecallAtK is HippoRAG's retrieval recall for one question: the fraction of the
// distinct gold passages found among the first k retrieved ones, with passages compared
// as identity strings ("title\ntext"). It is 0 when there is no gold.
func RecallAtK(retrieved, gold []string, k int) float64 {
	g := map[string]bool{}
	for _, x := range gold {
		g[x] = true
	}
	if len(g) == 0 {
		return 0
	}
	hit := map[string]bool{}
	for i, x := range retrieved {
		if i == k {
			break
		}
		if g[x] {
			hit[x] = true
		}
	}
	return float64(len(hit)) / float64(len(g))
}

// MatchLevel says how a gold item was found in a ranking; lower is stronger.
type MatchLevel int

// Match levels, from strongest to weakest.
const (
	MatchNone  MatchLevel = iota
	MatchExact            // same "title\ntext": HippoRAG's identity
	MatchChunk            // same (base) title, one text contains the other after collapsing whitespace
	MatchSpan             // a gold span contained in the passage text
	MatchTitle            // same (base) title only; for gold whose text the index does not hold
)

func (l MatchLevel) String() string {
	if l < MatchNone || l > MatchTitle {
		return fmt.Sprintf("MatchLevel(%d)", int(l))
	}
	return [...]string{"none", "exact", "chunk", "span", "title"}[l]
}

// MarshalText writes the level's name.
func (l MatchLevel) MarshalText() ([]byte, error) { return []byte(l.String()), nil }

// UnmarshalText reads a level's name.
func (l *MatchLevel) UnmarshalText(b []byte) error {
	for v := MatchNone; v <= MatchTitle; v++ {
		if v.String() == string(b) {
			*l = v
			return nil
		}
	}
	return fmt.Errorf("eval: unknown match level %q", b)
}

// chunkTitle matches the titles ingest gives the pieces of a long passage.
var chunkTitle = regexp.MustCompile(`^(.*) \[chunk \d+\]$`)

// BaseTitle strips the " [chunk k]" suffix ingest adds to the pieces of a long
// passage, so they match their document's title.
func BaseTitle(title string) string {
	if m := chunkTitle.FindStringSubmatch(title); m != nil {
		return m[1]
	}
	return title
}

// collapse is s in Unicode NFC with its whitespace runs made one space: a dataset and
// a corpus written by different tools (one in NFD, "Cafe\u0301") still match.
func collapse(s string) string { return strings.Join(strings.Fields(norm.NFC.String(s)), " ") }

// nfcTitle is a title as titles are compared: in NFC.
func nfcTitle(t string) string { return norm.NFC.String(t) }

func lowerCollapse(s string) string { return collapse(strings.ToLower(s)) }

// Matcher finds gold evidence in rankings. It knows the indexed passages, if any, to
// decide which gold passages can only be matched by title. A zero Matcher (or one made
// from no chunks) knows no corpus and allows title matching only for gold without text.
type Matcher struct {
	// corpus maps a title (as indexed, and its base title) to the
	// whitespace-collapsed texts of the chunks carrying it; nil when unknown.
	corpus map[string][]string
}

// NewMatcher returns a Matcher knowing the given indexed chunks.
func NewMatcher(chunks []graphio.Chunk) *Matcher {
	m := &Matcher{}
	if len(chunks) == 0 {
		return m
	}
	m.corpus = map[string][]string{}
	for i := range chunks {
		c := &chunks[i]
		t, title := collapse(c.Text), nfcTitle(c.Title)
		m.corpus[title] = append(m.corpus[title], t)
		if b := BaseTitle(title); b != title {
			m.corpus[b] = append(m.corpus[b], t)
		}
	}
	return m
}

// InCorpus reports whether the index holds g's text, whole or as chunks under its
// title. With no corpus known it reports whether g has a text at all.
func (m *Matcher) InCorpus(g GoldPassage) bool {
	return m.holds(nfcTitle(g.Title), collapse(g.Text))
}

// holds is InCorpus for a gold passage's title and text as Match compares them.
func (m *Matcher) holds(title, gt string) bool {
	if m == nil || m.corpus == nil {
		return gt != ""
	}
	for _, t := range m.corpus[title] {
		if containsEither(t, gt) {
			return true
		}
	}
	return false
}

func containsEither(a, b string) bool {
	return a != "" && b != "" && (strings.Contains(a, b) || strings.Contains(b, a))
}

// Hits says where each gold item of an example was found in a ranking.
type Hits struct {
	// Ranks holds, per gold item (Example.Gold, or Example.Spans when Gold is empty),
	// the 1-based rank of the retrieved passage matched to it, 0 when none is.
	Ranks  []int        `json:"gold_ranks"`
	Levels []MatchLevel `json:"match_levels"`
	// TitleOnly counts the gold passages that could only be matched by title because
	// the index does not hold their text (or they have none).
	TitleOnly int `json:"title_only,omitempty"`
}

// RecallAt is the fraction of gold items found in the top k; 0 when there is none.
func (h Hits) RecallAt(k int) float64 {
	if len(h.Ranks) == 0 {
		return 0
	}
	n := 0
	for _, r := range h.Ranks {
		if r > 0 && r <= k {
			n++
		}
	}
	return float64(n) / float64(len(h.Ranks))
}

type goldItem struct {
	title, text string // text whitespace-collapsed (lower-cased too for spans)
	raw         GoldPassage
	span        bool
	allowTitle  bool
}

// Match finds the example's gold evidence in a ranking. Retrieved passages are taken in
// rank order, repeated passages (same title and text) are ignored as in HippoRAG's set
// intersection, and each passage is matched to at most one not yet matched gold
// passage, the one it matches most strongly (see MatchLevel); gold spans are not
// passages, so a passage covers every not yet matched span it contains.
func (m *Matcher) Match(ranking []retrieve.Passage, ex *Example) Hits {
	var items []goldItem
	var h Hits
	if len(ex.Gold) > 0 {
		for _, g := range ex.Gold {
			// Matched by title only when it has one: an untitled gold passage (PubMedQA's
			// abstract) would otherwise match every untitled passage.
			it := goldItem{title: nfcTitle(g.Title), text: collapse(g.Text), raw: g}
			it.allowTitle = g.Title != "" && !m.holds(it.title, it.text)
			if it.allowTitle {
				h.TitleOnly++
			}
			items = append(items, it)
		}
	} else {
		for _, s := range ex.Spans {
			items = append(items, goldItem{text: lowerCollapse(s), span: true})
		}
	}
	h.Ranks = make([]int, len(items))
	h.Levels = make([]MatchLevel, len(items))
	seen := map[string]bool{}
	for rank, p := range ranking {
		key := p.Title + "\n" + p.Text
		if seen[key] {
			continue
		}
		seen[key] = true
		var text, lower string
		title := nfcTitle(p.Title)
		best, bestLevel := -1, MatchNone
		for i := range items {
			if h.Ranks[i] != 0 {
				continue
			}
			it := &items[i]
			var lvl MatchLevel
			if it.span {
				if lower == "" {
					lower = lowerCollapse(p.Text)
				}
				if spanIn(it.text, lower) {
					// A span is evidence, not a passage: one passage covers
					// every span it contains.
					h.Ranks[i], h.Levels[i] = rank+1, MatchSpan
				}
				continue
			} else {
				sameTitle := title == it.title || BaseTitle(title) == it.title
				switch {
				case p.Title == it.raw.Title && p.Text == it.raw.Text:
					lvl = MatchExact
				case sameTitle && it.text != "":
					if text == "" {
						text = collapse(p.Text)
					}
					if containsEither(text, it.text) {
						lvl = MatchChunk
					} else if it.allowTitle {
						lvl = MatchTitle
					}
				case sameTitle && it.allowTitle:
					lvl = MatchTitle
				}
			}
			if lvl != MatchNone && (best < 0 || lvl < bestLevel) {
				best, bestLevel = i, lvl
			}
		}
		if best >= 0 {
			h.Ranks[best] = rank + 1
			h.Levels[best] = bestLevel
		}
	}
	return h
}

// spanIn reports whether a gold span (lower-cased, collapsed) is found in a passage
// text: contained in it, or — for a span longer than the index's chunks — holding the
// passage when the passage is at least half as long as the span.
func spanIn(span, passage string) bool {
	if span == "" || passage == "" {
		return false
	}
	return strings.Contains(passage, span) || (2*len(passage) >= len(span) && strings.Contains(span, passage))
}
