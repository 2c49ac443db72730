package ingest

import (
	"bytes"
	"encoding/gob"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jdkato/prose/v2"
)

// Token is one token of a tagged text: its text, its Penn Treebank part-of-speech tag
// and its IOB named-entity label ("B-PERSON", "I-GPE", "O"; "" when the model gives
// every label −∞).
type Token struct {
	Text, Tag, Label string
}

// Entity returns the token's entity type without the IOB prefix ("PERSON" for
// "B-PERSON"), or "" outside an entity.
func (t Token) Entity() string {
	if len(t.Label) > 2 && (t.Label[0] == 'B' || t.Label[0] == 'I') && t.Label[1] == '-' {
		return t.Label[2:]
	}
	return ""
}

// Tagger tokenises and tags English text as prose v2 does — its iterative tokenizer,
// its averaged-perceptron part-of-speech tagger and its maximum-entropy named-entity
// model, from prose's own embedded model files — with three differences: the tagger
// sums its weights in a fixed order, so a text is always tagged the same (prose's map
// iteration changes near-tied tags from run to run); the entity model is scored
// through a per-(feature, value) weight table, several times faster than prose's
// string-keyed lookups, with identical labels; and emoticons are recognised by shape
// (see isEmoticon). A Tagger is read-only and safe for concurrent use.
type Tagger struct {
	pos *posModel
	ner *nerModel
}

// LoadTagger decodes prose's embedded tagger and entity models.
func LoadTagger() (*Tagger, error) {
	pos, err := loadPOSModel()
	if err != nil {
		return nil, err
	}
	ner, err := loadNERModel()
	if err != nil {
		return nil, err
	}
	return &Tagger{pos: pos, ner: ner}, nil
}

// Tag returns the tokens of text (no sentence segmentation) with tags and labels.
func (t *Tagger) Tag(text string) ([]Token, error) {
	toks, keys, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	t.pos.tag(toks)
	share(keys, toks, func(t *Token) *string { return &t.Tag })
	t.ner.Label(toks)
	share(keys, toks, func(t *Token) *string { return &t.Label })
	return toks, nil
}

// proseSanitizer is the replacer prose's tokenizer applies before splitting.
var proseSanitizer = strings.NewReplacer("\u201c", `"`, "\u201d", `"`, "\u2018", "'", "\u2019", "'", "&rsquo;", "'")

// tokenize returns prose's tokens of text, made as prose's tokenizer makes them: the
// sanitised text is split into whitespace-delimited spans and each span into tokens,
// once per distinct span. keys reproduces a property of prose's pipeline that its tags
// and labels depend on: the tokenizer reuses the same token objects for every repeat
// of a span (but the text's last span), so the tag and the label computed at the
// span's last repeat overwrite the earlier ones. keys[i] names token i's shared object
// ("" for an unshared one).
func tokenize(text string) (toks []Token, keys []string, err error) {
	clean := proseSanitizer.Replace(text)
	split := map[string][]string{} // span → its tokens' texts
	add := func(span string, cached bool) error {
		texts, ok := split[span]
		if !ok {
			doc, err := prose.NewDocument(span, prose.WithSegmentation(false), prose.WithTagging(false), prose.WithExtraction(false))
			if err != nil {
				return fmt.Errorf("ingest: tokenise text: %w", err)
			}
			for _, p := range doc.Tokens() {
				texts = append(texts, p.Text)
			}
			split[span] = texts
		}
		for k, tt := range texts {
			toks = append(toks, Token{Text: tt})
			key := ""
			if cached {
				key = span + "\x00" + strconv.Itoa(k)
			}
			keys = append(keys, key)
		}
		return nil
	}
	white, start, index := false, 0, 0
	for index <= len(clean) {
		r, size := utf8.DecodeRuneInString(clean[index:])
		if size == 0 {
			break
		} else if index == 0 {
			white = unicode.IsSpace(r)
		}
		if unicode.IsSpace(r) != white {
			if start < index {
				if err := add(clean[start:index], true); err != nil {
					return nil, nil, err
				}
			}
			if r == ' ' {
				start = index + 1
			} else {
				start = index
			}
			white = !white
		}
		index += size
	}
	if start < index {
		if err := add(clean[start:index], false); err != nil {
			return nil, nil, err
		}
	}
	return toks, keys, nil
}

// share gives every token of a shared object (keys from sharedSpans) the field value
// of the object's last occurrence.
func share(keys []string, toks []Token, field func(*Token) *string) {
	last := map[string]string{}
	for i, k := range keys {
		if k != "" {
			last[k] = *field(&toks[i])
		}
	}
	for i, k := range keys {
		if k != "" {
			*field(&toks[i]) = last[k]
		}
	}
}

// nerFeatures is prose's feature order (prose v2.0.0, extract.go: featureOrder); the
// model's joint features are "name-value-label" strings over these names.
var nerFeatures = [...]string{
	"bias", "en-wordlist", "nextpos", "nextword", "pos", "pos+prevtag",
	"prefix3", "prevpos", "prevtag", "prevword", "shape", "shape+prevtag",
	"suffix3", "word", "word+nextpos", "word.lower", "wordlen"}

// Indices into nerFeatures.
const (
	fBias = iota
	fWordlist
	fNextPos
	fNextWord
	fPos
	fPosPrevTag
	fPrefix3
	fPrevPos
	fPrevTag
	fPrevWord
	fShape
	fShapePrevTag
	fSuffix3
	fWord
	fWordNextPos
	fWordLower
	fWordLen
	nNERFeatures
)

// nerModel is prose v2's maximum-entropy entity model (its embedded Maxent assets),
// rearranged for scoring: prose builds the string "name-value-label" for each of 17
// features and each of 13 labels and looks each up in a 150K-entry map (221 lookups
// per token, most of indexing time); here each (name, value) pair maps once to its
// row of per-label weights. The labels are identical to prose's — the scores are
// summed in prose's order — except on exact ties, which prose breaks by map
// iteration order (at random) and this model by the label order of the model file.
type nerModel struct {
	labels   []string
	words    map[string]bool                // prose's English word list ("en-wordlist" feature)
	index    [nNERFeatures]map[string]int32 // feature value → row of weights
	weights  [][]float64                    // row → weight per label (0 where the pair has none)
	hasLabel [][]bool                       // row → whether the model has the joint feature
}

// loadNERModel decodes prose's embedded entity model.
func loadNERModel() (*nerModel, error) {
	var mapping map[string]int
	var weights []float64
	var labels, words []string
	for _, a := range []struct {
		name string
		dst  any
	}{{"mapping", &mapping}, {"weights", &weights}, {"labels", &labels}, {"words", &words}} {
		raw, err := prose.Asset("model/Maxent/" + a.name + ".gob")
		if err != nil {
			return nil, fmt.Errorf("ingest: entity model %s: %w", a.name, err)
		}
		if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(a.dst); err != nil {
			return nil, fmt.Errorf("ingest: decode entity model %s: %w", a.name, err)
		}
	}
	m := &nerModel{labels: labels, words: make(map[string]bool, len(words))}
	for _, w := range words {
		m.words[w] = true
	}
	for f := range m.index {
		m.index[f] = map[string]int32{}
	}
	for joint, id := range mapping {
		f, l, val, err := m.splitJoint(joint)
		if err != nil {
			return nil, err
		}
		if id < 0 || id >= len(weights) {
			return nil, fmt.Errorf("ingest: entity model: feature %q has weight %d of %d", joint, id, len(weights))
		}
		row, ok := m.index[f][val]
		if !ok {
			row = int32(len(m.weights))
			m.index[f][val] = row
			m.weights = append(m.weights, make([]float64, len(labels)))
			m.hasLabel = append(m.hasLabel, make([]bool, len(labels)))
		}
		m.weights[row][l] = weights[id]
		m.hasLabel[row][l] = true
	}
	return m, nil
}

// splitJoint splits "name-value-label" into the feature index, the label index and
// the value. Names and labels contain '-' themselves ("en-wordlist", "B-PERSON"), so
// both are matched against the known lists; the longest label suffix wins.
func (m *nerModel) splitJoint(joint string) (f, l int, val string, err error) {
	f, l = -1, -1
	for i, name := range nerFeatures {
		if strings.HasPrefix(joint, name+"-") {
			f = i
			break
		}
	}
	for i, lab := range m.labels {
		if strings.HasSuffix(joint, "-"+lab) && (l < 0 || len(lab) > len(m.labels[l])) {
			l = i
		}
	}
	if f < 0 || l < 0 || len(nerFeatures[f])+1 > len(joint)-len(m.labels[l])-1 {
		return 0, 0, "", fmt.Errorf("ingest: entity model: cannot parse joint feature %q", joint)
	}
	return f, l, joint[len(nerFeatures[f])+1 : len(joint)-len(m.labels[l])-1], nil
}

// Label sets the Label of every token from its text and tag, left to right (each
// label is a feature of the next), as prose's entityExtracter.classify does.
func (m *nerModel) Label(toks []Token) {
	var feats [nNERFeatures]string
	scores := make([]float64, len(m.labels))
	prevTag := ""
	var buf []byte
	for i := range toks {
		word := toks[i].Text
		lower := strings.ToLower(word)
		feats[fBias] = "True"
		feats[fWord] = word
		feats[fPos] = toks[i].Tag
		feats[fWordlist] = "False"
		if m.words[word] {
			feats[fWordlist] = "True"
		}
		feats[fWordLower] = lower
		feats[fSuffix3] = strings.ToLower(word[len(word)-min(len(word), 3):])
		feats[fPrefix3] = strings.ToLower(word[:min(len(word), 3)])
		feats[fShape] = nerShape(word)
		feats[fWordLen] = strconv.Itoa(len(word))
		prevShape := "None"
		if i == 0 {
			feats[fPrevTag], feats[fPrevWord], feats[fPrevPos] = "None", "None", "None"
		} else {
			feats[fPrevWord] = strings.ToLower(toks[i-1].Text)
			feats[fPrevPos] = toks[i-1].Tag
			feats[fPrevTag] = prevTag
			if i > 1 {
				// prose leaves the previous shape "None" for the second token.
				prevShape = nerShape(toks[i-1].Text)
			}
		}
		if i == len(toks)-1 {
			feats[fNextWord], feats[fNextPos] = "None", "None"
		} else {
			feats[fNextWord] = strings.ToLower(toks[i+1].Text)
			feats[fNextPos] = strings.ToLower(toks[i+1].Tag)
		}
		clear(scores)
		for f := range feats {
			var row int32
			var ok bool
			switch f {
			case fWordNextPos:
				buf = append(append(append(buf[:0], lower...), '+'), feats[fNextPos]...)
				row, ok = m.index[f][string(buf)]
			case fPosPrevTag:
				buf = append(append(append(buf[:0], feats[fPos]...), '+'), feats[fPrevTag]...)
				row, ok = m.index[f][string(buf)]
			case fShapePrevTag:
				buf = append(append(append(buf[:0], prevShape...), '+'), feats[fPrevTag]...)
				row, ok = m.index[f][string(buf)]
			default:
				row, ok = m.index[f][feats[f]]
			}
			if !ok {
				continue
			}
			for l, w := range m.weights[row] {
				if m.hasLabel[row][l] {
					scores[l] += w
				}
			}
		}
		best, label := math.Inf(-1), ""
		for l, s := range scores {
			if s > best {
				best, label = s, m.labels[l]
			}
		}
		toks[i].Label = label
		prevTag = simpleNERTag(label)
	}
}

// simpleNERTag is prose's simplePOS of a label: its part before the first '-'.
func simpleNERTag(label string) string {
	if strings.HasPrefix(label, "V") {
		return "v"
	}
	if i := strings.IndexByte(label, '-'); i >= 0 {
		return label[:i]
	}
	return label
}

// nerShape is prose's shape(word) without its per-call regular expressions
// (`\W+$` and `\w+$` test the last character against ASCII word characters).
func nerShape(word string) string {
	if _, err := strconv.ParseFloat(word, 64); err == nil {
		return "number"
	}
	if word == "" {
		return "other"
	}
	r, _ := utf8.DecodeLastRuneInString(word)
	if !(r < utf8.RuneSelf && (r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r))) {
		return "punct"
	}
	if strings.ToLower(word) == word {
		return "downcase"
	}
	//lint:ignore SA1019 prose's feature is defined by strings.Title.
	if strings.Title(word) == word { //nolint:staticcheck
		return "upcase"
	}
	return "mixedcase"
}
