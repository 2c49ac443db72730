package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// record is a decoded JSON object with field lookup tolerant of key case (PubMedQA's
// original files use QUESTION, CONTEXTS).
type record map[string]json.RawMessage

// get returns the first present, non-null field among names: exact key first, then a
// case-insensitive match.
func (r record) get(names ...string) (json.RawMessage, bool) {
	k, ok := r.key(names...)
	return r[k], ok
}

// key is the key of the field get returns.
func (r record) key(names ...string) (string, bool) {
	for _, n := range names {
		if v, ok := r[n]; ok && !isNull(v) {
			return n, true
		}
	}
	for _, n := range names {
		for k, v := range r {
			if strings.EqualFold(k, n) && !isNull(v) {
				return k, true
			}
		}
	}
	return "", false
}

// name is the key of the field get returns, for messages: the first name when none is present.
func (r record) name(names ...string) string {
	if k, ok := r.key(names...); ok {
		return k
	}
	return names[0]
}

func (r record) has(names ...string) bool { _, ok := r.get(names...); return ok }

func (r record) keys() string {
	ks := make([]string, 0, len(r))
	for k := range r {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	if len(ks) > 12 {
		ks = append(ks[:12], "…")
	}
	return "[" + strings.Join(ks, " ") + "]"
}

func isNull(v json.RawMessage) bool {
	t := bytes.TrimSpace(v)
	return len(t) == 0 || string(t) == "null"
}

func firstByte(v json.RawMessage) byte {
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		return 0
	}
	return t[0]
}

// scalar decodes a string, number or boolean as a trimmed string.
func scalar(v json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return strings.TrimSpace(s), true
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return n.String(), true
	}
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return strconv.FormatBool(b), true
	}
	return "", false
}

// strs decodes a scalar, a SQuAD-style {"text": ...} or TriviaQA-style {"value": ...,
// "aliases": [...]} object, or a list of these. Any other value — an object with
// neither, a list holding a list — is an error naming what it holds: its strings would
// otherwise be lost without a word.
func strs(v json.RawMessage) ([]string, error) {
	if s, ok := scalar(v); ok {
		return []string{s}, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(v, &list) == nil {
		var out []string
		for i, x := range list {
			if isNull(x) {
				continue
			}
			if firstByte(x) == '[' {
				return nil, fmt.Errorf("item %d is a list, not a string", i)
			}
			got, err := strs(x)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out = append(out, got...)
		}
		return out, nil
	}
	var obj record
	if json.Unmarshal(v, &obj) == nil {
		var out []string
		found := false
		for _, name := range []string{"text", "value", "aliases"} {
			k, ok := obj.key(name)
			if !ok {
				continue
			}
			got, err := strs(obj[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out, found = append(out, got...), true
			if name == "text" {
				break // SQuAD: the answer texts (none for an unanswerable question)
			}
		}
		if !found {
			return nil, fmt.Errorf(`an object without "text", "value" or "aliases" (fields: %s)`, obj.keys())
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s, not a string or a list of strings", jsonKind(v))
}

// strsField is strs for the field name of r; its error names the field.
func strsField(r record, names ...string) ([]string, error) {
	v, ok := r.get(names...)
	if !ok {
		return nil, nil
	}
	out, err := strs(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.name(names...), err)
	}
	return out, nil
}

// jsonKind names the kind of a JSON value for messages.
func jsonKind(v json.RawMessage) string {
	switch firstByte(v) {
	case '{':
		return "an object"
	case '[':
		return "a list"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// appendUnique appends the non-empty strings of add that out does not hold yet.
func appendUnique(out []string, add ...string) []string {
	for _, s := range add {
		if strings.TrimSpace(s) != "" && !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func questionOf(r record) string {
	v, ok := r.get("question", "query", "QUESTION")
	if !ok {
		return ""
	}
	s, _ := scalar(v)
	return s
}

func idOf(r record) string {
	if v, ok := r.get("id", "_id", "qid", "question_id", "pubid", "uid"); ok {
		if s, ok := scalar(v); ok {
			return s
		}
	}
	return ""
}

// answersOf is HippoRAG's get_gold_answers: answer (string or list; also answers,
// golden_answers, gold_ans, reference) ∪ answer_aliases. An answer field it cannot read
// is an error naming the field.
func answersOf(r record) ([]string, error) {
	var out []string
	for _, names := range [][]string{
		{"answer", "answers", "golden_answers", "gold_answers", "gold_ans", "reference"},
		{"answer_aliases", "aliases"},
	} {
		got, err := strsField(r, names...)
		if err != nil {
			return nil, err
		}
		out = appendUnique(out, got...)
	}
	return out, nil
}

// parseRecord turns one JSON object into an Example, recognising its format.
func parseRecord(raw json.RawMessage) (Example, error) {
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		return Example{}, fmt.Errorf("malformed record: %v", err)
	}
	q := questionOf(r)
	if q == "" {
		if r.has("question", "query") {
			return Example{}, fmt.Errorf("empty question")
		}
		return Example{}, fmt.Errorf("%w: no question field (fields: %s)", errUnknown, r.keys())
	}
	ex := Example{ID: idOf(r), Question: q, Kind: KindOpen}
	var err error
	switch {
	case r.has("evidence_list"):
		err = parseMultiHopRAG(r, &ex)
	case isChoice(r):
		err = parseChoice(r, &ex)
	case isYesNo(r):
		err = parseYesNo(r, &ex)
	case isSentenceContext(r):
		err = parseHotpot(r, &ex)
	case r.has("paragraphs"):
		err = parseParagraphs(r, "paragraphs", &ex)
	case firstByte(field(r, "contexts")) == '[' && isObjectList(field(r, "contexts")):
		err = parseParagraphs(r, "contexts", &ex)
	case r.has("golden_answers") || isSpanContext(r):
		err = parseSpans(r, &ex)
	case r.has("answer", "answers", "gold_ans", "answer_aliases"):
		ex.Format = FormatLiteraryQA
	default:
		return Example{}, fmt.Errorf("%w: question without answers or gold evidence (fields: %s)", errUnknown, r.keys())
	}
	if err == nil && ex.Kind == KindOpen { // choice and yes/no examples read their own
		ex.Answers, err = answersOf(r)
	}
	if err != nil {
		return Example{}, err
	}
	ex.Gold = dedupeGold(ex.Gold)
	ex.Spans = appendUnique(nil, ex.Spans...)
	if len(ex.Answers) == 0 && !ex.HasEvidence() && ex.Label == "" {
		return Example{}, fmt.Errorf("nothing to score: no answer and no gold evidence")
	}
	return ex, nil
}

func field(r record, name string) json.RawMessage { v, _ := r.get(name); return v }

func isObjectList(v json.RawMessage) bool {
	var list []json.RawMessage
	if json.Unmarshal(v, &list) != nil || len(list) == 0 {
		return false
	}
	return firstByte(list[0]) == '{'
}

func dedupeGold(gs []GoldPassage) []GoldPassage {
	var out []GoldPassage
	seen := map[string]bool{}
	for _, g := range gs {
		if !seen[g.Key()] {
			seen[g.Key()] = true
			out = append(out, g)
		}
	}
	return out
}

// --- HippoRAG, MuSiQue, LiteraryQA -------------------------------------------------

func parseParagraphs(r record, key string, ex *Example) error {
	var paras []record
	if err := json.Unmarshal(field(r, key), &paras); err != nil {
		return fmt.Errorf("%s: want a list of {title, text, is_supporting} objects", key)
	}
	ex.Format = FormatHippoRAG
	musique := false
	var untitled []string
	for i, p := range paras {
		var title string
		if tv, ok := p.get("title"); ok {
			if title, ok = scalar(tv); !ok {
				return fmt.Errorf("%s[%d]: title is %s, not a string", key, i, jsonKind(tv))
			}
		}
		if title == "" {
			untitled = append(untitled, fmt.Sprintf("%s[%d]", key, i))
		}
		tv, ok := p.get("text")
		if !ok {
			if tv, ok = p.get("paragraph_text"); ok {
				musique = true
			}
		}
		var text string
		if ok {
			if err := json.Unmarshal(tv, &text); err != nil {
				return fmt.Errorf("%s[%d]: text is not a string", key, i)
			}
		} else {
			return fmt.Errorf("%s[%d]: no text or paragraph_text", key, i)
		}
		// HippoRAG's get_gold_docs: item.get("is_supporting", True).
		supporting := true
		if sv, ok := p.get("is_supporting"); ok {
			if err := json.Unmarshal(sv, &supporting); err != nil {
				return fmt.Errorf("%s[%d]: is_supporting is not a boolean", key, i)
			}
		}
		ex.Context = append(ex.Context, Passage{Title: title, Text: text, Supporting: supporting})
		if supporting {
			ex.Gold = append(ex.Gold, GoldPassage{Title: title, Text: text})
		}
	}
	if len(untitled) > 0 {
		ex.warnings = append(ex.warnings, fmt.Sprintf("%s: no title; a gold passage without one is found by its text alone", strings.Join(untitled, ", ")))
	}
	switch {
	case len(paras) == 0:
		ex.Format = FormatLiteraryQA
	case musique:
		ex.Format = FormatMuSiQue
	}
	return nil
}

// --- HotpotQA, 2WikiMultihopQA, MoreHopQA ------------------------------------------

type sentenceParagraph struct {
	title string
	sents []string
}

// isSentenceContext reports whether context is [[title, [sentences]], ...] or the
// Hugging Face {"title": [...], "sentences": [[...]]} layout.
func isSentenceContext(r record) bool {
	v, ok := r.get("context")
	if !ok {
		return false
	}
	switch firstByte(v) {
	case '[':
		var list []json.RawMessage
		if json.Unmarshal(v, &list) != nil || len(list) == 0 {
			return false
		}
		return firstByte(list[0]) == '['
	case '{':
		var obj record
		return json.Unmarshal(v, &obj) == nil && obj.has("title") && obj.has("sentences")
	}
	return false
}

func sentenceContext(v json.RawMessage) ([]sentenceParagraph, error) {
	if firstByte(v) == '{' {
		var hf struct {
			Title     []string   `json:"title"`
			Sentences [][]string `json:"sentences"`
		}
		if err := json.Unmarshal(v, &hf); err != nil || len(hf.Title) != len(hf.Sentences) {
			return nil, fmt.Errorf("context: want {title: [...], sentences: [[...]]} of equal lengths")
		}
		out := make([]sentenceParagraph, len(hf.Title))
		for i := range hf.Title {
			out[i] = sentenceParagraph{hf.Title[i], hf.Sentences[i]}
		}
		return out, nil
	}
	var list [][]json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, fmt.Errorf("context: want [[title, [sentences]], ...]")
	}
	out := make([]sentenceParagraph, 0, len(list))
	for i, item := range list {
		if len(item) != 2 {
			return nil, fmt.Errorf("context[%d]: want [title, [sentences]]", i)
		}
		var p sentenceParagraph
		if err := json.Unmarshal(item[0], &p.title); err != nil {
			return nil, fmt.Errorf("context[%d]: title is not a string", i)
		}
		if err := json.Unmarshal(item[1], &p.sents); err != nil {
			var one string
			if json.Unmarshal(item[1], &one) != nil {
				return nil, fmt.Errorf("context[%d]: sentences are not a list of strings", i)
			}
			p.sents = []string{one}
		}
		out = append(out, p)
	}
	return out, nil
}

// supportTitles returns the titles of supporting_facts ([[title, idx]] or the Hugging
// Face {"title": [...], "sent_id": [...]}), in order of first appearance.
func supportTitles(v json.RawMessage) ([]string, error) {
	if firstByte(v) == '{' {
		var hf struct {
			Title []string `json:"title"`
		}
		if err := json.Unmarshal(v, &hf); err != nil {
			return nil, fmt.Errorf("supporting_facts: want {title: [...], sent_id: [...]}")
		}
		return appendUnique(nil, hf.Title...), nil
	}
	var list [][]json.RawMessage
	if err := json.Unmarshal(v, &list); err != nil {
		return nil, fmt.Errorf("supporting_facts: want [[title, sentence index], ...]")
	}
	var out []string
	for i, sf := range list {
		var t string
		if len(sf) == 0 || json.Unmarshal(sf[0], &t) != nil {
			return nil, fmt.Errorf("supporting_facts[%d]: want [title, sentence index]", i)
		}
		out = appendUnique(out, t)
	}
	return out, nil
}

// decompositionTitles collects question_decomposition[].paragraph_support_title,
// descending into MoreHopQA's nested details.
func decompositionTitles(v json.RawMessage, out []string) []string {
	var steps []record
	if json.Unmarshal(v, &steps) != nil {
		return out
	}
	for _, s := range steps {
		if t, ok := scalar(field(s, "paragraph_support_title")); ok {
			out = appendUnique(out, t)
		}
		if d, ok := s.get("details"); ok {
			out = decompositionTitles(d, out)
		}
	}
	return out
}

func parseHotpot(r record, ex *Example) error {
	paras, err := sentenceContext(field(r, "context"))
	if err != nil {
		return err
	}
	var titles []string
	ex.Format = FormatHotpotQA
	if v, ok := r.get("supporting_facts"); ok {
		if titles, err = supportTitles(v); err != nil {
			return err
		}
	} else if v, ok := r.get("question_decomposition"); ok {
		ex.Format = FormatMoreHopQA
		titles = decompositionTitles(v, nil)
	}
	for _, p := range paras {
		ex.Context = append(ex.Context, Passage{Title: p.title, Text: JoinSentences(p.sents), Supporting: contains(titles, p.title)})
	}
	for _, t := range titles {
		found := false
		for _, p := range ex.Context {
			if p.Title == t {
				ex.Gold = append(ex.Gold, GoldPassage{Title: p.Title, Text: p.Text})
				found = true
			}
		}
		if !found {
			ex.Gold = append(ex.Gold, GoldPassage{Title: t})
		}
	}
	return nil
}

// JoinSentences renders a HotpotQA-style sentence list as passage text: the sentences
// concatenated, with one space inserted between two sentences exactly when neither the
// end of the first nor the start of the second is whitespace. This reproduces
// HippoRAG's "".join for HotpotQA, whose sentences carry their leading space, and its
// " ".join for 2WikiMultihopQA, whose sentences do not.
func JoinSentences(sents []string) string {
	var b strings.Builder
	for i, s := range sents {
		if i > 0 && b.Len() > 0 && s != "" {
			prev := b.String()
			if !endsSpace(prev) && !startsSpace(s) {
				b.WriteByte(' ')
			}
		}
		b.WriteString(s)
	}
	return b.String()
}

func startsSpace(s string) bool {
	for _, r := range s {
		return unicode.IsSpace(r)
	}
	return false
}

func endsSpace(s string) bool {
	t := strings.TrimRightFunc(s, unicode.IsSpace)
	return len(t) < len(s)
}

// --- gold text spans (HyperGraphRAG) -----------------------------------------------

// isSpanContext reports whether context/contexts is a string or a list of strings.
func isSpanContext(r record) bool {
	for _, k := range []string{"context", "contexts"} {
		v, ok := r.get(k)
		if !ok {
			continue
		}
		if firstByte(v) == '"' {
			return true
		}
		var list []string
		if json.Unmarshal(v, &list) == nil {
			return true
		}
	}
	return false
}

func spansOf(r record) []string {
	var out []string
	for _, k := range []string{"context", "contexts"} {
		if v, ok := r.get(k); ok {
			var list []string
			if json.Unmarshal(v, &list) == nil {
				out = appendUnique(out, list...)
			} else if s, ok := scalar(v); ok {
				out = appendUnique(out, s)
			}
		}
	}
	return out
}

func parseSpans(r record, ex *Example) error {
	ex.Format = FormatSpans
	ex.Spans = spansOf(r)
	for _, s := range ex.Spans {
		ex.Context = append(ex.Context, Passage{Text: s, Supporting: true})
	}
	return nil
}

// --- yes/no/maybe (PubMedQA) -------------------------------------------------------

var yesNoLabels = []string{"yes", "no", "maybe"}

func yesNoValue(v json.RawMessage) (string, bool) {
	s, ok := scalar(v)
	s = strings.ToLower(strings.TrimSpace(s))
	return s, ok && contains(yesNoLabels, s)
}

func isYesNo(r record) bool {
	if r.has("final_decision") {
		return true
	}
	_, ok := yesNoValue(field(r, "label"))
	return ok
}

func parseYesNo(r record, ex *Example) error {
	ex.Format, ex.Kind = FormatYesNo, KindYesNo
	v, ok := r.get("final_decision")
	if !ok {
		v, _ = r.get("label")
	}
	label, ok := yesNoValue(v)
	if !ok {
		s, _ := scalar(v)
		return fmt.Errorf("label %q is not yes, no or maybe", s)
	}
	ex.Label = label
	ex.Answers = []string{label}
	// PubMedQA: CONTEXTS (original) or context.contexts (Hugging Face) are the
	// abstract's sections; the abstract is the gold evidence.
	var sections []string
	var err error
	if r.has("contexts") {
		sections, err = strsField(r, "contexts")
	} else if v, ok := r.get("context"); ok {
		var inner record
		if firstByte(v) == '{' && json.Unmarshal(v, &inner) == nil {
			if sections, err = strsField(inner, "contexts"); err != nil {
				err = fmt.Errorf("%s.%w", r.name("context"), err)
			}
		} else if got, e := strs(v); e == nil {
			// A plain context that is not strings (a yes/no record of another
			// dataset with HotpotQA-style or paragraph context) holds no sections.
			sections = got
		}
	}
	if err != nil {
		return err
	}
	ex.Spans = appendUnique(nil, sections...)
	if len(ex.Spans) > 0 {
		abstract := strings.Join(ex.Spans, " ")
		ex.Context = []Passage{{Text: abstract, Supporting: true}}
		// The gold is the abstract as one passage, not its sections as spans: short
		// sections ("Observational study.", "None.") recur in other abstracts, which
		// then counted as finding part of this one.
		ex.Gold = []GoldPassage{{Text: abstract}}
	}
	return nil
}

// --- multiple choice ---------------------------------------------------------------

// optionsOf returns the options of a multiple-choice record in letter order, or nil.
func optionsOf(r record) []string {
	for _, k := range []string{"options", "choices"} {
		v, ok := r.get(k)
		if !ok {
			continue
		}
		var list []string
		if json.Unmarshal(v, &list) == nil && len(list) >= 2 {
			return list
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) == nil {
			// ARC: {"text": [...], "label": [...]}.
			var arc struct {
				Text  []string `json:"text"`
				Label []string `json:"label"`
			}
			if json.Unmarshal(v, &arc) == nil && len(arc.Text) >= 2 {
				return arc.Text
			}
			// {"A": "...", "B": "..."}.
			if out := lettered(func(l string) (json.RawMessage, bool) {
				for key, val := range obj {
					if strings.EqualFold(strings.TrimSpace(key), l) {
						return val, true
					}
				}
				return nil, false
			}); len(out) >= 2 {
				return out
			}
		}
	}
	// Fields A, B, … (exact upper case), option_a/answer_a/opa, ….
	exact := func(l string) (json.RawMessage, bool) { v, ok := r[l]; return v, ok && !isNull(v) }
	if out := lettered(exact); len(out) >= 2 {
		return out
	}
	for _, prefix := range []string{"option_", "answer_", "op"} {
		get := func(l string) (json.RawMessage, bool) { return r.get(prefix + strings.ToLower(l)) }
		if out := lettered(get); len(out) >= 2 {
			return out
		}
	}
	return nil
}

// lettered collects get("A"), get("B"), … until the first missing letter.
func lettered(get func(letter string) (json.RawMessage, bool)) []string {
	var out []string
	for l := 'A'; l <= 'J'; l++ {
		v, ok := get(string(l))
		if !ok {
			break
		}
		s, ok := scalar(v)
		if !ok {
			break
		}
		out = append(out, s)
	}
	return out
}

func isChoice(r record) bool { return optionsOf(r) != nil }

// correctKeys are the fields holding the correct option, tried in order.
var correctKeys = []string{"answer_idx", "answerKey", "correct_answer", "correct_option", "correct", "cop", "label", "answer"}

func parseChoice(r record, ex *Example) error {
	ex.Format, ex.Kind = FormatChoice, KindChoice
	ex.Options = optionsOf(r)
	for _, k := range correctKeys {
		v, ok := r.get(k)
		if !ok {
			continue
		}
		letter, ok := choiceLetter(v, ex.Options, k == "cop")
		if !ok {
			s, _ := scalar(v)
			return fmt.Errorf("%s %q names none of the %d options", k, s, len(ex.Options))
		}
		ex.Label = letter
		ex.Answers = []string{ex.Options[letter[0]-'A']}
		ex.Spans = spansOf(r)
		for _, s := range ex.Spans {
			ex.Context = append(ex.Context, Passage{Text: s, Supporting: true})
		}
		return nil
	}
	return fmt.Errorf("multiple-choice record without a correct option (want one of %v)", correctKeys)
}

// choiceLetter reads the correct option: a letter ("B", "(b)", "B."), an index (0-based;
// 1-based for MedMCQA's cop), or the text of an option.
func choiceLetter(v json.RawMessage, options []string, oneBased bool) (string, bool) {
	s, ok := scalar(v)
	if !ok {
		return "", false
	}
	t := strings.Trim(strings.TrimSpace(s), "().: ")
	if len(t) == 1 && unicode.IsLetter(rune(t[0])) {
		l := unicode.ToUpper(rune(t[0]))
		if int(l-'A') < len(options) && l >= 'A' {
			return string(l), true
		}
		return "", false
	}
	if n, err := strconv.Atoi(t); err == nil {
		if oneBased {
			n--
		}
		if n >= 0 && n < len(options) {
			return string(rune('A' + n)), true
		}
		return "", false
	}
	for i, o := range options {
		if strings.EqualFold(strings.TrimSpace(o), strings.TrimSpace(s)) {
			return string(rune('A' + i)), true
		}
	}
	return "", false
}

// parseMultiHopRAG reads MultiHop-RAG's records: {query, answer, question_type,
// evidence_list: [{title, source, fact, …}]}. The evidence facts are gold spans
// (sentences of the news articles); a null-query item ("Insufficient information")
// has none.
func parseMultiHopRAG(r record, ex *Example) error {
	ex.Format = FormatMultiHopRAG
	var ev []record
	if v := field(r, "evidence_list"); !isNull(v) {
		if err := json.Unmarshal(v, &ev); err != nil {
			return fmt.Errorf("evidence_list: want a list of objects: %v", err)
		}
	}
	for _, e := range ev {
		if v, ok := e.get("fact", "evidence", "text"); ok {
			if s, ok := scalar(v); ok && strings.TrimSpace(s) != "" {
				ex.Spans = append(ex.Spans, strings.TrimSpace(s))
			}
		}
	}
	return nil
}
