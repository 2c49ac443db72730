package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/eval"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

func newIndexCmd() *cobra.Command {
	cfg := ingest.DefaultConfig()
	kcfg := kg.DefaultConfig()
	var corpus, out, extractor, embedder, fromDataset, hyper, addPath, syncPath, indexPath string
	var asJSON, noGraph, wait, allowPartial, force, plan bool
	var lf llmFlags
	xcfg := extract.DefaultLLMConfig()
	cmd := &cobra.Command{
		Use:   "index (--corpus PATH | --corpus-from-dataset FILE) --out INDEX | index (--add PATH | --sync PATH [--plan] [--out NEW] | --merge) --index INDEX",
		Short: "Ingest a corpus, chunk it and write an index",
		Long: `Ingest a corpus — a JSON array of {"title","text"}, JSONL, a {title: text} object, one
.txt/.md file, or a directory of .txt/.md files (a symbolic link to one is followed) — merge duplicate passages, chunk long ones, and write the index.

With --add, add a corpus's documents to an existing --index: only the new chunks are
extracted (no old chunk is sent to an LLM again) and the file is replaced atomically.
Between merges a change is incremental: the new chunks' records are merged, embedded
with the built-in embedder's IDF table of the last merge, linked by synonym edges and
indexed, deleted chunks' records go, and the rest is kept as it is (the difference
from a fresh build is bounded; docs/lifecycle.md). Once the chunks changed since the
last merge pass --merge-share of the corpus, or with --merge, the change is a merge:
the graph, embeddings, synonym edges and BM25 postings are computed again over the
whole corpus, and the index equals a fresh build. --merge with --index alone merges
the changes made since the last merge without adding anything.
A document already in the index (same title and text) is skipped and counted. The
extractor, embedder and chunking must be the index's own (by default they are).

With --sync, make --index match a corpus folder or file as it is now: documents whose
key is new are added, documents whose key left the corpus are deleted, and documents
whose text changed under the same key are indexed again; the others are kept (a file
that moved keeps its chunks). A document's key is its file's path below the corpus
folder (a single file's name), or a corpus record's "id" (its "title" when it has
none); an index written before keys were kept derives them from its documents'
sources. Only new chunks are extracted. --plan counts what would change and writes
nothing; --out writes the result there and leaves --index as it was.`,
		Example: `  graphloom index --corpus examples/harbour/corpus.json --out harbour.gl
  graphloom index --corpus docs/ --out docs.gl --chunk-tokens 600 --overlap-tokens 50
  graphloom index --add new-docs/ --index docs.gl
  graphloom index --sync docs/ --index docs.gl --plan
  graphloom index --merge --index docs.gl
  GRAPHLOOM_LLM_BASE_URL=http://localhost:11434/v1 GRAPHLOOM_LLM_MODEL=llama3.1 \
    graphloom index --corpus examples/harbour/corpus.json --out harbour-llm.gl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			liveIndexGC()
			if plan && syncPath == "" {
				// Checked first: --add and --merge would otherwise extract (paid LLM
				// calls) and rewrite the index the user only asked to plan.
				return usageError{fmt.Errorf("index: --plan goes with --sync")}
			}
			if addPath == "" && syncPath == "" && kcfg.Merge {
				if indexPath == "" || out != "" || corpus != "" || fromDataset != "" {
					return usageError{fmt.Errorf("index: --merge alone goes with --index INDEX (and neither --corpus nor --out); with --add or --sync it makes that change a merge")}
				}
				if err := kgHyperedges(hyper, &kcfg, &xcfg); err != nil { // --hyperedges given here wins over the index's
					return err
				}
				return runIndexMerge(cmd, indexPath, kcfg, &lf, wait, asJSON, force)
			}
			if addPath != "" || syncPath != "" || indexPath != "" {
				switch {
				case addPath != "" && syncPath != "":
					return usageError{fmt.Errorf("index: give one of --add and --sync")}
				case syncPath != "" && (indexPath == "" || corpus != "" || fromDataset != ""):
					return usageError{fmt.Errorf("index: --sync CORPUS goes with --index INDEX (and neither --corpus nor --corpus-from-dataset)")}
				case syncPath == "" && (addPath == "" || indexPath == "" || out != "" || corpus != "" || fromDataset != ""):
					return usageError{fmt.Errorf("index: --add CORPUS goes with --index INDEX (and neither --corpus nor --out)")}
				}
				if err := kgHyperedges(hyper, &kcfg, &xcfg); err != nil {
					return err
				}
				o := addOptions{corpus: addPath, index: indexPath, icfg: cfg, kcfg: kcfg, xcfg: xcfg,
					extractor: extractor, embedder: embedder, lf: &lf, wait: wait, allowPartial: allowPartial, asJSON: asJSON}
				if syncPath != "" {
					o.corpus, o.sync, o.plan, o.out, o.force = syncPath, true, plan, out, force
				}
				return runIndexAdd(cmd, o)
			}
			if err := requireFlags(cmd, "out"); err != nil {
				return err
			}
			if cfg.OverlapTokens >= cfg.ChunkTokens {
				return usageError{fmt.Errorf("index: --overlap-tokens %d must be below --chunk-tokens %d", cfg.OverlapTokens, cfg.ChunkTokens)}
			}
			if (corpus == "") == (fromDataset == "") {
				return usageError{fmt.Errorf("index: give one of --corpus and --corpus-from-dataset")}
			}
			if err := guardOutput(cmd, outSpec{name: "--out", path: out, kind: outIndex, what: "index file", force: force},
				inSpec{"--corpus", corpus}, inSpec{"--corpus-from-dataset", fromDataset}); err != nil {
				return err
			}
			unlock, err := lockIndex(cmd, out, wait)
			if err != nil {
				return err
			}
			defer unlock()
			progress, finish := bar(cmd, "chunking")
			var ix *graphio.Index
			var rep *ingest.Report
			if fromDataset != "" {
				ix, rep, err = indexFromDataset(cmd, fromDataset, cfg, progress)
				corpus = fromDataset
			} else {
				ix, rep, err = ingest.Build(cmd.Context(), corpus, cfg, progress)
			}
			finish()
			warnSkippedInputs(cmd, rep.Skipped, err)
			if err != nil {
				return err
			}
			ix.Meta.Graphloom = buildVersion()
			var krep *kg.Report
			var local *embed.Local
			if !noGraph {
				if !cmd.Flags().Changed("extractor") && lf.chatConfigured() {
					extractor = "llm"
				}
				if err := kgHyperedges(hyper, &kcfg, &xcfg); err != nil {
					return err
				}
				ex, err := newExtractor(extractor, &lf, xcfg)
				if err != nil {
					return err
				}
				emb, err := lf.embedder(cmd.Context(), embedder)
				if err != nil {
					return err
				}
				local, _ = emb.(*embed.Local)
				stages, endStages := stageBars(cmd, lf.live)
				krep, err = kg.Build(cmd.Context(), ix, ex, emb, kcfg, stages)
				endStages()
				defer lf.report(cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				if err := checkLostChunks(cmd, krep, out, allowPartial, &lf); err != nil {
					return err
				}
			}
			retrieve.StoreBM25(ix, retrieve.DefaultConfig()) // a query process reads the postings instead of analysing the corpus
			if err := graphio.WriteFile(out, ix); err != nil {
				return err
			}
			type embedStats struct {
				Identity  string `json:"identity"`
				Texts     int    `json:"texts"`
				Truncated int    `json:"truncated"` // cut to MaxLength tokens: their ends are not embedded
				MaxLength int    `json:"max_length"`
				Batches   int    `json:"batches"`
				Shapes    int    `json:"shapes"`
			}
			var es *embedStats
			if local != nil {
				st, p := local.Model().Stats(), local.Model().Pipeline()
				es = &embedStats{local.Identity(), st.Texts, st.Truncated, p.MaxLength, st.Batches, st.Shapes}
				if es.Truncated > 0 {
					cmd.PrintErrf("warning: %d texts were longer than the model's %d tokens and cut: their ends are not embedded (a smaller --chunk-tokens keeps chunks whole)\n", es.Truncated, es.MaxLength)
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"index": out, "ingest": rep, "graph": krep, "llm": lf.usage(), "local_embedder": es})
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "indexed %s → %s: %d documents (%d duplicates merged, %d skipped), %d chunks, %d tokens\n",
				corpus, out, rep.Documents, rep.Duplicates, len(rep.Skipped), rep.Chunks, rep.Tokens)
			if krep != nil {
				fmt.Fprintf(w, "graph: %d entities, %d facts, %d hyperedges (%.1f%% isolated), %d synonym edges; %d chunks failed, %d invalid triples\n",
					krep.Entities, krep.Facts, krep.Hyperedges, 100*krep.IsolatedHyper, krep.SynonymEdges, krep.FailedChunks, krep.InvalidTriples)
				if n := sumCounts(krep.FilteredEntities); n > 0 {
					fmt.Fprintf(w, "entity filter: %d names kept out (%s), %d triples lost an endpoint\n", n, formatCounts(krep.FilteredEntities), krep.FilteredFacts)
				}
				fmt.Fprintf(w, "time: %s\n", formatStages(krep.StageSeconds, []string{"extract", "merge", "embed", "synonyms"}))
			}
			if es != nil {
				fmt.Fprintf(w, "embedder %s: %d texts, %d truncated to %d tokens, %d batches in %d padded shapes\n",
					es.Identity, es.Texts, es.Truncated, es.MaxLength, es.Batches, es.Shapes)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&corpus, "corpus", "", "corpus file or directory")
	f.StringVar(&fromDataset, "corpus-from-dataset", "", "build the corpus from a QA dataset's own contexts (HotpotQA, MuSiQue, HippoRAG, … formats)")
	f.StringVar(&out, "out", "", "index file to write")
	f.StringVar(&addPath, "add", "", "add this corpus's documents to --index")
	f.StringVar(&indexPath, "index", "", "the index --add adds to or --sync syncs (replaced in place, or written to --out with --sync)")
	f.StringVar(&syncPath, "sync", "", "make --index match this corpus: add new documents, delete vanished ones, index changed ones again (by document key)")
	f.BoolVar(&plan, "plan", false, "with --sync: count what would be added, changed and deleted; write nothing")
	f.BoolVar(&cfg.Strict, "strict", false, "fail on any unusable input instead of skipping it")
	f.IntVar(&cfg.ChunkTokens, "chunk-tokens", cfg.ChunkTokens, "most tokens per chunk")
	f.IntVar(&cfg.OverlapTokens, "overlap-tokens", cfg.OverlapTokens, "most tokens a chunk repeats from the previous one")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.StringVar(&extractor, "extractor", "rule", "triple extractor: rule (offline; the default unless an LLM is configured) or llm")
	f.StringVar(&embedder, "embedder", "hash", "embedder: hash (built-in, offline), api (the configured embedding model) or local:DIR (a BERT-family model folder run in GoMLX; see --pooling, --normalize, --query-prompt, --passage-prompt)")
	f.BoolVar(&noGraph, "no-graph", false, "only ingest and chunk; extract no graph")
	f.BoolVar(&allowPartial, "allow-partial", false, "write the index although some chunks' extraction failed: needed to replace an existing --out, to write a new one while chunks got no answer and answers are cached, and for any failure with --add/--sync (an index whose every chunk failed is never written)")
	f.BoolVar(&wait, "wait", false, "if another graphloom process is writing --out, wait for it instead of failing")
	addForce(cmd, &force)
	f.StringVar(&hyper, "hyperedges", "auto", "n-ary hyperedges: auto (rule extractor: one per sentence; llm extractor: none), true (llm: adds HyperGraphRAG's EXT++ call per chunk), false")
	f.Lookup("hyperedges").NoOptDefVal = "true"
	f.Float32Var(&kcfg.SynonymThreshold, "synonym-threshold", kcfg.SynonymThreshold, "least entity cosine for a synonym edge")
	registerEntityFilterFlags(cmd, &kcfg)
	registerMergeFlags(cmd, &kcfg)
	lf.register(cmd)
	limitFlag(cmd, "chunk-tokens", atLeast1(1e6))
	limitFlag(cmd, "overlap-tokens", atLeast0(1e6))
	limitFlag(cmd, "synonym-threshold", flagRange{lo: 0, hi: 1, loOpen: true})
	return cmd
}

// kgHyperedges applies --hyperedges to the graph and LLM extraction settings.
func kgHyperedges(hyper string, kcfg *kg.Config, xcfg *extract.LLMConfig) error {
	switch hyper {
	case "auto": // rule: one per sentence; llm: no extra EXT++ call
		kcfg.Hyperedges, xcfg.Hyperedges = true, false
	case "true":
		kcfg.Hyperedges, xcfg.Hyperedges = true, true
	case "false":
		kcfg.Hyperedges, xcfg.Hyperedges = false, false
	default:
		return usageError{fmt.Errorf("index: --hyperedges %q: want auto, true or false", hyper)}
	}
	return nil
}

// checkLostChunks refuses an index whose extraction failed for every chunk; unless
// allowPartial, one where some chunks got no answer while answers are cached (a rerun
// then asks only for those: nothing is lost), and one that would replace an existing
// index while some chunks failed. What it writes anyway (answers that could not be
// read, which the cache would give a rerun again) it warns about. The failures are
// printed grouped by kind, with the last error and the first chunks' ids.
func checkLostChunks(cmd *cobra.Command, krep *kg.Report, out string, allowPartial bool, lf *llmFlags) error {
	if krep.FailedChunks == 0 {
		return nil
	}
	causes := lf.failureSummary()
	if causes == "" && len(krep.FailureExamples) > 0 {
		causes = "last: " + krep.FailureExamples[len(krep.FailureExamples)-1]
	}
	if krep.FailedChunks == krep.Chunks {
		return fmt.Errorf("index: the extraction failed for every chunk (%d of %d); %s; nothing was written", krep.FailedChunks, krep.Chunks, causes)
	}
	if len(krep.FailureExamples) > 0 {
		causes += "; e.g. " + strings.Join(krep.FailureExamples, "; ")
	}
	final := krep.FailedChunks - krep.UnansweredChunks // refused, or answered unreadably
	what := fmt.Sprintf("%d of %d chunks got no answer from the LLM", krep.UnansweredChunks, krep.Chunks)
	if final > 0 {
		what += fmt.Sprintf(" and %d were refused by the server or answered unreadably (a rerun gets the same; --llm-reask-unparseable asks the unreadable ones again)", final)
	}
	if krep.UnansweredChunks == 0 {
		what = fmt.Sprintf("%d of %d chunks were refused by the server or answered unreadably (a rerun gets the same; --llm-reask-unparseable asks the unreadable ones again)", final, krep.Chunks)
	}
	_, err := os.Stat(out)
	replacing := err == nil
	switch {
	case allowPartial:
	case krep.UnansweredChunks > 0 && lf.cachesAnswers():
		return fmt.Errorf("index: %s (%s); nothing was written: rerun (answered calls are cached, so only these are asked again), or pass --allow-partial to write the index without their facts",
			what, causes)
	case replacing:
		return fmt.Errorf("index: %s (%s); not replacing %s with an index that lost their facts: pass --allow-partial to replace it anyway",
			what, causes, out)
	}
	cmd.PrintErrf("warning: writing the index without the facts of %d of %d chunks: %s; %s\n", krep.FailedChunks, krep.Chunks, what, causes)
	if krep.UnansweredChunks > 0 {
		cmd.PrintErrf("(a later `index --index %s --add CORPUS` or `--sync CORPUS`, even of a corpus already in it, asks the chunks that got no answer again)\n", out)
	}
	return nil
}

// formatStages formats stage timings in seconds as "extract 1.2 s, merge 0.1 s", in
// the given order, then any other stages alphabetically.
func formatStages(secs map[string]any, order []string) string {
	var parts []string
	seen := map[string]bool{}
	add := func(k string) {
		if v, ok := secs[k]; ok && !seen[k] {
			seen[k] = true
			parts = append(parts, fmt.Sprintf("%s %s", k, fmtSeconds(v)))
		}
	}
	for _, k := range order {
		add(k)
	}
	for _, k := range slices.Sorted(maps.Keys(secs)) {
		add(k)
	}
	return strings.Join(parts, ", ")
}

func fmtSeconds(v any) string {
	x, ok := v.(float64)
	if !ok {
		return fmt.Sprint(v)
	}
	switch {
	case x >= 60:
		return fmt.Sprintf("%dm%02.0fs", int(x)/60, x-float64(60*(int(x)/60)))
	case x >= 10:
		return fmt.Sprintf("%.0f s", x)
	default:
		return fmt.Sprintf("%.2f s", x)
	}
}

// warnSkippedInputs prints the inputs a load skipped, but for the first when err is
// the strict load's refusal, which names it.
func warnSkippedInputs(cmd *cobra.Command, skipped []ingest.Skipped, err error) {
	if errors.Is(err, ingest.ErrStrict) && len(skipped) > 0 {
		skipped = skipped[1:]
	}
	for _, s := range skipped {
		cmd.PrintErrf("warning: skipped %s: %s\n", s.Source, s.Reason)
	}
}

// indexFromDataset ingests the passages of a QA dataset's contexts. The records read
// with a warning (an untitled paragraph) are printed here; the skipped ones go into
// the report's Skipped.
func indexFromDataset(cmd *cobra.Command, path string, cfg ingest.Config, progress ingest.Progress) (*graphio.Index, *ingest.Report, error) {
	ps, ds, err := eval.CorpusFromDataset(path)
	if err != nil {
		return nil, &ingest.Report{}, err
	}
	warnRecords(cmd, path, "", "records with a warning", ds.Warnings)
	ix := &graphio.Index{Meta: graphio.Meta{Created: time.Now().UTC().Format(time.RFC3339), Corpus: path, Tokenizer: cfg.Encoding, Chunking: cfg.Describe()}}
	rep := &ingest.Report{Records: len(ps)}
	for _, s := range ds.Skipped { // their passages are not indexed
		rep.Skipped = append(rep.Skipped, ingest.Skipped{Source: fmt.Sprintf("%s:%d", path, s.Line), Reason: "record not read, its passages not indexed: " + s.Reason})
	}
	if cfg.Strict && len(ds.Skipped) > 0 {
		s := ds.Skipped[0]
		return nil, rep, fmt.Errorf("%s:%d: record not read (--strict): %s (and %d more records skipped; %w)", path, s.Line, s.Reason, len(ds.Skipped)-1, ingest.ErrStrict)
	}
	if err := ingest.AddPassages(cmd.Context(), ix, ps, cfg, progress, rep); err != nil {
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

// indexGCPercent is the garbage collector's target while a command that holds an
// index in memory runs (`index`, `query`), unless GOGC is set: the index is most of
// the heap and stays live to the end, so Go's default of 100 (collect when the heap
// has doubled) peaks at about twice the index. At 50 the 120K-passage scale corpus
// indexes in 3.7 GiB instead of 4.6 GiB for about the same time (24K passages: 53.6 s
// against 55.9 s), and a one-off ppr query on the 2Wiki index peaks at 140 MB instead
// of 168 MB and takes 0.50 s instead of 0.58 s on a small VM, where every page a
// process touches costs a fault.
const indexGCPercent = 50

// liveIndexGC sets the collector's target to indexGCPercent unless GOGC is set.
func liveIndexGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(indexGCPercent)
	}
}
