package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/augment"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/synth"
)

func newSynthCmd() *cobra.Command {
	cfg := synth.DefaultConfig()
	var lf llmFlags
	var indexPath, out, generator string
	var plan, asJSON, force, allowPartial bool
	cmd := &cobra.Command{
		Use:   "synth --index INDEX --out QA.jsonl [--generator llm|template] [--plan]",
		Short: "Generate synthetic QA from the graph (SelfGraphRAG's SynthGen)",
		Long: `Generate question–answer pairs from the knowledge graph, as SelfGraphRAG's SynthGen
does: "hop" questions over two-fact paths v_a –r1→ v_b –r2→ v_c whose answer needs both
facts (a path whose ends one fact links is left out, unless --adjacent-ends), and "sum" questions about a node from three incoming facts of distinct
in-neighbours. Each item keeps its type, nodes, facts (hyper items: hyperedge ids),
chunk ids and its verbalised evidence ("v_i [r] v_j" lines, or the hyperedges' texts). Pairs whose answer is not in the evidence, whose
question states the answer, or that repeat a question are rejected and counted.

--generator llm (the paper's; the default when an LLM is configured) asks the LLM,
through the on-disk cache; --plan prints the calls and prompt tokens it would spend
and sends nothing. --generator template writes questions from relation templates,
offline — graphloom's own stand-in, not the paper's method.

--hyperedges asks about the hypergraph instead (HyperGraphRAG's n-ary facts, for a
corpus with few binary facts): "hyper" questions about a node from --neighbours of
its hyperedges, each with one other member named; the evidence is the hyperedges'
texts. graphloom's extension, not in SelfGraphRAG.`,
		Example: `  graphloom synth --index harbour.gl --out qa.jsonl --generator template
  graphloom synth --index harbour.gl --out qa.jsonl --plan
  GRAPHLOOM_LLM_BASE_URL=http://localhost:11434/v1 GRAPHLOOM_LLM_MODEL=llama3.1 \
    graphloom synth --index harbour.gl --out qa.jsonl --max-hop 200 --max-sum 200`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "index"); err != nil {
				return err
			}
			if !plan {
				if err := requireFlags(cmd, "out"); err != nil {
					return err
				}
			}
			if err := guardOutput(cmd, outSpec{name: "--out", path: out, kind: outFile, what: "synthetic-item file", force: force, is: jsonlWithKeys("id", "type", "generator", "nodes", "chunk_ids", "evidence")},
				inSpec{"--index", indexPath}); err != nil {
				return err
			}
			if !cmd.Flags().Changed("generator") && !lf.chatConfigured() && !plan {
				generator = "template"
			}
			if generator != "llm" && generator != "template" {
				return usageError{fmt.Errorf("synth: --generator %q: want llm or template", generator)}
			}
			ix, err := graphio.ReadFile(indexPath)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if plan {
				tok, err := ingest.NewTokenizer("cl100k_base")
				if err != nil {
					return err
				}
				rep := synth.Plan(ix, cfg, tok.Count)
				if asJSON {
					return printJSON(w, rep)
				}
				if cfg.Hyperedges {
					fmt.Fprintf(w, "plan: %d LLM calls (%d hyper; %d neighbourhoods enumerated), %d prompt tokens (cl100k); nothing sent\n",
						rep.Calls, rep.Asked[synth.TypeHyper], rep.Candidates[synth.TypeHyper], rep.PlanTokens)
					return nil
				}
				fmt.Fprintf(w, "plan: %d LLM calls (%d hop, %d sum; %d paths and %d neighbourhoods enumerated), %d prompt tokens (cl100k); nothing sent\n",
					rep.Calls, rep.Asked[synth.TypeHop], rep.Asked[synth.TypeSum], rep.Candidates[synth.TypeHop], rep.Candidates[synth.TypeSum], rep.PlanTokens)
				return nil
			}
			gen, err := lf.synthGenerator(generator)
			if err != nil {
				return err
			}
			defer lf.report(cmd.ErrOrStderr())
			progress, finish := barWith(cmd, "synth", lf.live)
			items, rep, err := synth.Run(cmd.Context(), ix, gen, cfg, progress)
			finish()
			if err != nil {
				return err
			}
			if err := rep.LostCalls("not writing a file without their items"); err != nil && !allowPartial {
				return fmt.Errorf("synth: %w", err)
			}
			if err := graphio.AtomicWrite(out, func(w io.Writer) error {
				enc := json.NewEncoder(w)
				for _, it := range items {
					if err := enc.Encode(it); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				return err
			}
			if asJSON {
				return printJSON(w, map[string]any{"out": out, "report": rep})
			}
			if cfg.Hyperedges {
				fmt.Fprintf(w, "%d items → %s (%s): hyper %d of %d asked", len(items), out, rep.Generator, rep.Items[synth.TypeHyper], rep.Asked[synth.TypeHyper])
			} else {
				fmt.Fprintf(w, "%d items → %s (%s): hop %d of %d asked, sum %d of %d asked",
					len(items), out, rep.Generator, rep.Items[synth.TypeHop], rep.Asked[synth.TypeHop], rep.Items[synth.TypeSum], rep.Asked[synth.TypeSum])
			}
			if len(rep.Rejected) > 0 {
				fmt.Fprintf(w, "; rejected: %s", augment.FormatCounts(rep.Rejected))
			}
			fmt.Fprintln(w)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&indexPath, "index", "", "index file")
	f.StringVar(&out, "out", "", "JSONL file of synthetic items to write")
	f.StringVar(&generator, "generator", "llm", "llm (the paper's) or template (offline; the default without an LLM)")
	f.BoolVar(&plan, "plan", false, "print the LLM calls and prompt tokens the llm generator would spend; send nothing")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&allowPartial, "allow-partial", false, "write the items even if some generation calls got no answer")
	addForce(cmd, &force)
	f.IntVar(&cfg.PathLength, "path-length", cfg.PathLength, "facts per hop path (SelfGraphRAG: 2)")
	f.BoolVar(&cfg.AdjacentEnds, "adjacent-ends", cfg.AdjacentEnds, "also ask hop paths whose ends a fact links (one fact answers them; SelfGraphRAG leaves them out, calibrate keeps them)")
	f.IntVar(&cfg.SumNeighbours, "neighbours", cfg.SumNeighbours, "in-neighbours per sum item (SelfGraphRAG: 3)")
	f.IntVar(&cfg.MaxHop, "max-hop", cfg.MaxHop, "most hop items asked for (0 = all; a seeded sample beyond)")
	f.IntVar(&cfg.MaxSum, "max-sum", cfg.MaxSum, "most sum items asked for (0 = all; a seeded sample beyond)")
	f.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of every sample")
	f.BoolVar(&cfg.Hyperedges, "hyperedges", false, "ask about the hyperedges (n-ary facts) instead of the facts: hyper items, --neighbours hyperedges each, at most --max-sum")
	lf.register(cmd)
	limitFlag(cmd, "path-length", atLeast1(6))
	limitFlag(cmd, "neighbours", atLeast1(50))
	limitFlag(cmd, "max-hop", atLeast0(1e7))
	limitFlag(cmd, "max-sum", atLeast0(1e7))
	return cmd
}

// synthGenerator returns SynthGen's generator by name: "llm" (the paper's, through the
// configured LLM) or "template" (offline).
func (f *llmFlags) synthGenerator(name string) (synth.Generator, error) {
	if name != "llm" {
		return synth.Template{}, nil
	}
	c, err := f.chat()
	if err != nil {
		return nil, err
	}
	return &synth.LLMGenerator{C: c}, nil
}
