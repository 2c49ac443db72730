package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/gretrieve"
	"github.com/graphloom/graphloom/retrieve"
)

func newQueryCmd() *cobra.Command {
	cfg := retrieve.DefaultConfig()
	rc := retrieve.RunConfig{TopK: 5, AnswerTopK: 5, BatchSize: 32}
	var lf llmFlags
	var path, questions, retriever, out, compare, dataset string
	var asJSON, noRecognition, force bool
	var cf cageFlags
	var gf gretrieverFlags
	cmd := &cobra.Command{
		Use:   `query --index INDEX ("a question" | --questions Q.jsonl --out run.jsonl)`,
		Short: "Retrieve passages for a question or a file of questions",
		Long: `Retrieve passages with one of the retrievers: ` + strings.Join(retrieve.Names, ", ") + `.
With --questions, every line {"id","question"} gives one JSONL line in --out:
{"id","question","retriever","passages":[{"chunk_id","title","text","score"}],"facts":[[s,p,o]]}
(plus "answer" with --answer, which needs an LLM; the gretriever retriever generates
its answer with the G-Retriever model of --model over the frozen LM of --lm).`,
		Example: `  graphloom query --index harbour.gl --retriever ppr "Who bought the ship that was wrecked on Gull Rock?"
  graphloom query --index harbour.gl --retriever bm25 --top-k 3 --json "Where was Tomas Brell born?"
  graphloom query --index harbour.gl --questions questions.jsonl --out run.jsonl --retriever hyperppr
  graphloom query --index harbour.gl --retriever gretriever --model gr/ --lm LM_DIR --answer "Where was Tomas Brell born?"
  graphloom query --index harbour.gl --retriever ppr --compare bm25 --dataset examples/harbour/questions.json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "index"); err != nil {
				return err
			}
			liveIndexGC()
			if compare != "" {
				if dataset == "" || len(args) > 0 || questions != "" {
					return usageError{fmt.Errorf("query: --compare needs --dataset and no question or --questions")}
				}
			} else if (len(args) == 1) == (questions != "") {
				return usageError{fmt.Errorf("query: give either a question or --questions")}
			}
			if len(args) == 1 {
				if err := retrieve.CheckQuestion(args[0]); err != nil {
					return usageError{fmt.Errorf("query: %w", err)}
				}
			}
			if questions != "" && out == "" {
				return usageError{fmt.Errorf("query: --questions needs --out")}
			}
			if err := guardOutput(cmd, outSpec{name: "--out", path: out, kind: outFile, what: "run file", force: force, is: jsonlWithKeys("id", "retriever", "passages")},
				append(append([]inSpec{{"--index", path}, {"--questions", questions}, {"--dataset", dataset}}, cf.inputs(path)...), append(gf.inputs(), lf.inputs()...)...)...); err != nil {
				return err
			}
			ix, err := graphio.ReadFileWith(path, queryReadOptions(retriever, compare, cf.active()))
			if err != nil {
				return err
			}
			api, err := lf.apiEmbedder(cmd.Context())
			if err != nil {
				return err
			}
			chat, err := lf.optionalChat()
			if err != nil {
				return err
			}
			gen := retriever == gretrieve.Name // generates its own answers
			if rc.Answer && chat == nil && !gen {
				return usageError{fmt.Errorf("query: --answer needs an LLM (GRAPHLOOM_LLM_BASE_URL, GRAPHLOOM_LLM_MODEL)")}
			}
			cfg.RecognitionMemory = !noRecognition
			if gen {
				if err := gf.trainedRetrieval(cmd, &cfg); err != nil {
					return err
				}
			}
			s, err := retrieve.Open(ix, api, cfg, chat)
			if err != nil {
				return err
			}
			warnSearcher(cmd, s)
			var r retrieve.Retriever
			if gen {
				gr, err := gf.open(s, ix, cmd.ErrOrStderr(), &lf)
				if err != nil {
					return err
				}
				gr.Answer, rc.Answer = rc.Answer, false
				r = gr
			} else if r, err = s.Retriever(retriever); err != nil {
				return usageError{err}
			}
			if err := cf.validate(); err != nil {
				return err
			}
			if cf.active() {
				eng, err := lf.engine()
				if err != nil {
					return err
				}
				if r, _, err = cf.wrap(eng, path, ix, api, r); err != nil {
					return err
				}
			}
			defer lf.report(cmd.ErrOrStderr())
			if compare != "" {
				o, err := s.Retriever(compare)
				if err != nil {
					return usageError{err}
				}
				ds, err := eval.ReadDataset(dataset)
				if err != nil {
					return err
				}
				warnDataset(cmd, ds)
				wins, err := crossChunkWins(cmd.Context(), r, o, ds, rc.TopK)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), wins)
				}
				multi := 0
				for _, ex := range ds.Examples {
					if len(ex.Gold) >= 2 {
						multi++
					}
				}
				printWins(cmd.OutOrStdout(), wins, retriever, compare, rc.TopK, multi)
				return nil
			}
			var qs []retrieve.Question
			if questions != "" {
				if qs, err = retrieve.ReadQuestions(questions); err != nil {
					return usageError{err}
				}
			} else {
				qs = []retrieve.Question{{ID: "q1", Question: args[0]}}
			}
			progress, finish := bar(cmd, "query")
			lines, err := retrieve.Run(cmd.Context(), r, chat, qs, rc, progress)
			finish()
			if err != nil {
				return err
			}
			if questions != "" {
				if err := graphio.AtomicWrite(out, func(w io.Writer) error { return retrieve.WriteRun(w, lines) }); err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), map[string]any{"questions": len(lines), "out": out, "retriever": retriever, "top_k": rc.TopK})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d questions → %s (%s, top %d)\n", len(lines), out, retriever, rc.TopK)
				return nil
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), lines[0])
			}
			printRunLine(cmd.OutOrStdout(), lines[0])
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&path, "index", "", "index file")
	f.StringVar(&questions, "questions", "", `JSONL file of {"id","question"}`)
	f.StringVar(&out, "out", "", "run file to write (JSONL)")
	f.StringVar(&retriever, "retriever", "ppr", "retriever: "+strings.Join(retrieve.Names, ", ")+", or gretriever (a trained G-Retriever: --model, --lm)")
	f.StringVar(&compare, "compare", "", "with --dataset: list the questions needing several passages whose gold passages are all in --retriever's top k but not in this retriever's")
	f.StringVar(&dataset, "dataset", "", "QA dataset with gold passages, for --compare")
	f.IntVar(&rc.TopK, "top-k", rc.TopK, "passages per question")
	f.BoolVar(&rc.Answer, "answer", false, "answer with the LLM from the top 5 passages (HippoRAG's reader)")
	f.BoolVar(&noRecognition, "no-recognition", false, "skip HippoRAG 2's LLM recognition-memory filter even when an LLM is configured")
	f.BoolVar(&asJSON, "json", false, "print the result of a single question (or, with --questions, what was written) as JSON")
	addForce(cmd, &force)
	registerRetrievalFlags(cmd, &cfg)
	cf.register(cmd, false)
	gf.register(cmd)
	lf.register(cmd)
	lf.registerOpen(cmd)
	limitFlag(cmd, "top-k", atLeast1(1e5))
	return cmd
}

func printRunLine(w io.Writer, l retrieve.RunLine) {
	fmt.Fprintf(w, "Q: %s  [%s]\n", l.Question, l.Retriever)
	if len(l.Facts) > 0 {
		fmt.Fprintln(w, "facts:")
		for _, f := range l.Facts {
			fmt.Fprintf(w, "  (%s)\n", strings.Join(f, " | "))
		}
	}
	if l.Subgraph != "" {
		fmt.Fprintf(w, "subgraph:\n%s\n", strings.TrimRight(l.Subgraph, "\n"))
	}
	for i, p := range l.Passages {
		text := p.Text
		if r := []rune(text); len(r) > 300 { // by character: a byte cut can split one
			text = string(r[:300]) + "…"
		}
		fmt.Fprintf(w, "%d. %s  (%.4f)\n   %s\n", i+1, p.Title, p.Score, strings.ReplaceAll(text, "\n", " "))
	}
	if l.Answer != nil {
		fmt.Fprintf(w, "Answer: %s\n", *l.Answer)
	}
	if l.AnswerError != "" {
		fmt.Fprintf(w, "(no answer: %s)\n", l.AnswerError)
	}
}

// queryReadOptions maps the index (a query process reads one index and exits) and
// reads only the embedding matrices the retrievers of a one-off query need
// (retrieve.EmbeddingKinds); every matrix when a reranker or an unknown retriever
// (gretriever) is involved.
func queryReadOptions(retriever, compare string, rerank bool) graphio.ReadOptions {
	if rerank {
		return graphio.ReadOptions{Map: true}
	}
	need := map[graphio.NodeKind]bool{}
	for _, name := range []string{retriever, compare} {
		if name == "" {
			continue
		}
		kinds, ok := retrieve.EmbeddingKinds(name)
		if !ok {
			return graphio.ReadOptions{Map: true}
		}
		for _, k := range kinds {
			need[k] = true
		}
	}
	return graphio.ReadOptions{Map: true, Embeddings: func(k graphio.NodeKind) bool { return need[k] }}
}
