package extract

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/graphloom/graphloom/ingest"
)

// RuleConfig holds the knobs of the offline rule extractor.
type RuleConfig struct {
	// Workers is the number of goroutines, each with its own tagger; 0 = GOMAXPROCS.
	Workers int
	// MaxPredicateWords bounds the words between subject and object that can form a
	// predicate; longer spans are not taken as a relation. Default 10.
	MaxPredicateWords int
	// ResolvePronouns replaces he/she/him/her by the most recent person-like subject of
	// the chunk, as EXT++ asks of its LLM. Default true.
	ResolvePronouns bool
	// Titles uses the chunks' document titles as a gazetteer (see [Titles]): each
	// chunk mentions its own title, and a title occurring in any chunk is an entity
	// span. HippoRAG 2 extracts from "title\ntext", so its LLM sees the title too.
	// Default true.
	Titles bool
}

// DefaultRuleConfig returns the defaults.
func DefaultRuleConfig() RuleConfig {
	return RuleConfig{MaxPredicateWords: 10, ResolvePronouns: true, Titles: true}
}

// Rule is the offline extractor: prose v2 tokens, part-of-speech tags and named
// entities, and sentence patterns. It needs no network and no model files.
//
// Entities are named-entity spans and proper-noun sequences (capitalised nouns and
// adjectives inside them, linked by "of", plural possessives and name particles), dates
// and years, and the common noun phrases that copulas assign as types. Triples come
// from patterns within a sentence: subject–verb–object with the verb group as predicate
// ("X founded Y", "X was born in Y"), verb carried over coordinated objects and trailing
// prepositional phrases ("X married Y in Z" gives (X, married in, Z)), copula with a noun
// ("X is a harbour town" gives (X, is a, harbour town); "X is the daughter of Y" gives
// (X, daughter of, Y)), appositions ("X, the harbourmaster of Y," gives (X, harbourmaster
// of, Y)) and alias introductions ("X, known as Y," gives (X, known as, Y) and an alias
// pair). Every sentence naming two or more entities becomes a hyperedge.
type Rule struct {
	cfg  RuleConfig
	pool sync.Pool // *ruleWorker, for ExtractText and ExtractDocs

	taggerOnce sync.Once
	tagger     *ingest.Tagger // shared by the workers
	taggerErr  error
}

// NewRule returns a rule extractor.
func NewRule(cfg RuleConfig) *Rule {
	if cfg.MaxPredicateWords <= 0 {
		cfg.MaxPredicateWords = 10
	}
	return &Rule{cfg: cfg}
}

// Name implements Extractor.
func (r *Rule) Name() string { return "rule" }

// Extract implements Extractor.
func (r *Rule) Extract(ctx context.Context, chunks []Chunk, progress Progress) ([]Result, error) {
	ts := make([]string, len(chunks))
	for i, c := range chunks {
		ts[i] = c.Title
	}
	return r.ExtractTitled(ctx, chunks, ts, progress)
}

// ExtractTitled is Extract with the title gazetteer built from corpusTitles (the
// titles of every chunk of the corpus) instead of the titles of chunks: a result is
// then the one Extract gives that chunk within the whole corpus, which is how chunks
// added to an index are extracted.
func (r *Rule) ExtractTitled(ctx context.Context, chunks []Chunk, corpusTitles []string, progress Progress) ([]Result, error) {
	workers := r.cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(chunks)))
	out := make([]Result, len(chunks))
	if len(chunks) == 0 {
		return out, nil
	}
	var titles *Titles
	if r.cfg.Titles {
		titles = NewTitles(corpusTitles)
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wk, err := r.newWorker()
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := range jobs {
				out[i] = wk.titled(chunks[i].Title, chunks[i].Text, titles)
				mu.Lock()
				done++
				if progress != nil {
					progress(done, len(chunks))
				}
				mu.Unlock()
			}
		}(w)
	}
	var err error
	for i := range chunks {
		if err = ctx.Err(); err != nil {
			break
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return nil, fmt.Errorf("extract: %w", err)
	}
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return out, nil
}

// TitleSensitive reports, for each text, whether its extraction may differ between a
// corpus whose chunk titles are before and one whose titles are after: whether it holds
// every word of a gazetteer entry that only one of the two has. It is false for every
// text when the gazetteer is off. A text it reports false for extracts the same under
// both (the gazetteer is the only corpus-wide input of the rule extractor).
func (r *Rule) TitleSensitive(before, after []string, texts []string) []bool {
	out := make([]bool, len(texts))
	if !r.cfg.Titles {
		return out
	}
	a, b := NewTitles(before), NewTitles(after)
	var changed [][]string
	for k := range a.keys {
		if _, ok := b.keys[k]; !ok {
			changed = append(changed, strings.Fields(k))
		}
	}
	for k := range b.keys {
		if _, ok := a.keys[k]; !ok {
			changed = append(changed, strings.Fields(k))
		}
	}
	if len(changed) == 0 {
		return out
	}
	// A text is checked against the changed titles that start with one of its words
	// only: checking each against all of them cost chunks × changed titles, which a
	// 1 % add to 120K passages made the largest part of finding the texts.
	byFirst := map[string][][]string{}
	for _, key := range changed {
		if len(key) == 0 { // every text holds all the words of an empty title
			for i := range out {
				out[i] = true
			}
			return out
		}
		byFirst[key[0]] = append(byFirst[key[0]], key)
	}
	for i, t := range texts {
		words := map[string]bool{}
		for _, w := range titleWords(t) {
			words[w] = true
		}
	text:
		for w := range words {
			for _, key := range byFirst[w] {
				all := true
				for _, kw := range key[1:] {
					all = all && words[kw]
				}
				if all {
					out[i] = true
					break text
				}
			}
		}
	}
	return out
}

// ruleWorker holds one goroutine's state (the tagger is shared).
type ruleWorker struct {
	cfg    RuleConfig
	tagger *ingest.Tagger
	seg    *ingest.Segmenter
}

func (r *Rule) newWorker() (*ruleWorker, error) {
	seg, err := ingest.NewSegmenter()
	if err != nil {
		return nil, err
	}
	r.taggerOnce.Do(func() { r.tagger, r.taggerErr = ingest.LoadTagger() })
	if r.taggerErr != nil {
		return nil, fmt.Errorf("extract: %w", r.taggerErr)
	}
	return &ruleWorker{cfg: r.cfg, tagger: r.tagger, seg: seg}, nil
}

// ExtractText runs the rule extractor on one text (convenient for tests and for the
// offline augmentation, which extracts from concatenated evidence).
func (r *Rule) ExtractText(text string) (Result, error) {
	w, err := r.pooled()
	if err != nil {
		return Result{}, err
	}
	defer r.pool.Put(w)
	return w.chunk(text), nil
}

// pooled returns a worker from the pool (loading a tagger takes a fraction of a
// second, so callers that extract many small texts reuse them).
func (r *Rule) pooled() (*ruleWorker, error) {
	if w, ok := r.pool.Get().(*ruleWorker); ok {
		return w, nil
	}
	return r.newWorker()
}

type token struct {
	text, tag, ner string
	start, end     int // byte offsets in the sentence, -1 when not aligned
}

type span struct {
	i, j int // token range [i, j)
	text string
	typ  string
	from int // for a resolved pronoun, the text its antecedent came from (see ExtractDocs); else -1
}

// chunkState carries what pronoun resolution needs across the sentences of a chunk.
type chunkState struct {
	titles    *Titles // the corpus's title gazetteer, or nil
	doc       int     // index of the text being processed (ExtractDocs)
	person    string  // last person-like sentence subject
	personDoc int     // the text that subject was found in
	// carried is set while person comes from an earlier text and the current text
	// has not yet said whether it continues that discourse (see ExtractDocs).
	carried bool
}

func (w *ruleWorker) chunk(text string) Result {
	return w.text(text, &chunkState{})
}

// titled extracts from a chunk of a titled document with the corpus's title gazetteer
// (nil: none); the chunk mentions its own title when the gazetteer holds it.
func (w *ruleWorker) titled(title, text string, titles *Titles) Result {
	st := &chunkState{titles: titles}
	res := w.text(text, st)
	if titles.Len() > 0 {
		if t := CleanTitle(title); titles.keys[strings.Join(titleWords(t), " ")] != "" {
			seen := false
			for _, e := range res.Entities {
				seen = seen || strings.EqualFold(e.Text, t)
			}
			if !seen {
				res.Entities = append(res.Entities, Entity{Text: t})
			}
		}
	}
	return res
}

// ExtractDocs extracts from consecutive texts (such as the evidence chunks of an
// augmentation prompt) as one discourse: a pronoun at the start of one text can resolve
// to a person named in the text before it when linked[i] says text i continues text
// i−1 (nil links every text to its predecessor). Result i holds what text i states; a
// triple whose entity was resolved from another text lists that text in Sources.
//
// A linked text continues the discourse only if it refers to someone by a personal
// pronoun before it names anyone or anything (dates aside), as the next chapter of a
// story opening "She ran down to the landing" does. A text that names an entity
// first — an encyclopedia article opening with its subject, even one the tagger does
// not take for a person — starts a discourse of its own, and the earlier text's person
// is forgotten: otherwise a "he" in the third sentence of an unrelated article would
// resolve to the last person of the article before it.
func (r *Rule) ExtractDocs(texts []string, linked []bool) ([]Result, error) {
	w, err := r.pooled()
	if err != nil {
		return nil, err
	}
	defer r.pool.Put(w)
	out := make([]Result, len(texts))
	st := &chunkState{}
	for i, t := range texts {
		if linked != nil && (i >= len(linked) || !linked[i]) {
			st = &chunkState{}
		}
		st.doc = i
		st.carried = st.person != ""
		out[i] = w.text(t, st)
	}
	return out, nil
}

func (w *ruleWorker) text(text string, st *chunkState) Result {
	var res Result
	seen := map[string]bool{}
	// Tag the whole text in one call (prose's per-call overhead dominates short
	// sentences), then hand each sentence its tokens with sentence-relative offsets.
	toks := w.tag(text)
	k := 0
	for _, s := range w.seg.Sentences(text) {
		raw := text[s.Start:s.End]
		sent := strings.TrimSpace(raw)
		if sent == "" {
			continue
		}
		base := s.Start + strings.Index(raw, sent)
		var st2 []token
		for ; k < len(toks); k++ {
			t := toks[k]
			if t.start >= s.End {
				break
			}
			if t.start >= 0 {
				t.start, t.end = t.start-base, t.end-base
				if t.start < 0 || t.end > len(sent) {
					t.start, t.end = -1, -1
				}
			}
			st2 = append(st2, t)
		}
		w.sentence(sent, st2, st, &res, seen)
	}
	return res
}

// tag returns the tokens of text with their tags, named-entity labels and byte
// offsets (-1 when a token cannot be aligned with the text).
func (w *ruleWorker) tag(text string) []token {
	pt, err := w.tagger.Tag(text)
	if err != nil {
		return nil
	}
	toks := make([]token, len(pt))
	cur := 0
	for i, t := range pt {
		toks[i] = token{text: t.Text, tag: t.Tag, ner: t.Label, start: -1, end: -1}
		if at := strings.Index(text[cur:], t.Text); at >= 0 && at <= 16 && t.Text != "" {
			toks[i].start, toks[i].end = cur+at, cur+at+len(t.Text)
			cur = toks[i].end
		} else if i > 0 {
			// Keep unaligned tokens with their predecessor's sentence.
			toks[i].start = -1
		}
	}
	return toks
}

func (w *ruleWorker) sentence(sent string, toks []token, st *chunkState, res *Result, seen map[string]bool) {
	if len(toks) == 0 {
		return
	}
	spans := entitySpans(sent, toks, st.titles)
	if st.carried {
		st.continuesDiscourse(toks, spans)
	}
	if w.cfg.ResolvePronouns {
		spans = resolvePronouns(toks, spans, st)
	}
	for _, sp := range spans {
		key := sp.text + "\x00" + sp.typ
		if !seen[key] {
			seen[key] = true
			res.Entities = append(res.Entities, Entity{Text: sp.text, Type: sp.typ})
		}
	}
	p := patterns{toks: toks, spans: spans, maxWords: w.cfg.MaxPredicateWords, res: res, seen: seen, doc: st.doc}
	p.run()
	// Remember the sentence subject for pronouns in the next sentence.
	if len(spans) > 0 && spans[0].i <= 2 && spans[0].typ != "DATE" {
		if spans[0].typ == "PERSON" && !placeLike(spans[0].text) || isPersonName(spans[0].text) {
			st.person, st.personDoc = spans[0].text, st.doc
			if spans[0].from >= 0 {
				st.personDoc = spans[0].from
			}
		}
	}
	var names []string
	for _, sp := range spans {
		if !containsFold(names, sp.text) {
			names = append(names, sp.text)
		}
	}
	if len(names) >= 2 {
		res.Hyperedges = append(res.Hyperedges, Hyperedge{Text: sent, Entities: names, Score: float32(len(names))})
	}
}

func containsFold(xs []string, s string) bool {
	for _, x := range xs {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// placeHeads are last words that make a capitalised name a place, building,
// organisation or thing rather than a person.
var placeHeads = toSet("point", "rock", "house", "street", "coast", "bay", "harbour", "harbor", "island", "isle",
	"guild", "compact", "hall", "lighthouse", "river", "town", "city", "quay", "ford", "bridge", "castle", "church",
	"abbey", "court", "company", "society", "council", "office", "market", "road", "lane", "square", "sea", "lake",
	"mountain", "hill", "valley", "moor", "forest", "wood", "port", "cape", "head", "tower", "inn", "tavern",
	"university", "college", "school", "museum", "theatre", "theater", "hospital", "station", "county", "province",
	"kingdom", "empire", "republic", "war", "battle", "treaty", "act", "lamps", "night")

// placeLike reports whether a name ends in a place or organisation word.
func placeLike(s string) bool {
	f := strings.Fields(strings.ToLower(s))
	return len(f) > 0 && placeHeads[strings.Trim(f[len(f)-1], ".,'’")]
}

// PersonTitle reports whether a document title (CleanTitle applied) looks like a
// person's name (see isPersonName). Such a document is about that person: a pronoun
// opening it refers to them, not to someone named in the document before it.
// A title opening with a pronoun or another word that starts no name ("Her First
// Romance", "After the Storm") is not one; "The" may open a byname ("The Magpie").
func PersonTitle(title string) bool {
	t := CleanTitle(title)
	f := strings.Fields(t)
	return isPersonName(t) && !(nameStop[f[0]] && f[0] != "The" && !honorifics[f[0]])
}

// isPersonName guesses a person name: two or three capitalised words, the last not a
// place or organisation word, with at most one lower-case name particle between them
// ("Ludwig van Beethoven", "Minamoto no Chikako").
func isPersonName(s string) bool {
	f := strings.Fields(s)
	if len(f) < 2 || len(f) > 4 || placeLike(s) {
		return false
	}
	lower := 0
	for i, w := range f {
		if r, _ := utf8.DecodeRuneInString(w); unicode.IsUpper(r) {
			continue
		}
		if i == 0 || i == len(f)-1 || !(particles[w] || w == "no") {
			return false
		}
		lower++
	}
	return lower <= 1 && len(f)-lower >= 2 && len(f)-lower <= 3
}

var (
	// Capitalised words that do not start a name on their own.
	nameStop = toSet("The", "A", "An", "This", "That", "These", "Those", "It", "He", "She", "They", "We", "I", "You",
		"His", "Her", "Their", "Its", "Our", "In", "On", "At", "After", "Before", "When", "While", "During", "Although",
		"However", "But", "And", "Or", "If", "As", "By", "For", "From", "With", "Without", "Yes", "No", "Not", "There",
		"Here", "Then", "Now", "Once", "Every", "Each", "Some", "Many", "Most", "All", "Both", "What", "Who", "Why",
		"How", "Where", "Which", "Whose", "Later", "Still", "Only", "Even", "So", "Mr", "Mrs", "Ms", "Miss", "Dr", "Sir",
		"Madam", "Mx", "Do", "Don")
	honorifics = toSet("Mr", "Mrs", "Ms", "Miss", "Dr", "Sir", "Madam", "Mx", "Mr.", "Mrs.", "Ms.", "Dr.")
	months     = toSet("January", "February", "March", "April", "May", "June", "July", "August", "September",
		"October", "November", "December")
	particles = toSet("de", "van", "von", "da", "del", "della", "der", "den", "la", "le", "du", "bin", "ibn", "al")
	copulas   = toSet("is", "was", "are", "were", "be", "been", "being", "became", "becomes", "become", "remains", "remained")
)

func toSet(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func capitalised(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsUpper(r)
}

func isAlnumWord(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return true
		}
	}
	return false
}

// properish reports whether token i can be part of a name.
func properish(toks []token, i int) bool {
	t := toks[i]
	if !capitalised(t.text) || !isAlnumWord(t.text) || months[t.text] {
		return false
	}
	switch t.tag {
	case "NNP", "NNPS":
		return true
	case "NN", "NNS", "JJ", "VBN", "VBG", "FW":
		// A capitalised common word is part of a name inside a sentence, or at its start
		// when a proper noun follows ("Grey Widow …").
		if i > 0 {
			return true
		}
		return i+1 < len(toks) && (toks[i+1].tag == "NNP" || toks[i+1].tag == "NNPS") && capitalised(toks[i+1].text)
	}
	return false
}

func isYear(s string) bool {
	if len(s) != 4 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s[0] == '1' || s[0] == '2'
}

func isDay(s string) bool {
	if len(s) == 0 || len(s) > 2 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// entitySpans finds names and dates in a tagged sentence; a document title of the
// gazetteer (may be nil) is one span, the longest that matches.
func entitySpans(sent string, toks []token, titles *Titles) []span {
	var out []span
	for i := 0; i < len(toks); {
		if j := titles.match(toks, i); j > i {
			out = append(out, span{i: i, j: j, typ: nerType(toks[i:j]), from: -1})
			i = j
			continue
		}
		// Dates: [day] Month [day,] [year] or a bare year.
		if months[toks[i].text] || isYear(toks[i].text) && toks[i].tag == "CD" {
			j, k := i, i
			if j > 0 && isDay(toks[j-1].text) && (len(out) == 0 || out[len(out)-1].j <= j-1) {
				k = j - 1
			}
			if months[toks[j].text] {
				j++
				if j < len(toks) && isDay(toks[j].text) {
					j++
					if j < len(toks) && toks[j].text == "," {
						j++
					}
				}
				if j < len(toks) && isYear(toks[j].text) {
					j++
				} else if k == i && (j == i+1) {
					// A month alone ("in May") is not a date we keep.
					i++
					continue
				}
			} else {
				j++
			}
			for j > k && toks[j-1].text == "," {
				j--
			}
			out = append(out, span{i: k, j: j, typ: "DATE", from: -1})
			i = j
			continue
		}
		if !properish(toks, i) || honorifics[toks[i].text] {
			i++
			continue
		}
		j := i + 1
		for j < len(toks) {
			switch {
			case properish(toks, j):
				j++
				continue
			case (toks[j].text == "of" && j-i == 1 || particles[toks[j].text]) && j+1 < len(toks) && properish(toks, j+1):
				j += 2
				continue
			case toks[j].text == "'" && toks[j].tag == "POS" && j+1 < len(toks) && properish(toks, j+1):
				j += 2
				continue
			}
			break
		}
		if j-i == 1 && nameStop[toks[i].text] {
			i++
			continue
		}
		// Drop a leading stop word such as "The" tagged as a proper noun.
		if nameStop[toks[i].text] && j-i > 1 {
			i++
		}
		out = append(out, span{i: i, j: j, typ: nerType(toks[i:j]), from: -1})
		i = j
	}
	for k := range out {
		out[k].text = surface(sent, toks, out[k].i, out[k].j)
	}
	return out
}

// nerType is the majority named-entity label of a span's tokens, or "".
func nerType(toks []token) string {
	count := map[string]int{}
	best, n := "", 0
	for _, t := range toks {
		if len(t.ner) > 2 && (t.ner[0] == 'B' || t.ner[0] == 'I') {
			l := t.ner[2:]
			count[l]++
			if count[l] > n {
				best, n = l, count[l]
			}
		}
	}
	return best
}

// surface is the original text of tokens [i, j), or their words joined by spaces.
func surface(sent string, toks []token, i, j int) string {
	if toks[i].start >= 0 && toks[j-1].end >= 0 && toks[i].start < toks[j-1].end {
		return sent[toks[i].start:toks[j-1].end]
	}
	words := make([]string, 0, j-i)
	for _, t := range toks[i:j] {
		words = append(words, t.text)
	}
	return strings.Join(words, " ")
}

var personPronouns = toSet("he", "she", "him", "her")

// continuesDiscourse settles, at a sentence of a text that carries a person from an
// earlier text, whether the text continues that discourse: a personal pronoun before
// any named entity other than a date confirms it; a named entity first ends it, and the
// carried person is forgotten. A sentence with neither leaves the question open.
func (st *chunkState) continuesDiscourse(toks []token, spans []span) {
	firstName := len(toks)
	for _, sp := range spans {
		if sp.typ != "DATE" {
			firstName = sp.i
			break
		}
	}
	for i, t := range toks[:firstName] {
		if t.tag == "PRP" && personPronouns[strings.ToLower(t.text)] && !inSpans(spans, i) {
			st.carried = false
			return
		}
	}
	if firstName < len(toks) {
		st.person, st.carried = "", false
	}
}

// resolvePronouns adds spans for personal pronouns, naming the chunk's last person.
func resolvePronouns(toks []token, spans []span, st *chunkState) []span {
	if st.person == "" {
		return spans
	}
	var out []span
	k := 0
	for i, t := range toks {
		for k < len(spans) && spans[k].i <= i {
			out = append(out, spans[k])
			k++
		}
		if t.tag == "PRP" && personPronouns[strings.ToLower(t.text)] && !inSpans(spans, i) {
			// "her" as a possessive determiner ("her father") is tagged PRP$; PRP "her" is an object.
			out = append(out, span{i: i, j: i + 1, text: st.person, typ: "PERSON", from: st.personDoc})
		}
	}
	out = append(out, spans[k:]...)
	return out
}

func inSpans(spans []span, i int) bool {
	for _, s := range spans {
		if i >= s.i && i < s.j {
			return true
		}
	}
	return false
}
