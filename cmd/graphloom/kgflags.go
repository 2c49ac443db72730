package main

import (
	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/kg"
)

// registerEntityFilterFlags binds the entity-hygiene knobs of the graph build.
func registerEntityFilterFlags(cmd *cobra.Command, cfg *kg.Config) {
	f := cmd.Flags()
	f.BoolVar(&cfg.EntityRules, "entity-rules", cfg.EntityRules, "drop single characters, bare numbers, structure words and stop phrases as entities")
	f.Float64Var(&cfg.MaxEntityShare, "max-entity-share", cfg.MaxEntityShare, "drop as generic a name found in more than this share of chunks (0 = keep all)")
	f.IntVar(&cfg.GenericMinChunks, "generic-min-chunks", cfg.GenericMinChunks, "least chunks for the generic-entity filter to apply")
	f.BoolVar(&cfg.StemSynonyms, "stem-synonyms", cfg.StemSynonyms, "link entities whose names differ only in inflection (Snowball stems)")
	f.BoolVar(&cfg.MentionOnly, "mention-only", cfg.MentionOnly, "keep entities found in no fact (HippoRAG 2 drops them)")
	limitFlag(cmd, "max-entity-share", unit)
	limitFlag(cmd, "generic-min-chunks", atLeast0(1e9))
}

// registerMergeFlags binds the lifecycle's merge knobs (index --add/--sync, delete).
func registerMergeFlags(cmd *cobra.Command, cfg *kg.Config) {
	f := cmd.Flags()
	f.BoolVar(&cfg.Merge, "merge", cfg.Merge, "with --add, --sync or delete: make this change a merge (everything computed again over the whole corpus: the index equals a fresh build) instead of an incremental change between merges")
	f.Float64Var(&cfg.MergeShare, "merge-share", cfg.MergeShare, "share of the chunks that may change between merges before a change is made as a merge (0 = every change is a merge)")
	limitFlag(cmd, "merge-share", unit)
}
