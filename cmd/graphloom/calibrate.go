package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/calibrate"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

func newCalibrateCmd() *cobra.Command {
	cfg := calibrate.DefaultConfig()
	rcfg := retrieve.DefaultConfig()
	var lf llmFlags
	var path, out, generator, retrievers string
	var asJSON, wait, force, plan bool
	cmd := &cobra.Command{
		Use:   "calibrate --index INDEX [--out NEW] [--generator template|llm] [--plan]",
		Short: "Fit the graph retrievers' final ranking on the corpus's own synthetic questions",
		Long: `Fit how ppr and hyperppr rank passages to this corpus, without labelled data:
synthetic questions are generated from the index's graph (SelfGraphRAG's two-hop paths
and in-neighbour summaries, and summaries from hyperedges when the facts give too few;
offline templates, or the LLM with --generator llm), split
by evidence chunk into fitting and validation questions, and on the fitting ones
graphloom fits the final PPR/BM25 fusion (grid search) and a ranker over per-passage
features (BM25, PPR mass, dense score, their ranks, the uncalibrated rank,
question-entity and linked-fact hits, title match; length is reported, not fitted),
linear and with a hidden layer that also sees the question's own features, trained
with RankNet's pairwise loss. The variant that does best on the
held-out questions, of those that beat the uncalibrated defaults there (and, a
ranker, every feature alone), is stored in the index and used by query, eval and
serve; if none does, the defaults stay (stats says which). --calibration off on those commands ignores it. Only the index is read.

With --generator llm every question is one LLM call, through the on-disk cache (a
rerun repeats none); at most 1.25 × the questions still wanted are asked per question
shape, and --plan prints the calls and prompt tokens and sends nothing.`,
		Example: `  graphloom calibrate --index harbour.gl
  graphloom calibrate --index harbour.gl --generator llm --plan
  graphloom calibrate --index harbour.gl --out harbour-calibrated.gl --json
  graphloom stats --index harbour.gl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			liveIndexGC()
			if err := requireFlags(cmd, "index"); err != nil {
				return err
			}
			if generator != "template" && generator != "llm" {
				return usageError{fmt.Errorf("calibrate: --generator %q: want template or llm", generator)}
			}
			cfg.Retrievers = nil
			for _, r := range strings.Split(retrievers, ",") {
				if r = strings.TrimSpace(r); r != "" {
					cfg.Retrievers = append(cfg.Retrievers, r)
				}
			}
			if err := cfg.Validate(); err != nil {
				return usageError{err}
			}
			if plan {
				return printCalibrationPlan(cmd, path, cfg, generator, asJSON)
			}
			if out == "" {
				out = path
			}
			if err := guardOutput(cmd, outSpec{name: "--out", path: out, kind: outIndex, what: "index file", force: force, inPlace: "--index"},
				inSpec{"--index", path}); err != nil {
				return err
			}
			unlock, err := lockIndex(cmd, out, wait)
			if err != nil {
				return err
			}
			defer unlock()
			ix, err := graphio.ReadFile(path)
			if err != nil {
				return err
			}
			api, err := lf.apiEmbedder(cmd.Context())
			if err != nil {
				return err
			}
			rcfg.Calibration = retrieve.CalibrationOff
			rcfg.RecognitionMemory = false // offline, as eval --no-recognition: no LLM call per question
			s, err := retrieve.Open(ix, api, rcfg, nil)
			if err != nil {
				return err
			}
			gen, err := lf.synthGenerator(generator)
			if err != nil {
				return err
			}
			defer lf.report(cmd.ErrOrStderr())
			eng, err := lf.engine()
			if err != nil {
				return err
			}
			logf := func(string) {}
			if !asJSON {
				logf = func(s string) { fmt.Fprintln(cmd.ErrOrStderr(), "calibrate:", s) }
			}
			// One bar per question shape: each counts its own calls from 0.
			progress, finish := func(int, int) {}, func() {}
			if generator == "llm" {
				var bar func(int, int)
				last := -1
				progress = func(done, total int) {
					if bar == nil || done < last {
						finish()
						bar, finish = barWith(cmd, "calibrate: questions", lf.live)
					}
					last = done
					bar(done, total)
				}
			}
			defer func() { finish() }()
			cal, rep, err := calibrate.Run(cmd.Context(), s, gen, eng, cfg, logf, progress)
			if err != nil {
				return fmt.Errorf("calibrate: %s: %w", path, err)
			}
			if cal.Report, err = json.Marshal(rep); err != nil {
				return err
			}
			if err := retrieve.WriteCalibration(ix, cal); err != nil {
				return err
			}
			ix.Meta.Graphloom = buildVersion()
			if err := graphio.WriteFile(out, ix); err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"index": path, "out": out, "report": rep})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "calibrated %s → %s\n", path, out)
			printCalibration(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&path, "index", "", "index file")
	f.StringVar(&out, "out", "", "write the calibrated index here instead of replacing --index")
	f.StringVar(&generator, "generator", "template", "synthetic questions from relation templates (offline) or the LLM (SelfGraphRAG's SynthGen)")
	f.StringVar(&retrievers, "retrievers", strings.Join(cfg.Retrievers, ","), "graph retrievers to calibrate")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the split and of the rankers' starting weights")
	f.Uint64Var(&cfg.Synth.Seed, "synth-seed", cfg.Synth.Seed, "seed of the synthetic question sample")
	f.IntVar(&cfg.MaxQuestions, "max-questions", cfg.MaxQuestions, "most synthetic questions kept")
	f.IntVar(&cfg.Folds, "folds", cfg.Folds, "cross-validation folds (split by evidence chunk)")
	f.IntVar(&cfg.Repeats, "repeats", cfg.Repeats, "cross-validation repeats (chunks dealt to folds anew each time)")
	f.IntVar(&cfg.K, "k", cfg.K, "recall cut-off the fitting and the selection compare (R@k)")
	f.IntVar(&cfg.Train.TotalSteps, "steps", cfg.Train.TotalSteps, "training steps of each ranker (each over every fitting question's candidate pairs)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&plan, "plan", false, "print the LLM calls and prompt tokens the llm generator would spend; send nothing")
	f.BoolVar(&cfg.AllowPartial, "allow-partial", false, "calibrate even if some of the llm generator's calls got no answer")
	f.BoolVar(&wait, "wait", false, "if another graphloom process is writing the index, wait for it instead of failing")
	addForce(cmd, &force)
	lf.register(cmd)
	limitFlag(cmd, "max-questions", atLeast1(1e6))
	limitFlag(cmd, "folds", atLeast1(20))
	limitFlag(cmd, "repeats", atLeast1(100))
	limitFlag(cmd, "steps", atLeast1(1e6))
	limitFlag(cmd, "k", atLeast1(1e3))
	return cmd
}

// printCalibrationPlan prints what calibrate would ask the LLM generator, sending
// nothing (with the template generator: what --generator llm would ask).
func printCalibrationPlan(cmd *cobra.Command, path string, cfg calibrate.Config, generator string, asJSON bool) error {
	ix, err := graphio.ReadFile(path)
	if err != nil {
		return err
	}
	tok, err := ingest.NewTokenizer("cl100k_base")
	if err != nil {
		return err
	}
	plan := calibrate.Plan(ix, cfg, tok.Count)
	w := cmd.OutOrStdout()
	if asJSON {
		var calls, tokens []int
		for _, p := range plan {
			calls, tokens = append(calls, p.Calls), append(tokens, p.Tokens)
		}
		return printJSON(w, map[string]any{"index": path, "plan": true, "generator": generator, "shapes": plan,
			"llm_calls_per_shape": calls, "prompt_tokens_per_shape": tokens, "max_questions": cfg.MaxQuestions, "min_questions": cfg.MinQuestions})
	}
	if generator != "llm" {
		fmt.Fprintln(w, "the template generator makes no LLM call; with --generator llm:")
	}
	// The first shape that has candidates is always asked; the other fact shapes
	// while questions are short of --max-questions, the hypergraph's while fewer than
	// MinQuestions would be kept.
	first := slices.IndexFunc(plan, func(p calibrate.ShapePlan) bool { return p.Calls > 0 })
	if first < 0 {
		fmt.Fprintln(w, "plan: the index has no facts or hyperedges to ask about: no LLM call; nothing sent")
		return nil
	}
	total, totalTok := 0, 0
	var facts, hyper []string
	for i, p := range plan {
		total, totalTok = total+p.Calls, totalTok+p.Tokens
		if i <= first || p.Calls == 0 {
			continue
		}
		if p.Hyperedges {
			hyper = append(hyper, fmt.Sprintf("%d (%s)", p.Calls, p.Shape))
		} else {
			facts = append(facts, fmt.Sprintf("%d (%s)", p.Calls, p.Shape))
		}
	}
	fmt.Fprintf(w, "plan: %d LLM calls, %d prompt tokens (cl100k) for the first question shape (%s)", plan[first].Calls, plan[first].Tokens, plan[first].Shape)
	if len(facts)+len(hyper) > 0 {
		fmt.Fprintf(w, "; at most %d calls, %d tokens with the others —", total, totalTok)
		if len(facts) > 0 {
			fmt.Fprintf(w, " while fewer than %d questions have been generated: %s", cfg.MaxQuestions, strings.Join(facts, ", "))
			if len(hyper) > 0 {
				fmt.Fprint(w, ";")
			}
		}
		if len(hyper) > 0 {
			fmt.Fprintf(w, " while fewer than %d questions would be kept: %s", cfg.MinQuestions, strings.Join(hyper, ", "))
		}
	}
	fmt.Fprintln(w, "; nothing sent")
	return nil
}

// printCalibration renders a calibration report for people.
func printCalibration(w io.Writer, rep *calibrate.Report) {
	hyper := ""
	if rep.FromHyperedges > 0 {
		hyper = fmt.Sprintf(" (%d from hyperedges: the facts gave too few)", rep.FromHyperedges)
	}
	fmt.Fprintf(w, "synthetic questions (%s): %d generated%s, %d kept (%d multi-passage), %d-fold cross-validation split by evidence chunk",
		rep.Generator, rep.Generated, hyper, rep.Questions, rep.Multi, rep.Folds)
	if rep.Repeats > 1 {
		fmt.Fprintf(w, ", %d deals", rep.Repeats)
	}
	fmt.Fprintln(w)
	if rep.TooSmall != "" {
		fmt.Fprintf(w, "not calibrated: too small — %s\n", rep.TooSmall)
	}
	for _, rf := range rep.Fits {
		fmt.Fprintf(w, "%s: uses %s — %s\n", rf.Retriever, rf.Use, rf.Why)
		if rf.Validation == nil {
			continue
		}
		fmt.Fprintf(w, "  R@%d cross-validated:", rep.K)
		for _, v := range retrieve.Variants {
			fmt.Fprintf(w, " %s %.1f", v, rf.Validation[v])
		}
		fmt.Fprintf(w, " (fusion %s μ=%.2f; evidence in pools %.1f%%)\n", rf.Fusion.Kind, rf.Fusion.Mu, rf.Coverage)
		fmt.Fprintf(w, "  features alone (R@%d):", rep.K)
		for _, n := range byValue(rf.Features) {
			fmt.Fprintf(w, " %s %.1f", n, rf.Features[n])
		}
		fmt.Fprintln(w)
		if len(rf.ChosenFeatures) > 0 {
			fmt.Fprintf(w, "  the feature best on each fold's fitting questions (R@%d): %.1f (%s)\n", rep.K, rf.Chosen, foldCounts(rf.ChosenFeatures))
		}
	}
	fmt.Fprintf(w, "%.1f s\n", rep.Seconds)
}

// byValue returns the feature names of m, largest value first; ties keep
// retrieve.FeatureNames order, as calibrate's bestAlone does, so the feature printed
// first is the one its reason names (names outside it come last, by name).
func byValue[V int | float64](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for _, n := range retrieve.FeatureNames {
		if _, ok := m[n]; ok {
			names = append(names, n)
		}
	}
	var other []string
	for n := range m {
		if !slices.Contains(retrieve.FeatureNames, n) {
			other = append(other, n)
		}
	}
	slices.Sort(other)
	names = append(names, other...)
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(m[b], m[a]) })
	return names
}

// foldCounts renders how many folds chose each feature, most first ("graph in 12
// folds, dense in 3 folds").
func foldCounts(m map[string]int) string {
	names := byValue(m)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s in %d", n, m[n])
		if m[n] == 1 {
			parts[i] += " fold"
		} else {
			parts[i] += " folds"
		}
	}
	return strings.Join(parts, ", ")
}

// warnSearcher prints to stderr that the index's stored calibration, which s applies,
// was fitted on an earlier generation of the index.
func warnSearcher(cmd *cobra.Command, s *retrieve.Searcher) {
	if cal := s.Calibration(); cal != nil {
		if w := calibrationStale(s.Index(), cal); w != "" {
			fmt.Fprintln(cmd.ErrOrStderr(), "graphloom:", w)
		}
	}
}

// calibrationStale is kg.StaleWarning for a stored calibration, or its warning that
// an earlier calibration method fitted it.
func calibrationStale(ix *graphio.Index, cal *retrieve.Calibration) string {
	return cal.Warning(func(gen string) string {
		return kg.StaleWarning(ix, gen, "the stored calibration (`graphloom calibrate` fits it again)")
	})
}
