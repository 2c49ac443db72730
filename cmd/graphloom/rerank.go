package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/models/checkpoint"
	"github.com/graphloom/graphloom/models/train"
	"github.com/graphloom/graphloom/rerank"
	"github.com/graphloom/graphloom/retrieve"
)

// cageFlags are the reranking settings of query and eval (--rerank …).
type cageFlags struct {
	mode        string // "", "dense" or "cage"
	candidates  int
	model       string // encoder checkpoint; default INDEX.cage
	cfg         rerank.Config
	pool        string           // eval: "" (retrievers over the index) or "question"
	distractors int              // eval --pool question: added distractor passages per question
	stderr      func() io.Writer // where a stale encoder is reported: the command's stderr
	changed     func(flag string) bool
}

func (c *cageFlags) active() bool { return c.mode != "" && c.mode != "none" }

// betaGiven reports whether --cage-beta was given (it then replaces a trained
// encoder's β).
func (c *cageFlags) betaGiven() bool { return c.changed != nil && c.changed("cage-beta") }

// register binds the flags; withEval adds the per-question pool options.
func (c *cageFlags) register(cmd *cobra.Command, withEval bool) {
	c.cfg = rerank.DefaultConfig()
	c.stderr = cmd.ErrOrStderr
	c.changed = cmd.Flags().Changed
	f := cmd.Flags()
	f.StringVar(&c.mode, "rerank", "", `rerank the retriever's candidates: "cage" (coherence-aware graph encoding) or "dense" (query–passage cosine only, the vanilla-RAG baseline)`)
	f.IntVar(&c.candidates, "candidates", 20, "candidates the retriever passes to --rerank")
	f.StringVar(&c.model, "cage-model", "", "CAGE encoder checkpoint (default INDEX.cage, written by 'graphloom train cage'; an untrained encoder when absent)")
	f.Float64Var(&c.cfg.Alpha, "cage-alpha", c.cfg.Alpha, "CAGE: weight α of query relevance against coherence (1 = no coherence)")
	f.Float64Var(&c.cfg.Encoder.Beta, "cage-beta", c.cfg.Encoder.Beta, "CAGE: scale β ≥ 1 of min-out-degree anchor nodes and their edges (1 = no reweighting); default: the trained encoder's")
	f.StringVar(&c.cfg.Aggregation, "cage-aggregation", c.cfg.Aggregation, `CAGE: coherence aggregation over the other candidates, "mean" or "relevance" (weighted by their query relevance)`)
	limitFlag(cmd, "candidates", atLeast1(1e4))
	limitFlag(cmd, "cage-alpha", unit)
	limitFlag(cmd, "cage-beta", flagRange{lo: 1, hi: 1e3})
	if withEval {
		f.StringVar(&c.pool, "pool", "", `with --rerank: "question" reranks each question's own passage pool (its context, gold and distractors) instead of retrieving from the index`)
		f.IntVar(&c.distractors, "pool-distractors", 0, "with --pool question: add this many passages from other questions' pools (for datasets whose pools hold only gold passages)")
		limitFlag(cmd, "pool-distractors", atLeast0(1e3))
	}
}

// validate checks the combination of flags.
func (c *cageFlags) validate() error {
	switch c.mode {
	case "", "none", "dense", "cage":
	default:
		return usageError{fmt.Errorf("--rerank %q: want cage or dense", c.mode)}
	}
	if c.pool != "" && c.pool != "question" {
		return usageError{fmt.Errorf("--pool %q: want question", c.pool)}
	}
	if c.pool != "" && !c.active() {
		return usageError{errors.New("--pool needs --rerank")}
	}
	if err := c.cfg.Validate(); err != nil {
		return usageError{err}
	}
	return nil
}

// modelPath returns the encoder checkpoint for an index (gcn: the one-relation ablation's).
func (c *cageFlags) modelPath(indexPath string, gcn bool) (string, bool) {
	p := c.model
	if p == "" || gcn {
		p = cageModelPath(indexPath, gcn)
	}
	_, err := os.Stat(p)
	return p, err == nil
}

// inputs names the CAGE encoder checkpoints a command may read (for output guards):
// --cage-model and the ones beside the index.
func (c *cageFlags) inputs(indexPath string) []inSpec {
	ins := []inSpec{{"the CAGE encoder", cageModelPath(indexPath, false)}, {"the GCN ablation's encoder", cageModelPath(indexPath, true)}}
	if c.model != "" {
		ins = append(ins, inSpec{"--cage-model", c.model})
	}
	return ins
}

func cageModelPath(indexPath string, gcn bool) string {
	if gcn {
		return indexPath + ".cage-gcn"
	}
	return indexPath + ".cage"
}

// reranker builds a CAGE reranker with cfg: from the checkpoint beside the index when
// there is one (α and the aggregation come from cfg, β from the checkpoint unless
// betaGiven: the encoder's features were trained with it), else freshly initialised.
// The note says which.
func (c *cageFlags) reranker(eng *engine.Engine, indexPath string, ix *graphio.Index, cfg rerank.Config, betaGiven bool) (*rerank.Reranker, string, error) {
	path, ok := c.modelPath(indexPath, cfg.Encoder.SingleRelation)
	if !ok {
		if c.model != "" && !cfg.Encoder.SingleRelation {
			return nil, "", fmt.Errorf("rerank: --cage-model %s: no such file", c.model)
		}
		r, err := rerank.NewUntrained(eng, cfg)
		return r, fmt.Sprintf("untrained encoder (no %s; run 'graphloom train cage --index %s')", path, indexPath), err
	}
	enc, err := rerank.LoadEncoder(eng, path, func(e *rerank.EncoderConfig) {
		if betaGiven {
			e.Beta = cfg.Encoder.Beta
		}
		e.MaxNodes = cfg.Encoder.MaxNodes
	})
	if err != nil {
		return nil, "", err
	}
	if w := kg.StaleWarning(ix, enc.Meta()[kg.GenerationMeta], "the CAGE encoder "+path); w != "" && c.stderr != nil {
		fmt.Fprintln(c.stderr(), w)
	}
	r, err := rerank.NewReranker(cfg, enc)
	return r, "encoder " + path, err
}

// wrap returns r reranked as the flags say (r itself when no --rerank).
func (c *cageFlags) wrap(eng *engine.Engine, indexPath string, ix *graphio.Index, api embed.Embedder, r retrieve.Retriever) (retrieve.Retriever, string, error) {
	if !c.active() {
		return r, "", nil
	}
	emb, err := embed.ForIndex(ix, api)
	if err != nil {
		return nil, "", err
	}
	w := &rerank.Retriever{First: r, Embedder: emb, Candidates: c.candidates}
	note := ""
	if c.mode == "cage" {
		if w.Reranker, note, err = c.reranker(eng, indexPath, ix, c.cfg, c.betaGiven()); err != nil {
			return nil, "", err
		}
	}
	return w, note, nil
}

// cageVariant is a named reranker setting of an evaluation.
type cageVariant struct {
	name      string
	dense     bool
	cfg       *rerank.Config // nil with dense false: first-stage order
	betaGiven bool           // cfg's β replaces the trained encoder's (the β = 1 ablation)
}

// cageVariants lists the evaluation rows: none, dense, cage, the sweep grid over
// cage-* flags, and with ablate the three ablations (GCN, β = 1, α = 1).
func (c *cageFlags) cageVariants(cmd *cobra.Command, sweeps []string, ablate bool) ([]cageVariant, error) {
	base := c.cfg
	// Whether --cage-beta was given, before a sweep sets the flag.
	betaGiven := c.betaGiven()
	vs := []cageVariant{{name: "none"}, {name: "dense", dense: true}}
	if len(sweeps) == 0 {
		vs = append(vs, cageVariant{name: "cage", cfg: &base, betaGiven: betaGiven})
	}
	type axis struct {
		flag   string
		values []string
	}
	var axes []axis
	for _, sw := range sweeps {
		name, vals, ok := strings.Cut(sw, "=")
		if !ok || vals == "" || !slices.Contains([]string{"cage-alpha", "cage-beta", "cage-aggregation"}, name) {
			return nil, usageError{fmt.Errorf("eval: --sweep %q: with --rerank, sweep cage-alpha, cage-beta or cage-aggregation", sw)}
		}
		axes = append(axes, axis{name, strings.Split(vals, ",")})
	}
	sweepsBeta := slices.ContainsFunc(axes, func(a axis) bool { return a.flag == "cage-beta" })
	var walk func(i int, name string) error
	walk = func(i int, name string) error {
		if i == len(axes) {
			cfg := c.cfg
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			vs = append(vs, cageVariant{name: "cage" + name, cfg: &cfg, betaGiven: betaGiven || sweepsBeta})
			return nil
		}
		for _, v := range axes[i].values {
			if err := cmd.Flags().Set(axes[i].flag, v); err != nil {
				return usageError{fmt.Errorf("--%s %s: %w", axes[i].flag, v, err)}
			}
			if err := walk(i+1, name+" "+strings.TrimPrefix(axes[i].flag, "cage-")+"="+v); err != nil {
				return err
			}
		}
		return nil
	}
	if len(axes) > 0 {
		if err := walk(0, ""); err != nil {
			return nil, err
		}
		c.cfg = base
	}
	if ablate {
		gcn, beta1, alpha1 := base, base, base // base: the flags before any sweep
		gcn.Encoder.SingleRelation = true
		beta1.Encoder.Beta = 1
		alpha1.Alpha = 1
		vs = append(vs, cageVariant{name: "cage: GCN (one relation)", cfg: &gcn, betaGiven: betaGiven},
			cageVariant{name: "cage: beta=1", cfg: &beta1, betaGiven: true}, cageVariant{name: "cage: alpha=1", cfg: &alpha1, betaGiven: betaGiven})
	}
	return vs, nil
}

// runRerankEval is eval with --rerank: per-question pools (--pool question) or the
// configured retrievers' top --candidates, reranked by every variant.
func runRerankEval(cmd *cobra.Command, eng *engine.Engine, indexPath string, ix *graphio.Index, api embed.Embedder, chat retrieve.Chatter, ds *eval.Dataset,
	rcfg retrieve.Config, cfg eval.Config, cf *cageFlags, sweeps []string, ablate bool, out string, asJSON, allowPartial bool) error {
	if err := cf.validate(); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	variants, err := cf.cageVariants(cmd, sweeps, ablate)
	if err != nil {
		return err
	}
	emb, err := embed.ForIndex(ix, api)
	if err != nil {
		return err
	}
	cache := rerank.NewGraphCache()
	var notes []string
	build := func(v cageVariant) (*rerank.Reranker, error) {
		if v.cfg == nil {
			return nil, nil
		}
		r, note, err := cf.reranker(eng, indexPath, ix, *v.cfg, v.betaGiven)
		if err != nil {
			return nil, err
		}
		r.ShareCache(cache)
		if !slices.Contains(notes, note) {
			notes = append(notes, note)
		}
		return r, nil
	}
	if cf.pool == "question" {
		if cfg.Answer || cfg.Judge {
			return usageError{errors.New("eval: --answer and --judge score retrievers' rankings; drop --pool question to answer from reranked candidates")}
		}
		cs := rerank.PoolCandidates(ds, cf.distractors, 1)
		// A pool of nothing but gold passages ranks perfectly under any reranker
		// (MoreHopQA's 2 supporting paragraphs, PubMedQA's one abstract): left out.
		kept := cs[:0]
		for _, c := range cs {
			if len(c.Keys) > len(c.Gold) {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			return usageError{fmt.Errorf("eval: every question's pool holds only its gold passages, which any ranking orders perfectly: add others with --pool-distractors N")}
		}
		if n := len(cs) - len(kept); n > 0 {
			cmd.PrintErrf("note: %d of %d questions' pools hold only their gold passages (ranked perfectly by any reranker) and are left out; --pool-distractors adds others\n", n, len(cs))
		}
		cs = kept
		if err := rerank.Embed(cmd.Context(), emb, cs); err != nil {
			return err
		}
		rows, err := rerank.EvaluateSets(cmd.Context(), cs, []string{"bm25"}, []rerank.Variant{{Name: "none"}}, cfg.Ks, rcfg)
		if err != nil {
			return err
		}
		var vs []rerank.Variant
		for _, v := range variants {
			r, err := build(v)
			if err != nil {
				return err
			}
			vs = append(vs, rerank.Variant{Name: v.name, Dense: v.dense, Reranker: r})
		}
		more, err := rerank.EvaluateSets(cmd.Context(), cs, []string{"dense"}, vs, cfg.Ks, rcfg)
		if err != nil {
			return err
		}
		rows = append(rows, more...)
		if out != "" { // with --json too
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			if err := graphio.AtomicWrite(out+"/rerank.md", func(f io.Writer) error { return rerank.WriteTable(f, rows, cfg.Ks) }); err != nil {
				return err
			}
		}
		if asJSON {
			return printJSON(w, map[string]any{"dataset": ds.Path, "pool": "question", "distractors": cf.distractors, "notes": notes, "rows": rows})
		}
		fmt.Fprintf(w, "dataset: %s, per-question pools (%d questions, %d distractors added each)\n", ds.Path, len(cs), cf.distractors)
		for _, n := range notes {
			fmt.Fprintf(w, "note: %s\n", n)
		}
		return rerank.WriteTable(w, rows, cfg.Ks)
	}
	// Retriever mode: every retriever plain, and reranked by each variant.
	s, err := retrieve.Open(ix, api, rcfg, chat)
	if err != nil {
		return err
	}
	src := &rerankedRetrievers{s: s, emb: emb, candidates: cf.candidates, rerankers: map[string]*rerank.Reranker{}, dense: map[string]bool{}}
	var names []string
	for _, name := range cfg.Retrievers {
		names = append(names, name)
		for _, v := range variants[1:] {
			r, err := build(v)
			if err != nil {
				return err
			}
			full := name + "+" + v.name
			src.rerankers[full], src.dense[full] = r, v.dense
			names = append(names, full)
		}
	}
	cfg.Retrievers = names
	progress, finish := evalBars(cmd)
	rep, err := eval.Evaluate(cmd.Context(), ix, src, chat, ds, cfg, progress)
	finish()
	if err != nil {
		return err
	}
	rep.Notes = append(rep.Notes, notes...)
	if rep.Index != nil {
		rep.Index.Path = indexPath
	}
	if err := checkLostCalls(rep, allowPartial); err != nil {
		return err
	}
	if out != "" {
		if _, err := rep.WriteFiles(out); err != nil {
			return err
		}
	}
	if asJSON {
		return printJSON(w, rep)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	return writeEvalTable(w, rep)
}

// rerankedRetrievers serves "R" and "R+variant" names for eval.Evaluate.
type rerankedRetrievers struct {
	s          *retrieve.Searcher
	emb        embed.Embedder
	candidates int
	rerankers  map[string]*rerank.Reranker
	dense      map[string]bool
}

func (r *rerankedRetrievers) Retriever(name string) (retrieve.Retriever, error) {
	base, _, reranked := strings.Cut(name, "+")
	first, err := r.s.Retriever(base)
	if err != nil || !reranked {
		return first, err
	}
	rr, ok := r.rerankers[name]
	if !ok && !r.dense[name] {
		return nil, fmt.Errorf("rerank: unknown variant %q", name)
	}
	return &namedRetriever{Retriever: &rerank.Retriever{First: first, Embedder: r.emb, Reranker: rr, Candidates: r.candidates}, name: name}, nil
}

type namedRetriever struct {
	retrieve.Retriever
	name string
}

func (n *namedRetriever) Name() string { return n.name }

// newTrainCmd is `graphloom train cage`.
func newTrainCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a model on an index (cage: the coherence reranker's graph encoder; gretriever: G-Retriever; selfgraphrag: GraphLM on synthetic QA)",
		Example: `  graphloom train cage --index harbour.gl
  graphloom train gretriever --index harbour.gl --train qa.json --lm LM_DIR --out gr/
  graphloom train selfgraphrag --index harbour.gl --synth qa.jsonl --lm LM_DIR --out graphlm/`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newTrainCageCmd(), newTrainGRetrieverCmd(), newTrainSelfGraphRAGCmd())
	return cmd
}

func newTrainCageCmd() *cobra.Command {
	ecfg := rerank.DefaultEncoderConfig()
	tcfg := rerank.DefaultTrainConfig()
	var indexPath, out string
	var force bool
	cmd := &cobra.Command{
		Use:   "cage --index INDEX [--out INDEX.cage]",
		Short: "Train CAGE's R-GCN passage-graph encoder on the index's chunks (contrastive diversity objective)",
		Long: `Parse every chunk of the index into a passage graph and train the one-layer R-GCN encoder
with a contrastive objective (two random views of each passage are positives, other
passages negatives). The checkpoint is written beside the index (INDEX.cage; with --gcn,
the one-relation ablation's INDEX.cage-gcn), with the training log (.log.jsonl) and
curves (.png). 'graphloom query/eval --rerank cage' load it.`,
		Example: `  graphloom train cage --index harbour.gl
  graphloom train cage --index harbour.gl --gcn`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "index"); err != nil {
				return err
			}
			if out == "" {
				out = cageModelPath(indexPath, ecfg.SingleRelation)
			}
			if err := guardOutput(cmd, outSpec{name: "--out", path: out, kind: outFile, what: "CAGE encoder checkpoint", force: force, is: checkpoint.IsKind(rerank.EncoderKind)},
				inSpec{"--index", indexPath}); err != nil {
				return err
			}
			ix, err := graphio.ReadFile(indexPath)
			if err != nil {
				return err
			}
			texts := make([]string, len(ix.Chunks))
			for i, c := range ix.Chunks {
				texts[i] = c.Text
			}
			eng, err := engine.New(engine.Config{})
			if err != nil {
				return err
			}
			defer eng.Close()
			enc, err := rerank.NewEncoder(eng, ecfg)
			if err != nil {
				return usageError{err}
			}
			// The log is kept in memory and written with the encoder: a killed run
			// leaves no half-written file behind.
			var logBuf bytes.Buffer
			res, err := rerank.Train(cmd.Context(), eng, enc, texts, tcfg, &logBuf)
			if err != nil {
				return err
			}
			if err := graphio.AtomicWrite(out+".log.jsonl", func(w io.Writer) error { _, err := w.Write(logBuf.Bytes()); return err }); err != nil {
				return err
			}
			meta := map[string]string{"index": indexPath, "passages": fmt.Sprint(res.Passages), "best_step": fmt.Sprint(res.BestStep),
				kg.GenerationMeta: kg.Generation(ix)}
			if err := enc.Save(out, meta); err != nil {
				return err
			}
			if err := train.WriteCurves(out+".png", "CAGE encoder (contrastive)", res.Result); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "trained on %d passages, %d steps (best %d): held-out %s → %s\n%s (+ .log.jsonl, .png)\n",
				res.Passages, res.Steps, res.BestStep, res.Initial, res.Best, out)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&indexPath, "index", "", "index file")
	f.StringVar(&out, "out", "", "checkpoint path (default INDEX.cage, or INDEX.cage-gcn with --gcn)")
	addForce(cmd, &force)
	f.BoolVar(&ecfg.SingleRelation, "gcn", false, "one relation type (the GCN ablation)")
	f.Float64Var(&ecfg.Beta, "beta", ecfg.Beta, "anchor scale β used while training")
	f.IntVar(&tcfg.Train.TotalSteps, "steps", tcfg.Train.TotalSteps, "optimizer steps")
	f.Float64Var(&tcfg.Train.LearningRate, "lr", tcfg.Train.LearningRate, "peak learning rate")
	f.Uint64Var(&tcfg.Seed, "seed", tcfg.Seed, "views and split seed")
	limitFlag(cmd, "steps", atLeast1(1e7))
	limitFlag(cmd, "beta", flagRange{lo: 1, hi: 1e3})
	return cmd
}
