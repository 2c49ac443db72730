package ingest

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jdkato/prose/v2"
	"github.com/mingrammer/commonregex"
)

// posModel is prose v2's averaged-perceptron part-of-speech model (its embedded
// AveragedPerceptron assets: the tag dictionary of unambiguous words, the classes and
// the feature weights), scored in a fixed order. prose sums a token's feature weights
// by iterating Go maps, so the float sums — and on near-ties the tag — change from
// run to run (13 of 135K tokens on 2Wiki passages between two runs); here features are
// summed in their order of definition and classes compared in the model's order, so
// the same text is always tagged the same.
type posModel struct {
	classes []string
	tagMap  map[string]string
	index   map[string]int32 // feature → row
	rows    [][]classWeight
}

type classWeight struct {
	class int32
	w     float64
}

// prose's special-case patterns (prose v2.0.0, tag.go: none, keep).
var (
	posNone = regexp.MustCompile(`^(?:0|\*[\w?]\*|\*\-\d{1,3}|\*[A-Z]+\*\-\d{1,3}|\*)$`)
	posKeep = regexp.MustCompile(`^\-[A-Z]{3}\-$`)
)

func loadPOSModel() (*posModel, error) {
	var weights map[string]map[string]float64
	var tags map[string]string
	var classes []string
	for _, a := range []struct {
		name string
		dst  any
	}{{"classes", &classes}, {"tags", &tags}, {"weights", &weights}} {
		raw, err := prose.Asset("model/AveragedPerceptron/" + a.name + ".gob")
		if err != nil {
			return nil, fmt.Errorf("ingest: tagger model %s: %w", a.name, err)
		}
		if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(a.dst); err != nil {
			return nil, fmt.Errorf("ingest: decode tagger model %s: %w", a.name, err)
		}
	}
	m := &posModel{classes: classes, tagMap: tags, index: make(map[string]int32, len(weights))}
	class := make(map[string]int32, len(classes))
	for i, c := range classes {
		class[c] = int32(i)
	}
	for feat, ws := range weights {
		row := make([]classWeight, 0, len(ws))
		for c, w := range ws {
			id, ok := class[c]
			if !ok {
				return nil, fmt.Errorf("ingest: tagger model: feature %q weighs unknown class %q", feat, c)
			}
			row = append(row, classWeight{id, w})
		}
		m.index[feat] = int32(len(m.rows))
		m.rows = append(m.rows, row)
	}
	return m, nil
}

// tag tags the tokens left to right (each tag is a feature of the next two), as prose's
// perceptronTagger.tag does, but for emoticons (see isEmoticon).
func (m *posModel) tag(toks []Token) {
	ctx := make([]string, len(toks)+4)
	ctx[0], ctx[1] = "-START-", "-START2-"
	for i, t := range toks {
		ctx[i+2] = posNormalize(t.Text)
	}
	ctx[len(ctx)-2], ctx[len(ctx)-1] = "-END-", "-END2-"
	scores := make([]float64, len(m.classes))
	present := make([]bool, len(m.classes))
	var feats [14]string
	p1, p2 := "-START-", "-START2-"
	for i := range toks {
		word := toks[i].Text
		var tag string
		switch {
		case word == "-":
			tag = "-"
		case isEmoticon(word, m.tagMap):
			tag = "SYM"
		case commonregex.LinkRegex.MatchString(word) || commonregex.EmailRegex.MatchString(word) || strings.HasPrefix(word, "@"):
			tag = "NN"
		case posNone.MatchString(word):
			tag = "-NONE-"
		case posKeep.MatchString(word):
			tag = word
		default:
			var ok bool
			if tag, ok = m.tagMap[word]; !ok {
				m.features(&feats, i, ctx, word, p1, p2)
				tag = m.predict(feats[:], scores, present)
			}
		}
		toks[i].Tag = tag
		p2, p1 = p1, tag
	}
}

// features fills prose's 14 features (tag.go: featurize) for token i.
func (m *posModel) features(f *[14]string, i int, ctx []string, w, p1, p2 string) {
	suf := min(len(w), 3)
	i = min(len(ctx)-2, i+2)
	iminus := min(len(ctx[i-1]), 3)
	iplus := min(len(ctx[i+1]), 3)
	f[0] = "bias"
	f[1] = "i suffix " + w[len(w)-suf:]
	f[2] = "i pref1 " + string(rune(w[0])) // prose converts the first byte, not rune
	f[3] = "i-1 tag " + p1
	f[4] = "i-2 tag " + p2
	f[5] = "i tag+i-2 tag " + p1 + " " + p2
	f[6] = "i word " + ctx[i]
	f[7] = "i-1 tag+i word " + p1 + " " + ctx[i]
	f[8] = "i-1 word " + ctx[i-1]
	f[9] = "i-1 suffix " + ctx[i-1][len(ctx[i-1])-iminus:]
	f[10] = "i-2 word " + ctx[i-2]
	f[11] = "i+1 word " + ctx[i+1]
	f[12] = "i+1 suffix " + ctx[i+1][len(ctx[i+1])-iplus:]
	f[13] = "i+2 word " + ctx[i+2]
}

// predict returns the class with the highest summed weight among the classes some
// feature weighs (prose's averagedPerceptron.predict), ties to the first in model
// order; "" when no feature is known.
func (m *posModel) predict(feats []string, scores []float64, present []bool) string {
	clear(scores)
	clear(present)
	for _, f := range feats {
		row, ok := m.index[f]
		if !ok {
			continue
		}
		for _, cw := range m.rows[row] {
			scores[cw.class] += cw.w
			present[cw.class] = true
		}
	}
	best, tag := math.Inf(-1), ""
	for c, s := range scores {
		if present[c] && s > best {
			best, tag = s, m.classes[c]
		}
	}
	return tag
}

// posNormalize is prose's normalize: hyphenated words, four-digit years and words
// starting with a digit become classes; others are lower-cased.
func posNormalize(word string) string {
	if word == "" {
		return word
	}
	first := string(rune(word[0]))
	if strings.Contains(word, "-") && first != "-" {
		return "!HYPHEN"
	} else if _, err := strconv.Atoi(word); err == nil && len(word) == 4 {
		return "!YEAR"
	} else if _, err := strconv.Atoi(first); err == nil {
		return "!DIGITS"
	}
	return strings.ToLower(word)
}

// isEmoticon approximates prose's emoticon list (unexported): a token of two or more
// characters, all punctuation or symbols, not in the tag dictionary — ":-)", "(-_-)" —
// is tagged SYM. prose's list also holds a few with letters (":P", "O.o"), which are
// tagged by the model here.
func isEmoticon(word string, tagMap map[string]string) bool {
	if len(word) < 2 {
		return false
	}
	if _, ok := tagMap[word]; ok {
		return false
	}
	n := 0
	for _, r := range word {
		if r == utf8.RuneError || !unicode.IsPunct(r) && !unicode.IsSymbol(r) {
			return false
		}
		n++
	}
	return n >= 2
}
