package kg

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
)

// Entity filter rules, as counted in Report.FilteredEntities.
const (
	FilterShort     = "single-character"
	FilterNumber    = "bare-number"
	FilterStructure = "structure-word"
	FilterStop      = "stop-phrase"
	FilterGeneric   = "generic"
	FilterMention   = "mention-only"
)

// structureWords are the words of a document's apparatus: alone or followed by a
// number or numeral ("Chapter 3", "Figure 2a", "Notice") they name no entity.
var structureWords = map[string]bool{}

// stopNames are words that make no entity when a name consists of them only.
var stopNames = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`chapter section figure fig table notice page pages appendix part volume vol
		note notes example exercise contents index preface introduction conclusion summary abstract references
		bibliography acknowledgements acknowledgments footnote paragraph article clause schedule annex item line
		equation eq listing step chart plate book edition copyright`) {
		structureWords[w] = true
	}
	for _, w := range strings.Fields(`a an the and or of to in on at by for from with as is was are were be been it
		its this that these those which who whom whose what when where why how he she his her him i you we our
		your my me us they them their there here then now one also but if so not no yes mr mrs ms dr sir`) {
		stopNames[w] = true
	}
}

// nameRule returns the rule that rejects a normalised entity name, or "".
// Four-digit years are dates, not bare numbers: they stay (the generic filter
// catches a year every chunk names). A single letter with numbers ("p 0 001", from
// "p < 0.001") is a statistic's value, not an entity — the odd name of that shape
// ("F-16") is lost with them.
func nameRule(name string) string {
	words := strings.Fields(name)
	switch {
	case len(words) == 0:
		return FilterStop
	case graphio.AlnumLen(name) <= 1:
		return FilterShort
	}
	digits := true
	for _, r := range strings.ReplaceAll(name, " ", "") {
		if !unicode.IsDigit(r) {
			digits = false
			break
		}
	}
	if digits && !(len(words) == 1 && len(words[0]) == 4) {
		return FilterNumber
	}
	// A statistic or variable with its value: "p 0 001" (p < 0.001), "n 45", "r 0 3".
	if len(words) >= 2 && graphio.AlnumLen(words[0]) == 1 && !unicode.IsDigit(rune(words[0][0])) && allDigits(words[1:]) {
		return FilterNumber
	}
	if structureWords[words[0]] && (len(words) == 1 || len(words) == 2 && numberLike(words[1])) {
		return FilterStructure
	}
	stop := true
	for _, w := range words {
		stop = stop && stopNames[w]
	}
	if stop {
		return FilterStop
	}
	return ""
}

// numberLike reports an arabic or roman numeral, possibly with a letter ("2a", "iv").
func numberLike(w string) bool {
	if w == "" {
		return false
	}
	if unicode.IsDigit(rune(w[0])) {
		return true
	}
	return strings.Trim(w, "ivxlcdm") == ""
}

// entityFilter decides which extracted names become entity nodes.
type entityFilter struct {
	generic map[string]bool // normalised names in more than the allowed share of chunks
	inFact  map[string]bool // normalised names that are the subject or object of a triple
	cfg     Config
}

// newEntityFilter counts, over every chunk's extraction, the chunks each name occurs
// in and the names that appear in triples.
func newEntityFilter(results []extract.Result, cfg Config) *entityFilter {
	f := &entityFilter{generic: map[string]bool{}, inFact: map[string]bool{}, cfg: cfg}
	df := map[string]int{}
	ok := 0
	for _, r := range results {
		if r.Failed != "" {
			continue
		}
		ok++
		seen := map[string]bool{}
		note := func(s string) {
			if n := graphio.NormalizeName(s); n != "" && !seen[n] {
				seen[n] = true
				df[n]++
			}
		}
		for _, e := range r.Entities {
			note(e.Text)
		}
		for _, t := range r.Triples {
			note(t.Subject)
			note(t.Object)
			f.inFact[graphio.NormalizeName(t.Subject)] = true
			f.inFact[graphio.NormalizeName(t.Object)] = true
		}
		if cfg.Hyperedges {
			// An n-ary fact is a fact (HyperGraphRAG): its members are not mention-only.
			for _, h := range r.Hyperedges {
				for _, e := range h.Entities {
					f.inFact[graphio.NormalizeName(e)] = true
				}
			}
		}
	}
	if cfg.MaxEntityShare > 0 && ok >= cfg.GenericMinChunks {
		limit := cfg.MaxEntityShare * float64(ok)
		for n, c := range df {
			if float64(c) > limit {
				f.generic[n] = true
			}
		}
	}
	return f
}

// reject returns why a name is not an entity node, or "" when it is one;
// mentionOnly says the name is being added as a bare mention (not a triple endpoint
// or a hyperedge member).
func (f *entityFilter) reject(name string, mentionOnly bool) string {
	if !f.cfg.EntityRules && f.cfg.MaxEntityShare <= 0 && f.cfg.MentionOnly {
		return ""
	}
	n := graphio.NormalizeName(name)
	if f.cfg.EntityRules {
		if r := nameRule(n); r != "" {
			return r
		}
	}
	if f.generic[n] {
		return FilterGeneric
	}
	if mentionOnly && !f.cfg.MentionOnly && !f.inFact[n] {
		return FilterMention
	}
	return ""
}

// Settings returns the graph settings of c that shape the graph built from the same
// extraction, by their flag names, as an index records them (graphio.Meta.Graph).
func (c Config) Settings() map[string]string {
	return map[string]string{
		"hyperedges":         strconv.FormatBool(c.Hyperedges),
		"synonym-threshold":  strconv.FormatFloat(float64(c.SynonymThreshold), 'g', -1, 32),
		"synonym-max":        strconv.Itoa(c.SynonymMax),
		"synonym-min-alnum":  strconv.Itoa(c.SynonymMinAlnum),
		"stem-synonyms":      strconv.FormatBool(c.StemSynonyms),
		"entity-rules":       strconv.FormatBool(c.EntityRules),
		"max-entity-share":   strconv.FormatFloat(c.MaxEntityShare, 'g', -1, 64),
		"generic-min-chunks": strconv.Itoa(c.GenericMinChunks),
		"mention-only":       strconv.FormatBool(c.MentionOnly),
	}
}

// ApplySettings sets c's graph settings from recorded ones (an index's
// graphio.Meta.Graph) but those keep reports true for (given on the command line).
// An unknown name is skipped (a later graphloom's setting); a malformed value is an
// error naming it.
func (c *Config) ApplySettings(rec map[string]string, keep func(name string) bool) error {
	for name, v := range rec {
		if keep != nil && keep(name) {
			continue
		}
		var err error
		switch name {
		case "hyperedges":
			c.Hyperedges, err = strconv.ParseBool(v)
		case "synonym-threshold":
			var f float64
			f, err = strconv.ParseFloat(v, 32)
			c.SynonymThreshold = float32(f)
		case "synonym-max":
			c.SynonymMax, err = strconv.Atoi(v)
		case "synonym-min-alnum":
			c.SynonymMinAlnum, err = strconv.Atoi(v)
		case "stem-synonyms":
			c.StemSynonyms, err = strconv.ParseBool(v)
		case "entity-rules":
			c.EntityRules, err = strconv.ParseBool(v)
		case "max-entity-share":
			c.MaxEntityShare, err = strconv.ParseFloat(v, 64)
		case "generic-min-chunks":
			c.GenericMinChunks, err = strconv.Atoi(v)
		case "mention-only":
			c.MentionOnly, err = strconv.ParseBool(v)
		}
		if err != nil {
			return fmt.Errorf("kg: the index's recorded graph setting %s = %q: %w", name, v, err)
		}
	}
	return nil
}

// describeFilter records the filter settings in the index's metadata.
func (c Config) describeFilter() string {
	return fmt.Sprintf("rules=%t generic>%.3g(min %d chunks) mention-only=%t", c.EntityRules, c.MaxEntityShare, c.GenericMinChunks, c.MentionOnly)
}

func allDigits(ws []string) bool {
	for _, w := range ws {
		for _, r := range w {
			if !unicode.IsDigit(r) {
				return false
			}
		}
	}
	return true
}
