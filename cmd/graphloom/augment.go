package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphloom/graphloom/augment"
	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

func newAugmentCmd() *cobra.Command {
	cfg := augment.DefaultConfig()
	var lf llmFlags
	// What --rollback takes: where the index is and how to write it; the LLM and
	// embedder flags (connection, filled once registered) say how to reach models,
	// not what a run does, and pass (from a shell alias, say). Any other flag is a
	// setting of a new run, which a rollback would ignore.
	rollbackFlags := map[string]bool{"index": true, "out": true, "force": true, "json": true, "wait": true, "rollback": true}
	connection := map[string]bool{}
	var path, out, completer, selector, rollback, gold string
	var plan, asJSON, noCheckpoint, wait, allowPartial, force bool
	var planted int
	var stability []int64
	stabilityOver := augment.StabilityOverSeed
	cmd := &cobra.Command{
		Use:   "augment --index INDEX [--completer llm|extractive] [--plan] [--rollback RUN]",
		Short: "CrossAug: add GNN-selected, evidence-cited cross-chunk facts to an index",
		Long: `Augment an index with CrossAug (seed 000): sample entity subgraphs by weighted random walks,
train an R-GCN missingness scorer on self-supervised corruptions, select high-scoring, low-overlap
subgraphs under a budget, ask a completer for evidence-cited cross-chunk triples, validate the
citations and merge the accepted facts as a run that --rollback removes exactly.

The completer is the configured LLM, or offline the extractive completer (rule extraction over the
evidence chunks with aliases and pronouns resolved across them). --plan stops before completion and
prints the calls and prompt tokens it would cost. LLM answers are cached on disk, so a killed run
rerun does not repeat paid calls. --stability SEEDS plans the command once per seed and reports how
much the scorer and its selection move with the seed.`,
		Example: `  graphloom augment --index harbour.gl --plan
  graphloom augment --index harbour.gl --completer extractive --roots 100 --budget 40 --gold-facts examples/harbour/facts.json
  graphloom stats --index harbour.gl            # lists the runs and their ids
  graphloom augment --index harbour.gl --rollback aug-20250101T120000-ab12
  graphloom augment --index harbour.gl --roots 100 --budget 40 --stability 42,1,2,3,4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "index"); err != nil {
				return err
			}
			if cmd.Flags().Changed("rollback") && strings.TrimSpace(rollback) == "" {
				return usageError{fmt.Errorf("augment: --rollback needs a run id (graphloom stats --index %s lists them)", path)}
			}
			if cmd.Flags().Changed("split-seed") && cmd.Flags().Changed("test-seed") {
				return usageError{fmt.Errorf("augment: --test-seed is the old name of --split-seed: give one of them")}
			}
			if len(stability) > 0 {
				switch {
				case planted > 0 || rollback != "":
					return usageError{fmt.Errorf("augment: --stability reports on planned runs: drop --planted and --rollback")}
				case stabilityOver != augment.StabilityOverSeed && stabilityOver != augment.StabilityOverSplit:
					return usageError{fmt.Errorf("augment: --stability-over %q: want %s or %s", stabilityOver, augment.StabilityOverSeed, augment.StabilityOverSplit)}
				case selector != "gnn":
					return usageError{fmt.Errorf("augment: --stability reports on the gnn selector's scorer, not --selector %s", selector)}
				}
				// The seeds go to the flag --stability-over names: a value given to that
				// flag too would be silently replaced. Nothing is completed or written.
				seedFlags := []string{"seed"}
				if stabilityOver == augment.StabilityOverSplit {
					seedFlags = []string{"split-seed", "test-seed"}
				}
				for _, name := range seedFlags {
					if cmd.Flags().Changed(name) {
						return usageError{fmt.Errorf("augment: --%s is what --stability sets (--stability-over %s): list its values in --stability", name, stabilityOver)}
					}
				}
				for _, name := range []string{"out", "gold-facts", "completer", "allow-partial"} {
					if cmd.Flags().Changed(name) {
						return usageError{fmt.Errorf("augment: --%s does not go with --stability, which plans each run and writes nothing", name)}
					}
				}
				seen := map[int64]bool{}
				for _, s := range stability {
					if seen[s] {
						return usageError{fmt.Errorf("augment: --stability: seed %d given twice", s)}
					}
					seen[s] = true
				}
				plan = true // every run stops before completion and writes nothing
			} else if cmd.Flags().Changed("stability-over") {
				return usageError{fmt.Errorf("augment: --stability-over needs --stability SEEDS")}
			}
			if out == "" {
				out = path
			}
			if rollback != "" && plan {
				return usageError{fmt.Errorf("augment: --rollback writes the index; --plan writes no index: give one")}
			}
			if rollback != "" {
				// A rollback only removes a run: settings of a new run would be ignored.
				var given []string
				cmd.Flags().Visit(func(f *pflag.Flag) {
					if !rollbackFlags[f.Name] && !connection[f.Name] && cmd.InheritedFlags().Lookup(f.Name) == nil { // --quiet is the root's
						given = append(given, "--"+f.Name)
					}
				})
				if len(given) > 0 {
					return usageError{fmt.Errorf("augment: --rollback removes a run and takes no settings of a new one: drop %s", strings.Join(given, ", "))}
				}
			}
			if err := guardOutput(cmd, outSpec{name: "--out", path: out, kind: outIndex, what: "index file", force: force, inPlace: "--index"},
				inSpec{"--index", path}, inSpec{"--gold-facts", gold}, inSpec{"the scorer checkpoint", path + ".scorer"}); err != nil {
				return err
			}
			if !plan {
				unlock, err := lockIndex(cmd, out, wait)
				if err != nil {
					return err
				}
				defer unlock()
			}
			ix, err := graphio.ReadFile(path)
			if err != nil {
				return err
			}
			var goldFacts []augment.GoldFact
			if gold != "" && rollback == "" { // read before any paid or long work: a bad path fails now
				if goldFacts, err = augment.ReadGold(gold); err != nil {
					return err
				}
			}
			w := cmd.OutOrStdout()
			if rollback != "" {
				if err := augment.Rollback(ix, rollback); err != nil {
					return err
				}
				retrieve.StoreBM25(ix, retrieve.DefaultConfig()) // the facts' postings changed
				if err := graphio.WriteFile(out, ix); err != nil {
					return err
				}
				// The run's report goes with it — out's only: with --out elsewhere the
				// input index still holds the run, and its report stays beside it.
				if err := os.Remove(augment.ReportPath(out, rollback)); err != nil && !errors.Is(err, os.ErrNotExist) {
					cmd.PrintErrf("warning: %v\n", err)
				}
				if asJSON {
					return printJSON(w, map[string]any{"removed_run": rollback, "out": out})
				}
				fmt.Fprintf(w, "removed run %s → %s\n", rollback, out)
				return nil
			}
			switch selector {
			case "gnn":
			case "random":
				cfg.RandomSelector = true
			case "facts":
				cfg.FactsSelector = true
			default:
				return usageError{fmt.Errorf("augment: --selector %q: want gnn, random or facts", selector)}
			}
			stages, endStages := stageBars(cmd, lf.live)
			defer endStages()
			kcfg := kg.DefaultConfig()
			if err := kcfg.ApplySettings(ix.Meta.Graph, nil); err != nil { // the index's own graph settings (synonyms)
				return err
			}
			opts := augment.Options{Config: cfg, Plan: plan, KG: kcfg, Progress: stages}
			if !asJSON {
				opts.Log = cmd.ErrOrStderr()
			}
			if completer == "" {
				completer = "extractive"
				if lf.chatConfigured() {
					completer = "llm"
				}
			}
			if !plan {
				switch completer {
				case "extractive":
					opts.Completer = &augment.Extractive{Rule: extract.NewRule(extract.DefaultRuleConfig())}
				case "llm":
					c, err := lf.chat()
					if err != nil {
						return err
					}
					opts.Completer = &augment.LLMCompleter{C: c, Hyperedges: len(ix.Hyperedges) > 0}
				default:
					return usageError{fmt.Errorf("augment: --completer %q: want llm or extractive", completer)}
				}
			}
			// The index's own embedder, checked before any work (an API model is
			// compared with the index's probe): the run's records are embedded by it.
			api, err := lf.apiEmbedder(cmd.Context())
			if err != nil {
				return err
			}
			if !plan {
				if opts.Embedder, err = embed.ForIndex(ix, api); err != nil {
					return err
				}
			}
			eng, err := lf.engine()
			if err != nil {
				return err
			}
			opts.NewScorer = func(dim int, c augment.Config) (augment.Scorer, error) { return augment.NewRGCNScorer(eng, dim, c) }
			opts.LoadScorer = func(p string) (augment.Scorer, error) { return augment.LoadRGCNScorer(eng, p, cfg) }
			if !noCheckpoint {
				opts.Checkpoint = path + ".scorer"
			}
			if planted > 0 {
				return runPlanted(cmd, ix, opts, planted, asJSON)
			}
			if len(stability) > 0 {
				return runStability(cmd, ix, opts, stability, stabilityOver, asJSON)
			}
			run := augment.NewRunID()
			rep, err := augment.Run(cmd.Context(), ix, run, opts)
			endStages()
			defer lf.report(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if !plan && len(rep.Selected) == 0 {
				// Nothing selected: say so, and why, and record no run.
				if asJSON {
					return printJSON(w, map[string]any{"report": rep, "empty_selection": true, "advice": emptySelectionAdvice(rep, cfg)})
				}
				printAugment(w, rep, out, nil, 0)
				return nil
			}
			if lost := rep.LostCalls(); lost > 0 && !allowPartial {
				return fmt.Errorf("augment: %d of %d completion calls got no answer (%s); last: %s; not recording a run that lost their facts: rerun (answered calls are cached), or pass --allow-partial",
					lost, rep.Calls, augment.FormatCounts(rep.FailedByKind), rep.LastFailure)
			}
			var recovered []augment.GoldFact
			var goldN int
			if gold != "" {
				goldN, recovered = len(goldFacts), augment.Recovered(rep.Facts, goldFacts)
			}
			if !plan {
				retrieve.StoreBM25(ix, retrieve.DefaultConfig()) // the facts' postings changed
				// The report first: an index that holds the run always has its report
				// (a report without its run, when the index write fails, is removed).
				report := augment.ReportPath(out, run)
				if err := graphio.AtomicWrite(report, func(w io.Writer) error { return printJSON(w, rep) }); err != nil {
					return err
				}
				if err := graphio.WriteFile(out, ix); err != nil {
					_ = os.Remove(report)
					return err
				}
			}
			if asJSON {
				return printJSON(w, map[string]any{"report": rep, "llm": lf.usage(), "gold_recovered": len(recovered), "gold_total": goldN})
			}
			printAugment(w, rep, out, recovered, goldN)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&path, "index", "", "index file")
	f.StringVar(&out, "out", "", "where to write the augmented index (default: in place)")
	f.StringVar(&completer, "completer", "", "llm (default when an LLM is configured) or extractive (offline)")
	f.StringVar(&selector, "selector", "gnn", "gnn (the missingness scorer), random (the paper's w/o GNN ablation) or facts (most facts first: a shortcut baseline)")
	f.BoolVar(&plan, "plan", false, "stop before completion: print the selected subgraphs, calls and prompt tokens")
	f.StringVar(&rollback, "rollback", "", "remove the records of this run id and exit")
	f.StringVar(&gold, "gold-facts", "", "facts.json of cross-chunk facts: count how many the run recovered")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&wait, "wait", false, "if another graphloom process is writing the index, wait for it instead of failing")
	f.BoolVar(&allowPartial, "allow-partial", false, "record the run even if some completion calls got no answer")
	addForce(cmd, &force)
	f.Int64SliceVar(&stability, "stability", nil, "stability report: run the whole planned command (--plan, no checkpoint: every run trains) once per seed in this list (e.g. 42,1,2,3,4) and print the spread of the scorer's test ROC-AUC, of the count ≥ θ and of test ECE, and the Jaccard overlap of the selected sets; the index is not changed")
	f.StringVar(&stabilityOver, "stability-over", stabilityOver, "what --stability's seeds set: seed (the scorer's training) or split-seed (its data sample)")
	f.IntVar(&planted, "planted", 0, "benchmark: delete N cross-chunk and N within-chunk facts, run the gnn, random and facts selectors (3 seeds, each moving the deletions, the scorer's training and its data sample) and count what each recovers; the index is not changed")
	f.BoolVar(&noCheckpoint, "no-checkpoint", false, "do not save or reuse the scorer checkpoint (INDEX.scorer)")
	f.Float64Var(&cfg.Budget, "budget", cfg.Budget, "subgraphs to complete: a fraction of 2×chunks if < 1, else a count")
	f.IntVar(&cfg.Roots, "roots", 0, "inference roots (default: --root-fraction × entities)")
	f.Float64Var(&cfg.RootFraction, "root-fraction", cfg.RootFraction, "inference roots as a share of entities when --roots is 0 (the paper's 0.1 examines as many roots as a tenth of the entities, chained through the candidates in an order no seed moves, a hash of their names; 1 examines every candidate, but the selection then leans harder on the scorer's ranking: on planted deletions it found fewer)")
	f.Float64Var(&cfg.Threshold, "threshold", cfg.Threshold, "least missingness score θ")
	f.Float64Var(&cfg.MaxJaccard, "max-jaccard", cfg.MaxJaccard, "skip subgraphs overlapping a selected one by more than this node-Jaccard")
	f.IntVar(&cfg.Epochs, "epochs", cfg.Epochs, "most training epochs")
	f.BoolVar(&cfg.RootCentred, "root-centred", cfg.RootCentred, "corrupt training views at their root: its own facts, entities next to it (false: anywhere, as the paper)")
	f.StringVar(&cfg.NodeFeatures, "node-features", cfg.NodeFeatures, "scorer input: auto (evidence with the built-in embedder, else both), evidence (text-vs-graph statistics per entity), embedding (the paper's name embeddings) or both")
	f.Int64Var(&cfg.Seed, "seed", cfg.Seed, "random seed of the scorer's training (its training views, weights and dropout), not of the data sample (--split-seed)")
	f.Int64Var(&cfg.SplitSeed, "split-seed", cfg.SplitSeed, "random seed of the data sample: the scorer's test region and views, its training and validation regions and validation views (shared by the ensemble's members; fixed apart from --seed, so that seeds vary training alone); the inference roots and walks follow no seed")
	f.Int64Var(&cfg.SplitSeed, "test-seed", cfg.SplitSeed, "old name of --split-seed")
	_ = f.MarkDeprecated("test-seed", "use --split-seed, which now also fixes the training and validation regions")
	f.IntVar(&cfg.Ensemble, "ensemble", cfg.Ensemble, "train this many missingness scorers in lockstep, concurrently (on one split, each with its own seed for training views, weights and dropout, one early stopping on their mean validation ROC-AUC) and select by their mean score")
	f.BoolVar(&cfg.Calibrate, "calibrate", cfg.Calibrate, "Platt-scale the scorers' logits (one scaling fitted on the members' validation logits, pooled) so that θ applies to a calibrated probability")
	f.IntVar(&cfg.MinTestEntities, "min-test-entities", cfg.MinTestEntities, "the scorer's test region holds at least this many entities (at most a third of the walk graph)")
	before := map[string]bool{}
	f.VisitAll(func(fl *pflag.Flag) { before[fl.Name] = true })
	lf.register(cmd)
	lf.registerOpen(cmd)
	f.VisitAll(func(fl *pflag.Flag) { connection[fl.Name] = !before[fl.Name] })
	limitChoices(cmd, "node-features", augment.FeaturesAuto, augment.FeaturesEvidence, augment.FeaturesEmbedding, augment.FeaturesBoth)
	limitFlag(cmd, "budget", flagRange{lo: 0, hi: 1e6, loOpen: true})
	limitFlag(cmd, "roots", atLeast0(1e7))
	limitFlag(cmd, "root-fraction", flagRange{lo: 0, hi: 1, loOpen: true})
	limitFlag(cmd, "threshold", unit)
	limitFlag(cmd, "max-jaccard", unit)
	limitFlag(cmd, "epochs", atLeast1(1e5))
	limitFlag(cmd, "seed", anyInt64)
	limitFlag(cmd, "split-seed", anyInt64)
	limitFlag(cmd, "test-seed", anyInt64)
	limitFlag(cmd, "ensemble", atLeast1(64))
	limitFlag(cmd, "min-test-entities", atLeast0(1e7))
	limitFlag(cmd, "planted", atLeast0(1e6))
	return cmd
}

// emptySelectionAdvice says what to change when no subgraph was selected.
func emptySelectionAdvice(rep *augment.Report, cfg augment.Config) string {
	switch {
	case rep.Sampled == 0:
		return "no subgraph could be sampled from the inference roots: raise --roots, or build a denser graph (more facts per entity)"
	case rep.AboveTheta == 0 && len(rep.ScoreQuantiles) == 5:
		return fmt.Sprintf("no missingness score reached θ = %.3g (the highest was %.3f, the median %.3f): lower --threshold below %.3f, try another --seed (training) or --split-seed (the data sample), or use --selector random",
			cfg.Threshold, rep.ScoreQuantiles[4], rep.ScoreQuantiles[2], rep.ScoreQuantiles[4])
	default:
		return "every candidate overlapped a selected one too much: raise --max-jaccard or --budget"
	}
}

func printAugment(w io.Writer, rep *augment.Report, out string, recovered []augment.GoldFact, goldN int) {
	tr := rep.Training
	if !rep.Plan || tr.Epochs > 0 || tr.Reused {
		how := fmt.Sprintf("trained %d epochs (best %d)", tr.Epochs, tr.BestEpoch)
		if tr.Reused {
			how = "reused checkpoint"
		}
		if rep.Selector == "gnn" {
			if n := len(tr.Members); n > 1 {
				how = fmt.Sprintf("ensemble of %d in lockstep, %s", n, how)
			}
			auc := fmt.Sprintf("%.3f", tr.TestAUC)
			if tr.TestAUCSE > 0 {
				auc += fmt.Sprintf(" ± %.3f", tr.TestAUCSE)
			}
			lead := ""
			if tr.ShortcutGapSE > 0 {
				lead = fmt.Sprintf(" (lead %+.3f ± %.3f, paired over the test roots)", tr.TestAUC-tr.BestBaseline, tr.ShortcutGapSE)
			}
			fmt.Fprintf(w, "scorer: %s; test split (no entity shared with training): ROC-AUC %s, ranking %.3f, accuracy %.3f; best shortcut baseline ROC-AUC %.3f%s\n",
				how, auc, tr.TestRanking, tr.TestAccuracy, tr.BestBaseline, lead)
			if tr.Doubt != "" {
				fmt.Fprintf(w, "note: %s\n", tr.Doubt)
			}
			if len(tr.Calibration) > 0 {
				fmt.Fprintf(w, "calibration (test split, 10-bin expected calibration error): %.3f uncalibrated, %.3f calibrated\n", tr.TestECE, tr.TestECECalibrated)
			}
			if tr.CalibrationRefused != "" {
				fmt.Fprintf(w, "calibration not applied: %s\n", tr.CalibrationRefused)
			}
		}
	}
	fmt.Fprintf(w, "selection (%s): %d root candidates, %d roots, %d subgraphs sampled, %d ≥ θ, %d selected (budget %d)\n",
		rep.Selector, rep.Candidates, rep.Roots, rep.Sampled, rep.AboveTheta, len(rep.Selected), rep.Budget)
	if q := rep.ScoreQuantiles; len(q) == 5 {
		fmt.Fprintf(w, "missingness scores: min %.3f, quartiles %.3f / %.3f / %.3f, max %.3f\n", q[0], q[1], q[2], q[3], q[4])
	}
	if !rep.Plan && len(rep.Selected) == 0 {
		fmt.Fprintf(w, "nothing selected: no subgraph to complete, so no run was recorded and %s is unchanged\n", out)
		fmt.Fprintf(w, "what to change: %s\n", emptySelectionAdvice(rep, augment.Config{Threshold: rep.Threshold}))
		return
	}
	if rep.Plan {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "score\troot\tentities\tknown triples\tevidence chunks")
		for _, s := range rep.Selected {
			fmt.Fprintf(tw, "%.3f\t%s\t%d\t%d\t%d\n", s.Score, s.Root, len(s.Entities), len(s.Known), len(s.Chunks))
		}
		tw.Flush()
		fmt.Fprintf(w, "plan: %d completion calls, %d prompt tokens (cl100k_base)\n", rep.Calls, rep.PlanTokens)
		return
	}
	fmt.Fprintf(w, "completion (%s): %d calls (%d failed), %d triples proposed, %d accepted\n",
		rep.Completer, rep.Calls, rep.FailedCalls, rep.Proposed, rep.Accepted)
	if rep.FailedCalls > 0 {
		fmt.Fprintf(w, "failed calls by kind: %s; last: %s\n", augment.FormatCounts(rep.FailedByKind), rep.LastFailure)
	}
	if len(rep.Rejections) > 0 {
		var reasons []string
		for r, n := range rep.Rejections {
			reasons = append(reasons, fmt.Sprintf("%s %d", r, n))
		}
		sort.Strings(reasons)
		fmt.Fprintf(w, "rejected: %s\n", strings.Join(reasons, ", "))
	}
	fmt.Fprintf(w, "added (Table 1): %d nodes, %d edges, %d triples (%d citing ≥ 2 chunks), %d hyperedges\n",
		rep.Added.Nodes, rep.Added.Edges, rep.Added.Triples, rep.Added.CrossChunk, rep.Added.Hyperedges)
	fmt.Fprintf(w, "time: %s\n", formatStages(rep.Seconds, []string{"graph", "train", "sample", "score", "select", "complete", "merge"}))
	for i, f := range rep.Facts {
		if i == 15 {
			fmt.Fprintf(w, "  … %d more in %s.%s.json\n", len(rep.Facts)-15, out, rep.Run)
			break
		}
		fmt.Fprintf(w, "  + (%s) [%d chunks]\n", strings.Join(f.Triple, " | "), len(f.Chunks))
	}
	if goldN > 0 {
		fmt.Fprintf(w, "gold cross-chunk facts recovered: %d of %d", len(recovered), goldN)
		for _, g := range recovered {
			fmt.Fprintf(w, " %s", g.ID)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "run %s → %s (undo: graphloom augment --index %s --rollback %s)\n", rep.Run, out, out, rep.Run)
	_ = os.Stdout
}
