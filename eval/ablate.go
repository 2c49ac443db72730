package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

// A RetrievalAblation switches one retrieval component off (or one option on).
type RetrievalAblation struct {
	Name  string
	Apply func(*retrieve.Config)
}

// RetrievalAblations are the components that make the offline graph retrievers
// compete with BM25, each switched off in turn (and hub weights, off by default,
// switched on).
func RetrievalAblations() []RetrievalAblation {
	return []RetrievalAblation{
		{"no BM25 fusion (lexical=dense)", func(c *retrieve.Config) { c.Lexical = retrieve.LexicalDense }},
		{"no final fusion (μ=0)", func(c *retrieve.Config) { c.FinalBM25Weight = 0 }},
		{"linear final fusion", func(c *retrieve.Config) { c.FinalFusion = retrieve.FusionLinear }},
		{"no query-entity seeds", func(c *retrieve.Config) { c.QueryEntities = false }},
		{"no lexical fact filter", func(c *retrieve.Config) { c.LexicalFilter = false }},
		{"no stemming", func(c *retrieve.Config) { c.Stem = false }},
		{"+ hub weights", func(c *retrieve.Config) { c.HubWeights = true }},
	}
}

// An IndexAblation switches one graph-build component off.
type IndexAblation struct {
	Name  string
	Apply func(*kg.Config, *bool) // the graph config, and whether the title gazetteer is on
}

// IndexAblations are the graph-build components of the offline default.
func IndexAblations() []IndexAblation {
	return []IndexAblation{
		{"index: no title gazetteer", func(_ *kg.Config, titles *bool) { *titles = false }},
		{"index: no generic filter", func(c *kg.Config, _ *bool) { c.MaxEntityShare = 0 }},
		{"index: keep mention-only", func(c *kg.Config, _ *bool) { c.MentionOnly = true }},
		{"index: no entity rules", func(c *kg.Config, _ *bool) { c.EntityRules = false }},
		{"index: no stem synonyms", func(c *kg.Config, _ *bool) { c.StemSynonyms = false }},
	}
}

// AblationRow is one retriever under one setting.
type AblationRow struct {
	Setting   string          `json:"setting"`
	Retriever string          `json:"retriever"`
	Recall    map[int]float64 `json:"recall_at,omitempty"`
	AnswerHit map[int]float64 `json:"answer_in_passages_at,omitempty"`
	MsPerQ    float64         `json:"ms_per_query"`
}

// AblationReport is the ablation table of one dataset.
type AblationReport struct {
	Kind    string        `json:"kind"` // "Ablations" or "Sweep"
	Dataset string        `json:"dataset"`
	TopK    int           `json:"top_k"`
	Rows    []AblationRow `json:"rows"`
	Note    string        `json:"note,omitempty"`
}

// uncalibrated returns base with the index's calibration left out, for ablations and
// sweeps: they vary the uncalibrated retrieval settings, which a calibration's fusion
// weight or ranker replaces — applied, every ppr and hyperppr row would rank as the
// default one. It refuses a forced calibration variant and returns the note the
// report shows when the index has a calibration.
func uncalibrated(ix *graphio.Index, base retrieve.Config) (retrieve.Config, string, error) {
	switch base.Calibration {
	case "", retrieve.CalibrationAuto, retrieve.CalibrationOff:
	default:
		return base, "", fmt.Errorf("eval: ablations and sweeps vary the uncalibrated settings; --calibration %s would replace them (leave it auto or off)", base.Calibration)
	}
	note := ""
	if _, ok := ix.Blobs[retrieve.CalibrationBlob]; ok && base.Calibration != retrieve.CalibrationOff {
		note = "The index's calibration is not applied here: each row varies the uncalibrated settings it would replace (`make eval`'s learned-fusion section ablates the calibration itself)."
	}
	base.Calibration = retrieve.CalibrationOff
	return base, note, nil
}

// Opener opens retrieval over an index with a retrieval config.
type Opener func(ix *graphio.Index, cfg retrieve.Config) (Retrievers, error)

// Rebuilder rebuilds the index with a graph config and the title gazetteer on or off.
type Rebuilder func(ctx context.Context, kcfg kg.Config, titles bool) (*graphio.Index, error)

// Ablate evaluates cfg.Retrievers on ix with base, then each graph retriever (every
// retriever but bm25 and dense, which no ablation touches) under each retrieval
// ablation and, when rebuild is not nil, on an index rebuilt under each index
// ablation. Rows hold Recall@k (or answer-in-top-k for datasets without gold
// passages) and ms per question.
func Ablate(ctx context.Context, ix *graphio.Index, open Opener, rebuild Rebuilder, ds *Dataset, base retrieve.Config, kbase kg.Config, cfg Config) (*AblationReport, error) {
	cfg = cfg.withDefaults()
	base, note, err := uncalibrated(ix, base)
	if err != nil {
		return nil, err
	}
	rep := &AblationReport{Kind: "Ablations", Dataset: ds.Path, TopK: cfg.TopK, Note: note}
	graphOnly := cfg
	graphOnly.Retrievers = nil
	for _, r := range cfg.Retrievers {
		if r != "bm25" && r != "dense" {
			graphOnly.Retrievers = append(graphOnly.Retrievers, r)
		}
	}
	run := func(setting string, ix *graphio.Index, rc retrieve.Config, c Config) error {
		src, err := open(ix, rc)
		if err != nil {
			return err
		}
		r, err := Evaluate(ctx, ix, src, nil, ds, c, nil)
		if err != nil {
			return fmt.Errorf("eval: ablation %q: %w", setting, err)
		}
		for _, s := range r.Retrievers {
			if s.Skipped != "" {
				continue
			}
			rep.Rows = append(rep.Rows, AblationRow{Setting: setting, Retriever: s.Retriever, Recall: s.Recall, AnswerHit: s.AnswerHit, MsPerQ: s.MsPerQuery()})
		}
		return nil
	}
	if err := run("default", ix, base, cfg); err != nil {
		return nil, err
	}
	if len(graphOnly.Retrievers) == 0 {
		return rep, nil
	}
	for _, a := range RetrievalAblations() {
		rc := base
		a.Apply(&rc)
		if err := run(a.Name, ix, rc, graphOnly); err != nil {
			return nil, err
		}
	}
	if rebuild == nil {
		return rep, nil
	}
	for _, a := range IndexAblations() {
		kc, titles := kbase, true
		a.Apply(&kc, &titles)
		aix, err := rebuild(ctx, kc, titles)
		if err != nil {
			return nil, fmt.Errorf("eval: ablation %q: %w", a.Name, err)
		}
		if err := run(a.Name, aix, base, graphOnly); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// metric returns the row's Recall@k, or its answer-in-top-k when it has no recall.
func (r *AblationRow) metric(k int) (float64, bool) {
	if r.Recall != nil {
		v, ok := r.Recall[k]
		return v, ok
	}
	v, ok := r.AnswerHit[k]
	return v, ok
}

// Markdown renders the ablation table.
func (a *AblationReport) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s — %s\n\n", a.Kind, a.Dataset)
	byRecall := len(a.Rows) > 0 && a.Rows[0].Recall != nil
	if byRecall {
		b.WriteString("| setting | retriever | R@2 | R@5 | R@10 | ms/q |\n|---|---|--:|--:|--:|--:|\n")
	} else {
		fmt.Fprintf(&b, "(no gold passages: the share of questions with a gold answer in the top k)\n\n| setting | retriever | Ans@2 | Ans@5 | Ans@10 | ms/q |\n|---|---|--:|--:|--:|--:|\n")
	}
	for i := range a.Rows {
		r := &a.Rows[i]
		fmt.Fprintf(&b, "| %s | %s |", r.Setting, r.Retriever)
		for _, k := range []int{2, 5, 10} {
			if v, ok := r.metric(k); ok {
				fmt.Fprintf(&b, " %.1f |", 100*v)
			} else {
				b.WriteString(" – |")
			}
		}
		fmt.Fprintf(&b, " %.2f |\n", r.MsPerQ)
	}
	if a.Note != "" {
		fmt.Fprintf(&b, "\n%s\n", a.Note)
	}
	return b.String()
}

// Chart draws R@5 (or answer-in-top-5) per setting as grouped bars, one colour per
// retriever, with BM25's default as a horizontal reference line.
func (a *AblationReport) Chart() (*plot.Plot, error) {
	var settings, retrievers []string
	val := map[[2]string]float64{}
	bm25 := -1.0
	for i := range a.Rows {
		r := &a.Rows[i]
		v, ok := r.metric(5)
		if !ok {
			continue
		}
		if r.Retriever == "bm25" {
			bm25 = 100 * v
			continue
		}
		if !contains(settings, r.Setting) {
			settings = append(settings, r.Setting)
		}
		if !contains(retrievers, r.Retriever) {
			retrievers = append(retrievers, r.Retriever)
		}
		val[[2]string{r.Setting, r.Retriever}] = 100 * v
	}
	if len(settings) == 0 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = a.Kind + " — " + filepath.Join(filepath.Base(filepath.Dir(a.Dataset)), filepath.Base(a.Dataset))
	// Room above 100 for the legend, so it never covers a bar.
	p.Y.Min, p.Y.Max = 0, 118
	var yt plot.ConstantTicks
	for y := 0; y <= 100; y += 20 {
		yt = append(yt, plot.Tick{Value: float64(y), Label: fmt.Sprint(y)})
	}
	p.Y.Tick.Marker = yt
	p.Y.Label.Text = "Recall@5 (%)"
	if len(a.Rows) > 0 && a.Rows[0].Recall == nil {
		p.Y.Label.Text = "gold answer in top 5 (%)"
	}
	p.Add(plotter.NewGrid())
	w := vg.Points(8)
	for j, name := range retrievers {
		vs := make(plotter.Values, len(settings))
		for i, s := range settings {
			vs[i] = val[[2]string{s, name}]
		}
		bars, err := plotter.NewBarChart(vs, w)
		if err != nil {
			return nil, fmt.Errorf("eval: ablation chart: %w", err)
		}
		bars.Color = plotutil.Color(j)
		bars.LineStyle.Width = 0
		bars.Offset = vg.Length(float64(j)-float64(len(retrievers)-1)/2) * w
		p.Add(bars)
		p.Legend.Add(name, bars)
	}
	if bm25 >= 0 {
		line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: bm25}, {X: float64(len(settings)) - 0.5, Y: bm25}})
		if err != nil {
			return nil, fmt.Errorf("eval: ablation chart: %w", err)
		}
		line.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(line)
		p.Legend.Add("bm25", line)
	}
	p.NominalX(settings...)
	p.X.Tick.Label.Rotation = 0.6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -1, -0.5
	p.Legend.Top = true
	p.Legend.Left = false
	return p, nil
}

// WriteFiles writes ablation.md, ablation.json and ablation.png into dir.
func (a *AblationReport) WriteFiles(dir string) ([]string, error) {
	return a.WriteFilesAs(dir, "ablation")
}

// WriteFilesAs writes NAME.md, NAME.json and NAME.png into dir.
func (a *AblationReport) WriteFilesAs(dir, name string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	md := filepath.Join(dir, name+".md")
	if err := graphio.AtomicWrite(md, func(w io.Writer) error { _, err := io.WriteString(w, a.Markdown()); return err }); err != nil {
		return nil, err
	}
	js := filepath.Join(dir, name+".json")
	if err := graphio.AtomicWrite(js, func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", " ")
		return e.Encode(a)
	}); err != nil {
		return nil, err
	}
	out := []string{md, js}
	p, err := a.Chart()
	if err != nil || p == nil {
		return out, err
	}
	wt, err := p.WriterTo(chartW*1.3, chartH*1.3, "png")
	if err != nil {
		return nil, fmt.Errorf("eval: ablation chart: %w", err)
	}
	png := filepath.Join(dir, name+".png")
	if err := graphio.AtomicWrite(png, func(w io.Writer) error { _, err := wt.WriteTo(w); return err }); err != nil {
		return nil, err
	}
	return append(out, png), nil
}

// OfflineRebuilder rebuilds an index from a corpus file the way `graphloom index`
// does offline (kg.BuildOffline), with the title gazetteer on or off.
func OfflineRebuilder(corpus string) Rebuilder {
	return func(ctx context.Context, kcfg kg.Config, titles bool) (*graphio.Index, error) {
		rc := extract.DefaultRuleConfig()
		rc.Titles = titles
		return kg.BuildOffline(ctx, corpus, kcfg, rc)
	}
}

// A Setting is one point of a sweep: a name ("pcst-cost-e=0.1") and how it changes
// the retrieval config.
type Setting struct {
	Name  string
	Apply func(*retrieve.Config) error
}

// Sweep evaluates cfg.Retrievers on ix under each setting in turn (G-Retriever's grid
// search over node and edge budgets and cost_e, CAGE's α): one row per setting and
// retriever, in the ablation table's format.
func Sweep(ctx context.Context, ix *graphio.Index, open Opener, ds *Dataset, base retrieve.Config, settings []Setting, cfg Config) (*AblationReport, error) {
	cfg = cfg.withDefaults()
	base, note, err := uncalibrated(ix, base)
	if err != nil {
		return nil, err
	}
	rep := &AblationReport{Kind: "Sweep", Dataset: ds.Path, TopK: cfg.TopK, Note: note}
	for _, st := range settings {
		rc := base
		if err := st.Apply(&rc); err != nil {
			return nil, fmt.Errorf("eval: sweep %s: %w", st.Name, err)
		}
		src, err := open(ix, rc)
		if err != nil {
			return nil, fmt.Errorf("eval: sweep %s: %w", st.Name, err)
		}
		r, err := Evaluate(ctx, ix, src, nil, ds, cfg, nil)
		if err != nil {
			return nil, fmt.Errorf("eval: sweep %s: %w", st.Name, err)
		}
		for _, s := range r.Retrievers {
			if s.Skipped == "" {
				rep.Rows = append(rep.Rows, AblationRow{Setting: st.Name, Retriever: s.Retriever, Recall: s.Recall, AnswerHit: s.AnswerHit, MsPerQ: s.MsPerQuery()})
			}
		}
	}
	return rep, nil
}
