package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rivo/uniseg"

	"github.com/graphloom/graphloom/graphio"
)

// Report is the outcome of an evaluation: what was evaluated, how, and the scores of
// each retriever.
type Report struct {
	Created    string      `json:"created"`
	Dataset    DatasetInfo `json:"dataset"`
	Index      *IndexInfo  `json:"index,omitempty"`
	Run        string      `json:"run,omitempty"` // the run file scored, if any
	Settings   Settings    `json:"settings"`
	Retrievers []Summary   `json:"retrievers"`
	// Paired compares each retriever with bm25 question by question (PairedDiff).
	Paired []PairedDiff `json:"paired_vs_bm25,omitempty"`
	Notes  []string     `json:"notes,omitempty"`
}

// DatasetInfo describes the evaluated dataset.
type DatasetInfo struct {
	Path         string       `json:"path"`
	Format       Format       `json:"format"`
	Examples     int          `json:"examples"`
	Kinds        map[Kind]int `json:"kinds"`
	WithEvidence int          `json:"with_evidence"`
	Skipped      []Skipped    `json:"skipped,omitempty"`
	Warnings     []Skipped    `json:"warnings,omitempty"` // records read with a warning
}

// IndexInfo describes the searched index.
type IndexInfo struct {
	Path         string `json:"path,omitempty"`
	Documents    int    `json:"documents"`
	Chunks       int    `json:"chunks"`
	Entities     int    `json:"entities"`
	Facts        int    `json:"facts"`
	Hyperedges   int    `json:"hyperedges"`
	SynonymEdges int    `json:"synonym_edges"`
	Extractor    string `json:"extractor,omitempty"`
	Embedder     string `json:"embedder,omitempty"`
}

// NewIndexInfo describes ix, read from path.
func NewIndexInfo(path string, ix *graphio.Index) *IndexInfo {
	return &IndexInfo{
		Path: path, Documents: len(ix.Documents), Chunks: len(ix.Chunks), Entities: len(ix.Entities),
		Facts: len(ix.Facts), Hyperedges: len(ix.Hyperedges), SynonymEdges: len(ix.Synonyms),
		Extractor: ix.Meta.Extractor, Embedder: ix.Meta.Embedder,
	}
}

// String is the one-line summary printed in reports.
func (i *IndexInfo) String() string {
	s := fmt.Sprintf("%d documents, %d chunks, %d entities, %d facts, %d hyperedges, %d synonym edges",
		i.Documents, i.Chunks, i.Entities, i.Facts, i.Hyperedges, i.SynonymEdges)
	if i.Extractor != "" {
		s += "; extractor " + i.Extractor
	}
	if i.Embedder != "" {
		s += "; embedder " + i.Embedder
	}
	if i.Path != "" {
		s = i.Path + ": " + s
	}
	return s
}

// Settings records how the evaluation ran.
type Settings struct {
	Ks     []int  `json:"recall_ks"`
	TopK   int    `json:"reader_top_k"`
	Depth  int    `json:"retrieval_depth,omitempty"`
	Answer bool   `json:"answer"`
	Judge  bool   `json:"judge"`
	LLM    string `json:"llm,omitempty"`
}

func newReport(ds *Dataset, ix *graphio.Index, cfg Config) *Report {
	r := &Report{
		Created: time.Now().UTC().Format(time.RFC3339),
		Dataset: DatasetInfo{
			Path: ds.Path, Format: ds.Format, Examples: len(ds.Examples), Kinds: ds.Kinds(),
			WithEvidence: ds.WithEvidence(), Skipped: ds.Skipped, Warnings: ds.Warnings,
		},
		Settings: Settings{Ks: cfg.Ks, TopK: cfg.TopK, Depth: cfg.Depth(), Answer: cfg.Answer, Judge: cfg.Judge},
	}
	if ix != nil {
		r.Index = NewIndexInfo("", ix)
	}
	return r
}

// addNotes explains what the table leaves out and why.
// LostCalls counts the reader and judge requests that got no answer, over every
// retriever, and describes the first (its retriever, example and error); 0 and "" when
// none was lost.
func (r *Report) LostCalls() (int, string) {
	n, first := 0, ""
	for _, s := range r.Retrievers {
		n += s.AnswerFailures
		if s.Judge != nil {
			n += s.Judge.Failed
		}
		for _, e := range s.Examples {
			if first != "" {
				break
			}
			switch {
			case e.AnswerError != "" && e.Answer == nil: // a cut reply is answered (with nothing)
				first = fmt.Sprintf("%s, example %s: reader: %s", s.Retriever, e.ID, e.AnswerError)
			case e.JudgeError != "":
				first = fmt.Sprintf("%s, example %s: judge: %s", s.Retriever, e.ID, e.JudgeError)
			}
		}
	}
	return n, first
}

// finish adds what is computed over every retriever: the paired comparisons and the notes.
func (r *Report) finish() {
	r.Paired = r.pairedDiffs()
	r.addNotes()
}

func (r *Report) addNotes() {
	for _, s := range r.Retrievers {
		if s.Skipped != "" {
			r.Notes = append(r.Notes, fmt.Sprintf("%s skipped: %s", s.Retriever, s.Skipped))
		}
	}
	if n := len(r.Dataset.Skipped); n > 0 {
		s := r.Dataset.Skipped[0]
		r.Notes = append(r.Notes, fmt.Sprintf("%d dataset records skipped (first: line %d: %s)", n, s.Line, s.Reason))
	}
	if n := len(r.Dataset.Warnings); n > 0 {
		s := r.Dataset.Warnings[0]
		r.Notes = append(r.Notes, fmt.Sprintf("%d dataset records read with a warning (first: line %d: %s)", n, s.Line, s.Reason))
	}
	if r.Dataset.WithEvidence == 0 {
		r.Notes = append(r.Notes, "the dataset has no gold passages or spans: Recall@k is n/a")
	}
	answered := false
	for _, s := range r.Retrievers {
		if s.QA != nil || s.YesNo != nil || s.Choice != nil {
			answered = true
		}
	}
	for _, s := range r.Retrievers {
		if s.TitleOnly > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d of %d gold passages are not in the index as text and were matched by title",
				s.Retriever, s.TitleOnly, s.GoldItems))
			break
		}
	}
	if !answered && r.Dataset.Examples > 0 {
		r.Notes = append(r.Notes, "answer metrics (EM/F1, accuracy, judge) need generated answers: run with --answer and an LLM "+
			"(GRAPHLOOM_LLM_BASE_URL, GRAPHLOOM_LLM_MODEL), or score a run file that has answers")
	}
	for _, s := range r.Retrievers {
		if s.Judge != nil && (s.Judge.Unparseable > 0 || s.Judge.Failed > 0) {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: judge replies unparseable %d, failed %d (left out of the averages)",
				s.Retriever, s.Judge.Unparseable, s.Judge.Failed))
		}
		cut := 0
		for _, e := range s.Examples {
			if e.AnswerError != "" && e.Answer != nil {
				cut++
			}
		}
		if cut > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d reader replies were cut at the token limit before their answer (scored as empty answers): raise the server's max tokens", s.Retriever, cut))
		}
		if s.AnswerFailures > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d reader requests failed (those questions are scored as answered wrongly)", s.Retriever, s.AnswerFailures))
		}
		if s.Missing > 0 || s.Unmatched > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d examples have no run line, %d run lines match no example", s.Retriever, s.Missing, s.Unmatched))
		}
	}
}

// column is one column of the results table.
type column struct {
	head string
	cell func(s *Summary) (string, bool) // false: n/a
}

func pct(x float64) string { return fmt.Sprintf("%.1f", 100*x) }

// columns returns the columns that have a value for some retriever.
func (r *Report) columns() []column {
	var cols []column
	some := func(f func(s *Summary) bool) bool {
		for i := range r.Retrievers {
			if f(&r.Retrievers[i]) {
				return true
			}
		}
		return false
	}
	if some(func(s *Summary) bool { return s.Recall != nil }) {
		for _, k := range r.Settings.Ks {
			cols = append(cols, column{fmt.Sprintf("R@%d", k), func(s *Summary) (string, bool) {
				v, ok := s.Recall[k]
				return pct(v), ok
			}})
		}
	}
	if some(func(s *Summary) bool { return s.AnswerHit != nil }) {
		k := r.Settings.TopK
		cols = append(cols, column{fmt.Sprintf("AnsIn@%d", k), func(s *Summary) (string, bool) {
			v, ok := s.AnswerHit[k]
			return pct(v), ok
		}})
	}
	if some(func(s *Summary) bool { return s.QA != nil }) {
		cols = append(cols,
			column{"EM", func(s *Summary) (string, bool) { return qaCell(s, func(q *QAScores) float64 { return q.EM }) }},
			column{"F1", func(s *Summary) (string, bool) { return qaCell(s, func(q *QAScores) float64 { return q.F1 }) }})
	}
	if some(func(s *Summary) bool { return s.YesNo != nil }) {
		cols = append(cols,
			column{"Acc(y/n)", func(s *Summary) (string, bool) {
				if s.YesNo == nil {
					return "", false
				}
				return pct(s.YesNo.Accuracy), true
			}},
			column{"MacroF1", func(s *Summary) (string, bool) {
				if s.YesNo == nil {
					return "", false
				}
				return pct(s.YesNo.Macro.F1), true
			}})
	}
	if some(func(s *Summary) bool { return s.Choice != nil }) {
		cols = append(cols, column{"Acc(mc)", func(s *Summary) (string, bool) {
			if s.Choice == nil {
				return "", false
			}
			return pct(s.Choice.Accuracy), true
		}})
	}
	if some(func(s *Summary) bool { return s.Judge != nil }) {
		cols = append(cols,
			column{"Correct", func(s *Summary) (string, bool) {
				if s.Judge == nil || s.Judge.Judged == 0 {
					return "", false
				}
				return fmt.Sprintf("%.2f", s.Judge.Correctness), true
			}},
			column{"Complete", func(s *Summary) (string, bool) {
				if s.Judge == nil || s.Judge.Judged == 0 {
					return "", false
				}
				return fmt.Sprintf("%.2f", s.Judge.Completeness), true
			}})
	}
	if some(func(s *Summary) bool { return s.Seconds > 0 }) {
		cols = append(cols, column{"ms/q", func(s *Summary) (string, bool) {
			if s.Seconds == 0 {
				return "", false
			}
			return fmt.Sprintf("%.2f", s.MsPerQuery()), true
		}})
	}
	return cols
}

func qaCell(s *Summary, f func(q *QAScores) float64) (string, bool) {
	if s.QA == nil {
		return "", false
	}
	return pct(f(s.QA)), true
}

// rows returns the table's header and rows.
func (r *Report) rows() ([]string, [][]string) {
	cols := r.columns()
	head := []string{"retriever"}
	for _, c := range cols {
		head = append(head, c.head)
	}
	var rows [][]string
	for i := range r.Retrievers {
		s := &r.Retrievers[i]
		row := []string{s.Retriever}
		for _, c := range cols {
			switch v, ok := c.cell(s); {
			case s.Skipped != "":
				row = append(row, "skipped")
			case ok:
				row = append(row, v)
			default:
				row = append(row, "n/a")
			}
		}
		rows = append(rows, row)
	}
	return head, rows
}

// WriteTable prints the results table as aligned text, for a terminal: the retriever
// names left-aligned, the numbers right-aligned, columns two spaces apart. Cells are
// padded by their display width (uniseg: combining marks take no column, East Asian wide
// characters two), so non-ASCII retriever names keep the columns straight.
func (r *Report) WriteTable(w io.Writer) error {
	head, rows := r.rows()
	table := append([][]string{head}, rows...)
	widths := make([]int, len(head))
	for _, row := range table {
		for j, cell := range row {
			widths[j] = max(widths[j], uniseg.StringWidth(cell))
		}
	}
	var b strings.Builder
	for _, row := range table {
		for j, cell := range row {
			pad := strings.Repeat(" ", widths[j]-uniseg.StringWidth(cell))
			b.WriteString("  ")
			if j == 0 {
				b.WriteString(cell + pad)
			} else {
				b.WriteString(pad + cell)
			}
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Title names the report after its dataset file, with the directory when the file
// name is generic ("harbour/questions").
func (r *Report) Title() string {
	base := filepath.Base(r.Dataset.Path)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	switch strings.ToLower(base) {
	case "questions", "test", "dev", "train", "validation", "data", "dataset", "qa":
		if dir := filepath.Base(filepath.Dir(r.Dataset.Path)); dir != "." && dir != string(filepath.Separator) {
			return dir + "/" + base
		}
	}
	return base
}

// datasetLine describes the dataset in one line.
func (r *Report) datasetLine() string {
	d := r.Dataset
	kinds := make([]string, 0, len(d.Kinds))
	for k, n := range d.Kinds {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(kinds)
	return fmt.Sprintf("`%s` (format %s; %d examples: %s; %d with gold evidence; %d records skipped)",
		d.Path, d.Format, d.Examples, strings.Join(kinds, ", "), d.WithEvidence, len(d.Skipped))
}

// settingsLine describes the settings in one line.
func (r *Report) settingsLine() string {
	s := r.Settings
	ks := make([]string, len(s.Ks))
	for i, k := range s.Ks {
		ks[i] = fmt.Sprint(k)
	}
	out := fmt.Sprintf("Recall@{%s}", strings.Join(ks, ","))
	if s.Depth > 0 {
		out += fmt.Sprintf(", retrieval depth %d", s.Depth)
	}
	out += fmt.Sprintf(", reader top-k %d, answers %s, judge %s", s.TopK, onOff(s.Answer), onOff(s.Judge))
	if s.LLM != "" {
		out += ", LLM " + s.LLM
	}
	return out
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// Markdown renders the report; charts are linked when named.
func (r *Report) Markdown(charts ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# graphloom eval — %s\n\n", r.Title())
	fmt.Fprintf(&b, "- dataset: %s\n", r.datasetLine())
	if r.Index != nil {
		fmt.Fprintf(&b, "- index: %s\n", r.Index)
	}
	if r.Run != "" {
		fmt.Fprintf(&b, "- run file: `%s`\n", r.Run)
	}
	fmt.Fprintf(&b, "- settings: %s\n- created: %s\n\n", r.settingsLine(), r.Created)
	head, rows := r.rows()
	b.WriteString("| " + strings.Join(head, " | ") + " |\n|")
	for i := range head {
		if i == 0 {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	b.WriteString("\nR@k: HippoRAG's passage recall |top-k ∩ gold| / |gold| (%), averaged over the questions with gold evidence. " +
		"AnsIn@k: questions with a gold answer inside a top-k passage (%). EM/F1: SQuAD-normalised, max over gold answers (%). " +
		"Correct/Complete: LLM judge, 0–10. ms/q: retrieval time per question.\n")
	b.WriteString(r.pairedMarkdown())
	if len(r.Notes) > 0 {
		b.WriteString("\nNotes:\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	for _, s := range r.Retrievers {
		if s.YesNo != nil {
			fmt.Fprintf(&b, "\n%s yes/no/maybe per class (P/R/F1 %%):", s.Retriever)
			for _, c := range s.YesNo.Classes {
				fmt.Fprintf(&b, " %s %s/%s/%s (n=%d);", c.Label, pct(c.Precision), pct(c.Recall), pct(c.F1), c.Support)
			}
			fmt.Fprintf(&b, " unparsed %d\n", s.YesNo.Unparsed)
		}
	}
	if len(charts) > 0 {
		b.WriteString("\n")
		for _, c := range charts {
			if strings.HasSuffix(c, ".png") {
				fmt.Fprintf(&b, "![%s](%s)\n", strings.TrimSuffix(c, ".png"), c)
			}
		}
	}
	return b.String()
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ReportFiles names every file `graphloom eval --out` writes into its directory:
// Report's WriteFiles, AblationReport's WriteFiles (ablation.*), WriteFilesAs(dir,
// "sweep") and the reranker table (rerank.md).
func ReportFiles() []string {
	return []string{"report.md", "report.json", "recall.png", "recall.svg",
		"ablation.md", "ablation.json", "ablation.png", "sweep.md", "sweep.json", "sweep.png", "rerank.md"}
}

// WriteFiles writes report.md, report.json and the charts (recall.png and recall.svg:
// Recall@k per retriever, or the answer-in-passages rate when there is no gold
// evidence) into dir, creating it, and returns the paths written.
func (r *Report) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	var written []string
	charts, err := writeCharts(r, dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range charts {
		names = append(names, filepath.Base(c))
	}
	md := filepath.Join(dir, "report.md")
	if err := graphio.AtomicWrite(md, func(w io.Writer) error {
		_, err := io.WriteString(w, r.Markdown(names...))
		return err
	}); err != nil {
		return nil, err
	}
	js := filepath.Join(dir, "report.json")
	if err := graphio.AtomicWrite(js, r.WriteJSON); err != nil {
		return nil, err
	}
	written = append(written, md, js)
	return append(written, charts...), nil
}
