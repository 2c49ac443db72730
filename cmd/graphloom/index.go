package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
)

func newIndexCmd() *cobra.Command {
	cfg := ingest.DefaultConfig()
	kcfg := kg.DefaultConfig()
	var corpus, out, extractor, embedder, fromDataset string
	var asJSON, noGraph bool
	var lf llmFlags
	xcfg := extract.DefaultLLMConfig()
	cmd := &cobra.Command{
		Use:   "index (--corpus PATH | --corpus-from-dataset FILE) --out INDEX",
		Short: "Ingest a corpus, chunk it and write an index",
		Long: `Ingest a corpus — a JSON array of {"title","text"}, JSONL, a {title: text} object, or a
directory of .txt/.md files — merge duplicate passages, chunk long ones, and write the index.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "out"); err != nil {
				return err
			}
			if cfg.OverlapTokens >= cfg.ChunkTokens {
				return usageError{fmt.Errorf("index: --overlap-tokens %d must be below --chunk-tokens %d", cfg.OverlapTokens, cfg.ChunkTokens)}
			}
			if (corpus == "") == (fromDataset == "") {
				return usageError{fmt.Errorf("index: give one of --corpus and --corpus-from-dataset")}
			}
			progress, finish := bar(cmd, "chunking")
			var ix *graphio.Index
			var rep *ingest.Report
			var err error
			if fromDataset != "" {
				ix, rep, err = indexFromDataset(cmd.Context(), fromDataset, cfg, progress)
				corpus = fromDataset
			} else {
				ix, rep, err = ingest.Build(cmd.Context(), corpus, cfg, progress)
			}
			finish()
			for _, s := range rep.Skipped {
				cmd.PrintErrf("warning: skipped %s: %s\n", s.Source, s.Reason)
			}
			if err != nil {
				return err
			}
			ix.Meta.Graphloom = buildVersion()
			var krep *kg.Report
			if !noGraph {
				if !cmd.Flags().Changed("extractor") && lf.chatConfigured() {
					extractor = "llm"
				}
				xcfg.Hyperedges = kcfg.Hyperedges && cmd.Flags().Changed("hyperedges")
				ex, err := newExtractor(extractor, &lf, xcfg)
				if err != nil {
					return err
				}
				emb, err := lf.embedder(cmd.Context(), embedder)
				if err != nil {
					return err
				}
				krep, err = kg.Build(cmd.Context(), ix, ex, emb, kcfg, stageBars(cmd))
				defer lf.report(cmd.ErrOrStderr())
				if err != nil {
					return err
				}
			}
			if err := graphio.WriteFile(out, ix); err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"index": out, "ingest": rep, "graph": krep, "llm": lf.usage()})
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "indexed %s → %s: %d documents (%d duplicates merged, %d skipped), %d chunks, %d tokens\n",
				corpus, out, rep.Documents, rep.Duplicates, len(rep.Skipped), rep.Chunks, rep.Tokens)
			if krep != nil {
				fmt.Fprintf(w, "graph: %d entities, %d facts, %d hyperedges (%.1f%% isolated), %d synonym edges; %d chunks failed, %d invalid triples\n",
					krep.Entities, krep.Facts, krep.Hyperedges, 100*krep.IsolatedHyper, krep.SynonymEdges, krep.FailedChunks, krep.InvalidTriples)
				fmt.Fprintf(w, "time (s): %v\n", krep.StageSeconds)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&corpus, "corpus", "", "corpus file or directory")
	f.StringVar(&fromDataset, "corpus-from-dataset", "", "build the corpus from a QA dataset's own contexts (HotpotQA, MuSiQue, HippoRAG, … formats)")
	f.StringVar(&out, "out", "", "index file to write")
	f.BoolVar(&cfg.Strict, "strict", false, "fail on any unusable input instead of skipping it")
	f.IntVar(&cfg.ChunkTokens, "chunk-tokens", cfg.ChunkTokens, "most tokens per chunk")
	f.IntVar(&cfg.OverlapTokens, "overlap-tokens", cfg.OverlapTokens, "most tokens a chunk repeats from the previous one")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&extractor, "extractor", "rule", "triple extractor: rule (offline; the default unless an LLM is configured) or llm")
	f.StringVar(&embedder, "embedder", "hash", "embedder: hash (built-in, offline) or api (the configured embedding model)")
	f.BoolVar(&noGraph, "no-graph", false, "only ingest and chunk; extract no graph")
	f.BoolVar(&kcfg.Hyperedges, "hyperedges", kcfg.Hyperedges, "build n-ary hyperedges (rule: one per sentence; llm: pass it to add the EXT++ call of HyperGraphRAG)")
	f.Float32Var(&kcfg.SynonymThreshold, "synonym-threshold", kcfg.SynonymThreshold, "least entity cosine for a synonym edge")
	lf.register(cmd)
	limitFlag(cmd, "chunk-tokens", atLeast1(1e6))
	limitFlag(cmd, "overlap-tokens", atLeast0(1e6))
	limitFlag(cmd, "synonym-threshold", flagRange{lo: 0, hi: 1, loOpen: true})
	return cmd
}

// indexFromDataset ingests the passages of a QA dataset's contexts.
func indexFromDataset(ctx context.Context, path string, cfg ingest.Config, progress ingest.Progress) (*graphio.Index, *ingest.Report, error) {
	ps, err := eval.CorpusFromDataset(path)
	if err != nil {
		return nil, &ingest.Report{}, err
	}
	ix := &graphio.Index{Meta: graphio.Meta{Created: time.Now().UTC().Format(time.RFC3339), Corpus: path, Tokenizer: cfg.Encoding}}
	rep := &ingest.Report{Records: len(ps)}
	if err := ingest.AddPassages(ctx, ix, ps, cfg, progress, rep); err != nil {
		return nil, rep, err
	}
	return ix, rep, nil
}

func newExtractor(name string, lf *llmFlags, cfg extract.LLMConfig) (extract.Extractor, error) {
	switch name {
	case "rule":
		return extract.NewRule(extract.DefaultRuleConfig()), nil
	case "llm":
		c, err := lf.chat()
		if err != nil {
			return nil, err
		}
		return extract.NewLLM(c, cfg), nil
	}
	return nil, usageError{fmt.Errorf("unknown extractor %q (want rule or llm)", name)}
}
