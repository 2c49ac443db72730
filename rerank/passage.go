// Package rerank reorders retrieved candidate passages after retrieval. Its main
// method is CAGE (Qi et al., arXiv 2609.04647, seed 003): every candidate becomes a
// directed heterogeneous word graph, min-out-degree "factual anchors" are up-weighted
// by β, a one-layer R-GCN with sum pooling embeds each graph, and a passage's score is
// α·cos(query, passage) + (1−α)·coherence, where coherence is its structural alignment
// with the other candidates.
//
// Deviations from the paper, each with its reason:
//   - Nodes are Snowball (Porter2) English stems, not lemmas ("sold" stays "sold",
//     "capital" becomes "capit"): the maintained Go lemmatiser (golem) needs an English
//     dictionary module that the Go module proxy does not serve.
//   - The dependency "parser" is a set of rules over prose's part-of-speech tags (see
//     graphBuilder.sentence) — the paper's parser is rule-based too, but its rules are
//     not published; pronouns are resolved by recency within the passage.
//   - Node features are fixed pseudo-random vectors per stem (EncoderConfig.HashDim):
//     no pretrained word vectors can be downloaded here.
//   - The diversity objective is GraphCL-style contrastive learning (TrainConfig): the
//     paper names no loss.
//   - Passage graphs are recomputed from the text and memoised per process
//     (GraphCache), not stored in the index (see Reranker).
package rerank

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode"

	"github.com/kljensen/snowball/english"

	"github.com/graphloom/graphloom/ingest"
)

// Relation is the type of a dependency edge of a passage graph. Edges point from the
// head to its dependent, so dependents that head nothing (named entities, numbers,
// objects: the paper's "specific entities, values, factual endpoints") have out-degree 0.
type Relation int32

// The relation types, produced by the rules in parseSentence.
const (
	RelSubject     Relation = iota // verb → its subject noun ("Smith founded…": found → smith)
	RelObject                      // verb → its direct object ("…founded the Guild": found → guild)
	RelAttribute                   // copula subject → complement ("Paris is the capital": paris → capit)
	RelModifier                    // noun → adjective, number or compound noun before it
	RelPreposition                 // noun or verb → object of a following preposition ("capital of France")
	RelApposition                  // noun → an appositive noun phrase ("Smith, a sailor,")
	RelConjunction                 // first conjunct → next ("salt and fish")
	RelPossessive                  // possessed → possessor ("Smith's ship": ship → smith)
	NumRelations                   // number of forward relation types
)

var relationNames = [NumRelations]string{"subj", "obj", "attr", "mod", "prep", "appos", "conj", "poss"}

// String names the relation.
func (r Relation) String() string {
	if r < 0 || r >= NumRelations {
		return fmt.Sprintf("rel(%d)", int32(r))
	}
	return relationNames[r]
}

// Node classes (the node type, also one-hot in the features).
const (
	ClassEntity = iota // proper noun or number
	ClassNoun          // common noun
	ClassVerb
	ClassAdjective
	NumClasses
)

// Edge is a typed directed edge between node indices.
type Edge struct {
	Src, Dst int32
	Rel      Relation
}

// PassageGraph is the word graph of one passage.
type PassageGraph struct {
	Nodes []string // node keys: Snowball stems, space-joined for multi-word proper nouns
	Class []int32  // ClassEntity … ClassAdjective per node
	Edges []Edge   // deduplicated, sorted (Src, Dst, Rel)
}

// OutDegree returns each node's out-degree.
func (g *PassageGraph) OutDegree() []int {
	d := make([]int, len(g.Nodes))
	for _, e := range g.Edges {
		d[e.Src]++
	}
	return d
}

// Truncate returns g cut to its first n nodes (in order of first mention) and the edges
// between them; g itself when it has no more than n.
func (g *PassageGraph) Truncate(n int) *PassageGraph {
	if len(g.Nodes) <= n {
		return g
	}
	out := &PassageGraph{Nodes: g.Nodes[:n:n], Class: g.Class[:n:n]}
	for _, e := range g.Edges {
		if int(e.Src) < n && int(e.Dst) < n {
			out.Edges = append(out.Edges, e)
		}
	}
	return out
}

// Anchors returns the min-out-degree nodes: among nodes with at least one edge, those
// whose out-degree equals the smallest out-degree (isolated nodes carry no relational
// claim and are never anchors).
func (g *PassageGraph) Anchors() []int {
	out := g.OutDegree()
	touched := make([]bool, len(g.Nodes))
	for _, e := range g.Edges {
		touched[e.Src], touched[e.Dst] = true, true
	}
	minDeg := -1
	for i, d := range out {
		if touched[i] && (minDeg < 0 || d < minDeg) {
			minDeg = d
		}
	}
	var res []int
	for i, d := range out {
		if touched[i] && d == minDeg {
			res = append(res, i)
		}
	}
	return res
}

// Parser builds passage graphs with prose's part-of-speech tagger and named-entity
// model (through ingest.Tagger, loaded on first use). A Parser is safe for concurrent
// use.
type Parser struct {
	once   sync.Once
	tagger *ingest.Tagger
	err    error
}

// NewParser returns a parser.
func NewParser() *Parser { return &Parser{} }

// tok is one tagged token.
type tok struct {
	text, tag string
	ner       string // entity type without the IOB prefix ("PERSON"), "" outside entities
}

// Parse builds the graph of one passage. It is deterministic: the same text always
// gives the same graph (which is why graphs are recomputed, not stored; see Config).
func (p *Parser) Parse(text string) (*PassageGraph, error) {
	p.once.Do(func() { p.tagger, p.err = ingest.LoadTagger() })
	if p.err != nil {
		return nil, fmt.Errorf("rerank: %w", p.err)
	}
	toks, err := p.tagger.Tag(text)
	if err != nil {
		return nil, fmt.Errorf("rerank: tag passage: %w", err)
	}
	b := newGraphBuilder()
	var sent []tok
	for _, t := range toks {
		sent = append(sent, tok{text: t.Text, tag: t.Tag, ner: t.Entity()})
		if t.Tag == "." {
			b.sentence(sent)
			sent = sent[:0]
		}
	}
	if len(sent) > 0 {
		b.sentence(sent)
	}
	return b.finish(), nil
}

// graphBuilder accumulates nodes and edges over the sentences of one passage and
// keeps the antecedent candidates for pronoun resolution.
type graphBuilder struct {
	index map[string]int
	g     PassageGraph
	edges map[Edge]bool
	// Most recent mentions for pronoun resolution (node index, -1 if none).
	lastPerson, lastProper, lastThing, lastPlural, lastNoun int
}

func newGraphBuilder() *graphBuilder {
	return &graphBuilder{index: map[string]int{}, edges: map[Edge]bool{},
		lastPerson: -1, lastProper: -1, lastThing: -1, lastPlural: -1, lastNoun: -1}
}

func (b *graphBuilder) node(key string, class int32) int {
	if i, ok := b.index[key]; ok {
		if class < b.g.Class[i] { // entity beats noun beats verb beats adjective
			b.g.Class[i] = class
		}
		return i
	}
	i := len(b.g.Nodes)
	b.index[key] = i
	b.g.Nodes = append(b.g.Nodes, key)
	b.g.Class = append(b.g.Class, class)
	return i
}

func (b *graphBuilder) edge(src, dst int, rel Relation) {
	if src < 0 || dst < 0 || src == dst {
		return
	}
	b.edges[Edge{Src: int32(src), Dst: int32(dst), Rel: rel}] = true
}

func (b *graphBuilder) finish() *PassageGraph {
	for e := range b.edges {
		b.g.Edges = append(b.g.Edges, e)
	}
	sort.Slice(b.g.Edges, func(i, j int) bool {
		x, y := b.g.Edges[i], b.g.Edges[j]
		if x.Src != y.Src {
			return x.Src < y.Src
		}
		if x.Dst != y.Dst {
			return x.Dst < y.Dst
		}
		return x.Rel < y.Rel
	})
	return &b.g
}

// stem normalises one word: lower case, Snowball (Porter2) English stem.
func stem(w string) string {
	return english.Stem(strings.ToLower(w), false)
}

var (
	malePronouns   = map[string]bool{"he": true, "him": true, "his": true, "himself": true}
	femalePronouns = map[string]bool{"she": true, "her": true, "hers": true, "herself": true}
	thingPronouns  = map[string]bool{"it": true, "its": true, "itself": true}
	pluralPronouns = map[string]bool{"they": true, "them": true, "their": true, "theirs": true, "themselves": true}
	// auxiliaries are verbs that head no node of their own.
	auxiliaries = map[string]bool{"be": true, "is": true, "are": true, "was": true, "were": true, "been": true,
		"being": true, "am": true, "'s": true, "have": true, "has": true, "had": true, "do": true, "does": true,
		"did": true, "having": true}
	copulas     = map[string]bool{"be": true, "is": true, "are": true, "was": true, "were": true, "been": true, "being": true, "am": true, "become": true, "became": true, "becomes": true, "remain": true, "remains": true, "remained": true}
	conjunction = map[string]bool{"and": true, "or": true, "nor": true}
)

// resolve returns the antecedent node of a pronoun (−1 when there is none): he/she and
// their possessives → the most recent person (prose's PERSON label, else the most
// recent proper noun); it/its → the most recent non-person noun; they/them/their → the
// most recent plural noun, else the most recent noun. Recency-based resolution within
// the passage only.
func (b *graphBuilder) resolve(word string) int {
	w := strings.ToLower(word)
	switch {
	case malePronouns[w] || femalePronouns[w]:
		if b.lastPerson >= 0 {
			return b.lastPerson
		}
		return b.lastProper
	case thingPronouns[w]:
		return b.lastThing
	case pluralPronouns[w]:
		if b.lastPlural >= 0 {
			return b.lastPlural
		}
		return b.lastNoun
	}
	return -1
}

// phrase is a noun phrase of a sentence: its head node and token span.
type phrase struct {
	head       int
	start, end int // token span [start, end)
}

func isNoun(tag string) bool   { return strings.HasPrefix(tag, "NN") }
func isVerb(tag string) bool   { return strings.HasPrefix(tag, "VB") }
func isAdj(tag string) bool    { return strings.HasPrefix(tag, "JJ") }
func isProper(tag string) bool { return tag == "NNP" || tag == "NNPS" }

func isWord(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// sentence applies the dependency rules to one tagged sentence:
//
//   - noun phrase: (DT|PRP$|JJ*|CD|NN*)* ending in a noun, number or pronoun; consecutive
//     proper nouns form one entity node; adjectives, numbers and nouns before the head
//     are its modifiers (RelModifier); a pronoun is replaced by its antecedent;
//   - NP 's NP: RelPossessive from the second head to the first; PRP$ + NP likewise;
//   - verb group: the last verb of a run of verbs/adverbs/modals is the main verb;
//     auxiliaries alone form a copula;
//   - the nearest NP before the verb group (same clause) is its subject (RelSubject),
//     the NP right after it its object (RelObject); with a copula the subject gets a
//     RelAttribute edge to the complement NP or adjective instead;
//   - NP or verb + IN/TO + NP: RelPreposition from the nearest preceding head;
//   - NP , NP (,): RelApposition when the second NP starts with a determiner or proper noun
//     and no verb intervenes;
//   - NP CC NP: RelConjunction.
func (b *graphBuilder) sentence(toks []tok) {
	type item struct {
		kind  byte // 'n' noun phrase, 'v' verb, 'c' copula, 'p' preposition, ',' comma, '&' conjunction, 'a' predicate adjective, 'x' other
		node  int
		start int
	}
	var items []item
	n := len(toks)
	for i := 0; i < n; {
		t := toks[i]
		switch {
		case t.tag == "DT" || t.tag == "PRP$" || isAdj(t.tag) || t.tag == "CD" || isNoun(t.tag) || t.tag == "PRP":
			start := i
			var mods []int
			head := -1
			possessor := -1
			j := i
			for ; j < n; j++ {
				tj := toks[j]
				if tj.tag == "PRP" {
					if j > start && head >= 0 {
						break
					}
					head = b.resolve(tj.text)
					j++
					break
				}
				if tj.tag == "PRP$" {
					possessor = b.resolve(tj.text)
					continue
				}
				if tj.tag == "DT" {
					if j > start {
						break
					}
					continue
				}
				if isProper(tj.tag) {
					k := j
					var words []string
					for k < n && isProper(toks[k].tag) {
						words = append(words, stem(toks[k].text))
						k++
					}
					if head >= 0 {
						mods = append(mods, head)
					}
					head = b.node(strings.Join(words, " "), ClassEntity)
					if toks[j].ner == "PERSON" {
						b.lastPerson = head
					}
					b.lastProper = head
					if toks[j].ner != "PERSON" {
						b.lastThing = head
					}
					if toks[k-1].tag == "NNPS" {
						b.lastPlural = head
					}
					b.lastNoun = head
					j = k - 1
					continue
				}
				if isNoun(tj.tag) || tj.tag == "CD" || isAdj(tj.tag) {
					if !isWord(tj.text) {
						break
					}
					class := int32(ClassNoun)
					switch {
					case tj.tag == "CD":
						class = ClassEntity
					case isAdj(tj.tag):
						class = ClassAdjective
					}
					idx := b.node(stem(tj.text), class)
					if head >= 0 {
						mods = append(mods, head)
					}
					head = idx
					continue
				}
				break
			}
			if j == start {
				j = start + 1
			}
			if head >= 0 {
				for _, m := range mods {
					b.edge(head, m, RelModifier)
				}
				if possessor >= 0 {
					b.edge(head, possessor, RelPossessive)
				}
				last := toks[j-1]
				if isNoun(last.tag) && !isProper(last.tag) {
					b.lastThing = head
					b.lastNoun = head
					if last.tag == "NNS" {
						b.lastPlural = head
					}
				}
				// A trailing adjective alone is a predicate adjective, not a phrase.
				if b.g.Class[head] == ClassAdjective && len(mods) == 0 {
					items = append(items, item{kind: 'a', node: head, start: start})
				} else {
					items = append(items, item{kind: 'n', node: head, start: start})
				}
			}
			i = j
		case t.tag == "POS":
			items = append(items, item{kind: '\'', node: -1, start: i})
			i++
		case isVerb(t.tag) || t.tag == "MD" || (t.tag == "RB" && i+1 < n && isVerb(toks[i+1].tag)):
			j := i
			main, lastAux := -1, -1
			copula := false
			for ; j < n && (isVerb(toks[j].tag) || toks[j].tag == "MD" || toks[j].tag == "RB"); j++ {
				w := strings.ToLower(toks[j].text)
				if !isVerb(toks[j].tag) {
					continue
				}
				if auxiliaries[w] || copulas[w] {
					if copulas[w] {
						copula = true
					} else {
						lastAux = j
					}
					continue
				}
				main = j
			}
			if main < 0 && !copula && lastAux >= 0 {
				main = lastAux // "it has bridges": have/do alone is the main verb
			}
			if main >= 0 {
				// "was founded": a passive main verb is still the head.
				items = append(items, item{kind: 'v', node: b.node(stem(toks[main].text), ClassVerb), start: i})
			} else if copula {
				items = append(items, item{kind: 'c', node: -1, start: i})
			}
			i = j
		case t.tag == "IN" || t.tag == "TO":
			items = append(items, item{kind: 'p', node: -1, start: i})
			i++
		case t.tag == ",":
			items = append(items, item{kind: ',', node: -1, start: i})
			i++
		case t.tag == "CC" && conjunction[strings.ToLower(t.text)]:
			items = append(items, item{kind: '&', node: -1, start: i})
			i++
		default:
			items = append(items, item{kind: 'x', node: -1, start: i})
			i++
		}
	}

	lastNP := -1   // item index of the most recent noun phrase in the clause
	lastHead := -1 // node of the most recent NP or verb, for prepositions
	for k, it := range items {
		switch it.kind {
		case 'v', 'c':
			subj := -1
			if lastNP >= 0 {
				subj = items[lastNP].node
			}
			next := -1
			if k+1 < len(items) && (items[k+1].kind == 'n' || items[k+1].kind == 'a') {
				next = items[k+1].node
			}
			if it.kind == 'v' {
				b.edge(it.node, subj, RelSubject)
				if next >= 0 && items[k+1].kind == 'n' {
					b.edge(it.node, next, RelObject)
				}
				lastHead = it.node
			} else if subj >= 0 && next >= 0 {
				b.edge(subj, next, RelAttribute)
			}
			lastNP = -1
		case 'p':
			if k+1 < len(items) && items[k+1].kind == 'n' && lastHead >= 0 {
				b.edge(lastHead, items[k+1].node, RelPreposition)
				// The prepositional object does not become the clause subject.
				items[k+1].kind = 'o'
				lastHead = items[k+1].node
			}
		case '\'':
			if k > 0 && k+1 < len(items) && items[k-1].kind == 'n' && items[k+1].kind == 'n' {
				b.edge(items[k+1].node, items[k-1].node, RelPossessive)
			}
		case ',':
			if lastNP >= 0 && k+1 < len(items) && items[k+1].kind == 'n' && lastNP == k-1 {
				st := toks[items[k+1].start]
				if st.tag == "DT" || isProper(st.tag) {
					b.edge(items[lastNP].node, items[k+1].node, RelApposition)
					items[k+1].kind = 'o' // the appositive is not a new subject
				}
			}
		case '&':
			if k > 0 && k+1 < len(items) && items[k+1].kind == 'n' && (items[k-1].kind == 'n' || items[k-1].kind == 'o') {
				b.edge(items[k-1].node, items[k+1].node, RelConjunction)
				items[k+1].kind = 'o'
			}
		case 'n':
			lastNP = k
			lastHead = it.node
		case 'o':
			lastHead = it.node
		}
	}
}
