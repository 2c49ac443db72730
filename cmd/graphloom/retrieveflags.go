package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/graphloom/graphloom/retrieve"
)

// retrievalAnnotation marks the flags registerRetrievalFlags binds: the ones
// eval --sweep may vary.
const retrievalAnnotation = "graphloom/retrieval"

// isRetrievalFlag reports whether f is a retrieval setting.
func isRetrievalFlag(f *pflag.Flag) bool { _, ok := f.Annotations[retrievalAnnotation]; return ok }

// registerRetrievalFlags binds the retrieval knobs shared by query and eval, with
// their ranges.
func registerRetrievalFlags(cmd *cobra.Command, cfg *retrieve.Config) {
	f := cmd.Flags()
	before := map[string]bool{}
	f.VisitAll(func(fl *pflag.Flag) { before[fl.Name] = true })
	defer f.VisitAll(func(fl *pflag.Flag) {
		if !before[fl.Name] {
			if fl.Annotations == nil {
				fl.Annotations = map[string][]string{}
			}
			fl.Annotations[retrievalAnnotation] = []string{"true"}
		}
	})
	f.Float64Var(&cfg.Damping, "damping", cfg.Damping, "PPR damping (ppr, hyperppr)")
	f.IntVar(&cfg.LinkingTopK, "linking-top-k", cfg.LinkingTopK, "facts linked and entities seeded (ppr)")
	f.Float64Var(&cfg.PassageNodeWeight, "passage-node-weight", cfg.PassageNodeWeight, "weight of passage seeds (ppr)")
	f.Float64Var(&cfg.HyperChunkWeight, "chunk-weight", cfg.HyperChunkWeight, "w_chunk of chunk seeds (hyperppr)")
	f.BoolVar(&cfg.Stem, "stem", cfg.Stem, "Snowball English stems for BM25 terms")
	f.StringVar(&cfg.Lexical, "lexical", cfg.Lexical, `passage and fact scoring before PPR: "auto" (BM25 fused with dense for the built-in embedder), "dense" (the papers'), "fused"`)
	f.Float64Var(&cfg.LexicalWeight, "lexical-weight", cfg.LexicalWeight, "BM25 share λ of fused passage and fact scores")
	f.BoolVar(&cfg.HubWeights, "hub-weights", cfg.HubWeights, "scale each entity's edges by its specificity log(N/df)/log(N)")
	f.BoolVar(&cfg.QueryEntities, "query-entities", cfg.QueryEntities, "also seed PPR with the entities the question names verbatim")
	f.BoolVar(&cfg.LexicalFilter, "lexical-filter", cfg.LexicalFilter, "offline recognition memory: drop linked facts sharing no term with the question")
	f.StringVar(&cfg.FinalFusion, "final-fusion", cfg.FinalFusion, `fusion of PPR and BM25 in the final ranking: "rrf" (reciprocal ranks, k=60) or "linear" (min-max scores)`)
	f.Float64Var(&cfg.FinalBM25Weight, "final-bm25-weight", cfg.FinalBM25Weight, "BM25 share μ of the final ppr/hyperppr passage score (with lexical scoring on)")
	f.StringVar(&cfg.QueryToPassage, "query-to-passage", cfg.QueryToPassage, `instruction prefixed to the question for passage scoring with an API embedder (HippoRAG 2 with NV-Embed-v2: "Given a question, retrieve relevant documents that best answer the question.")`)
	f.StringVar(&cfg.QueryToFact, "query-to-fact", cfg.QueryToFact, `instruction prefixed to the question for fact scoring with an API embedder (HippoRAG 2: "Given a question, retrieve relevant triplet facts that matches this question.")`)
	f.IntVar(&cfg.PCSTTopK, "pcst-topk", cfg.PCSTTopK, "nodes given prizes (pcst; G-Retriever topk)")
	f.IntVar(&cfg.PCSTTopKEdges, "pcst-topk-e", cfg.PCSTTopKEdges, "distinct edge similarities given prizes (pcst; G-Retriever topk_e)")
	f.Float64Var(&cfg.PCSTEdgeCost, "pcst-cost-e", cfg.PCSTEdgeCost, "edge cost (pcst; G-Retriever cost_e)")
	f.StringVar(&cfg.Calibration, "calibration", cfg.Calibration, `the index's stored calibration (graphloom calibrate) for ppr and hyperppr: "auto" (the variant it chose), "off" (the uncalibrated defaults), or a variant to force: "fusion", "ranker-nogate", "ranker", "defaults"`)
	pcstProfileFlag(cmd, cfg)
	f.IntVar(&cfg.PCSTMaxNodes, "pcst-max-nodes", cfg.PCSTMaxNodes, "most entities of the subgraph PCST runs on")
	f.StringVar(&cfg.PCSTText, "pcst-text", cfg.PCSTText, `subgraph textualisation (pcst): "csv" (G-Retriever's node and edge CSV) or "verbal" ("v_i [r] v_j" lines)`)
	limitFlag(cmd, "pcst-topk", atLeast1(1e5))
	limitFlag(cmd, "pcst-topk-e", atLeast1(1e5))
	limitFlag(cmd, "pcst-cost-e", atLeast0(1e6))
	limitFlag(cmd, "pcst-max-nodes", atLeast1(1e7))
	limitChoices(cmd, "lexical", retrieve.LexicalAuto, retrieve.LexicalDense, retrieve.LexicalFused)
	limitChoices(cmd, "final-fusion", retrieve.FusionRRF, retrieve.FusionLinear)
	limitChoices(cmd, "calibration", append([]string{retrieve.CalibrationAuto, retrieve.CalibrationOff}, retrieve.Variants...)...)
	limitChoices(cmd, "pcst-text", retrieve.PCSTTextCSV, retrieve.PCSTTextVerbal)
	limitFlag(cmd, "damping", openUnit)
	limitFlag(cmd, "linking-top-k", atLeast1(1e5))
	limitFlag(cmd, "passage-node-weight", atLeast0(1e3))
	limitFlag(cmd, "chunk-weight", atLeast0(1e3))
	limitFlag(cmd, "lexical-weight", unit)
	limitFlag(cmd, "final-bm25-weight", unit)
}

// pcstProfile is --pcst-profile: setting it sets --pcst-topk, --pcst-topk-e and
// --pcst-cost-e to the profile's values, except those given explicitly.
type pcstProfile struct {
	name string
	cfg  *retrieve.Config
	fs   *pflag.FlagSet
}

func (p *pcstProfile) String() string { return p.name }
func (p *pcstProfile) Type() string   { return "string" }

func (p *pcstProfile) Set(name string) error {
	prof, ok := retrieve.PCSTProfiles[name]
	if !ok {
		return fmt.Errorf("want %s or %s", retrieve.PCSTProfileGRetriever, retrieve.PCSTProfileSeed004)
	}
	p.name = name
	if !p.fs.Changed("pcst-topk") {
		p.cfg.PCSTTopK = prof.TopK
	}
	if !p.fs.Changed("pcst-topk-e") {
		p.cfg.PCSTTopKEdges = prof.TopKEdges
	}
	if !p.fs.Changed("pcst-cost-e") {
		p.cfg.PCSTEdgeCost = prof.EdgeCost
	}
	return nil
}

// pcstProfileFlag registers --pcst-profile on cmd (after the three flags it sets).
func pcstProfileFlag(cmd *cobra.Command, cfg *retrieve.Config) {
	cmd.Flags().Var(&pcstProfile{name: retrieve.PCSTProfileGRetriever, cfg: cfg, fs: cmd.Flags()}, "pcst-profile",
		`PCST prizes as a source sets them: "g-retriever" (topk 3, topk_e 5, cost_e 0.5) or "seed004" (15, 20, 0.5); explicit --pcst-topk/-topk-e/-cost-e win`)
}
