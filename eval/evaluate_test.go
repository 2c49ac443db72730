package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/llm/llmtest"
	"github.com/graphloom/graphloom/retrieve"
)

var tinyCorpus = []ingest.Passage{
	{Title: "Tomas Brell", Text: "Tomas Brell was born in Aldwick in 1749. Tomas Brell became harbourmaster of Port Keswyn in 1785."},
	{Title: "Port Keswyn", Text: "Port Keswyn is a harbour town on the Brackwater Coast. Quay Street runs along the inner harbour wall."},
	{Title: "Odile Varrant", Text: "Odile Varrant founded the Lamplighters' Guild in 1790. Odile Varrant was known as the Grey Widow."},
	{Title: "Tallow Point", Text: "Tallow Point Lighthouse stands north of the town. Dunstan Marl tended the lamp of Tallow Point Lighthouse."},
}

// tinyDataset is HippoRAG-format: one gold passage per question, plus a distractor.
const tinyDataset = `[
{"id": "q1", "question": "Where was Tomas Brell born?", "answer": ["Aldwick"],
 "paragraphs": [{"title": "Tomas Brell", "text": "Tomas Brell was born in Aldwick in 1749. Tomas Brell became harbourmaster of Port Keswyn in 1785.", "is_supporting": true},
                {"title": "Port Keswyn", "text": "Port Keswyn is a harbour town on the Brackwater Coast. Quay Street runs along the inner harbour wall.", "is_supporting": false}]},
{"id": "q2", "question": "Who founded the Lamplighters' Guild?", "answer": "Odile Varrant", "answer_aliases": ["the Grey Widow"],
 "paragraphs": [{"title": "Odile Varrant", "text": "Odile Varrant founded the Lamplighters' Guild in 1790. Odile Varrant was known as the Grey Widow.", "is_supporting": true}]},
{"id": "q3", "question": "Who tended the lamp of Tallow Point Lighthouse?", "answer": "Dunstan Marl",
 "paragraphs": [{"title": "Tallow Point", "text": "Tallow Point Lighthouse stands north of the town. Dunstan Marl tended the lamp of Tallow Point Lighthouse.", "is_supporting": true}]}
]`

// tinyIndex builds an index of tinyCorpus offline, without hyperedges.
func tinyIndex(t *testing.T) (*graphio.Index, *retrieve.Searcher) {
	t.Helper()
	ctx := context.Background()
	ix := &graphio.Index{}
	require.NoError(t, ingest.AddPassages(ctx, ix, tinyCorpus, ingest.DefaultConfig(), nil, &ingest.Report{}))
	kcfg := kg.DefaultConfig()
	kcfg.Hyperedges = false
	_, err := kg.Build(ctx, ix, extract.NewRule(extract.DefaultRuleConfig()), nil, kcfg, nil)
	require.NoError(t, err)
	s, err := retrieve.Open(ix, nil, retrieve.DefaultConfig(), nil)
	require.NoError(t, err)
	return ix, s
}

// rankBy is a test retriever ranking the index's chunks: gold (by the dataset) first,
// or last when reverse is set.
type rankBy struct {
	name    string
	ix      *graphio.Index
	gold    map[string]string // question → gold title
	reverse bool
}

func (r rankBy) Name() string { return r.name }

func (r rankBy) Retrieve(_ context.Context, q string, k int) (retrieve.Result, error) {
	var first, rest []retrieve.Passage
	for i, c := range r.ix.Chunks {
		p := retrieve.Passage{Chunk: int32(i), ChunkID: c.ID, Title: c.Title, Text: c.Text}
		if (c.Title == r.gold[q]) != r.reverse {
			first = append(first, p)
		} else {
			rest = append(rest, p)
		}
	}
	all := append(first, rest...)
	return retrieve.Result{Passages: all[:min(k, len(all))]}, nil
}

// source serves the test retrievers and, for other names, the searcher's.
type source struct {
	s     *retrieve.Searcher
	extra map[string]retrieve.Retriever
}

func (s source) Retriever(name string) (retrieve.Retriever, error) {
	if r, ok := s.extra[name]; ok {
		return r, nil
	}
	if name == "broken" {
		return nil, errors.New("broken: not available")
	}
	return s.s.Retriever(name)
}

func tinySource(t *testing.T) (*graphio.Index, source, *Dataset) {
	ix, s := tinyIndex(t)
	ds := parse(t, tinyDataset)
	gold := map[string]string{}
	for _, ex := range ds.Examples {
		gold[ex.Question] = ex.Gold[0].Title
	}
	return ix, source{s: s, extra: map[string]retrieve.Retriever{
		"oracle":  rankBy{name: "oracle", ix: ix, gold: gold},
		"reverse": rankBy{name: "reverse", ix: ix, gold: gold, reverse: true},
	}}, ds
}

func summary(t *testing.T, r *Report, name string) *Summary {
	t.Helper()
	for i := range r.Retrievers {
		if r.Retrievers[i].Retriever == name {
			return &r.Retrievers[i]
		}
	}
	t.Fatalf("no summary for %s", name)
	return nil
}

func TestEvaluateEndToEnd(t *testing.T) {
	ix, src, ds := tinySource(t)
	cfg := DefaultConfig()
	cfg.Retrievers = []string{"oracle", "reverse", "bm25", "dense", "ppr", "hyperppr", "broken"}
	var stages []string
	rep, err := Evaluate(context.Background(), ix, src, nil, ds, cfg, func(stage string) func(int, int) {
		stages = append(stages, stage)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, rep.Retrievers, 7)
	assert.Equal(t, []string{"retrieve oracle", "retrieve reverse", "retrieve bm25", "retrieve dense", "retrieve ppr"}, stages)

	oracle := summary(t, rep, "oracle")
	assert.Equal(t, 3, oracle.Questions)
	assert.Equal(t, 3, oracle.WithEvidence)
	for _, k := range cfg.Ks {
		assert.InDelta(t, 1, oracle.Recall[k], 1e-12, "oracle R@%d", k)
	}
	assert.InDelta(t, 1, oracle.AnswerHit[1], 1e-12, "the gold passage holds the answer")
	for _, er := range oracle.Examples {
		assert.Equal(t, []int{1}, er.Hits.Ranks, er.ID)
		assert.Equal(t, []MatchLevel{MatchExact}, er.Hits.Levels, er.ID)
	}

	// Gold last among 4 chunks: rank 4, so R@1 = R@2 = 0 and R@5 = 1.
	reverse := summary(t, rep, "reverse")
	assert.InDelta(t, 0, reverse.Recall[1], 1e-12)
	assert.InDelta(t, 0, reverse.Recall[2], 1e-12)
	assert.InDelta(t, 1, reverse.Recall[5], 1e-12)

	bm25 := summary(t, rep, "bm25")
	assert.Empty(t, bm25.Skipped)
	assert.InDelta(t, 1, bm25.Recall[20], 1e-12, "4 chunks: everything is in the top 20")
	assert.GreaterOrEqual(t, bm25.Recall[1], 2.0/3, "these questions name their passage's words")
	assert.Positive(t, bm25.Seconds)

	assert.Contains(t, summary(t, rep, "hyperppr").Skipped, "hyperedges")
	assert.Equal(t, "broken: not available", summary(t, rep, "broken").Skipped)
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "hyperppr skipped")
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "need generated answers")
	require.NotNil(t, rep.Index)
	assert.Equal(t, 4, rep.Index.Chunks)
	assert.Equal(t, 20, rep.Settings.Depth)

	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	lines := strings.Split(strings.TrimRight(table.String(), "\n"), "\n")
	require.Len(t, lines, 8)
	assert.Regexp(t, `retriever\s+R@1\s+R@2\s+R@5\s+R@10\s+R@20\s+AnsIn@5\s+ms/q`, lines[0])
	assert.Regexp(t, `oracle\s+100\.0\s+100\.0\s+100\.0\s+100\.0\s+100\.0\s+100\.0`, lines[1])
	assert.Regexp(t, `reverse\s+0\.0\s+0\.0\s+100\.0`, lines[2])
	assert.Regexp(t, `hyperppr\s+skipped\s+skipped`, lines[6])
}

// TestEvaluateCountsLostAnswers: a question whose reader request got no answer is
// scored as answered wrongly (its EM and F1 are 0 over all three questions), not
// left out of the average, and is not sent to the judge.
func TestEvaluateCountsLostAnswers(t *testing.T) {
	ix, src, ds := tinySource(t)
	srv, reader, judge := scriptedReader(t)
	srv.On(llmtest.All(reader, llmtest.UserContains("Tallow Point Lighthouse?"))).Fault(llmtest.Status(400))
	srv.On(judge).Reply(`{"correctness": 10, "completeness": 10}`)

	cfg := DefaultConfig()
	cfg.Retrievers, cfg.Answer, cfg.Judge = []string{"oracle"}, true, true
	rep, err := Evaluate(context.Background(), ix, src, newClient(t, srv), ds, cfg, nil)
	require.NoError(t, err)
	o := summary(t, rep, "oracle")
	require.NotNil(t, o.QA)
	assert.Equal(t, 3, o.QA.N)
	assert.Equal(t, 1, o.QA.Unanswered)
	assert.InDelta(t, 2.0/3, o.QA.EM, 1e-12)
	require.NotNil(t, o.Judge)
	assert.Equal(t, 2, o.Judge.Judged, "the lost answer is not judged")
	lost, _ := rep.LostCalls()
	assert.Equal(t, 1, lost)
}

// scriptedReader is a scripted server whose reader answers two of tinySource's
// questions right; the caller scripts the third and the judge.
func scriptedReader(t *testing.T) (srv *llmtest.Server, reader, judge llmtest.Matcher) {
	srv = llmtest.NewServer(t)
	reader = llmtest.SystemContains("Wikipedia-style passages")
	judge = llmtest.SystemContains("impartial evaluator")
	srv.On(llmtest.All(reader, llmtest.UserContains("Where was Tomas Brell born?"))).Reply("Thought: the passage says so.\nAnswer: Aldwick")
	srv.On(llmtest.All(reader, llmtest.UserContains("Lamplighters' Guild?"))).Reply("Thought: alias.\nAnswer: The Grey Widow")
	return srv, reader, judge
}

func TestEvaluateAnswersAndJudge(t *testing.T) {
	ix, src, ds := tinySource(t)
	srv, reader, judge := scriptedReader(t)
	srv.On(llmtest.All(reader, llmtest.UserContains("Tallow Point Lighthouse?"))).Reply("Thought: guess.\nAnswer: Tomas Brell")
	srv.On(llmtest.All(judge, llmtest.UserContains("---Generated Answer---\nAldwick"))).Reply(`{"correctness": 10, "completeness": 10}`)
	srv.On(llmtest.All(judge, llmtest.UserContains("---Generated Answer---\nThe Grey Widow"))).Reply(`{"correctness": 9, "completeness": 8}`)
	srv.On(llmtest.All(judge, llmtest.UserContains("---Generated Answer---\nTomas Brell"))).Reply("No idea.")

	cfg := DefaultConfig()
	cfg.Retrievers, cfg.Answer, cfg.Judge = []string{"oracle"}, true, true
	rep, err := Evaluate(context.Background(), ix, src, newClient(t, srv), ds, cfg, nil)
	require.NoError(t, err)
	assert.Empty(t, srv.Unmatched(), "every request was scripted")
	o := summary(t, rep, "oracle")
	require.NotNil(t, o.QA)
	assert.Equal(t, 3, o.QA.N)
	assert.InDelta(t, 2.0/3, o.QA.EM, 1e-12)
	assert.InDelta(t, 2.0/3, o.QA.F1, 1e-12)
	require.NotNil(t, o.Judge)
	assert.Equal(t, JudgeStats{Judged: 2, Unparseable: 1, Correctness: 9.5, Completeness: 9}, *o.Judge)
	assert.Equal(t, "Aldwick", *o.Examples[0].Answer)
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "judge replies unparseable 1")

	// The reader saw the top 5 passages (all 4), the gold one first.
	for _, r := range srv.Requests() {
		if strings.Contains(r.Messages[0].Content, "Wikipedia-style") && strings.Contains(r.LastUser(), "Where was Tomas Brell born?") {
			assert.True(t, strings.HasPrefix(r.LastUser(), "Wikipedia Title: Tomas Brell\n"))
			assert.Equal(t, 4, strings.Count(r.LastUser(), "Wikipedia Title:"))
		}
	}

	_, err = Evaluate(context.Background(), ix, src, nil, ds, cfg, nil)
	assert.ErrorContains(t, err, "need an LLM")
}

func TestScoreRun(t *testing.T) {
	ds := parse(t, `[
{"id": "y1", "question": "Is the lamp lit?", "final_decision": "yes"},
{"id": "y2", "question": "Is the brig safe?", "final_decision": "no"},
{"id": "c1", "question": "Where?", "options": ["Aldwick", "Fennmouth", "Port Keswyn"], "answer_idx": "B",
 "context": "Hesper Quill lived in Fennmouth."},
{"id": "o1", "question": "Who?", "answer": "Odile Varrant",
 "paragraphs": [{"title": "Odile Varrant", "text": "Odile Varrant founded the guild.", "is_supporting": true}]}
]`)
	ans := func(s string) *string { return &s }
	lines := []retrieve.RunLine{
		{ID: "y1", Retriever: "bm25", Answer: ans("Yes, it is.")},
		{ID: "renamed", Question: "Is the brig safe?", Retriever: "bm25", Answer: ans("maybe")}, // matched by question
		{ID: "c1", Retriever: "bm25", Answer: ans("Answer: B"),
			Passages: []retrieve.Passage{psg("Fennmouth", "In 1790 Hesper Quill lived in Fennmouth.")}},
		{ID: "zz", Question: "Unknown?", Retriever: "bm25"},
		{ID: "o1", Retriever: "dense", Answer: ans("Odile"), Passages: []retrieve.Passage{psg("X", "y"), psg("Odile Varrant", "Odile Varrant founded the guild.")}},
	}
	rep, err := ScoreRun(context.Background(), nil, lines, ds, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	require.Len(t, rep.Retrievers, 2)
	b := summary(t, rep, "bm25")
	assert.Equal(t, 3, b.Questions)
	assert.Equal(t, 1, b.Missing)
	assert.Equal(t, 1, b.Unmatched)
	require.NotNil(t, b.YesNo)
	assert.Equal(t, 2, b.YesNo.N)
	assert.InDelta(t, 0.5, b.YesNo.Accuracy, 1e-12)
	require.NotNil(t, b.Choice)
	assert.InDelta(t, 1, b.Choice.Accuracy, 1e-12)
	// Two yes/no examples carry their abstract as spans; the run has no passages for them.
	assert.Equal(t, 1, b.WithEvidence, "only c1 has evidence (its context span)")
	assert.InDelta(t, 1, b.Recall[1], 1e-12)

	d := summary(t, rep, "dense")
	assert.InDelta(t, 0, d.Recall[1], 1e-12)
	assert.InDelta(t, 1, d.Recall[2], 1e-12)
	require.NotNil(t, d.QA)
	// "Odile" vs "Odile Varrant": P 1, R 1/2, F1 2/3.
	assert.InDelta(t, 2.0/3, d.QA.F1, 1e-12)
	assert.Equal(t, 3, d.Missing)
	assert.Zero(t, rep.Settings.Depth, "a scored run has no retrieval depth of ours")
}

func TestReadRun(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"id": "q1", "question": "Q?", "retriever": "bm25", "passages": [{"title": "T", "text": "x"}], "facts": []}
not json
{"retriever": "bm25"}

{"id": "q2", "question": "Q2?", "retriever": "bm25", "passages": [], "facts": [], "answer": "a"}
`), 0o644))
	lines, skipped, err := ReadRun(path)
	require.NoError(t, err)
	require.Len(t, lines, 2)
	assert.Equal(t, "T", lines[0].Passages[0].Title)
	assert.Equal(t, "a", *lines[1].Answer)
	require.Len(t, skipped, 2)
	assert.Equal(t, 2, skipped[0].Line)
	assert.Equal(t, Skipped{Line: 3, Reason: "run line has neither id nor question"}, skipped[1])
}

func TestReportFiles(t *testing.T) {
	ix, src, ds := tinySource(t)
	cfg := DefaultConfig()
	cfg.Retrievers = []string{"oracle", "bm25", "hyperppr"}
	rep, err := Evaluate(context.Background(), ix, src, nil, ds, cfg, nil)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "report")
	files, err := rep.WriteFiles(dir)
	require.NoError(t, err)
	for _, name := range []string{"report.md", "report.json", "recall.png", "recall.svg"} {
		assert.Contains(t, files, filepath.Join(dir, name))
		assert.FileExists(t, filepath.Join(dir, name))
	}

	f, err := os.Open(filepath.Join(dir, "recall.png"))
	require.NoError(t, err)
	defer f.Close()
	img, format, err := image.Decode(f)
	require.NoError(t, err)
	assert.Equal(t, "png", format)
	assert.Greater(t, img.Bounds().Dx(), 100)

	svg, err := os.ReadFile(filepath.Join(dir, "recall.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
	assert.Contains(t, string(svg), "oracle")

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| retriever | R@1 | R@2 | R@5 | R@10 | R@20 | AnsIn@5 | ms/q |")
	assert.Contains(t, string(md), "| oracle | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 |")
	assert.Contains(t, string(md), "| hyperppr | skipped |")
	assert.Contains(t, string(md), "![recall](recall.png)")
	assert.Contains(t, string(md), "- index: 4 documents, 4 chunks")

	var back Report
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &back))
	assert.InDelta(t, 1, summary(t, &back, "oracle").Recall[5], 1e-12)
	assert.Equal(t, FormatHippoRAG, back.Dataset.Format)
}

func TestReportWithoutGold(t *testing.T) {
	// LiteraryQA-style: answers only. Recall is n/a; the chart shows answer-in-passages.
	ds := parse(t, `[{"id": "l1", "question": "Who tended the lamp?", "answer": "Dunstan Marl", "paragraphs": []},
{"id": "l2", "question": "Where was Brell born?", "answer": "Aldwick", "answer_aliases": ["the town of Aldwick"], "paragraphs": []}]`)
	lines := []retrieve.RunLine{
		{ID: "l1", Retriever: "dense", Passages: []retrieve.Passage{psg("a", "nothing"), psg("b", "Dunstan Marl tended it.")}},
		{ID: "l2", Retriever: "dense", Passages: []retrieve.Passage{psg("a", "nothing")}},
	}
	rep, err := ScoreRun(context.Background(), nil, lines, ds, nil, DefaultConfig(), nil)
	require.NoError(t, err)
	d := summary(t, rep, "dense")
	assert.Nil(t, d.Recall)
	assert.InDelta(t, 0, d.AnswerHit[1], 1e-12)
	assert.InDelta(t, 0.5, d.AnswerHit[2], 1e-12)
	assert.InDelta(t, 0.5, d.AnswerHit[5], 1e-12)
	assert.Contains(t, strings.Join(rep.Notes, "\n"), "Recall@k is n/a")

	files, err := rep.WriteFiles(t.TempDir())
	require.NoError(t, err)
	assert.Len(t, files, 4, "report.md, report.json and the answer-in-passages charts")
	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	assert.Regexp(t, `retriever\s+AnsIn@5\s*\n\s*dense\s+50\.0`, table.String())
}
