package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// Kind is what an example asks for, and so how its answer is scored.
type Kind string

// Kinds of examples.
const (
	KindOpen   Kind = "open"   // a free answer, scored by EM/F1 (and the judge)
	KindYesNo  Kind = "yesno"  // yes, no or maybe, scored as classification
	KindChoice Kind = "choice" // one of lettered options, scored by accuracy
)

// Format names the layout a record was recognised as.
type Format string

// Recognised formats.
const (
	FormatHippoRAG   Format = "hipporag"
	FormatMuSiQue    Format = "musique"
	FormatHotpotQA   Format = "hotpotqa" // also 2WikiMultihopQA
	FormatMoreHopQA  Format = "morehopqa"
	FormatLiteraryQA Format = "literaryqa" // answers only, no gold evidence
	FormatYesNo      Format = "yesno"      // PubMedQA-style
	FormatChoice     Format = "choice"
	FormatSpans      Format = "spans" // HyperGraphRAG-style gold text spans
	// FormatMultiHopRAG is MultiHop-RAG's: query, answer and an evidence_list of
	// {title, fact, …}; each evidence fact is a gold span.
	FormatMultiHopRAG Format = "multihop-rag"
)

// Passage is a titled paragraph an example ships with.
type Passage struct {
	Title      string
	Text       string
	Supporting bool
}

// GoldPassage is a passage a question needs. Text is empty when the dataset names only
// the title (a support title that none of the example's paragraphs carries).
type GoldPassage struct {
	Title string `json:"title"`
	Text  string `json:"text,omitempty"`
}

// Key is the passage's identity in HippoRAG's evaluation: "title\ntext".
func (g GoldPassage) Key() string { return g.Title + "\n" + g.Text }

// Example is one evaluation question in a common form.
type Example struct {
	ID       string
	Question string
	// Answers holds the gold answers: answer (or answers, golden_answers) ∪ answer_aliases,
	// deduplicated, in file order. For yes/no examples it is the label; for choice
	// examples the text of the correct option.
	Answers []string
	// Gold holds the passages the question needs, deduplicated by Key.
	Gold []GoldPassage
	// Spans holds gold evidence given as text rather than passages (HyperGraphRAG's
	// context, PubMedQA's abstract sections); it is used when Gold is empty.
	Spans []string
	// Context holds every passage the example ships with, supporting or not; it is
	// what CorpusFromDataset builds a corpus from.
	Context []Passage
	Kind    Kind
	// Options are the choices of a multiple-choice example; Options[i] has the letter 'A'+i.
	Options []string
	// Label is "yes", "no" or "maybe" for a yes/no example, the correct letter for a
	// choice example, and empty otherwise.
	Label  string
	Format Format
	Line   int // line of the record in its file

	warnings []string // what was read but looks wrong, for Dataset.Warnings
}

// HasEvidence reports whether the example has gold passages or spans to score recall on.
func (e *Example) HasEvidence() bool { return len(e.Gold) > 0 || len(e.Spans) > 0 }

// ReaderQuestion is the question as a reader is asked it: choice examples list their
// options and ask for a letter, yes/no examples ask for yes, no or maybe.
func (e *Example) ReaderQuestion() string {
	switch e.Kind {
	case KindChoice:
		var b strings.Builder
		b.WriteString(e.Question)
		b.WriteString("\nOptions:")
		for i, o := range e.Options {
			fmt.Fprintf(&b, "\n%c. %s", 'A'+i, o)
		}
		b.WriteString("\nAnswer with the letter of the correct option.")
		return b.String()
	case KindYesNo:
		return e.Question + "\nAnswer with yes, no or maybe."
	}
	return e.Question
}

// Skipped is a record that was left out, and why.
type Skipped struct {
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}

// Dataset is a question file read into examples.
type Dataset struct {
	Path     string
	Format   Format // the format of most examples
	Examples []Example
	Skipped  []Skipped
	// Warnings are records that were read but hold something that looks wrong (a
	// paragraph without a title); Reason says what.
	Warnings []Skipped
}

// WithEvidence counts the examples that have gold passages or spans.
func (d *Dataset) WithEvidence() int {
	n := 0
	for i := range d.Examples {
		if d.Examples[i].HasEvidence() {
			n++
		}
	}
	return n
}

// Kinds counts the examples of each kind.
func (d *Dataset) Kinds() map[Kind]int {
	out := map[Kind]int{}
	for i := range d.Examples {
		out[d.Examples[i].Kind]++
	}
	return out
}

// errUnknown marks a record whose format is not recognised.
var errUnknown = errors.New("unrecognised record")

// ReadDataset reads the question file at path (see the package documentation).
func ReadDataset(path string) (*Dataset, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return ParseDataset(data, path)
}

// rawRecord is one undecoded record and where it starts.
type rawRecord struct {
	raw  json.RawMessage
	line int
	id   string // the key of a record in an object keyed by id
}

// ParseDataset parses a question file's content; name is used in messages.
func ParseDataset(data []byte, name string) (*Dataset, error) {
	recs, skipped, err := splitRecords(data, name)
	if err != nil {
		return nil, err
	}
	ds := &Dataset{Path: name, Skipped: skipped}
	idLine := map[string]int{} // the line of each id given: run files are matched by id
	var unnamed [][2]int       // examples with no id of their own: example, record index
	formats := map[Format]int{}
	var firstUnknown error
	unknown := 0
	for i, r := range recs {
		ex, err := parseRecord(r.raw)
		if err != nil {
			if errors.Is(err, errUnknown) {
				unknown++
				if firstUnknown == nil {
					firstUnknown = fmt.Errorf("line %d: %w", r.line, err)
				}
			}
			ds.Skipped = append(ds.Skipped, Skipped{Line: r.line, Reason: err.Error()})
			continue
		}
		if ex.ID == "" {
			ex.ID = r.id
		}
		if ex.ID == "" {
			unnamed = append(unnamed, [2]int{len(ds.Examples), i})
		} else if l, dup := idLine[ex.ID]; dup {
			return nil, fmt.Errorf("eval: %s: line %d: id %q is already the id of line %d (ids must be unique: run files are scored by id)", name, r.line, ex.ID, l)
		} else {
			idLine[ex.ID] = r.line
		}
		ex.Line = r.line
		for _, w := range ex.warnings {
			ds.Warnings = append(ds.Warnings, Skipped{Line: r.line, Reason: w})
		}
		ex.warnings = nil
		formats[ex.Format]++
		ds.Examples = append(ds.Examples, ex)
	}
	// Examples without an id are q<record number>, unless the file gives that id to
	// another record: then q<record number>-2, -3, ….
	for _, u := range unnamed {
		ex := &ds.Examples[u[0]]
		id := fmt.Sprintf("q%d", u[1]+1)
		for n := 2; ; n++ {
			if _, taken := idLine[id]; !taken {
				break
			}
			id = fmt.Sprintf("q%d-%d", u[1]+1, n)
		}
		ex.ID, idLine[id] = id, ex.Line
	}
	sort.Slice(ds.Skipped, func(a, b int) bool { return ds.Skipped[a].Line < ds.Skipped[b].Line })
	if len(ds.Examples) == 0 {
		switch {
		case firstUnknown != nil && unknown == len(recs):
			return nil, fmt.Errorf("eval: %s: unknown dataset format: %w; want records with a question and "+
				"HippoRAG/MuSiQue paragraphs, HotpotQA/2Wiki/MoreHopQA context, answer (+answer_aliases), "+
				"final_decision (yes/no/maybe), multiple-choice options, or golden_answers", name, firstUnknown)
		case len(ds.Skipped) > 0:
			s := ds.Skipped[0]
			return nil, fmt.Errorf("eval: %s: no usable examples (%d records skipped; line %d: %s)", name, len(ds.Skipped), s.Line, s.Reason)
		}
		return nil, fmt.Errorf("eval: %s: no examples", name)
	}
	best := 0
	for f, n := range formats {
		if n > best || (n == best && f < ds.Format) {
			ds.Format, best = f, n
		}
	}
	return ds, nil
}

// lineAt returns the 1-based line of the first non-space byte at or after off.
func lineAt(data []byte, off int64) int {
	o := int(min(max(off, 0), int64(len(data))))
	for o < len(data) && (data[o] == ' ' || data[o] == '\t' || data[o] == '\n' || data[o] == '\r' || data[o] == ',') {
		o++
	}
	return 1 + bytes.Count(data[:o], []byte("\n"))
}

// splitRecords splits a file into records: the elements of a JSON array, the values
// of an object keyed by id, or the lines of JSONL (a malformed line is skipped).
func splitRecords(data []byte, name string) ([]rawRecord, []Skipped, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	off := int64(len(data) - len(trimmed))
	if len(trimmed) == 0 {
		return nil, nil, fmt.Errorf("eval: %s: empty file", name)
	}
	switch trimmed[0] {
	case '[':
		return splitArray(data, off, name)
	case '{':
		// One object spanning the file (keyed by id, or a single record), or JSONL.
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		var first json.RawMessage
		if err := dec.Decode(&first); err == nil {
			rest := bytes.TrimSpace(trimmed[dec.InputOffset():])
			if len(rest) == 0 {
				return splitObject(data, off, first, name)
			}
		}
	}
	return splitLines(data)
}

func syntaxLine(data []byte, base int64, dec *json.Decoder, err error) int {
	off := base + dec.InputOffset()
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = base + se.Offset
	}
	return 1 + bytes.Count(data[:min(int(off), len(data))], []byte("\n"))
}

func splitArray(data []byte, off int64, name string) ([]rawRecord, []Skipped, error) {
	dec := json.NewDecoder(bytes.NewReader(data[off:]))
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("eval: %s:%d: malformed JSON: %w", name, syntaxLine(data, off, dec, err), err)
	}
	var recs []rawRecord
	var skipped []Skipped
	for dec.More() {
		line := lineAt(data, off+dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, nil, fmt.Errorf("eval: %s:%d: malformed JSON: %w", name, syntaxLine(data, off, dec, err), err)
		}
		if len(raw) == 0 || raw[0] != '{' {
			skipped = append(skipped, Skipped{Line: line, Reason: "record is not a JSON object"})
			continue
		}
		recs = append(recs, rawRecord{raw: raw, line: line})
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("eval: %s:%d: malformed JSON: %w", name, syntaxLine(data, off, dec, err), err)
	}
	return recs, skipped, nil
}

// splitObject handles a file holding one JSON object: a single record, or records
// keyed by id (PubMedQA's ori_pqal.json), in file order.
func splitObject(data []byte, off int64, obj json.RawMessage, name string) ([]rawRecord, []Skipped, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(obj, &probe); err != nil {
		return nil, nil, fmt.Errorf("eval: %s: %w", name, err)
	}
	if questionOf(probe) != "" {
		return []rawRecord{{raw: obj, line: lineAt(data, off)}}, nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data[off:]))
	if _, err := dec.Token(); err != nil {
		return nil, nil, fmt.Errorf("eval: %s: %w", name, err)
	}
	var recs []rawRecord
	var skipped []Skipped
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, fmt.Errorf("eval: %s:%d: malformed JSON: %w", name, syntaxLine(data, off, dec, err), err)
		}
		key, _ := tok.(string)
		line := lineAt(data, off+dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, fmt.Errorf("eval: %s:%d: malformed JSON: %w", name, syntaxLine(data, off, dec, err), err)
		}
		if len(raw) == 0 || raw[0] != '{' {
			skipped = append(skipped, Skipped{Line: line, Reason: fmt.Sprintf("value of %q is not a JSON object", key)})
			continue
		}
		recs = append(recs, rawRecord{raw: raw, line: line, id: key})
	}
	return recs, skipped, nil
}

func splitLines(data []byte) ([]rawRecord, []Skipped, error) {
	var recs []rawRecord
	var skipped []Skipped
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\ufeff"))
		}
		if len(line) == 0 {
			continue
		}
		if !json.Valid(line) {
			skipped = append(skipped, Skipped{Line: n, Reason: "malformed JSON"})
			continue
		}
		if line[0] != '{' {
			skipped = append(skipped, Skipped{Line: n, Reason: "record is not a JSON object"})
			continue
		}
		recs = append(recs, rawRecord{raw: append(json.RawMessage(nil), line...), line: n})
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("eval: %w", err)
	}
	return recs, skipped, nil
}
