// Package gretrieve is G-Retriever's data path and retriever (seed 004; anchors §C):
// a question's PCST subgraph over the index (retrieve.Searcher.PCST) becomes a
// gretriever.Example — node features the index's entity embeddings, edge features
// the relation text embedded by the index's embedder, the subgraph textualised as
// G-Retriever's node and edge CSV — and a trained models/gretriever model answers
// from it as the "gretriever" retriever.
//
// Seed 004 embeds with jina-embeddings-v3 and its task adapters; an index built with
// --embedder local:<that folder> does the same (models/encoder): questions through
// the retrieval.query adapters and instruction, entity and relation texts, as
// passages, through retrieval.passage.
package gretrieve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
	"github.com/graphloom/graphloom/models/gretriever"
	"github.com/graphloom/graphloom/retrieve"
)

// Name is the retriever's name.
const Name = "gretriever"

// Builder turns questions into G-Retriever examples over one index. It is safe for
// concurrent use.
//
// Features follow G-Retriever's graph construction exactly: a node's feature is the
// embedding of its text (the index's entity embeddings are those of the entity
// names), an edge's is the embedding of its relation text alone (G-Retriever's
// edge_attr), made by the embedder that made the index (so node and edge vectors
// share one space) and cached per relation by the searcher. The PCST edge prizes
// come from the same relation vectors (retrieve.Searcher.PCSTByRelation), as in
// G-Retriever's retrieval_via_pcst. The text is written in the form the
// Builder was made with (retrieve.PCSTTextCSV, G-Retriever's, or
// retrieve.PCSTTextVerbal, SelfGraphRAG's), whatever the searcher's PCSTText.
type Builder struct {
	s    *retrieve.Searcher
	dim  int
	form string
}

// NewBuilder prepares examples over the searcher's index, which needs facts and entity
// and fact embeddings (PCST's requirements), with the subgraph text in form
// (gretriever.Config.TextForm; "" is CSV).
func NewBuilder(s *retrieve.Searcher, form string) (*Builder, error) {
	if err := retrieve.CheckPCSTText(form); err != nil {
		return nil, fmt.Errorf("gretrieve: text form %q: %w", form, err)
	}
	if form == "" {
		form = retrieve.PCSTTextCSV
	}
	ix := s.Index()
	ent := ix.Embeddings[graphio.KindEntity]
	if len(ix.Facts) == 0 || ent.Rows() != len(ix.Entities) || ix.Embeddings[graphio.KindFact] == nil {
		return nil, errors.New("gretrieve: G-Retriever needs an index with facts and entity and fact embeddings; rebuild it with `graphloom index`")
	}
	if d := s.Embedder().Dim(); d != ent.Dim {
		return nil, fmt.Errorf("gretrieve: the embedder makes %d-d vectors, the index's entities have %d", d, ent.Dim)
	}
	return &Builder{s: s, dim: ent.Dim, form: form}, nil
}

// Dim is the node and edge feature width (gretriever.DefaultConfig's argument).
func (b *Builder) Dim() int { return b.dim }

// Example retrieves the question's PCST subgraph and returns it as an example with
// the label of answers (gretriever.Label; empty answers leave it empty), and the
// subgraph itself.
func (b *Builder) Example(ctx context.Context, question string, answers []string) (gretriever.Example, retrieve.PCSTSubgraph, error) {
	sg, err := b.s.PCSTByRelation(ctx, question)
	if err != nil {
		return gretriever.Example{}, sg, err
	}
	g, err := b.Graph(ctx, sg)
	if err != nil {
		return gretriever.Example{}, sg, err
	}
	text := sg.Text // PCST wrote it in the searcher's form
	if b.form != b.s.PCSTTextForm() {
		text = b.s.Textualise(sg.Entities, sg.Facts, b.form)
	}
	ex := gretriever.Example{Question: question, Graph: g, Text: text}
	if len(answers) > 0 {
		ex.Answer = gretriever.Label(answers)
	}
	return ex, sg, nil
}

// Graph builds the subgraph's feature graph: node i is sg.Entities[i], edge j is
// sg.Facts[j] from its subject to its object.
func (b *Builder) Graph(ctx context.Context, sg retrieve.PCSTSubgraph) (*kernels.Graph, error) {
	ix := b.s.Index()
	if len(sg.Entities) == 0 {
		return nil, errors.New("gretrieve: the PCST subgraph has no nodes")
	}
	local := make(map[int32]int32, len(sg.Entities))
	ent := ix.Embeddings[graphio.KindEntity]
	g := &kernels.Graph{NumNodes: len(sg.Entities), X: make([]float32, 0, len(sg.Entities)*b.dim)}
	for i, e := range sg.Entities {
		local[e] = int32(i)
		g.X = ent.AppendRow(g.X, int(e))
	}
	preds := make([]string, len(sg.Facts))
	for j, f := range sg.Facts {
		x := &ix.Facts[f]
		u, ok1 := local[x.Subject]
		v, ok2 := local[x.Object]
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("gretrieve: fact %d's endpoints are not in the subgraph", f)
		}
		g.Src, g.Dst = append(g.Src, u), append(g.Dst, v)
		preds[j] = x.Predicate
	}
	vecs, err := b.s.RelationVectors(ctx, preds)
	if err != nil {
		return nil, fmt.Errorf("gretrieve: %w", err)
	}
	g.EdgeAttr = make([]float32, 0, len(preds)*b.dim)
	for _, v := range vecs {
		g.EdgeAttr = append(g.EdgeAttr, v...)
	}
	return g, nil
}

// Examples builds the examples of a QA dataset (open questions with gold answers;
// others are skipped and counted), calling progress as they finish.
func (b *Builder) Examples(ctx context.Context, ds *eval.Dataset, progress func(done, total int)) ([]gretriever.Example, int, error) {
	var out []gretriever.Example
	skipped := 0
	for i, ex := range ds.Examples {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		if len(ex.Answers) == 0 {
			skipped++
			continue
		}
		q := ex.Question
		if ex.Kind != eval.KindOpen {
			q = ex.ReaderQuestion()
		}
		e, _, err := b.Example(ctx, q, ex.Answers)
		if err != nil {
			return nil, 0, fmt.Errorf("gretrieve: example %s: %w", ex.ID, err)
		}
		out = append(out, e)
		if progress != nil {
			progress(i+1, len(ds.Examples))
		}
	}
	if len(out) == 0 {
		return nil, skipped, errors.New("gretrieve: the dataset has no questions with gold answers")
	}
	return out, skipped, nil
}

// Retriever is the "gretriever" retriever: PCST's passages, facts and subgraph text,
// and the answer the model generates from the subgraph. Questions are answered in
// batches (RetrieveBatch); calls are serialised, as the model runs on one engine.
type Retriever struct {
	// Answer generates answers (Result.Answer); off, the retriever returns PCST's
	// result alone. NewRetriever turns it on.
	Answer bool
	// NoGraphToken answers with the frozen LM alone, from the same prompts without the
	// graph token: the baseline the graph token must beat (seed 004's "PCST as plain
	// text", SelfGraphRAG's LM given the verbalised triples).
	NoGraphToken bool

	b   *Builder
	m   *gretriever.Model
	eng *engine.Engine
	mu  sync.Mutex
}

// NewRetriever returns the retriever of model m (built for b's feature width) run on eng.
func NewRetriever(b *Builder, m *gretriever.Model, eng *engine.Engine) (*Retriever, error) {
	if d := m.Config().GT.InputDim; d != b.dim {
		return nil, fmt.Errorf("gretrieve: the model was trained on %d-d features; this index's are %d-d", d, b.dim)
	}
	return &Retriever{Answer: true, b: b, m: m, eng: eng}, nil
}

// Name implements retrieve.Retriever.
func (r *Retriever) Name() string { return Name }

// Retrieve implements retrieve.Retriever.
func (r *Retriever) Retrieve(ctx context.Context, q string, k int) (retrieve.Result, error) {
	res, err := r.RetrieveBatch(ctx, []string{q}, k)
	if err != nil {
		return retrieve.Result{}, err
	}
	return res[0], nil
}

// AnswersItself implements retrieve.Answerer: answering, the retriever is given each
// question as Examples trained it (choice options and the answer format included).
func (r *Retriever) AnswersItself() bool { return r.Answer }

// RetrieveBatch implements retrieve.BatchRetriever: every question's PCST result with
// Answer set to the model's generated answer.
func (r *Retriever) RetrieveBatch(ctx context.Context, qs []string, k int) ([]retrieve.Result, error) {
	exs := make([]gretriever.Example, len(qs))
	out := make([]retrieve.Result, len(qs))
	for i, q := range qs {
		ex, sg, err := r.b.Example(ctx, q, nil)
		if err != nil {
			return nil, err
		}
		exs[i], out[i] = ex, r.b.s.PCSTResult(sg, k)
		out[i].Subgraph = ex.Text // the text the model reads, in its trained form
	}
	if !r.Answer {
		return out, nil
	}
	r.mu.Lock()
	answer := r.m.Answer
	if r.NoGraphToken {
		answer = r.m.AnswerWithoutGraphToken
	}
	answers, err := answer(r.eng, exs)
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].Answer, out[i].Answers = &answers[i], ListedAnswers(answers[i])
	}
	return out, nil
}

// ListedAnswers splits a generated answer into the answers it lists: G-Retriever's
// labels join a question's gold answers with "|" (gretriever.Label), so the model
// answers so too.
func ListedAnswers(answer string) []string {
	var out []string
	for _, a := range strings.Split(answer, "|") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
