package retrieve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
)

// Question is one line of a questions file.
type Question struct {
	ID       string `json:"id"`
	Question string `json:"question"`
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
}

// ReadQuestions reads JSONL {"id","question"} lines (a JSON array of them also works).
// A line that is not such an object is an error naming its line number; a missing id
// becomes "q<line>".
func ReadQuestions(path string) ([]Question, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("retrieve: %w", err)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var qs []Question
		if err := json.Unmarshal(trimmed, &qs); err != nil {
			return nil, fmt.Errorf("retrieve: %s: %w", path, err)
		}
		for i := range qs {
			if qs[i].ID == "" {
				qs[i].ID = fmt.Sprintf("q%d", i+1)
			}
		}
		return qs, nil
	}
	var qs []Question
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var q Question
		if err := json.Unmarshal(line, &q); err != nil || strings.TrimSpace(q.Question) == "" {
			return nil, fmt.Errorf("retrieve: %s:%d: want {\"id\", \"question\"}", path, n)
		}
		if q.ID == "" {
			q.ID = fmt.Sprintf("q%d", n)
		}
		qs = append(qs, q)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("retrieve: %s: %w", path, err)
	}
	return qs, nil
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
						texts = append(texts, q.Question)
					}
					var err error
					if results, err = br.RetrieveBatch(ctx, texts, cfg.TopK); err != nil {
						errs <- fmt.Errorf("questions %s…%s: %w", qs[job[0]].ID, qs[job[1]-1].ID, err)
						continue
					}
				} else {
					res, err := r.Retrieve(ctx, qs[job[0]].Question, cfg.TopK)
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
						line.Answer = res.Answer
					} else if cfg.Answer {
						a, err := Answer(ctx, chat, qs[i].Question, res.Passages, cfg.AnswerTopK)
						if err != nil {
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
