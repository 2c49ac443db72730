package rerank

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/retrieve"
)

// Variant is one reranking setting of an evaluation: no reranking (the first-stage
// order), cosine only ("dense", the paper's vanilla RAG), or a CAGE reranker.
type Variant struct {
	Name     string
	Dense    bool      // rerank by query–passage cosine alone
	Reranker *Reranker // CAGE; nil with Dense false = first-stage order
}

// Row is one line of an evaluation table.
type Row struct {
	First      string          `json:"first_stage"`
	Rerank     string          `json:"rerank"`
	Recall     map[int]float64 `json:"recall"` // mean Recall@k over questions with gold passages
	Questions  int             `json:"questions"`
	MsPerQuery float64         `json:"ms_per_query"` // reranking time only
}

// Candidates is one question's candidate set.
type Candidates struct {
	Question string
	Keys     []string  // passage identities ("title\ntext") for recall
	Texts    []string  // what the embedder and BM25 see ("title\ntext")
	Bodies   []string  // what the graph parser sees (the passage text)
	Scores   []float64 // first-stage scores; nil in pool mode (computed per first stage)
	Gold     []string  // gold passage identities
	Vectors  [][]float32
	QueryVec []float32
}

// PoolCandidates returns one candidate set per dataset example with gold passages: its
// own passage pool (the context it ships with, gold and distractors) — the paper's
// evaluation protocol. distractors > 0 adds that many passages drawn at random (seeded)
// from the other examples' contexts, for datasets whose context holds only the gold
// passages (MoreHopQA ships exactly its 2 supporting paragraphs per question, so its
// own pools rank perfectly by construction); HotpotQA's distractor setting has 8.
func PoolCandidates(ds *eval.Dataset, distractors int, seed uint64) []*Candidates {
	var out []*Candidates
	type passage struct{ key, text string }
	var all []passage
	for i := range ds.Examples {
		for _, p := range ds.Examples[i].Context {
			all = append(all, passage{eval.GoldPassage{Title: p.Title, Text: p.Text}.Key(), p.Text})
		}
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	for i := range ds.Examples {
		ex := &ds.Examples[i]
		if len(ex.Gold) == 0 || len(ex.Context) == 0 {
			continue
		}
		c := &Candidates{Question: ex.Question}
		seen := map[string]bool{}
		for _, p := range ex.Context {
			key := eval.GoldPassage{Title: p.Title, Text: p.Text}.Key()
			if seen[key] {
				continue
			}
			seen[key] = true
			c.Keys = append(c.Keys, key)
			c.Texts = append(c.Texts, key)
			c.Bodies = append(c.Bodies, p.Text)
		}
		for _, g := range ex.Gold {
			c.Gold = append(c.Gold, g.Key())
		}
		want := len(c.Keys) + distractors
		for tries := 0; len(c.Keys) < want && tries < 100*distractors; tries++ {
			p := all[rng.IntN(len(all))]
			if seen[p.key] {
				continue
			}
			seen[p.key] = true // a passage drawn twice would fill two slots
			c.Keys = append(c.Keys, p.key)
			c.Texts = append(c.Texts, p.key)
			c.Bodies = append(c.Bodies, p.text)
		}
		// Shuffle so that no ranking inherits the gold-first order of the context.
		rng.Shuffle(len(c.Keys), func(a, b int) {
			c.Keys[a], c.Keys[b] = c.Keys[b], c.Keys[a]
			c.Texts[a], c.Texts[b] = c.Texts[b], c.Texts[a]
			c.Bodies[a], c.Bodies[b] = c.Bodies[b], c.Bodies[a]
		})
		out = append(out, c)
	}
	return out
}

// Embed fills the query and passage vectors of every candidate set: the question as a
// query (embed.Queries: an asymmetric embedder's query prompt), the passages as
// passages.
func Embed(ctx context.Context, emb embed.Embedder, cs []*Candidates) error {
	qs := make([]string, len(cs))
	for i, c := range cs {
		qs[i] = c.Question
	}
	qv, err := embed.Queries(ctx, emb, qs) // every question in one call
	if err != nil {
		return fmt.Errorf("rerank: embed the questions: %w", err)
	}
	for i, c := range cs {
		vs, err := emb.Embed(ctx, c.Texts)
		if err != nil {
			return fmt.Errorf("rerank: embed candidate set %d: %w", i, err)
		}
		c.QueryVec, c.Vectors = qv[i], vs
	}
	return nil
}

// firstStage returns the first-stage scores of a pool: "dense" cosine or "bm25".
func firstStage(c *Candidates, name string, rcfg retrieve.Config) ([]float64, error) {
	switch name {
	case "dense":
		return c.cosines(), nil
	case "bm25":
		return retrieve.BM25Scores(c.Texts, c.Question, rcfg), nil
	}
	return nil, fmt.Errorf("rerank: pool first stage %q: want dense or bm25", name)
}

func (c *Candidates) cosines() []float64 {
	out := make([]float64, len(c.Vectors))
	for i, v := range c.Vectors {
		out[i] = cosine(c.QueryVec, v)
	}
	return out
}

// rank orders candidate set c for a variant given first-stage scores.
func (v Variant) rank(c *Candidates, first []float64) ([]int, error) {
	switch {
	case v.Dense:
		return Order(c.cosines()), nil
	case v.Reranker == nil:
		return Order(first), nil
	}
	// The paper fuses coherence with the query–passage cosine whatever produced the
	// candidates; the first stage only chooses (and, unreranked, orders) them.
	s, err := v.Reranker.Scores(c.Bodies, c.cosines())
	if err != nil {
		return nil, err
	}
	return Order(s), nil
}

// EvaluateSets scores every variant on every candidate set for each first stage
// ("dense", "bm25" in pool mode, where Candidates.Scores is nil; in retriever mode the
// first stage is the retriever that produced Scores, named by firstStages[0]). The
// first stage orders the "none" variant; rerankers score by cosine and coherence.
func EvaluateSets(ctx context.Context, cs []*Candidates, firstStages []string, variants []Variant, ks []int, rcfg retrieve.Config) ([]Row, error) {
	if len(cs) == 0 {
		return nil, errors.New("rerank: no candidate sets with gold passages")
	}
	var rows []Row
	for _, fs := range firstStages {
		firsts := make([][]float64, len(cs))
		for i, c := range cs {
			if c.Scores != nil {
				firsts[i] = c.Scores
				continue
			}
			f, err := firstStage(c, fs, rcfg)
			if err != nil {
				return nil, err
			}
			firsts[i] = f
		}
		for _, v := range variants {
			row := Row{First: fs, Rerank: v.Name, Recall: map[int]float64{}}
			var spent time.Duration
			for i, c := range cs {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				t0 := time.Now()
				order, err := v.rank(c, firsts[i])
				spent += time.Since(t0)
				if err != nil {
					return nil, fmt.Errorf("rerank: %s/%s: question %d: %w", fs, v.Name, i, err)
				}
				keys := make([]string, len(order))
				for j, o := range order {
					keys[j] = c.Keys[o]
				}
				for _, k := range ks {
					row.Recall[k] += eval.RecallAtK(keys, c.Gold, k)
				}
				row.Questions++
			}
			for _, k := range ks {
				row.Recall[k] /= float64(row.Questions)
			}
			row.MsPerQuery = float64(spent.Microseconds()) / 1000 / float64(row.Questions)
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// WriteTable prints rows as a Markdown table with Recall@k in percent.
func WriteTable(w io.Writer, rows []Row, ks []int) error {
	var b strings.Builder
	b.WriteString("| first stage | rerank |")
	for _, k := range ks {
		fmt.Fprintf(&b, " R@%d |", k)
	}
	b.WriteString(" questions | ms/query |\n|---|---|")
	for range ks {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s |", r.First, r.Rerank)
		for _, k := range ks {
			fmt.Fprintf(&b, " %.1f |", 100*r.Recall[k])
		}
		fmt.Fprintf(&b, " %d | %.1f |\n", r.Questions, math.Round(r.MsPerQuery*10)/10)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
