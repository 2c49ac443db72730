package synth

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/internal/counts"
	"github.com/graphloom/graphloom/llm"
)

// Rejection reasons, as counted in Report.Rejected.
const (
	RejectAnswerNotInEvidence = "answer_not_in_evidence"
	RejectAnswerInQuestion    = "question_states_answer"
	RejectDuplicate           = "duplicate_question"
	RejectEmpty               = "empty_question_or_answer"
	RejectUnparseable         = "unparseable_answer"
	RejectCut                 = "answer_cut_at_token_limit" // a question or answer may be short
	RejectFailed              = "call_failed"
)

// A Generator writes the question and answer of each candidate.
type Generator interface {
	// Name identifies the generator in items and reports ("template", "llm:MODEL").
	Name() string
	// Generate returns, per candidate, the pair or the rejection reason.
	Generate(ctx context.Context, ix *graphio.Index, cands []Candidate, cfg Config, progress func(done, total int)) ([]Pair, error)
}

// Pair is a generated question and answer, or why there is none.
type Pair struct {
	Question, Answer string
	Rejected         string
	// Failure is why the call failed (Rejected RejectFailed): its error, and its kind
	// (llm.Classify).
	Failure string
	Kind    llm.Kind
}

// Report summarises a SynthGen run.
type Report struct {
	Generator string `json:"generator"`
	// Shape names the question shape asked, when a caller asks several (calibrate).
	Shape      string         `json:"shape,omitempty"`
	Candidates map[string]int `json:"candidates"` // enumerated, per type (before the caps)
	Asked      map[string]int `json:"asked"`      // sent to the generator, per type
	Items      map[string]int `json:"items"`      // kept, per type
	Rejected   map[string]int `json:"rejected"`   // by reason
	// Plan: calls and prompt tokens the LLM generator would spend (nothing is sent).
	Plan       bool `json:"plan,omitempty"`
	Calls      int  `json:"calls"`
	PlanTokens int  `json:"planned_prompt_tokens,omitempty"`
	// Failed counts the calls that got no answer (after their retries), by kind
	// (llm.Kind) in FailedByKind, the last error in LastFailure: their items are
	// missing, and a rerun asks them again (answered calls come from the cache).
	Failed       int            `json:"failed,omitempty"`
	FailedByKind map[string]int `json:"failed_by_kind,omitempty"`
	LastFailure  string         `json:"last_failure,omitempty"`
}

// LostCalls is the error of a run some of whose generation calls got no answer (nil
// when none failed): how many, by kind, the last error, and what then — a rerun asks
// only those again (the answered ones are cached), or the caller's --allow-partial.
// what says what the caller will not do without their items.
func (r *Report) LostCalls(what string) error {
	if r.Failed == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d generation calls got no answer (%s); last: %s; %s: rerun (answered calls are cached), or pass --allow-partial",
		r.Failed, r.Calls, counts.Format(r.FailedByKind), r.LastFailure, what)
}

// Candidates enumerates both kinds of candidates under cfg, hop first, or with
// cfg.Hyperedges the hyper ones.
func Candidates(ix *graphio.Index, cfg Config) ([]Candidate, *Report) {
	rep := &Report{Candidates: map[string]int{}, Asked: map[string]int{}, Items: map[string]int{}, Rejected: map[string]int{}}
	if cfg.Hyperedges {
		hyper, n := HyperNeighbourhoods(ix, cfg)
		rep.Candidates[TypeHyper], rep.Asked[TypeHyper] = n, len(hyper)
		return hyper, rep
	}
	hop, nh := HopPaths(ix, cfg)
	sum, ns := SumNeighbourhoods(ix, cfg)
	rep.Candidates[TypeHop], rep.Candidates[TypeSum] = nh, ns
	rep.Asked[TypeHop], rep.Asked[TypeSum] = len(hop), len(sum)
	return append(hop, sum...), rep
}

// Run generates the items of ix with gen. Generated pairs are validated: the answer
// must occur in the verbalised evidence, the question must not state it, and a
// question already asked is dropped; rejections are counted by reason.
func Run(ctx context.Context, ix *graphio.Index, gen Generator, cfg Config, progress func(done, total int)) ([]Item, *Report, error) {
	if err := Askable(ix, cfg); err != nil {
		return nil, nil, err
	}
	cands, rep := Candidates(ix, cfg)
	items, err := RunCandidates(ctx, ix, gen, cands, rep, cfg, progress)
	return items, rep, err
}

// Askable says why ix has nothing that cfg asks about (facts, or with cfg.Hyperedges
// hyperedges), or nil.
func Askable(ix *graphio.Index, cfg Config) error {
	if !cfg.Hyperedges && len(ix.Facts) == 0 {
		return fmt.Errorf("synth: the index has no facts to ask about")
	}
	if cfg.Hyperedges && len(ix.Hyperedges) == 0 {
		return fmt.Errorf("synth: the index has no hyperedges to ask about")
	}
	return nil
}

// RunCandidates generates and validates, as Run does, the items of cands — those of
// Candidates or a subset of them — counting in rep (from Candidates): Asked becomes
// the candidates sent, per type.
func RunCandidates(ctx context.Context, ix *graphio.Index, gen Generator, cands []Candidate, rep *Report, cfg Config, progress func(done, total int)) ([]Item, error) {
	rep.Generator = gen.Name()
	rep.Asked = map[string]int{}
	for _, c := range cands {
		rep.Asked[c.Type]++
	}
	pairs, err := gen.Generate(ctx, ix, cands, cfg, progress)
	if err != nil {
		return nil, err
	}
	if len(pairs) != len(cands) {
		return nil, fmt.Errorf("synth: %s returned %d pairs for %d candidates", gen.Name(), len(pairs), len(cands))
	}
	if _, isLLM := gen.(*LLMGenerator); isLLM {
		rep.Calls = len(cands)
		for _, p := range pairs {
			if p.Rejected == RejectFailed {
				rep.Failed++
				if rep.FailedByKind == nil {
					rep.FailedByKind = map[string]int{}
				}
				rep.FailedByKind[string(p.Kind)]++
				rep.LastFailure = p.Failure
			}
		}
		if rep.Failed > 0 && rep.Failed == len(pairs) {
			return nil, fmt.Errorf("synth: every generation call failed (%d of %d; last: %s); nothing was written", rep.Failed, len(pairs), rep.LastFailure)
		}
	}
	var items []Item
	seen := map[string]bool{}
	n := map[string]int{}
	for i, c := range cands {
		p := pairs[i]
		it := item(ix, c, n[c.Type])
		reason := p.Rejected
		if reason == "" {
			reason = validate(p, it.Evidence, seen)
		}
		if reason != "" {
			rep.Rejected[reason]++
			continue
		}
		n[c.Type]++
		it.ID = fmt.Sprintf("synth-%s-%d", c.Type, n[c.Type])
		it.Question, it.Answer, it.Generator = strings.TrimSpace(p.Question), strings.TrimSpace(p.Answer), gen.Name()
		items = append(items, it)
		rep.Items[c.Type]++
	}
	return items, nil
}

func validate(p Pair, evidence string, seen map[string]bool) string {
	q, a := norm(p.Question), norm(p.Answer)
	switch {
	case q == "" || a == "":
		return RejectEmpty
	case !strings.Contains(" "+norm(evidence)+" ", " "+a+" "):
		return RejectAnswerNotInEvidence
	case strings.Contains(" "+q+" ", " "+a+" "):
		return RejectAnswerInQuestion
	case seen[q]:
		return RejectDuplicate
	}
	seen[q] = true
	return ""
}

// norm lower-cases s and keeps its letters and digits, one space between words.
func norm(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }), " ")
}

// Template is the offline generator: questions from fixed templates over the same
// paths and neighbourhoods (relation phrases quoted; a hyperedge has none, only its
// members' names). It is graphloom's, not the paper's (which
// prompts an LLM), so that the whole pipeline runs without a model.
//
// Its questions hold the subgraph's entity names and relation phrases and otherwise
// only stopwords of the BM25 analyzer (from, then, which, is, such, that, it, with,
// and): a template word that is neither would be in every question and in no real
// one, and would match whatever passages happen to contain it. The earlier wording
// ("Starting from a, follow the relation …: which entity do you reach?") put start,
// follow, relation, entity and reach into every path question; calibrate's
// uncalibrated held-out R@5 rose from 78.7 to 80.3 on the example corpus, 95.7 to
// 97.1 on MoreHopQA and 62.5 to 73.6 on LiteraryQA's largest book without them.
//
// Entities are named as the corpus writes them (mention), not by their normalised
// index names: a real question writes "Tomas Brell", and the retrievers' query-entity
// linking takes only capitalised words or numbers for names, so a question reading
// "tomas brell" linked no entity at all.
type Template struct{}

// mention is how a template question names entity e: the surface form the corpus
// writes with the most capitals ("Tomas Brell" over "tomas brell"), but the
// lower-case one when its only capital is its first letter and the corpus also
// writes it without (the capital began a sentence: "Ships" and "ships"); its name
// when it has no surface form.
func mention(ix *graphio.Index, e int32) string {
	x := &ix.Entities[e]
	capitals := func(s string) int {
		n := 0
		for _, r := range s {
			if unicode.IsUpper(r) {
				n++
			}
		}
		return n
	}
	best := ""
	for _, s := range x.Surface {
		if s != "" && (best == "" || capitals(s) > capitals(best)) {
			best = s
		}
	}
	if best == "" {
		return x.Name
	}
	if r, size := utf8.DecodeRuneInString(best); capitals(best) == 1 && unicode.IsUpper(r) {
		if lower := string(unicode.ToLower(r)) + best[size:]; slices.Contains(x.Surface, lower) {
			return lower
		}
	}
	return best
}

// Name implements Generator.
func (Template) Name() string { return "template" }

// parsePair reads a generated question and answer.
func parsePair(resp llm.ChatResponse) Pair {
	var v struct {
		Question string `json:"question"`
		Answer   any    `json:"answer"`
	}
	if resp.FinishReason == llm.FinishLength { // one flat record: a cut one may be short anywhere
		return Pair{Rejected: RejectCut}
	}
	if llm.ParseJSON(resp.Content, &v) != nil {
		return Pair{Rejected: RejectUnparseable}
	}
	return Pair{Question: v.Question, Answer: scalar(v.Answer)}
}

// usablePair refuses an answer parsePair cannot read (llm.ChatRequest.Usable).
func usablePair(resp llm.ChatResponse) error {
	if p := parsePair(resp); p.Rejected != "" {
		return fmt.Errorf("synth: %s answer", p.Rejected)
	}
	return nil
}

// Generate implements Generator.
func (Template) Generate(_ context.Context, ix *graphio.Index, cands []Candidate, _ Config, progress func(done, total int)) ([]Pair, error) {
	out := make([]Pair, len(cands))
	for i, c := range cands {
		ent := func(e int32) string { return ix.Entities[e].Name }
		say := func(e int32) string { return mention(ix, e) }
		switch c.Type {
		case TypeHop:
			// a –r1→ b –r2→ c: `From a: "r1", then "r2" — which?`
			first := &ix.Facts[c.Facts[0]]
			rels := make([]string, len(c.Facts))
			for j, f := range c.Facts {
				rels[j] = fmt.Sprintf("%q", ix.Facts[f].Predicate)
			}
			out[i] = Pair{
				Question: fmt.Sprintf("From %s: %s — which?", say(first.Subject), strings.Join(rels, ", then ")),
				Answer:   ent(c.Answer),
			}
		case TypeSum:
			var parts []string
			for _, f := range c.Facts {
				x := &ix.Facts[f]
				parts = append(parts, fmt.Sprintf("%s %q it", say(x.Subject), x.Predicate))
			}
			// `Which is such that a "r" it, b "r" it and c "r" it?`
			out[i] = Pair{Question: fmt.Sprintf("Which is such that %s?", joinAnd(parts)), Answer: ent(c.Answer)}
		case TypeHyper:
			// `Which is with a, with b and with c?`: a hyperedge has no relation
			// phrase, only its members.
			parts := make([]string, len(c.Named))
			for j, u := range c.Named {
				parts[j] = "with " + say(u)
			}
			out[i] = Pair{Question: fmt.Sprintf("Which is %s?", joinAnd(parts)), Answer: ent(c.Answer)}
		}
		if progress != nil {
			progress(i+1, len(cands))
		}
	}
	return out, nil
}

func joinAnd(xs []string) string {
	if len(xs) <= 1 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// Chatter is the LLM the generator calls; *llm.Client is one.
type Chatter interface {
	ChatAll(ctx context.Context, reqs []llm.ChatRequest, onDone func(i int, resp llm.ChatResponse, err error)) error
	Config() llm.Config
}

// LLMGenerator is seed 001's generator: M(Verbalize(subgraph); π_Q^hop or π_Q^sum),
// or for hyper items graphloom's promptHyper over the hyperedges' texts
// (VerbalizeHyperedges), answered as JSON {"question", "answer"}. Every call goes through the client's
// cache and usage accounting.
type LLMGenerator struct{ C Chatter }

// Name implements Generator.
func (g *LLMGenerator) Name() string { return "llm:" + g.C.Config().Model }

// Requests builds the generation request of each candidate.
func Requests(ix *graphio.Index, cands []Candidate, cfg Config) []llm.ChatRequest {
	reqs := make([]llm.ChatRequest, len(cands))
	for i, c := range cands {
		sys := promptHop
		user := fmt.Sprintf("Path (%d facts, in order):\n%s", len(c.Facts), Verbalize(ix, c.Facts))
		switch c.Type {
		case TypeSum:
			sys = sumPrompt(len(c.Facts))
			user = fmt.Sprintf("Target node: %s\nIncoming facts:\n%s", ix.Entities[c.Answer].Name, Verbalize(ix, c.Facts))
		case TypeHyper:
			sys = promptHyper
			user = fmt.Sprintf("Target entity: %s\nPassages:\n%s", ix.Entities[c.Answer].Name, VerbalizeHyperedges(ix, c.Hyperedges))
		}
		reqs[i] = llm.ChatRequest{Messages: []llm.Message{llm.System(sys), llm.User(user)}, MaxTokens: cfg.MaxTokens, JSONMode: true, Stage: "synth",
			Usable: usablePair}
	}
	return reqs
}

// Generate implements Generator.
func (g *LLMGenerator) Generate(ctx context.Context, ix *graphio.Index, cands []Candidate, cfg Config, progress func(done, total int)) ([]Pair, error) {
	out := make([]Pair, len(cands))
	done := 0
	err := g.C.ChatAll(ctx, Requests(ix, cands, cfg), func(i int, resp llm.ChatResponse, err error) {
		done++
		if progress != nil {
			progress(done, len(cands))
		}
		if err != nil {
			out[i] = Pair{Rejected: RejectFailed, Failure: err.Error(), Kind: llm.Classify(err)}
			return
		}
		out[i] = parsePair(resp)
	})
	if err != nil {
		return nil, fmt.Errorf("synth: %w", err)
	}
	return out, nil
}

// scalar renders a JSON answer that may be a string, a number or a list of strings.
func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return fmt.Sprint(x)
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, scalar(e))
		}
		return strings.Join(parts, ", ")
	}
	return ""
}

// π_Q^hop and π_Q^sum. Seed 001 fixes its templates before training but its appendix
// is not in the text we have; these are graphloom's, written to the paper's
// definitions.
const promptHop = `You write one question-answer pair for training a graph retriever.
You are given a path of facts from a knowledge graph, one per line as "subject [relation] object", in order: the object of each fact is the subject of the next.
Write a natural question that can only be answered by following every fact of the path: it names the first entity and describes the relations, but never names any later entity. The answer is the last entity of the path, written exactly as in the facts.
Return JSON only: {"question": "...", "answer": "..."}`

// sumPrompt is promptSum for n incoming facts (--neighbours; calibration's smaller
// shapes ask about two): the prompt says how many it gives.
func sumPrompt(n int) string {
	if n == 3 {
		return promptSum
	}
	words := map[int]string{1: "one", 2: "two", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}
	w, ok := words[n]
	if !ok {
		w = strconv.Itoa(n)
	}
	all := "all " + w
	if n == 2 {
		all = "both"
	}
	return strings.Replace(strings.Replace(promptSum, "and three facts", "and "+w+" facts", 1), "needs all three facts", "needs "+all+" facts", 1)
}

const promptSum = `You write one question-answer pair for training a graph retriever.
You are given a target node of a knowledge graph and three facts that point to it, one per line as "subject [relation] target".
Write a natural question about the target that needs all three facts to answer and does not name the target. The answer is the target, written exactly as given.
Return JSON only: {"question": "...", "answer": "..."}`

// promptHyper is π_Q^sum for hyperedges: their texts stand for the facts.
const promptHyper = `You write one question-answer pair for training a retriever.
You are given a target entity and short passages that each mention it, one per line.
Write a natural question about the target that needs every passage to answer and does not name the target. The answer is the target, written exactly as given.
Return JSON only: {"question": "...", "answer": "..."}`

// Plan reports what the LLM generator would send for ix under cfg — calls and
// prompt tokens (count gives a text's tokens) — without sending anything.
func Plan(ix *graphio.Index, cfg Config, count func(string) int) *Report {
	cands, rep := Candidates(ix, cfg)
	rep.Plan, rep.Calls, rep.PlanTokens = true, len(cands), PlanTokens(ix, cands, cfg, count)
	return rep
}

// PlanTokens is the prompt tokens the LLM generator would send for cands.
func PlanTokens(ix *graphio.Index, cands []Candidate, cfg Config, count func(string) int) int {
	return llm.PromptTokens(Requests(ix, cands, cfg), count)
}
