package extract

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm"
)

// Chatter is the part of the LLM client the extractors use.
type Chatter interface {
	ChatJSON(ctx context.Context, req llm.ChatRequest, v any) (llm.ChatResponse, error)
	Config() llm.Config
}

// LLMConfig configures the LLM extractor.
type LLMConfig struct {
	// Hyperedges adds the EXT++ hyperedge call (seed 002) for every chunk. A
	// simplification: the call keeps each hyperedge's text and members, not the
	// members' descriptions or the key scores, and runs no gleaning passes (EXT++: 2);
	// entities are embedded by name alone.
	Hyperedges bool
	// MaxTokens caps each answer; HippoRAG 2 uses 2048 for OpenIE.
	MaxTokens int
}

// DefaultLLMConfig returns HippoRAG 2's settings (temperature 0 comes from the client).
func DefaultLLMConfig() LLMConfig { return LLMConfig{MaxTokens: 2048} }

// LLM is HippoRAG 2's two-step OpenIE over an OpenAI-compatible chat model: named
// entities first, then triples conditioned on them; with Hyperedges, also EXT++
// hyperedges. Answers are parsed tolerantly; a chunk whose answer cannot be used is
// marked Failed and counted, never fatal.
type LLM struct {
	c   Chatter
	cfg LLMConfig
}

// NewLLM returns an LLM extractor over client c.
func NewLLM(c Chatter, cfg LLMConfig) *LLM { return &LLM{c: c, cfg: cfg} }

// Name implements Extractor.
func (x *LLM) Name() string {
	n := "llm:" + x.c.Config().Model
	if x.cfg.Hyperedges {
		n += "+ext++"
	}
	return n
}

func passage(c Chunk) string {
	// The document's title, not the chunk's "[chunk k]" suffix: the one-shot example
	// teaches that the title line names the first entity.
	title := strings.TrimSpace(chunkSuffix.ReplaceAllString(c.Title, ""))
	if title == "" {
		return c.Text
	}
	return title + "\n" + c.Text
}

func (x *LLM) request(stage, system, exIn, exOut, user string) llm.ChatRequest {
	return llm.ChatRequest{
		Stage:     stage,
		JSONMode:  true,
		MaxTokens: x.cfg.MaxTokens,
		Usable:    usable(stage),
		Messages: []llm.Message{
			llm.System(system), llm.User(exIn), llm.Assistant(exOut), llm.User(user),
		},
	}
}

// The answers' shapes. Their lists are pointers so that an answer without the key
// (another key, a bare list) is told from an empty list: it is refused, not read as
// "nothing found".
type nerAnswer struct {
	NamedEntities *[]any `json:"named_entities"`
}

type tripleAnswer struct {
	Triples *[][]any `json:"triples"`
}

// hyperAnswer reads EXT++ answers leniently: an entity as an object with a name or
// as a bare string, a score as a number or a numeric string.
type hyperAnswer struct {
	Hyperedges *[]struct {
		Text     string `json:"text"`
		Entities []any  `json:"entities"`
		Score    any    `json:"score"`
	} `json:"hyperedges"`
}

// answerKeys are the keys each stage's answer must hold.
var answerKeys = map[string]string{"ner": "named_entities", "triples": "triples", "hyperedges": "hyperedges"}

// errNoKey is an answer that holds JSON but not the key the prompt asks for.
func errNoKey(key string) error {
	return &llm.ParseError{Err: fmt.Errorf("%w: the answer has no %q", llm.ErrNoJSON, key)}
}

// usable refuses an answer of stage that does not decode into the stage's answer
// type or lacks its key (llm.ChatRequest.Usable), as chunk reads it.
func usable(stage string) func(llm.ChatResponse) error {
	return func(r llm.ChatResponse) error {
		var missing bool
		var err error
		switch stage {
		case "ner":
			var a nerAnswer
			err, missing = llm.ParseAnswer(r, &a), a.NamedEntities == nil
		case "triples":
			var a tripleAnswer
			err, missing = llm.ParseAnswer(r, &a), a.Triples == nil
		case "hyperedges":
			var a hyperAnswer
			err, missing = llm.ParseAnswer(r, &a), a.Hyperedges == nil
		}
		if err == nil && missing {
			err = errNoKey(answerKeys[stage])
		}
		return err
	}
}

// Extract implements Extractor. The calls of all chunks go out concurrently, bounded
// by the client; NER precedes the triple call of the same chunk.
func (x *LLM) Extract(ctx context.Context, chunks []Chunk, progress Progress) ([]Result, error) {
	out := make([]Result, len(chunks))
	done := make(chan int, len(chunks))
	jobs := make(chan int)
	// 64 chunks in progress, by as many workers (not a goroutine per chunk: a corpus of
	// 10⁵ chunks would park 10⁵ of them); the client bounds HTTP requests itself.
	for range min(64, len(chunks)) {
		go func() {
			for i := range jobs {
				out[i] = x.chunk(ctx, chunks[i])
				done <- i
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range chunks {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	for n := 1; n <= len(chunks); n++ {
		select {
		case <-done:
			if progress != nil {
				progress(n, len(chunks))
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("extract: %w", ctx.Err())
		}
	}
	return out, ctx.Err()
}

func (x *LLM) chunk(ctx context.Context, c Chunk) Result {
	var res Result
	fail := func(stage string, err error) Result {
		return Result{Failed: fmt.Sprintf("%s: %v", stage, err), Unanswered: unanswered(err)}
	}
	p := passage(c)
	hyperDone := make(chan error, 1)
	if x.cfg.Hyperedges {
		go func() {
			var ha hyperAnswer
			_, err := x.c.ChatJSON(ctx, x.request("hyperedges", hyperSystem, hyperExampleInput, hyperExampleOutput, "Passage:\n"+p), &ha)
			if err == nil && ha.Hyperedges == nil {
				err = errNoKey("hyperedges")
			}
			if err == nil {
				var dropped int
				res.Hyperedges, dropped = validHyperedges(c.Text, ha)
				res.Dropped += dropped
			}
			hyperDone <- err
		}()
	} else {
		hyperDone <- nil
	}
	var na nerAnswer
	_, err := x.c.ChatJSON(ctx, x.request("ner", nerSystem, nerExampleInput, nerExampleOutput, "Paragraph:\n"+p), &na)
	if err == nil && na.NamedEntities == nil {
		err = errNoKey("named_entities")
	}
	if err != nil {
		<-hyperDone
		return fail("ner", err)
	}
	names := stringsOf(*na.NamedEntities)
	nerJSON := `{"named_entities": ` + jsonList(names) + `}`
	var ta tripleAnswer
	_, err = x.c.ChatJSON(ctx, x.request("triples", tripleSystem, tripleExampleInput, tripleExampleOutput, "Paragraph:\n"+p+"\n\n"+nerJSON), &ta)
	if err == nil && ta.Triples == nil {
		err = errNoKey("triples")
	}
	if herr := <-hyperDone; herr != nil {
		return fail("hyperedges", herr)
	}
	if err != nil {
		return fail("triples", err)
	}
	for _, n := range names {
		res.Entities = append(res.Entities, Entity{Text: n})
	}
	res.Triples = ValidTriples(*ta.Triples)
	res.Dropped += len(*ta.Triples) - len(res.Triples)
	return res
}

// unanswered reports whether a failed call got no answer for a reason a rerun may not
// meet: a retryable failure (timeout, 5xx, 429, network), a server the client gave up
// on, an interrupted run.
func unanswered(err error) bool {
	switch llm.Classify(err) {
	case llm.KindDown, llm.KindCanceled:
		return true
	}
	return llm.IsRetryable(err)
}

// ValidTriples keeps the entries that are exactly three non-empty strings (numbers are
// rendered as text), dropping duplicates, as HippoRAG's filter_invalid_triples does.
func ValidTriples(raw [][]any) []Triple {
	var out []Triple
	seen := map[string]bool{}
	for _, r := range raw {
		if len(r) != 3 {
			continue
		}
		parts := stringsOf(r)
		if len(parts) != 3 {
			continue
		}
		key := strings.Join(parts, "\x00")
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, Triple{Subject: parts[0], Predicate: parts[1], Object: parts[2]})
	}
	return out
}

// stringsOf renders strings and numbers as text, skipping empty or other values.
func stringsOf(xs []any) []string {
	var out []string
	for _, x := range xs {
		var s string
		switch v := x.(type) {
		case string:
			s = strings.TrimSpace(v)
		case float64:
			s = strconv.FormatFloat(v, 'f', -1, 64) // 1300000, not 1.3e+06
		}
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func jsonList(xs []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", s)
	}
	b.WriteByte(']')
	return b.String()
}

// validHyperedges keeps segments that occur verbatim in the text (modulo whitespace)
// and name at least one entity, and counts the others; scores are clamped to [0, 10].
func validHyperedges(text string, ha hyperAnswer) ([]Hyperedge, int) {
	norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	body := norm(text)
	var out []Hyperedge
	dropped := 0
	if ha.Hyperedges == nil {
		return nil, 0
	}
	for _, h := range *ha.Hyperedges {
		seg := norm(h.Text)
		if seg == "" || !strings.Contains(body, seg) {
			dropped++
			continue
		}
		var names []string
		for _, e := range h.Entities {
			var n string
			switch v := e.(type) {
			case string:
				n = v
			case map[string]any:
				n, _ = v["name"].(string)
			}
			if n = strings.TrimSpace(n); graphio.NormalizeName(n) != "" {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			dropped++
			continue
		}
		var score float64
		switch v := h.Score.(type) {
		case float64:
			score = v
		case string:
			score, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
		if math.IsNaN(score) || math.IsInf(score, 0) {
			score = 0
		}
		out = append(out, Hyperedge{Text: seg, Entities: names, Score: float32(min(10, max(0, score)))})
	}
	return out, dropped
}
