package augment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm"
)

// Proposal is a triple a completer proposes, with the chunk ids it cites as written.
type Proposal struct {
	Triple   []string `json:"triple"`
	ChunkIDs []string `json:"chunk_ids"`
}

// HyperProposal is an n-ary fact a completer proposes.
type HyperProposal struct {
	Text     string   `json:"text"`
	Entities []string `json:"entities"`
	ChunkIDs []string `json:"chunk_ids"`
}

// Completion is a completer's answer for one selected subgraph.
type Completion struct {
	Triples    []Proposal
	Hyperedges []HyperProposal
	// Failed is set when the answer could not be obtained or parsed; it is counted.
	Failed string
	// Kind classifies a failure (llm.Classify): llm.KindUnparseable for an answer that
	// arrived but could not be used, a transport kind when none arrived.
	Kind llm.Kind
}

// A Completer proposes new facts for selected subgraphs from their evidence chunks.
type Completer interface {
	Name() string
	Complete(ctx context.Context, ix *graphio.Index, sel []Selected, cfg Config, progress func(done, total int)) ([]Completion, error)
}

// LLMCompleter asks an OpenAI-compatible chat model, one call per subgraph, with the
// client's concurrency, retries and on-disk cache (so a killed run is resumed without
// repeating answered calls).
type LLMCompleter struct {
	C          *llm.Client
	Hyperedges bool // also ask for n-ary hyperedges (for hyperedge indices)
}

// Name implements Completer.
func (c *LLMCompleter) Name() string { return "llm:" + c.C.Config().Model }

// Requests builds the chat requests for sel (used by Complete and by --plan).
func Requests(ix *graphio.Index, sel []Selected, cfg Config, hyper bool) []llm.ChatRequest {
	reqs := make([]llm.ChatRequest, len(sel))
	for i := range sel {
		reqs[i] = llm.ChatRequest{Messages: messages(ix, &sel[i], cfg, hyper), MaxTokens: cfg.MaxTokens, JSONMode: true, Stage: "augment",
			Usable: usableCompletion}
	}
	return reqs
}

type completionJSON struct {
	NewTriples []struct {
		Triple   []any `json:"triple"`
		ChunkIDs []any `json:"chunk_ids"`
	} `json:"new_triples"`
	NewHyperedges []struct {
		Text     string `json:"text"`
		Entities []any  `json:"entities"`
		ChunkIDs []any  `json:"chunk_ids"`
	} `json:"new_hyperedges"`
}

// Complete implements Completer.
func (c *LLMCompleter) Complete(ctx context.Context, ix *graphio.Index, sel []Selected, cfg Config, progress func(done, total int)) ([]Completion, error) {
	out := make([]Completion, len(sel))
	done := 0
	err := c.C.ChatAll(ctx, Requests(ix, sel, cfg, c.Hyperedges), func(i int, resp llm.ChatResponse, err error) {
		done++
		if progress != nil {
			progress(done, len(sel))
		}
		if err != nil {
			out[i].Failed, out[i].Kind = err.Error(), llm.Classify(err)
			return
		}
		out[i] = parseCompletion(resp)
	})
	if err != nil {
		return nil, fmt.Errorf("augment: %w", err)
	}
	return out, nil
}

// usableCompletion refuses an answer parseCompletion cannot read (llm.ChatRequest.Usable).
func usableCompletion(resp llm.ChatResponse) error {
	if c := parseCompletion(resp); c.Kind == llm.KindUnparseable {
		return errors.New(c.Failed)
	}
	return nil
}

// parseCompletion reads a completion answer tolerantly (code fences, <think> blocks,
// prose around the JSON, common breakage); of an answer cut at the token limit, the
// unfinished last proposal is dropped (llm.ParseAnswer).
func parseCompletion(resp llm.ChatResponse) Completion {
	var cj completionJSON
	if err := llm.ParseAnswer(resp, &cj); err != nil {
		return Completion{Failed: "unparseable answer: " + err.Error(), Kind: llm.KindUnparseable}
	}
	var c Completion
	for _, t := range cj.NewTriples {
		c.Triples = append(c.Triples, Proposal{Triple: anyStrings(t.Triple), ChunkIDs: anyStrings(t.ChunkIDs)})
	}
	for _, h := range cj.NewHyperedges {
		c.Hyperedges = append(c.Hyperedges, HyperProposal{Text: strings.TrimSpace(h.Text), Entities: anyStrings(h.Entities), ChunkIDs: anyStrings(h.ChunkIDs)})
	}
	return c
}

func anyStrings(xs []any) []string {
	out := make([]string, 0, len(xs))
	for _, x := range xs {
		switch v := x.(type) {
		case string:
			out = append(out, v)
		case float64:
			out = append(out, fmt.Sprint(v))
		default:
			out = append(out, "")
		}
	}
	return out
}

// Extractive is the offline completer: it runs the rule extractor over a subgraph's
// evidence chunks in corpus order, resolves aliases ("X, known as Y") across all of
// them and pronouns across neighbouring chunks, and proposes the facts whose evidence
// spans two or more chunks (a statement about Y in one chunk, with Y named X in
// another). Facts the index already holds are dropped later by validation.
type Extractive struct {
	Rule *extract.Rule
}

// Name implements Completer.
func (x *Extractive) Name() string { return "extractive" }

// Complete implements Completer.
func (x *Extractive) Complete(ctx context.Context, ix *graphio.Index, sel []Selected, cfg Config, progress func(done, total int)) ([]Completion, error) {
	out := make([]Completion, len(sel))
	for i := range sel {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Read the evidence in corpus order; a chunk continues the one before it only
		// when they are neighbours in the corpus: the next piece of a document, or the
		// next passage unless its title names a person (an article about someone
		// opening "He was the father of …" is about its title, not about the person
		// of the article before it). Pronouns never resolve across unrelated passages;
		// ExtractDocs also ends a discourse at a text that names its subject first.
		order := slices.Clone(sel[i].chunkIx)
		slices.Sort(order)
		texts := make([]string, len(order))
		ids := make([]string, len(order))
		linked := make([]bool, len(order))
		for j, c := range order {
			ch := &ix.Chunks[c]
			texts[j], ids[j] = ch.Text, ch.ID
			linked[j] = j > 0 && c == order[j-1]+1 && (ch.Doc == ix.Chunks[c-1].Doc || !extract.PersonTitle(ch.Title))
		}
		res, err := x.Rule.ExtractDocs(texts, linked)
		if err != nil {
			return nil, err
		}
		out[i] = crossChunkFacts(res, ids, linked)
		if progress != nil {
			progress(i+1, len(sel))
		}
	}
	return out, nil
}

// crossChunkFacts resolves aliases across texts and keeps the triples that depend on
// two or more of them. linked[j] says text j continues text j−1's discourse (nil: all
// texts are one discourse). An alias a text introduces applies throughout its own
// discourse; in another one only when it is distinctive in the evidence: one name
// claims it and no other name read contains it. A nickname a story keeps using ("the
// Magpie") is; a first name ("William", "Anna"), which in an unrelated passage names
// someone else far more often than the person it was introduced for, is not.
func crossChunkFacts(res []extract.Result, chunkIDs []string, linked []bool) Completion {
	discourse := make([]int, len(res))
	for j := 1; j < len(res); j++ {
		discourse[j] = discourse[j-1]
		if linked != nil && (j >= len(linked) || !linked[j]) {
			discourse[j]++
		}
	}
	aliases := map[string][]aliasOf{} // normalised alias → the names it stands for, first statement each
	for i, r := range res {
		for _, a := range r.Aliases {
			n := graphio.NormalizeName(a[1])
			if n == "" {
				continue
			}
			claimed := false
			for _, b := range aliases[n] {
				claimed = claimed || graphio.NormalizeName(b.canon) == graphio.NormalizeName(a[0])
			}
			if !claimed {
				aliases[n] = append(aliases[n], aliasOf{a[0], i})
			}
		}
	}
	// distinctive: the aliases that may apply outside their own discourse.
	distinctive := map[string]bool{}
	for n, names := range namesContaining(res, aliases) {
		if len(aliases[n]) != 1 {
			continue
		}
		canon := graphio.NormalizeName(aliases[n][0].canon)
		distinctive[n] = true
		for m := range names {
			distinctive[n] = distinctive[n] && (m == n || m == canon)
		}
	}
	resolve := func(name string, own int, support map[int]bool) string {
		n := graphio.NormalizeName(name)
		as := aliases[n]
		var use *aliasOf
		for k := range as {
			if discourse[as[k].text] == discourse[own] {
				use = &as[k]
				break
			}
		}
		if use == nil && distinctive[n] {
			use = &as[0]
		}
		if use != nil && graphio.NormalizeName(use.canon) != n {
			support[use.text] = true
			return use.canon
		}
		return name
	}
	var c Completion
	seen := map[string]bool{}
	for i, r := range res {
		for _, t := range r.Triples {
			if t.Predicate == "known as" {
				continue
			}
			support := map[int]bool{i: true}
			for _, s := range t.Sources {
				support[s] = true
			}
			s, o := resolve(t.Subject, i, support), resolve(t.Object, i, support)
			if len(support) < 2 {
				continue
			}
			key := graphio.FactID(graphio.NormalizeName(s), graphio.NormalizeName(t.Predicate), graphio.NormalizeName(o))
			if seen[key] {
				continue
			}
			seen[key] = true
			var ids []string
			for j := range res {
				if support[j] {
					ids = append(ids, chunkIDs[j])
				}
			}
			c.Triples = append(c.Triples, Proposal{Triple: []string{s, t.Predicate, o}, ChunkIDs: ids})
		}
	}
	return c
}

// aliasOf is a name an alias stands for and the text that says so.
type aliasOf struct {
	canon string
	text  int
}

// namesContaining returns, per alias, the distinct normalised entity names of res
// whose words contain the alias's words as a contiguous run.
func namesContaining(res []extract.Result, aliases map[string][]aliasOf) map[string]map[string]bool {
	out := make(map[string]map[string]bool, len(aliases))
	maxWords := 0
	for n := range aliases {
		out[n] = map[string]bool{}
		maxWords = max(maxWords, len(strings.Fields(n)))
	}
	for _, r := range res {
		for _, e := range r.Entities {
			name := graphio.NormalizeName(e.Text)
			w := strings.Fields(name)
			for i := range w {
				for j := i + 1; j <= len(w) && j-i <= maxWords; j++ {
					if set, ok := out[strings.Join(w[i:j], " ")]; ok {
						set[name] = true
					}
				}
			}
		}
	}
	return out
}
