package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/embed"
)

// newLMEmbedCmd is `graphloom lm embed`: the vector a local embedding model gives a
// text, for debugging a folder before indexing with it.
func newLMEmbedCmd() *cobra.Command {
	var dir string
	var query, asJSON bool
	var first int
	var lf llmFlags
	cmd := &cobra.Command{
		Use:   "embed --lm DIR [--query] [--json] TEXT",
		Short: "Print the embedding of TEXT by a local embedding model folder",
		Long: `Embed TEXT with a local embedding model folder as --embedder local:DIR would (a
sentence-transformers or Hugging Face BERT / RoBERTa / XLM-R / MPNet / DistilBERT / ModernBERT
folder, or a decoder embedder
such as Qwen3-Embedding) and print the identity, the dimension, the norm, the number of
tokens and the first values. --query embeds TEXT as a question (the query prompt).`,
		Example: `  graphloom lm embed --lm ~/models/bge-small-en-v1.5 "Where was Tomas Brell born?"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := needLMDir(cmd, dir); err != nil {
				return err
			}
			e, err := lf.localEmbedder(dir)
			if err != nil {
				return err
			}
			l := e.(*embed.Local)
			defer l.Close()
			var vs [][]float32
			if query {
				vs, err = l.EmbedQueries(cmd.Context(), args)
			} else {
				vs, err = l.Embed(cmd.Context(), args)
			}
			if err != nil {
				return err
			}
			ids, _, truncated, err := l.Model().Tokenize(args[0], query)
			if err != nil {
				return err
			}
			v := vs[0]
			var ss float64
			for _, x := range v {
				ss += float64(x) * float64(x)
			}
			norm := math.Sqrt(ss)
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"identity": l.Identity(), "dim": len(v), "norm": norm,
					"tokens": len(ids), "truncated": truncated, "prompt": l.Model().Prompt(query), "vector": v})
			}
			n := min(first, len(v))
			parts := make([]string, n)
			for i := range n {
				parts[i] = fmt.Sprintf("%.6f", v[i])
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "embedder %s\n", l.Identity())
			fmt.Fprintf(w, "dim %d, norm %.6f, %d tokens", len(v), norm, len(ids))
			if truncated {
				fmt.Fprintf(w, " (truncated to %d)", l.Model().Pipeline().MaxLength)
			}
			fmt.Fprintf(w, "\nfirst %d: %s\n", n, strings.Join(parts, " "))
			return nil
		},
	}
	lmDirFlag(cmd, &dir)
	f := cmd.Flags()
	lf.cmd = cmd
	f.BoolVar(&query, "query", false, "embed TEXT as a question (with the query prompt)")
	f.BoolVar(&asJSON, "json", false, "print the whole vector as JSON")
	f.IntVar(&first, "first", 8, "how many leading values to print")
	f.StringVar(&lf.pooling, "pooling", "", "pooling when the folder has no 1_Pooling/config.json (cls, mean, max, mean-sqrt-len, weighted-mean, last-token)")
	f.StringVar(&lf.normalize, "normalize", "auto", "unit-length vectors: auto (the folder's Normalize module; a plain folder is normalised), true or false")
	f.StringVar(&lf.queryPrompt, "query-prompt", "", "prompt prefixed to questions (default: the folder's)")
	f.StringVar(&lf.passagePrompt, "passage-prompt", "", "prompt prefixed to passages (default: the folder's)")
	f.StringVar(&lf.queryTask, "query-task", "", "task adapters of questions, for a model that has them (default retrieval.query; \"\" for none)")
	f.StringVar(&lf.passageTask, "passage-task", "", "task adapters of passages (default retrieval.passage; \"\" for none)")
	limitFlag(cmd, "first", atLeast0(1<<20))
	return cmd
}
