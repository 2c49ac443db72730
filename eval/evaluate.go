package eval

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/retrieve"
)

// Config holds the knobs of an evaluation.
type Config struct {
	// Retrievers are run in this order; default retrieve.Names.
	Retrievers []string
	// Ks are the Recall@k cut-offs; HippoRAG 2 reports 1, 2, 5, 10, 20 (and up to 200).
	// Rankings are retrieved to depth max(Ks ∪ {TopK}).
	Ks []int
	// TopK is how many passages the reader is given and the k of the
	// answer-in-passages column; HippoRAG 2 qa_top_k: 5.
	TopK int
	// Answer asks the LLM for an answer from the top TopK passages (HippoRAG's reader)
	// and scores it: EM/F1, yes/no or choice accuracy.
	Answer bool
	// Judge has the LLM score correctness and completeness of open answers (seed 002).
	Judge bool
	// Workers is the number of questions retrieved concurrently; 0 = GOMAXPROCS.
	Workers int
	// LLMWorkers bounds answers and judgements in flight; 0 = 16 (the LLM client
	// bounds its HTTP requests on top of this).
	LLMWorkers int
}

// DefaultConfig returns HippoRAG 2's evaluation settings over every retriever.
func DefaultConfig() Config {
	return Config{Retrievers: slices.Clone(retrieve.Names), Ks: []int{1, 2, 5, 10, 20}, TopK: 5}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if len(c.Retrievers) == 0 {
		c.Retrievers = d.Retrievers
	}
	if len(c.Ks) == 0 {
		c.Ks = d.Ks
	}
	c.Ks = slices.Clone(c.Ks)
	slices.Sort(c.Ks)
	c.Ks = slices.Compact(c.Ks)
	if c.TopK <= 0 {
		c.TopK = d.TopK
	}
	if c.LLMWorkers <= 0 {
		c.LLMWorkers = 16
	}
	return c
}

// Depth is how many passages are retrieved per question: max(Ks ∪ {TopK}).
func (c Config) Depth() int {
	d := c.TopK
	for _, k := range c.Ks {
		d = max(d, k)
	}
	return d
}

func (c Config) validate(chat retrieve.Chatter) error {
	for _, k := range c.Ks {
		if k <= 0 {
			return fmt.Errorf("eval: recall cut-off %d: want k ≥ 1", k)
		}
	}
	if (c.Answer || c.Judge) && chat == nil {
		return fmt.Errorf("eval: answering and judging need an LLM")
	}
	return nil
}

// Progress returns the progress callback for a named stage ("retrieve bm25",
// "answer bm25", "judge bm25"); it may be nil.
type Progress func(stage string) func(done, total int)

func (p Progress) stage(name string) func(done, total int) {
	if p == nil {
		return nil
	}
	return p(name)
}

// Retrievers gives retrievers by name; *retrieve.Searcher is one.
type Retrievers interface {
	Retriever(name string) (retrieve.Retriever, error)
}

// Evaluate runs each configured retriever over the dataset's questions and scores the
// rankings (and, with cfg.Answer, the answers) against the gold. A retriever that
// cannot run on this index (hyperppr without hyperedges, triples without facts) is
// reported as skipped with the reason. ix, the index searched, tells the Matcher which
// gold passages it holds; it may be nil.
func Evaluate(ctx context.Context, ix *graphio.Index, src Retrievers, chat retrieve.Chatter, ds *Dataset, cfg Config, progress Progress) (*Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(chat); err != nil {
		return nil, err
	}
	rep := newReport(ds, ix, cfg)
	m := matcherFor(ix)
	qs := make([]retrieve.Question, len(ds.Examples))
	for i, ex := range ds.Examples {
		qs[i] = retrieve.Question{ID: ex.ID, Question: ex.Question}
		if rq := ex.ReaderQuestion(); rq != ex.Question {
			qs[i].Reader = rq // what an answering retriever (G-Retriever) is trained on
		}
	}
	for _, name := range cfg.Retrievers {
		r, err := src.Retriever(name)
		if err != nil {
			rep.Retrievers = append(rep.Retrievers, Summary{Retriever: name, Skipped: err.Error()})
			continue
		}
		t0 := time.Now()
		lines, err := retrieve.Run(ctx, r, nil, qs, retrieve.RunConfig{TopK: cfg.Depth(), Workers: cfg.Workers, BatchSize: 32}, progress.stage("retrieve "+name))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rep.Retrievers = append(rep.Retrievers, Summary{Retriever: name, Skipped: "failed: " + err.Error()})
			continue
		}
		secs := time.Since(t0).Seconds()
		aligned := make([]*retrieve.RunLine, len(lines))
		for i := range lines {
			aligned[i] = &lines[i]
		}
		failures := 0
		if cfg.Answer {
			if failures, err = answerAll(ctx, chat, ds, aligned, cfg, progress.stage("answer "+name)); err != nil {
				return nil, err
			}
		}
		s, err := score(ctx, ds, aligned, m, chat, cfg, progress, name)
		if err != nil {
			return nil, err
		}
		s.Retriever, s.Seconds, s.AnswerFailures = name, secs, failures
		rep.Retrievers = append(rep.Retrievers, s)
	}
	rep.finish()
	return rep, nil
}

func matcherFor(ix *graphio.Index) *Matcher {
	if ix == nil {
		return &Matcher{}
	}
	return NewMatcher(ix.Chunks)
}

// answerAll asks the reader for every example's answer from its top passages. A
// failed request leaves the answer unset, its error in the line (AnswerError), and is
// counted; a cancelled context is an error.
func answerAll(ctx context.Context, chat retrieve.Chatter, ds *Dataset, lines []*retrieve.RunLine, cfg Config, progress func(done, total int)) (int, error) {
	var mu sync.Mutex
	failures := 0
	forEach(ctx, len(lines), cfg.LLMWorkers, progress, func(i int) {
		if lines[i].Answer != nil {
			return // the retriever generated its own (gretriever)
		}
		ex := &ds.Examples[i]
		a, err := retrieve.Answer(ctx, chat, ex.ReaderQuestion(), lines[i].Passages, cfg.TopK)
		switch {
		case errors.Is(err, retrieve.ErrAnswerCut): // answered with nothing within its budget: scored as such
			lines[i].AnswerError = err.Error()
		case err != nil:
			lines[i].AnswerError = err.Error()
			mu.Lock()
			failures++
			mu.Unlock()
			return
		}
		lines[i].Answer = &a
	})
	return failures, ctx.Err()
}

// forEach calls fn(i) for i in [0, n) on up to workers goroutines, reporting progress.
func forEach(ctx context.Context, n, workers int, progress func(done, total int), fn func(i int)) {
	jobs := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range min(workers, n) {
		wg.Go(func() {
			for i := range jobs {
				fn(i)
				mu.Lock()
				done++
				if progress != nil {
					progress(done, n)
				}
				mu.Unlock()
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
}

// ReadRun reads a run file of retrieve.RunLine JSONL (as `graphloom query --out`
// writes); a malformed line is skipped and listed with its line number.
func ReadRun(path string) ([]retrieve.RunLine, []Skipped, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("eval: %w", err)
	}
	var lines []retrieve.RunLine
	var skipped []Skipped
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	for n := 1; sc.Scan(); n++ {
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var l retrieve.RunLine
		if err := json.Unmarshal(b, &l); err != nil {
			skipped = append(skipped, Skipped{Line: n, Reason: "malformed run line: " + err.Error()})
			continue
		}
		if l.ID == "" && l.Question == "" {
			skipped = append(skipped, Skipped{Line: n, Reason: "run line has neither id nor question"})
			continue
		}
		lines = append(lines, l)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("eval: %s: %w", path, err)
	}
	if len(lines) == 0 {
		return nil, skipped, fmt.Errorf("eval: %s: no run lines (%d malformed)", path, len(skipped))
	}
	return lines, skipped, nil
}

// ScoreRun scores existing rankings (and answers, when the lines have them) against
// the dataset. Lines are grouped by their retriever field ("run" when empty) and
// matched to examples by id, or failing that by question text; examples without a line
// are counted as missing. ix, the index the run searched, may be nil. With cfg.Judge
// and an LLM, the answers are judged; cfg.Answer is ignored.
func ScoreRun(ctx context.Context, ix *graphio.Index, lines []retrieve.RunLine, ds *Dataset, chat retrieve.Chatter, cfg Config, progress Progress) (*Report, error) {
	cfg = cfg.withDefaults()
	cfg.Answer = false
	if err := cfg.validate(chat); err != nil {
		return nil, err
	}
	rep := newReport(ds, ix, cfg)
	rep.Settings.Depth = 0
	m := matcherFor(ix)
	byID, byQuestion := map[string]int{}, map[string]int{}
	for i, ex := range ds.Examples {
		byID[ex.ID] = i
		if _, ok := byQuestion[ex.Question]; !ok {
			byQuestion[ex.Question] = i
		}
	}
	var order []string
	groups := map[string][]*retrieve.RunLine{}
	unmatched := map[string]int{}
	for i := range lines {
		l := &lines[i]
		name := l.Retriever
		if name == "" {
			name = "run"
		}
		if _, ok := groups[name]; !ok {
			order = append(order, name)
			groups[name] = make([]*retrieve.RunLine, len(ds.Examples))
		}
		j, ok := byID[l.ID]
		if !ok {
			j, ok = byQuestion[l.Question]
		}
		if !ok {
			unmatched[name]++
			continue
		}
		if groups[name][j] == nil {
			groups[name][j] = l
		}
	}
	for _, name := range order {
		s, err := score(ctx, ds, groups[name], m, chat, cfg, progress, name)
		if err != nil {
			return nil, err
		}
		s.Retriever, s.Unmatched = name, unmatched[name]
		rep.Retrievers = append(rep.Retrievers, s)
	}
	rep.finish()
	return rep, nil
}

// Summary holds one retriever's scores over a dataset.
type Summary struct {
	Retriever string `json:"retriever"`
	// Skipped says why the retriever was not run; the scores are then empty.
	Skipped   string `json:"skipped,omitempty"`
	Questions int    `json:"questions"`           // examples with a ranking
	Missing   int    `json:"missing,omitempty"`   // examples a run file has no line for
	Unmatched int    `json:"unmatched,omitempty"` // run lines matching no example
	// WithEvidence counts the examples with gold passages or spans, over which Recall
	// is averaged; GoldItems counts their gold items and TitleOnly those matchable
	// only by title (see Matcher).
	WithEvidence int             `json:"with_evidence"`
	GoldItems    int             `json:"gold_items"`
	TitleOnly    int             `json:"title_only_gold,omitempty"`
	Recall       map[int]float64 `json:"recall_at,omitempty"`
	// Answerable counts open examples with gold answers; AnswerHit is the fraction of
	// them with a gold answer in a top-k passage (DPR's top-k retrieval accuracy).
	Answerable int             `json:"answerable"`
	AnswerHit  map[int]float64 `json:"answer_in_passages_at,omitempty"`
	// QA scores open answers; YesNo and Choice score classification answers.
	QA             *QAScores       `json:"qa,omitempty"`
	YesNo          *ClassScores    `json:"yesno,omitempty"`
	Choice         *ClassScores    `json:"choice,omitempty"`
	Judge          *JudgeStats     `json:"judge,omitempty"`
	AnswerFailures int             `json:"answer_failures,omitempty"` // reader requests that failed
	Seconds        float64         `json:"retrieval_seconds,omitempty"`
	Examples       []ExampleResult `json:"examples,omitempty"`
}

// MsPerQuery is the mean retrieval time per question in milliseconds (0 if unknown).
func (s *Summary) MsPerQuery() float64 {
	if s.Questions == 0 {
		return 0
	}
	return 1000 * s.Seconds / float64(s.Questions)
}

// QAScores are SQuAD scores averaged over the answered open examples.
type QAScores struct {
	// N counts the questions scored, Unanswered those among them whose reader
	// request got no answer (scored as an empty answer: wrong).
	N          int     `json:"n"`
	Unanswered int     `json:"unanswered,omitempty"`
	EM         float64 `json:"em"`
	F1         float64 `json:"f1"`
	Precision  float64 `json:"precision"`
	Recall     float64 `json:"recall"`
}

// JudgeStats average the judge's scores over the answers it scored.
type JudgeStats struct {
	Judged       int     `json:"judged"`      // replies with both scores
	Unparseable  int     `json:"unparseable"` // replies without usable scores
	Failed       int     `json:"failed"`      // requests that failed
	Correctness  float64 `json:"correctness"`
	Completeness float64 `json:"completeness"`
}

// ExampleResult is one example's outcome under one retriever.
type ExampleResult struct {
	ID   string `json:"id"`
	Hits *Hits  `json:"hits,omitempty"`
	// AnswerRank is the first rank whose passage contains a gold answer (0: none).
	AnswerRank int           `json:"answer_rank,omitempty"`
	Answer     *string       `json:"answer,omitempty"`
	Scores     *AnswerScores `json:"scores,omitempty"`
	Predicted  string        `json:"predicted,omitempty"` // parsed yes/no label or option letter
	Judge      *JudgeScore   `json:"judge,omitempty"`
	// AnswerError and JudgeError say why the reader or the judge gave nothing.
	AnswerError string `json:"answer_error,omitempty"`
	JudgeError  string `json:"judge_error,omitempty"`
}

// score computes a retriever's Summary from the lines aligned with the examples (nil
// where there is none), judging open answers when cfg.Judge is set.
func score(ctx context.Context, ds *Dataset, lines []*retrieve.RunLine, m *Matcher, chat retrieve.Chatter, cfg Config, progress Progress, name string) (Summary, error) {
	s := Summary{Recall: map[int]float64{}, AnswerHit: map[int]float64{}}
	for _, k := range cfg.Ks {
		s.Recall[k], s.AnswerHit[k] = 0, 0
	}
	s.AnswerHit[cfg.TopK] = 0
	var qa QAScores
	var yesGold, yesPred, chGold, chPred []string
	var toJudge [][2]int // (result, example)
	for i := range ds.Examples {
		ex := &ds.Examples[i]
		l := lines[i]
		if l == nil {
			s.Missing++
			continue
		}
		s.Questions++
		er := ExampleResult{ID: ex.ID, Answer: l.Answer, AnswerError: l.AnswerError}
		if ex.HasEvidence() {
			h := m.Match(l.Passages, ex)
			er.Hits = &h
			s.WithEvidence++
			s.GoldItems += len(h.Ranks)
			s.TitleOnly += h.TitleOnly
			for _, k := range cfg.Ks {
				s.Recall[k] += h.RecallAt(k)
			}
		}
		if ex.Kind == KindOpen && len(ex.Answers) > 0 {
			s.Answerable++
			for r, p := range l.Passages {
				if ContainsAnswer(p.Title+"\n"+p.Text, ex.Answers) {
					er.AnswerRank = r + 1
					break
				}
			}
			for k := range s.AnswerHit {
				if er.AnswerRank > 0 && er.AnswerRank <= k {
					s.AnswerHit[k]++
				}
			}
		}
		// A question whose reader request got no answer (kept with --allow-partial)
		// counts as answered wrongly, not as absent: otherwise the figures of two
		// retrievers would stand on different questions.
		ans, lost := l.Answer, l.Answer == nil && l.AnswerError != ""
		if lost {
			ans = new(string)
		}
		if ans != nil {
			switch ex.Kind {
			case KindOpen:
				if len(ex.Answers) > 0 {
					sc := ScoreAnswer(*ans, ex.Answers)
					if len(l.Answers) > 0 {
						sc = ScoreListed(l.Answers, ex.Answers)
					}
					er.Scores = &sc
					qa.N++
					qa.EM += sc.EM
					qa.F1 += sc.F1
					qa.Precision += sc.Precision
					qa.Recall += sc.Recall
					if lost {
						qa.Unanswered++
					} else if cfg.Judge {
						toJudge = append(toJudge, [2]int{len(s.Examples), i})
					}
				}
			case KindYesNo:
				er.Predicted, _ = ParseYesNo(*ans)
				yesGold, yesPred = append(yesGold, ex.Label), append(yesPred, er.Predicted)
			case KindChoice:
				er.Predicted, _ = ParseChoice(*ans, ex.Options)
				chGold, chPred = append(chGold, ex.Label), append(chPred, er.Predicted)
			}
		}
		s.Examples = append(s.Examples, er)
	}
	for k := range s.Recall {
		if s.WithEvidence > 0 {
			s.Recall[k] /= float64(s.WithEvidence)
		}
	}
	if s.WithEvidence == 0 {
		s.Recall = nil
	}
	for k := range s.AnswerHit {
		s.AnswerHit[k] /= float64(s.Answerable)
	}
	if s.Answerable == 0 {
		s.AnswerHit = nil
	}
	if qa.N > 0 {
		n := float64(qa.N)
		qa.EM, qa.F1, qa.Precision, qa.Recall = qa.EM/n, qa.F1/n, qa.Precision/n, qa.Recall/n
		s.QA = &qa
	}
	if len(yesGold) > 0 {
		c := Classify(yesGold, yesPred, yesNoLabels)
		s.YesNo = &c
	}
	if len(chGold) > 0 {
		c := Classify(chGold, chPred, []string{"A", "B", "C", "D", "E"})
		s.Choice = &c
	}
	if cfg.Judge && len(toJudge) > 0 {
		js, err := judgeAll(ctx, NewJudge(chat), ds, s.Examples, toJudge, cfg, progress.stage("judge "+name))
		if err != nil {
			return s, err
		}
		s.Judge = &js
	}
	return s, nil
}

// judgeAll judges the answers of the listed (result, example) pairs.
func judgeAll(ctx context.Context, j *Judge, ds *Dataset, results []ExampleResult, idx [][2]int, cfg Config, progress func(done, total int)) (JudgeStats, error) {
	var st JudgeStats
	var mu sync.Mutex
	forEach(ctx, len(idx), cfg.LLMWorkers, progress, func(n int) {
		er := &results[idx[n][0]]
		ex := &ds.Examples[idx[n][1]]
		js, err := j.Score(ctx, ex.Question, ex.Answers, *er.Answer)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil:
			st.Failed++
			er.JudgeError = err.Error()
		case !js.Parsed:
			st.Unparseable++
			er.Judge = &js
		default:
			st.Judged++
			st.Correctness += js.Correctness
			st.Completeness += js.Completeness
			er.Judge = &js
		}
	})
	if err := ctx.Err(); err != nil {
		return st, err
	}
	if st.Judged > 0 {
		st.Correctness /= float64(st.Judged)
		st.Completeness /= float64(st.Judged)
	}
	return st, nil
}
