package eval

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/graphloom/graphloom/ingest"
)

// CorpusFromDataset reads the question file at path and returns the passages its
// examples ship with (see Dataset.Corpus), for indexing a dataset that has no separate
// corpus file, such as MoreHopQA, and the dataset read: its Skipped records' passages
// are not in the corpus, which the caller should say.
func CorpusFromDataset(path string) ([]ingest.Passage, *Dataset, error) {
	ds, err := ReadDataset(path)
	if err != nil {
		return nil, nil, err
	}
	ps := ds.Corpus()
	if len(ps) == 0 {
		return nil, nil, fmt.Errorf("eval: %s: the examples ship no passages to build a corpus from (format %s)", path, ds.Format)
	}
	return ps, ds, nil
}

// Corpus returns every passage of every example — supporting or not: HippoRAG and
// MuSiQue paragraphs, HotpotQA-style contexts (sentences joined by JoinSentences),
// PubMedQA abstracts, HyperGraphRAG context spans — deduplicated by "title\ntext" and
// in order of first appearance. Each passage's Source is "path:line" of the record
// that first held it.
func (d *Dataset) Corpus() []ingest.Passage {
	var out []ingest.Passage
	seen := map[string]bool{}
	for i := range d.Examples {
		ex := &d.Examples[i]
		for _, p := range ex.Context {
			key := p.Title + "\n" + p.Text
			if seen[key] || p.Text == "" {
				continue
			}
			seen[key] = true
			out = append(out, ingest.Passage{Title: p.Title, Text: p.Text, Source: fmt.Sprintf("%s:%d", d.Path, ex.Line)})
		}
	}
	return out
}

// WriteCorpus writes passages as HippoRAG's corpus format, a JSON array of
// {"title", "text"}, which `graphloom index --corpus` reads.
func WriteCorpus(w io.Writer, ps []ingest.Passage) error {
	type doc struct {
		Title string `json:"title"`
		Text  string `json:"text"`
	}
	docs := make([]doc, len(ps))
	for i, p := range ps {
		docs[i] = doc{p.Title, p.Text}
	}
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	return enc.Encode(docs)
}
