package retrieve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"unicode"

	"github.com/graphloom/graphloom/internal/jsonmsg"
)

// Question is one line of a questions file.
type Question struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	// Reader is the question as a reader is asked it, when that differs: a choice
	// question's options and the answer format asked for (eval.Example.ReaderQuestion).
	// A retriever that answers itself (Answerer) is given it in place of Question —
	// the form it was trained on; the others search with Question.
	Reader string `json:"reader,omitempty"`
}

// An Answerer is a retriever that answers the questions itself (Result.Answer), such
// as G-Retriever: Run gives it each question's Reader form when there is one.
type Answerer interface {
	// AnswersItself reports whether the retriever answers (it may be configured not to).
	AnswersItself() bool
}

// asked returns the text r is given for q.
func asked(r Retriever, q Question) string {
	if a, ok := r.(Answerer); ok && q.Reader != "" && a.AnswersItself() {
		return q.Reader
	}
	return q.Question
}

// RunLine is one line of a run file: a question, the retriever's ranking, and the
// answer when one was asked for.
type RunLine struct {
	ID        string     `json:"id"`
	Question  string     `json:"question"`
	Retriever string     `json:"retriever"`
	Passages  []Passage  `json:"passages"`
	Facts     [][]string `json:"facts"`
	Subgraph  string     `json:"subgraph,omitempty"` // the retrieved subgraph as text (pcst)
	Answer    *string    `json:"answer,omitempty"`
	Answers   []string   `json:"answers,omitempty"` // Result.Answers: the answers Answer lists
	// AnswerError says why the reader gave no Answer (its request failed).
	AnswerError string `json:"answer_error,omitempty"`
}

// ReadQuestions reads a questions file: a JSON array or JSONL of {"id", "question"}.
// A record without an id gets "q<n>" (n its line in JSONL, its position in an array).
// A record that is not such an object, a question without content (CheckQuestion), an
// id given twice, or a default id equal to another record's, is an error naming the
// file, the line (or record) and the field.
func ReadQuestions(path string) ([]Question, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("retrieve: %w", err)
	}
	type rec struct {
		raw   json.RawMessage
		where string // "line 3", "record 3"
		loc   string // ":3" (JSONL), ": record 3" (array)
		n     int
	}
	var recs []rec
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var raws []json.RawMessage
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return nil, fmt.Errorf("retrieve: %s: not a JSON array of {\"id\", \"question\"}: %s", path, jsonmsg.Describe(err))
		}
		for i, raw := range raws {
			recs = append(recs, rec{raw, fmt.Sprintf("record %d", i+1), fmt.Sprintf(": record %d", i+1), i + 1})
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for n := 1; sc.Scan(); n++ {
			if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
				recs = append(recs, rec{append(json.RawMessage(nil), line...), fmt.Sprintf("line %d", n), fmt.Sprintf(":%d", n), n})
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("retrieve: %s: %w", path, err)
		}
	}
	qs := make([]Question, 0, len(recs))
	type owner struct {
		where string
		auto  bool
	}
	seen := map[string]owner{}
	for _, r := range recs {
		bad := func(format string, args ...any) error {
			return fmt.Errorf("retrieve: %s%s: %s", path, r.loc, fmt.Sprintf(format, args...))
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r.raw, &obj); err != nil || obj == nil {
			if k := jsonmsg.Kind(r.raw); k != "an object" || err == nil {
				return nil, bad(`want an object {"id", "question"}, got %s`, k)
			}
			return nil, bad(`want an object {"id", "question"}: %s`, jsonmsg.Describe(err))
		}
		var q Question
		if raw, ok := obj["id"]; ok && jsonmsg.Kind(raw) != "null" {
			if json.Unmarshal(raw, &q.ID) != nil {
				return nil, bad(`field "id": want a string, got %s`, jsonmsg.Kind(raw))
			}
		}
		raw, ok := obj["question"]
		if !ok {
			return nil, bad(`field "question" is missing`)
		}
		if json.Unmarshal(raw, &q.Question) != nil {
			return nil, bad(`field "question": want a string, got %s`, jsonmsg.Kind(raw))
		}
		if err := CheckQuestion(q.Question); err != nil {
			return nil, bad(`field "question": %v`, err)
		}
		auto := q.ID == ""
		if auto {
			q.ID = fmt.Sprintf("q%d", r.n)
		}
		if o, dup := seen[q.ID]; dup {
			switch {
			case auto:
				return nil, bad("no id, and its default id %q is the id of %s: give every question an id", q.ID, o.where)
			case o.auto:
				return nil, bad("id %q is the default id of %s, which has none: give every question an id", q.ID, o.where)
			default:
				return nil, bad("id %q is also the id of %s: ids must be unique", q.ID, o.where)
			}
		}
		seen[q.ID] = owner{r.where, auto}
		qs = append(qs, q)
	}
	return qs, nil
}

// CheckQuestion returns an error for a question without content: empty, blank, or
// without a letter or digit (only punctuation), which no retriever can rank for.
func CheckQuestion(q string) error {
	if strings.TrimSpace(q) == "" {
		return errors.New("the question is empty")
	}
	if !strings.ContainsFunc(q, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
		return fmt.Errorf("the question %q has no letter or digit", q)
	}
	return nil
}

// RunConfig configures Run.
type RunConfig struct {
	TopK int
	// Answer asks the LLM for an answer from the top AnswerTopK passages (HippoRAG
	// qa_top_k: 5).
	Answer     bool
	AnswerTopK int
	Workers    int // questions (or batches) in flight; 0 = GOMAXPROCS
	// BatchSize is how many questions a batch retriever (ppr, hyperppr) solves per
	// call; 0 or 1 retrieves one by one. The CLI's query --questions uses 32.
	BatchSize int
}

// Run retrieves (and optionally answers) every question, calling progress as they
// finish; results are in question order.
func Run(ctx context.Context, r Retriever, chat Chatter, qs []Question, cfg RunConfig, progress func(done, total int)) ([]RunLine, error) {
	if cfg.Answer && chat == nil {
		return nil, fmt.Errorf("retrieve: answering needs an LLM")
	}
	out := make([]RunLine, len(qs))
	workers := cfg.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Batch retrievers (ppr, hyperppr) solve BatchSize questions per call.
	batch := 1
	br, isBatch := r.(BatchRetriever)
	if isBatch = isBatch && cfg.BatchSize > 1; isBatch {
		batch = cfg.BatchSize
	}
	jobs := make(chan [2]int)
	errs := make(chan error, len(qs))
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for w := 0; w < workers; w++ {
		wg.Go(func() {
			for job := range jobs {
				var results []Result
				if isBatch {
					texts := make([]string, 0, job[1]-job[0])
					for _, q := range qs[job[0]:job[1]] {
						texts = append(texts, asked(r, q))
					}
					var err error
					if results, err = br.RetrieveBatch(ctx, texts, cfg.TopK); err != nil {
						errs <- fmt.Errorf("questions %s…%s: %w", qs[job[0]].ID, qs[job[1]-1].ID, err)
						continue
					}
				} else {
					res, err := r.Retrieve(ctx, asked(r, qs[job[0]]), cfg.TopK)
					if err != nil {
						errs <- fmt.Errorf("question %s: %w", qs[job[0]].ID, err)
						continue
					}
					results = []Result{res}
				}
				for j, res := range results {
					i := job[0] + j
					line := RunLine{ID: qs[i].ID, Question: qs[i].Question, Retriever: r.Name(), Passages: res.Passages, Facts: res.Facts, Subgraph: res.Subgraph}
					if line.Passages == nil {
						line.Passages = []Passage{}
					}
					if line.Facts == nil {
						line.Facts = [][]string{}
					}
					if res.Answer != nil {
						line.Answer, line.Answers = res.Answer, res.Answers
					} else if cfg.Answer {
						a, err := Answer(ctx, chat, qs[i].Question, res.Passages, cfg.AnswerTopK)
						switch {
						case errors.Is(err, ErrAnswerCut): // no answer within its budget: an empty one, and why
							line.AnswerError = err.Error()
						case err != nil:
							errs <- fmt.Errorf("question %s: %w", qs[i].ID, err)
							continue
						}
						line.Answer = &a
					}
					out[i] = line
					mu.Lock()
					done++
					if progress != nil {
						progress(done, len(qs))
					}
					mu.Unlock()
				}
			}
		})
	}
	for lo := 0; lo < len(qs); lo += batch {
		if ctx.Err() != nil {
			break
		}
		jobs <- [2]int{lo, min(lo+batch, len(qs))}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// WriteRun writes lines as JSONL.
func WriteRun(w io.Writer, lines []RunLine) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, l := range lines {
		if err := enc.Encode(l); err != nil {
			return err
		}
	}
	return nil
}
