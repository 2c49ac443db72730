package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
)

func newIndexCmd() *cobra.Command {
	cfg := ingest.DefaultConfig()
	var corpus, out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "index --corpus PATH --out INDEX",
		Short: "Ingest a corpus, chunk it and write an index",
		Long: `Ingest a corpus — a JSON array of {"title","text"}, JSONL, a {title: text} object, or a
directory of .txt/.md files — merge duplicate passages, chunk long ones, and write the index.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "corpus", "out"); err != nil {
				return err
			}
			progress, finish := bar(cmd, "chunking")
			ix, rep, err := ingest.Build(cmd.Context(), corpus, cfg, progress)
			finish()
			for _, s := range rep.Skipped {
				cmd.PrintErrf("warning: skipped %s: %s\n", s.Source, s.Reason)
			}
			if err != nil {
				return err
			}
			ix.Meta.Graphloom = buildVersion()
			if err := graphio.WriteFile(out, ix); err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"index": out, "ingest": rep})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "indexed %s → %s: %d documents (%d duplicates merged, %d skipped), %d chunks, %d tokens\n",
				corpus, out, rep.Documents, rep.Duplicates, len(rep.Skipped), rep.Chunks, rep.Tokens)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&corpus, "corpus", "", "corpus file or directory")
	f.StringVar(&out, "out", "", "index file to write")
	f.BoolVar(&cfg.Strict, "strict", false, "fail on any unusable input instead of skipping it")
	f.IntVar(&cfg.ChunkTokens, "chunk-tokens", cfg.ChunkTokens, "most tokens per chunk")
	f.IntVar(&cfg.OverlapTokens, "overlap-tokens", cfg.OverlapTokens, "most tokens a chunk repeats from the previous one")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return cmd
}
