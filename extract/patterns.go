package extract

import (
	"slices"
	"strings"

	"github.com/graphloom/graphloom/graphio"
)

// patterns derives triples from one tagged sentence and its entity spans.
type patterns struct {
	toks     []token
	spans    []span
	maxWords int
	res      *Result
	seen     map[string]bool
	doc      int // text index, for Triple.Sources

	subjects []int  // spans acting as the current clause subject
	coord    bool   // subjects were gathered by "X and Y" and await their verb
	appo     int    // span heading an open apposition, or -1
	lastObj  int    // span that ended the last verb triple, or -1
	lastPred string // that triple's predicate
	lastVerb string // that predicate without its trailing preposition
}

// Words that introduce another name for the preceding one.
var aliasLeads = [][]string{
	{"also", "known", "as"}, {"better", "known", "as"}, {"known", "as"}, {"also", "called"}, {"called"},
	{"nicknamed"}, {"alias"}, {"styled"},
}

func (p *patterns) run() {
	p.appo, p.lastObj = -1, -1
	for k := range p.spans {
		p.isA(k)
	}
	for k := 0; k+1 < len(p.spans); k++ {
		a, b := p.spans[k], p.spans[k+1]
		if a.j > b.i {
			continue
		}
		mid := p.toks[a.j:b.i]
		switch {
		case len(mid) == 0:
			p.lastObj = -1
		case isCoordination(mid):
			p.coordination(k, mid)
		case mid[0].text == "," || mid[0].text == "(":
			p.comma(k, mid[1:])
		default:
			p.relation(k, mid)
		}
	}
}

func isCoordination(mid []token) bool {
	for _, t := range mid {
		switch strings.ToLower(t.text) {
		case ",", "and", "or", "&":
		default:
			return false
		}
	}
	return true
}

func (p *patterns) coordination(k int, mid []token) {
	switch {
	case p.lastObj == k && p.lastPred != "":
		// "X visited Y and Z": the verb carries to Z.
		p.emitAll(p.subjects, p.lastPred, k+1)
		p.lastObj = k + 1
	case p.lastObj < 0 && hasWord(mid, "and"):
		// "X and Y founded Z": both are subjects of the verb that follows.
		if !p.coord || len(p.subjects) == 0 || p.subjects[len(p.subjects)-1] != k {
			p.subjects = []int{k}
		}
		p.subjects = append(p.subjects, k+1)
		p.coord = true
	}
}

// comma handles "A, <rest> B": an alias, an apposition, or a clause continuing after
// an apposition ("A, the x of B, founded C").
func (p *patterns) comma(k int, rest []token) {
	rest = trimDeterminers(rest)
	words := lowerWords(rest)
	for _, lead := range aliasLeads {
		if hasPrefix(words, lead) && allDeterminers(rest[len(lead):]) {
			p.alias(k, k+1)
			p.appo = k
			p.lastObj = -1
			return
		}
	}
	if np, prep, ok := nounPhraseThenPrep(rest); ok {
		// Apposition "A, the harbourmaster of B".
		p.emit(k, np+" "+prep, k+1)
		p.appo = k
		p.lastObj = -1
		return
	}
	// "A, who founded B" / "…(appositive), founded B" / "A, and then sailed to B".
	r := rest
	if len(r) > 0 && (r[0].tag == "WP" || r[0].tag == "WDT" || r[0].text == "and") {
		r = r[1:]
	}
	if !hasVerb(r) {
		p.lastObj = -1
		return
	}
	subj := k
	switch {
	case p.appo >= 0 && len(rest) > 0 && rest[0].tag != "WP":
		subj = p.appo
	case len(rest) > 0 && rest[0].text == "and" && len(p.subjects) > 0:
		subj = -1 // keep the clause subjects
	}
	if subj >= 0 {
		p.subjects, p.coord = []int{subj}, false
	}
	p.appo = -1
	p.verb(r, k+1)
}

// relation handles "A <mid> B" with no leading comma.
func (p *patterns) relation(k int, mid []token) {
	if len(mid) == 1 && isPrep(mid[0]) || len(mid) == 2 && isPrep(mid[0]) && mid[1].tag == "DT" {
		// "… married Y in Z": a trailing prepositional phrase attaches to the last verb.
		if p.lastObj == k && p.lastVerb != "" {
			p.emitAll(p.subjects, p.lastVerb+" "+strings.ToLower(mid[0].text), k+1)
			p.lastObj = k + 1
		} else {
			p.lastObj = -1
		}
		return
	}
	r := mid
	lead := strings.ToLower(r[0].text)
	switch {
	case lead == "and" || lead == "then" || lead == "but":
		// "X founded Y and built Z": same subjects.
		r = r[1:]
	case r[0].tag == "WP" || r[0].tag == "WDT":
		p.subjects, p.coord = []int{k}, false
		r = r[1:]
	case p.coord && len(p.subjects) > 0 && p.subjects[len(p.subjects)-1] == k:
		// The verb of coordinated subjects.
	default:
		p.subjects, p.coord = []int{k}, false
	}
	p.coord = false
	p.verb(r, k+1)
}

// verb emits (subjects, predicate, obj) when toks form a verb group.
func (p *patterns) verb(toks []token, obj int) {
	toks = trimDeterminers(toks)
	if len(toks) == 0 || len(toks) > p.maxWords || !hasVerb(toks) || len(p.subjects) == 0 {
		p.lastObj = -1
		return
	}
	for _, t := range toks {
		if !verbGroupTag(t.tag) {
			p.lastObj = -1
			return
		}
	}
	words := lowerWords(toks)
	var pred string
	if copulas[words[0]] {
		if np, prep, ok := nounPhraseThenPrep(toks[1:]); ok {
			// "X is the daughter of Y" → (X, daughter of, Y).
			pred = np + " " + prep
		}
	}
	if pred == "" {
		var kept []string
		for i, t := range toks {
			if t.tag == "DT" || t.tag == "POS" || words[i] == "also" {
				continue
			}
			kept = append(kept, words[i])
		}
		pred = strings.Join(kept, " ")
	}
	if isAliasPredicate(pred) {
		for _, s := range p.subjects {
			p.alias(s, obj)
		}
		p.lastObj = -1
		return
	}
	p.emitAll(p.subjects, pred, obj)
	p.lastObj, p.lastPred = obj, pred
	p.lastVerb = pred
	if last := toks[len(toks)-1]; isPrep(last) {
		p.lastVerb = strings.TrimSpace(strings.TrimSuffix(pred, strings.ToLower(last.text)))
	}
}

// namePart reports whether span k is only the tail of a longer name the extractor
// split, or the object of a preposition: the token before it (past determiners)
// joins it to what precedes ("The King on Main Street", "The Black Sea and Caspian
// Squadron", "Night of the Living Dead: Darkest Dawn", "a member of the House of
// Lords, styled Lord Howard").
// An alias stated after such a span names the whole phrase, not the span, so it is
// not recorded: resolved across texts it would rename unrelated mentions ("the King"
// anywhere → "Main Street").
func (p *patterns) namePart(k int) bool {
	i := p.spans[k].i
	for i > 0 && p.toks[i-1].tag == "DT" {
		i-- // "member of the House of Lords, styled Lord Howard": look past "the"
	}
	if i == 0 {
		return false
	}
	prev := p.toks[i-1]
	switch strings.ToLower(prev.text) {
	case "and", "&", ":", "-", "–", "'s":
		return true
	}
	return isPrep(prev) || prev.tag == "POS" || strings.HasPrefix(prev.tag, "NNP")
}

func isAliasPredicate(pred string) bool {
	for _, s := range []string{"known as", "called", "nicknamed", "also called"} {
		if pred == s || strings.HasSuffix(pred, " "+s) {
			return true
		}
	}
	return false
}

// isA emits (X, is a, <noun phrase>) for "X is a <noun phrase>".
func (p *patterns) isA(k int) {
	a := p.spans[k]
	i := a.j
	if i+2 >= len(p.toks) || !copulas[strings.ToLower(p.toks[i].text)] {
		return
	}
	art := strings.ToLower(p.toks[i+1].text)
	if art != "a" && art != "an" {
		return
	}
	j := i + 2
	for j < len(p.toks) && nounish(p.toks[j]) {
		j++
	}
	if j == i+2 || !(p.toks[j-1].tag == "NN" || p.toks[j-1].tag == "NNS") {
		return
	}
	if next := k + 1; next < len(p.spans) && p.spans[next].i < j {
		return // the phrase holds a name: not a plain type
	}
	np := strings.Join(lowerWords(p.toks[i+2:j]), " ")
	p.res.Entities = append(p.res.Entities, Entity{Text: np})
	p.emitText(a.text, "is a", np)
}

// nounPhraseThenPrep matches DT? (JJ|NN…)+ IN at the whole of toks and returns the
// lower-case noun phrase and the preposition.
func nounPhraseThenPrep(toks []token) (string, string, bool) {
	i := 0
	if i < len(toks) && toks[i].tag == "DT" {
		i++
	}
	j := i
	for j < len(toks) && nounish(toks[j]) {
		j++
	}
	if j == i || j != len(toks)-1 || !isPrep(toks[j]) {
		return "", "", false
	}
	if t := toks[j-1].tag; t != "NN" && t != "NNS" && t != "NNP" {
		return "", "", false
	}
	return strings.Join(lowerWords(toks[i:j]), " "), strings.ToLower(toks[j].text), true
}

func nounish(t token) bool {
	switch t.tag {
	case "JJ", "JJR", "JJS", "NN", "NNS", "VBN", "CD":
		return isAlnumWord(t.text)
	case "NNP":
		return !capitalised(t.text)
	}
	return false
}

func isPrep(t token) bool { return t.tag == "IN" || t.tag == "TO" }

func hasVerb(toks []token) bool {
	for _, t := range toks {
		if strings.HasPrefix(t.tag, "VB") || t.tag == "MD" {
			return true
		}
	}
	return false
}

func verbGroupTag(tag string) bool {
	switch tag {
	case "VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "MD", "RB", "RP", "IN", "TO", "DT", "JJ", "JJR", "JJS", "NN", "NNS", "CD", "POS":
		return true
	}
	return false
}

func lowerWords(toks []token) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = strings.ToLower(t.text)
	}
	return out
}

func hasWord(toks []token, w string) bool {
	for _, t := range toks {
		if strings.EqualFold(t.text, w) {
			return true
		}
	}
	return false
}

func hasPrefix(words, prefix []string) bool {
	if len(words) < len(prefix) {
		return false
	}
	for i, w := range prefix {
		if words[i] != w {
			return false
		}
	}
	return true
}

// trimDeterminers drops the determiners ("the", "a") that end a span of tokens.
func trimDeterminers(toks []token) []token {
	for len(toks) > 0 && (toks[len(toks)-1].tag == "DT" || toks[len(toks)-1].tag == "PRP$") {
		toks = toks[:len(toks)-1]
	}
	return toks
}

func allDeterminers(toks []token) bool {
	for _, t := range toks {
		if t.tag != "DT" {
			return false
		}
	}
	return true
}

func (p *patterns) alias(a, b int) {
	x, y := p.spans[a].text, p.spans[b].text
	if graphio.NormalizeName(x) == graphio.NormalizeName(y) || p.namePart(a) {
		return
	}
	p.res.Aliases = append(p.res.Aliases, [2]string{x, y})
	p.emitText(x, "known as", y)
}

func (p *patterns) emitAll(subjects []int, pred string, obj int) {
	for _, s := range subjects {
		p.emit(s, pred, obj)
	}
}

func (p *patterns) emit(s int, pred string, o int) {
	p.emitFrom(p.spans[s].text, pred, p.spans[o].text, p.spans[s].from, p.spans[o].from)
}

func (p *patterns) emitText(s, pred, o string) { p.emitFrom(s, pred, o, -1, -1) }

// emitFrom records a triple; from lists the texts (other than this one) an entity was
// resolved from, or -1.
func (p *patterns) emitFrom(s, pred, o string, from ...int) {
	pred = strings.Join(strings.Fields(pred), " ")
	ns, no := graphio.NormalizeName(s), graphio.NormalizeName(o)
	if ns == "" || no == "" || ns == no || graphio.NormalizeName(pred) == "" {
		return
	}
	key := ns + "\x00" + graphio.NormalizeName(pred) + "\x00" + no
	if p.seen[key] {
		return
	}
	p.seen[key] = true
	t := Triple{Subject: s, Predicate: pred, Object: o}
	for _, f := range from {
		if f >= 0 && f != p.doc && !slices.Contains(t.Sources, f) {
			t.Sources = append(t.Sources, f)
		}
	}
	p.res.Triples = append(p.res.Triples, t)
}
