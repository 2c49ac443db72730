package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/gretrieve"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

func newEvalCmd() *cobra.Command {
	cfg := eval.DefaultConfig()
	rcfg := retrieve.DefaultConfig()
	var lf llmFlags
	var indexPath, dataset, out, runPath, extraction, corpusOut, retrievers string
	var asJSON, noRecognition, ablate, force, allowPartial bool
	var ablateCorpus string
	var sweeps []string
	var cf cageFlags
	var gf gretrieverFlags
	cmd := &cobra.Command{
		Use:   "eval --index INDEX --dataset FILE [--retrievers bm25,dense,triples,ppr,hyperppr,pcst] [--out DIR]",
		Short: "Evaluate retrievers on a QA dataset: Recall@k, EM/F1, accuracy, LLM judge",
		Long: `Run each retriever over the questions of a dataset and score the rankings the way the
HippoRAG 2 paper does: Recall@k of the gold passages ("title\ntext"), averaged over the
questions that have gold evidence. With --answer (needs an LLM) the top --top-k passages
are read by HippoRAG's reader and the answers scored: EM and F1 (SQuAD normalisation,
max over answer aliases), yes/no/maybe or multiple-choice accuracy; --judge adds an LLM
judge scoring correctness and completeness 0-10 (HyperGraphRAG+PPR's protocol).
The gretriever retriever (a model from 'graphloom train gretriever': --model, --lm)
generates its own answers, which are scored the same way without --answer.

The dataset format is recognised from the file: HippoRAG, MuSiQue, HotpotQA, 2Wiki,
MoreHopQA, LiteraryQA, PubMedQA-style yes/no, multiple choice, or HyperGraphRAG-style
gold spans; JSON arrays and JSONL. Malformed records are reported and skipped.

--run scores an existing run file (the JSONL of 'graphloom query --out') instead of
retrieving; --index is then optional. With --out DIR, report.md, report.json and
Recall@k charts (recall.png, recall.svg) are written there. The table is printed last.`,
		Example: `  graphloom eval --index harbour.gl --dataset examples/harbour/questions.json
  graphloom eval --index harbour.gl --dataset examples/harbour/questions.json --retrievers bm25,ppr --ks 2,5 --out report/
  graphloom eval --run run.jsonl --dataset examples/harbour/questions.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			ins := []inSpec{{"--index", indexPath}, {"--dataset", dataset}, {"--run", runPath}, {"--extraction", extraction}, {"--ablate-corpus", ablateCorpus}}
			ins = append(append(append(ins, cf.inputs(indexPath)...), gf.inputs()...), lf.inputs()...)
			if err := guardOutput(cmd, outSpec{name: "--out", path: out, kind: outDir, what: "directory", files: eval.ReportFiles()}, ins...); err != nil {
				return err
			}
			if err := guardOutput(cmd, outSpec{name: "--corpus-out", path: corpusOut, kind: outFile, what: "corpus file", force: force}, ins...); err != nil {
				return err
			}
			switch {
			case extraction != "":
				if err := requireFlags(cmd, "index"); err != nil {
					return err
				}
				return runExtractionScore(cmd, indexPath, extraction, asJSON)
			case corpusOut != "":
				if err := requireFlags(cmd, "dataset"); err != nil {
					return err
				}
				ps, ds, err := eval.CorpusFromDataset(dataset)
				if err != nil {
					return err
				}
				warnDataset(cmd, ds)
				if err := graphio.AtomicWrite(corpusOut, func(w io.Writer) error { return eval.WriteCorpus(w, ps) }); err != nil {
					return err
				}
				if asJSON {
					return printJSON(w, map[string]any{"passages": len(ps), "dataset": dataset, "out": corpusOut})
				}
				fmt.Fprintf(w, "%d passages from %s → %s\n", len(ps), dataset, corpusOut)
				return nil
			}
			if err := requireFlags(cmd, "dataset"); err != nil {
				return err
			}
			if runPath == "" {
				if err := requireFlags(cmd, "index"); err != nil {
					return err
				}
			}
			cfg.Retrievers = nil
			for _, r := range strings.Split(retrievers, ",") {
				if r = strings.TrimSpace(r); r == "" {
					continue
				}
				if !slices.Contains(retrieve.Names, r) && r != gretrieve.Name {
					return usageError{fmt.Errorf("eval: unknown retriever %q (want some of %s,%s)", r, strings.Join(retrieve.Names, ","), gretrieve.Name)}
				}
				cfg.Retrievers = append(cfg.Retrievers, r)
			}
			if cfg.Judge && !cfg.Answer && runPath == "" && !slices.Contains(cfg.Retrievers, gretrieve.Name) {
				return usageError{fmt.Errorf("eval: --judge scores answers: add --answer (or score a --run file that has answers)")}
			}
			ds, err := eval.ReadDataset(dataset)
			if err != nil {
				return err
			}
			warnDataset(cmd, ds)
			var ix *graphio.Index
			if indexPath != "" {
				if ix, err = graphio.ReadFile(indexPath); err != nil {
					return err
				}
			}
			chat, err := lf.optionalChat()
			if err != nil {
				return err
			}
			if (cfg.Answer || cfg.Judge) && chat == nil {
				return usageError{fmt.Errorf("eval: --answer and --judge need an LLM (GRAPHLOOM_LLM_BASE_URL, GRAPHLOOM_LLM_MODEL)")}
			}
			defer lf.report(cmd.ErrOrStderr())
			progress, finish := evalBars(cmd)
			var rep *eval.Report
			if runPath != "" {
				lines, skipped, err := eval.ReadRun(runPath)
				if err != nil {
					return err
				}
				warnSkipped(cmd, runPath, skipped)
				rep, err = eval.ScoreRun(cmd.Context(), ix, lines, ds, chat, cfg, progress)
				finish()
				if err != nil {
					return err
				}
				rep.Run = runPath
			} else {
				api, err := lf.apiEmbedder(cmd.Context())
				if err != nil {
					return err
				}
				rcfg.RecognitionMemory = !noRecognition
				withGR := slices.Contains(cfg.Retrievers, gretrieve.Name)
				if withGR && (cf.active() || cf.pool != "" || ablate || len(sweeps) > 0) {
					finish()
					return usageError{errors.New("eval: the gretriever retriever does not support --rerank, --pool, --ablate or --sweep yet")}
				}
				if cf.active() || cf.pool != "" {
					finish()
					eng, err := lf.engine()
					if err != nil {
						return err
					}
					return runRerankEval(cmd, eng, indexPath, ix, api, chat, ds, rcfg, cfg, &cf, sweeps, ablate, out, asJSON, allowPartial)
				}
				if ablate {
					finish()
					return runAblation(cmd, ix, api, ds, rcfg, cfg, ablateCorpus, out, asJSON)
				}
				if len(sweeps) > 0 {
					finish()
					return runSweep(cmd, ix, api, ds, &rcfg, cfg, sweeps, out, asJSON)
				}
				if withGR {
					before := pcstSettings(rcfg)
					if err := gf.trainedRetrieval(cmd, &rcfg); err != nil {
						finish()
						return err
					}
					if slices.Contains(cfg.Retrievers, "pcst") && pcstSettings(rcfg) != before {
						cmd.PrintErrf("note: the pcst retriever runs with the G-Retriever model's PCST settings too (%s)\n", pcstSettings(rcfg))
					}
				}
				s, err := retrieve.Open(ix, api, rcfg, chat)
				if err != nil {
					return err
				}
				warnSearcher(cmd, s)
				var src eval.Retrievers = s
				if withGR {
					gr, err := gf.open(s, ix, cmd.ErrOrStderr(), &lf)
					if err != nil {
						finish()
						return err
					}
					gr.Answer = true
					src = withGRetriever{Searcher: s, gr: gr}
				}
				rep, err = eval.Evaluate(cmd.Context(), ix, src, chat, ds, cfg, progress)
				finish()
				if err != nil {
					return err
				}
			}
			if rep.Index != nil {
				rep.Index.Path = indexPath
			}
			if err := checkLostCalls(rep, allowPartial); err != nil {
				return err
			}
			if chat != nil && (rep.Settings.Answer || rep.Settings.Judge) {
				rep.Settings.LLM = lf.config().Model
			}
			var files []string
			if out != "" {
				if files, err = rep.WriteFiles(out); err != nil {
					return err
				}
			}
			if asJSON {
				return printJSON(w, rep)
			}
			fmt.Fprintf(w, "dataset: %s (%s, %d examples, %d with gold evidence)\n", dataset, rep.Dataset.Format, rep.Dataset.Examples, rep.Dataset.WithEvidence)
			if rep.Index != nil {
				fmt.Fprintf(w, "index: %s\n", rep.Index)
			}
			for _, n := range rep.Notes {
				fmt.Fprintf(w, "note: %s\n", n)
			}
			if len(files) > 0 {
				fmt.Fprintf(w, "wrote %s\n", strings.Join(files, ", "))
			}
			return writeEvalTable(w, rep)
		},
	}
	f := cmd.Flags()
	f.StringVar(&indexPath, "index", "", "index file")
	f.StringVar(&dataset, "dataset", "", "question file (HippoRAG, MuSiQue, HotpotQA/2Wiki/MoreHopQA, LiteraryQA, yes/no, multiple choice, gold spans)")
	f.StringVar(&retrievers, "retrievers", strings.Join(retrieve.Names, ","), "comma-separated retrievers to evaluate")
	f.IntVar(&cfg.TopK, "top-k", cfg.TopK, "passages given to the reader, and the k of the answer-in-passages column")
	f.IntSliceVar(&cfg.Ks, "ks", cfg.Ks, "Recall@k cut-offs")
	f.StringVar(&out, "out", "", "directory for report.md, report.json and the charts")
	f.BoolVar(&allowPartial, "allow-partial", false, "report even if some reader or judge requests got no answer (a lost reader answer scores as wrong, a lost judgement is left out of the judge's averages; their errors are in report.json)")
	f.StringVar(&runPath, "run", "", "score this run file (JSONL of 'graphloom query --out') instead of retrieving")
	f.BoolVar(&cfg.Answer, "answer", false, "answer with the LLM from the top-k passages and score EM/F1 (or accuracy)")
	f.BoolVar(&cfg.Judge, "judge", false, "have the LLM judge score answers' correctness and completeness (0-10)")
	f.BoolVar(&noRecognition, "no-recognition", false, "skip HippoRAG 2's LLM recognition-memory filter even when an LLM is configured")
	f.IntVar(&cfg.Workers, "workers", 0, "questions retrieved concurrently (0 = all cores)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	addForce(cmd, &force)
	registerRetrievalFlags(cmd, &rcfg)
	cf.register(cmd, true)
	gf.register(cmd)
	f.BoolVar(&ablate, "ablate", false, "ablation table: the graph retrievers with each retrieval component switched off in turn (with --ablate-corpus, each graph-build component too); writes ablation.md/.json/.png to --out")
	f.StringArrayVar(&sweeps, "sweep", nil, `grid search: FLAG=V1,V2,… over a retrieval flag (repeat for a grid), e.g. --sweep pcst-cost-e=0.01,0.1,0.5; writes sweep.md/.json/.png to --out`)
	f.StringVar(&ablateCorpus, "ablate-corpus", "", "with --ablate: the corpus the index was built from offline, rebuilt once per graph-build ablation")
	f.StringVar(&extraction, "extraction", "", "score the index's extracted triples against gold within-passage triples [{title, triples}] and exit")
	f.StringVar(&corpusOut, "corpus-out", "", "write the passages of --dataset as a corpus JSON ({title, text} array) and exit")
	_ = f.MarkHidden("extraction")
	_ = f.MarkHidden("corpus-out")
	lf.register(cmd)
	lf.registerOpen(cmd)
	limitFlag(cmd, "top-k", atLeast1(1e5))
	limitFlag(cmd, "ks", atLeast1(1e5))
	limitFlag(cmd, "workers", atLeast0(4096))
	return cmd
}

// evalBars returns a progress factory drawing one bar per stage, and a function
// finishing the last one.
func evalBars(cmd *cobra.Command) (eval.Progress, func()) {
	var finish func()
	done := func() {
		if finish != nil {
			finish()
			finish = nil
		}
	}
	return func(stage string) func(done, total int) {
		done()
		var p func(done, total int)
		p, finish = bar(cmd, stage)
		return p
	}, done
}

// writeEvalTable prints a report's table and, under it, each retriever's paired
// comparison with bm25.
func writeEvalTable(w io.Writer, rep *eval.Report) error {
	if err := rep.WriteTable(w); err != nil {
		return err
	}
	for _, d := range rep.Paired {
		fmt.Fprintf(w, "  %s\n", d)
	}
	return nil
}

// warnSkipped prints the first skipped records of a file to stderr.
func warnSkipped(cmd *cobra.Command, path string, skipped []eval.Skipped) {
	warnRecords(cmd, path, "skipped: ", "records skipped", skipped)
}

// warnDataset prints the first skipped records of a question file, and the first
// records read with a warning, to stderr.
func warnDataset(cmd *cobra.Command, ds *eval.Dataset) {
	warnSkipped(cmd, ds.Path, ds.Skipped)
	warnRecords(cmd, ds.Path, "", "records with a warning", ds.Warnings)
}

// warnRecords prints the first ten of a file's records, each as "warning:
// path:line: " + prefix + its reason, and how many more there are.
func warnRecords(cmd *cobra.Command, path, prefix, more string, recs []eval.Skipped) {
	const show = 10
	for i, s := range recs {
		if i == show {
			cmd.PrintErrf("warning: %s: %d more %s\n", path, len(recs)-show, more)
			break
		}
		cmd.PrintErrf("warning: %s:%d: %s%s\n", path, s.Line, prefix, s.Reason)
	}
}

func runExtractionScore(cmd *cobra.Command, indexPath, goldPath string, asJSON bool) error {
	ix, err := graphio.ReadFile(indexPath)
	if err != nil {
		return err
	}
	gold, err := eval.ReadGoldTriples(goldPath)
	if err != nil {
		return err
	}
	rep := eval.ExtractionScore(ix, gold)
	w := cmd.OutOrStdout()
	if asJSON {
		return printJSON(w, rep)
	}
	fmt.Fprintf(w, "extraction (%s) vs %s: %d passages, %d gold triples, %d extracted\n",
		rep.Extractor, goldPath, rep.Passages, rep.Gold, rep.Predicted)
	if len(rep.Missing) > 0 {
		fmt.Fprintf(w, "  not in the index: %s\n", strings.Join(rep.Missing, "; "))
	}
	line := func(name string, s eval.PRF) {
		fmt.Fprintf(w, "  %-40s P %5.1f  R %5.1f  F1 %5.1f  (%d matched)\n", name, 100*s.Precision, 100*s.Recall, 100*s.F1, s.Matched)
	}
	line("subject+object (predicate-agnostic)", rep.Pair)
	line("subject→object + predicate token overlap", rep.Predicate)
	return nil
}

// runAblation prints and writes the ablation table of the index on the dataset.
func runAblation(cmd *cobra.Command, ix *graphio.Index, api embed.Embedder, ds *eval.Dataset, rcfg retrieve.Config, cfg eval.Config, corpus, out string, asJSON bool) error {
	open := func(ix *graphio.Index, rc retrieve.Config) (eval.Retrievers, error) {
		return retrieve.Open(ix, api, rc, nil)
	}
	var rebuild eval.Rebuilder
	if corpus != "" {
		rebuild = eval.OfflineRebuilder(corpus)
	}
	rep, err := eval.Ablate(cmd.Context(), ix, open, rebuild, ds, rcfg, kg.DefaultConfig(), cfg)
	if err != nil {
		return err
	}
	var files []string
	if out != "" {
		if files, err = rep.WriteFiles(out); err != nil {
			return err
		}
	}
	return printAblation(cmd, rep, files, asJSON)
}

// printAblation prints an ablation or sweep report (with --json, as JSON with the
// files written) after writing its files.
func printAblation(cmd *cobra.Command, rep *eval.AblationReport, files []string, asJSON bool) error {
	w := cmd.OutOrStdout()
	if asJSON {
		return printJSON(w, map[string]any{"report": rep, "files": files})
	}
	if len(files) > 0 {
		fmt.Fprintf(w, "wrote %s\n", strings.Join(files, ", "))
	}
	_, err := io.WriteString(w, rep.Markdown())
	return err
}

// runSweep evaluates the grid of retrieval-flag values the --sweep flags give.
func runSweep(cmd *cobra.Command, ix *graphio.Index, api embed.Embedder, ds *eval.Dataset, rcfg *retrieve.Config, cfg eval.Config, sweeps []string, out string, asJSON bool) error {
	type axis struct {
		flag   string
		values []string
	}
	var axes []axis
	for _, sw := range sweeps {
		name, vals, ok := strings.Cut(sw, "=")
		f := cmd.Flags().Lookup(name)
		if !ok || f == nil || vals == "" {
			return usageError{fmt.Errorf("eval: --sweep %q: want FLAG=V1,V2,… with a flag of eval", sw)}
		}
		if !isRetrievalFlag(f) {
			return usageError{fmt.Errorf("eval: --sweep %q: --%s is not a retrieval setting", sw, name)}
		}
		axes = append(axes, axis{name, strings.Split(vals, ",")})
	}
	// The grid, last axis fastest.
	var settings []eval.Setting
	var walk func(i int, name string, set [][2]string)
	walk = func(i int, name string, set [][2]string) {
		if i == len(axes) {
			set := slices.Clone(set)
			settings = append(settings, eval.Setting{Name: strings.TrimPrefix(name, " "), Apply: func(c *retrieve.Config) error {
				for _, kv := range set {
					if err := cmd.Flags().Set(kv[0], kv[1]); err != nil {
						return usageError{fmt.Errorf("--%s %s: %w", kv[0], kv[1], err)}
					}
				}
				if err := checkFlags(cmd); err != nil {
					return err
				}
				*c = *rcfg
				return nil
			}})
			return
		}
		for _, v := range axes[i].values {
			walk(i+1, name+" "+axes[i].flag+"="+v, append(set, [2]string{axes[i].flag, v}))
		}
	}
	walk(0, "", nil)
	open := func(ix *graphio.Index, rc retrieve.Config) (eval.Retrievers, error) {
		return retrieve.Open(ix, api, rc, nil)
	}
	rep, err := eval.Sweep(cmd.Context(), ix, open, ds, *rcfg, settings, cfg)
	if err != nil {
		var ue usageError
		if errors.As(err, &ue) {
			return usageError{err}
		}
		return err
	}
	var files []string
	if out != "" {
		if files, err = rep.WriteFilesAs(out, "sweep"); err != nil {
			return err
		}
	}
	return printAblation(cmd, rep, files, asJSON)
}

// checkLostCalls refuses a report some of whose reader or judge requests got no
// answer (it would score those answers as wrong and leave those judgements out), unless allowPartial.
func checkLostCalls(rep *eval.Report, allowPartial bool) error {
	if lost, first := rep.LostCalls(); lost > 0 && !allowPartial {
		return fmt.Errorf("eval: %d reader or judge requests got no answer (first: %s); the report would score those answers as wrong and leave those judgements out, so nothing was written: rerun (answered calls are cached), or pass --allow-partial", lost, first)
	}
	return nil
}
