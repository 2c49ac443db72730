package main

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

// addOptions carries the flags of `index --add` and `index --sync`.
type addOptions struct {
	corpus, index, extractor, embedder string
	icfg                               ingest.Config
	kcfg                               kg.Config
	xcfg                               extract.LLMConfig
	lf                                 *llmFlags
	wait, allowPartial, asJSON         bool
	// sync makes the index match the corpus (kg.Sync) instead of adding to it; plan
	// only reports what it would do; out is where the result goes (default: --index).
	sync, plan, force bool
	out               string
}

// runIndexAdd adds a corpus's documents to an index (kg.Add), or syncs the index with
// the corpus (kg.Sync), under the output's writer lock, and replaces the file
// atomically (in place, or at --out).
func runIndexAdd(cmd *cobra.Command, o addOptions) error {
	flag := "--add"
	if o.sync {
		flag = "--sync"
	}
	if o.out == "" {
		o.out = o.index
	}
	if !o.plan {
		name := "--out"
		if o.out == o.index {
			name = "--index"
		}
		if err := guardOutput(cmd, outSpec{name: name, path: o.out, kind: outIndex, what: "index file", force: o.force, inPlace: "--index"},
			inSpec{"--index", o.index}, inSpec{flag, o.corpus}); err != nil {
			return err
		}
		unlock, err := lockIndex(cmd, o.out, o.wait)
		if err != nil {
			return err
		}
		defer unlock()
	}
	ix, err := kg.ReadForChange(o.index)
	if err != nil {
		return err
	}
	if err := o.kcfg.ApplySettings(ix.Meta.Graph, cmd.Flags().Changed); err != nil { // the index's own graph settings
		return fmt.Errorf("index: %s: %w", o.index, err)
	}
	flags := cmd.Flags()
	// By default the index's own chunking, extractor and embedder.
	if ch := ix.Meta.Chunking; ch != "" && !flags.Changed("chunk-tokens") && !flags.Changed("overlap-tokens") {
		var enc string
		if _, err := fmt.Sscanf(ch, "chunk-tokens=%d overlap-tokens=%d encoding=%s", &o.icfg.ChunkTokens, &o.icfg.OverlapTokens, &enc); err != nil {
			return fmt.Errorf("index: %s: unreadable chunking %q: %w", o.index, ch, err)
		}
		o.icfg.Encoding = enc
	}
	if tok := ix.Meta.Tokenizer; ix.Meta.Chunking == "" && tok != "" {
		o.icfg.Encoding = tok // an imported index records the tokenizer, not the chunking
	}
	if o.plan {
		return runSyncPlan(cmd, ix, o)
	}
	if fw, ok := kg.ImportedFrom(ix); ok && !flags.Changed("extractor") {
		return usageError{fmt.Errorf("index: %s was imported from %s (extracted with %q), whose extractor graphloom cannot run: give --extractor rule (offline) or --extractor llm to extract the new documents; the imported chunks keep their extraction", o.index, fw, ix.Meta.Extractor)}
	}
	if !flags.Changed("extractor") {
		o.extractor = "rule"
		if strings.HasPrefix(ix.Meta.Extractor, "llm") {
			o.extractor = "llm"
		}
		if !flags.Changed("hyperedges") && strings.HasSuffix(ix.Meta.Extractor, "+ext++") {
			o.xcfg.Hyperedges = true
		}
	}
	ex, err := newExtractor(o.extractor, o.lf, o.xcfg)
	if err != nil {
		return err
	}
	var emb embed.Embedder
	switch {
	case flags.Changed("embedder"):
		emb, err = o.lf.embedder(cmd.Context(), o.embedder)
		if l, ok := emb.(*embed.Local); ok && err == nil && embed.IsLocal(ix.Meta.Embedder) {
			emb, err = embed.ForIndex(ix, l) // the folder as it was read when the index was embedded
		}
	case embed.IsHashed(ix.Meta.Embedder):
	case embed.IsLocal(ix.Meta.Embedder):
		emb, err = embed.ForIndex(ix, nil)
	default:
		emb, err = o.lf.embedder(cmd.Context(), "api")
	}
	if err != nil {
		return err
	}
	passages, skipped, err := ingest.Load(o.corpus, o.icfg.Strict)
	warnSkippedInputs(cmd, skipped, err)
	if err != nil {
		return err
	}
	stages, endStages := stageBars(cmd, o.lf.live)
	var ch *kg.Change
	if o.sync {
		ch, err = kg.Sync(cmd.Context(), ix, passages, o.corpus, o.icfg, ex, emb, o.kcfg, stages)
	} else {
		ch, err = kg.Add(cmd.Context(), ix, passages, o.icfg, ex, emb, o.kcfg, stages)
	}
	endStages()
	defer o.lf.report(cmd.ErrOrStderr())
	if err != nil {
		return fmt.Errorf("index: %s %s to %s: %w", strings.TrimPrefix(flag, "--"), o.corpus, o.index, err)
	}
	if ch.Failed > 0 && !o.allowPartial {
		return fmt.Errorf("index: the extraction failed for %d of the %d new chunks (%s); not writing %s: rerun (answered calls are cached), or pass --allow-partial",
			ch.Failed, ch.Extracted, o.lf.failureSummary(), o.out)
	}
	if ch.RetryFailed > 0 {
		cmd.PrintErrf("warning: %d of the %d chunks the LLM had given no answer got none again (%s); the next --add or --sync asks them again\n",
			ch.RetryFailed, ch.Retried, o.lf.failureSummary())
	}
	changed := ch.Chunks > 0 || ch.Retried > 0 || len(ch.Changed)+len(ch.Deleted)+ch.Rekeyed > 0 || o.sync && len(ch.Documents) > 0
	if changed || o.out != o.index {
		if changed {
			retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
			ix.Meta.Graphloom = buildVersion()
		} else if ix, err = graphio.ReadFile(o.index); err != nil { // whole: nothing was rebuilt
			return err
		}
		if err := graphio.WriteFile(o.out, ix); err != nil {
			return err
		}
	}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), map[string]any{"index": o.index, "out": o.out, "change": ch, "llm": o.lf.usage()})
	}
	w := cmd.OutOrStdout()
	if o.sync {
		fmt.Fprintf(w, "synced %s with %s → %s: ", o.index, o.corpus, o.out)
		printSyncCounts(w, ch)
		if !changed {
			fmt.Fprintln(w, "nothing to do: the index matches the corpus")
			return nil
		}
		printChange(w, ch)
		return nil
	}
	fmt.Fprintf(w, "added %s → %s: %d documents (%d already present, %d duplicates merged), %d chunks extracted",
		o.corpus, o.index, len(ch.Documents), ch.Present, ch.Duplicates, ch.Extracted)
	if ch.Reextracted > 0 {
		fmt.Fprintf(w, ", %d old chunks extracted again offline (new titles they name)", ch.Reextracted)
	}
	if ch.Retried > 0 {
		fmt.Fprintf(w, ", %d old chunks the LLM had given no answer asked again", ch.Retried)
	}
	fmt.Fprintln(w)
	if ch.Chunks == 0 && ch.Retried == 0 {
		fmt.Fprintln(w, "nothing new: the index was left as it was")
		return nil
	}
	printChange(w, ch)
	return nil
}

// runIndexMerge merges the index at path in place (kg.Merge): everything derived from
// its extraction results computed again, so that it equals a fresh build of its
// corpus, under the writer lock, replaced atomically.
func runIndexMerge(cmd *cobra.Command, path string, kcfg kg.Config, lf *llmFlags, wait, asJSON, force bool) error {
	if err := guardOutput(cmd, outSpec{name: "--index", path: path, kind: outIndex, what: "index file", force: force, inPlace: "--index"},
		inSpec{"--index", path}); err != nil {
		return err
	}
	unlock, err := lockIndex(cmd, path, wait)
	if err != nil {
		return err
	}
	defer unlock()
	ix, err := kg.ReadForChange(path)
	if err != nil {
		return err
	}
	if err := kcfg.ApplySettings(ix.Meta.Graph, cmd.Flags().Changed); err != nil { // the index's own graph settings
		return fmt.Errorf("index: %s: %w", path, err)
	}
	var ex extract.Extractor
	if ix.Meta.Extractor == "rule" {
		ex = extract.NewRule(extract.DefaultRuleConfig()) // offline: for the titles a delete deferred
	}
	emb, done := lf.deferredEmbedder(cmd.Context(), ix) // a graph setting changed may keep names never embedded
	defer done()
	ch, err := kg.Merge(cmd.Context(), ix, ex, emb, kcfg)
	if err != nil {
		return fmt.Errorf("index: merge %s: %w", path, err)
	}
	retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
	ix.Meta.Graphloom = buildVersion()
	if err := graphio.WriteFile(path, ix); err != nil {
		return err
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), map[string]any{"index": path, "change": ch})
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "merged %s: every record computed again from the stored extraction results", path)
	if ch.Reextracted > 0 {
		fmt.Fprintf(w, " (%d chunks extracted again offline: titles deleted since the last merge)", ch.Reextracted)
	}
	fmt.Fprintln(w)
	printChange(w, ch)
	return nil
}

// runSyncPlan prints what `index --sync` would do, writing nothing and calling no
// extractor.
func runSyncPlan(cmd *cobra.Command, ix *graphio.Index, o addOptions) error {
	passages, skipped, err := ingest.Load(o.corpus, o.icfg.Strict)
	warnSkippedInputs(cmd, skipped, err)
	if err != nil {
		return err
	}
	ch, err := kg.PlanSync(cmd.Context(), ix, passages, o.corpus, o.icfg)
	if err != nil {
		return fmt.Errorf("index: sync %s with %s: %w", o.index, o.corpus, err)
	}
	if o.asJSON {
		return printJSON(cmd.OutOrStdout(), map[string]any{"index": o.index, "plan": true, "change": ch})
	}
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "plan (nothing written): sync %s with %s would: ", o.index, o.corpus)
	printSyncCounts(w, ch)
	for _, l := range []struct {
		verb string
		docs []kg.DocRef
	}{{"add", ch.Documents}, {"index again", ch.Changed}, {"delete", ch.Deleted}} {
		for _, d := range l.docs {
			fmt.Fprintf(w, "  %s\t%s\t%s\n", l.verb, d.Key, d.Title)
		}
	}
	return nil
}

// printSyncCounts prints a sync's document and chunk counts on one line.
func printSyncCounts(w io.Writer, ch *kg.Change) {
	fmt.Fprintf(w, "%d documents added, %d changed, %d deleted, %d unchanged", len(ch.Documents), len(ch.Changed), len(ch.Deleted), ch.Unchanged)
	if ch.Rekeyed > 0 {
		fmt.Fprintf(w, " (%d with a new key)", ch.Rekeyed)
	}
	fmt.Fprintf(w, "; %d new chunks, %d chunks dropped", ch.Chunks, ch.ChunksDeleted)
	if ch.Extracted > 0 || ch.Reextracted > 0 {
		fmt.Fprintf(w, "; %d chunks extracted", ch.Extracted)
	}
	if ch.Reextracted > 0 {
		fmt.Fprintf(w, ", %d old chunks extracted again offline (titles they name came or went)", ch.Reextracted)
	}
	if ch.Retried > 0 {
		fmt.Fprintf(w, "; %d old chunks the LLM had given no answer asked again", ch.Retried)
	}
	fmt.Fprintln(w)
}

func printChange(w io.Writer, ch *kg.Change) {
	kinds := [][2]string{{"document", "documents"}, {"chunk", "chunks"}, {"entity", "entities"}, {"fact", "facts"}, {"hyperedge", "hyperedges"}, {"synonym", "synonym edges"}}
	list := func(m map[string]int) string {
		var parts []string
		for _, k := range kinds {
			parts = append(parts, fmt.Sprintf("%d %s", m[k[0]], k[1]))
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "added: %s\nremoved: %s\n%d facts kept with fewer citations\n", list(ch.Added), list(ch.Removed), ch.Trimmed)
	for _, run := range slices.Sorted(maps.Keys(ch.RunRecordsRemoved)) {
		fmt.Fprintf(w, "run %s: %d augmented facts/hyperedges removed (they cited a deleted chunk)\n", run, ch.RunRecordsRemoved[run])
	}
}

func newDeleteCmd() *cobra.Command {
	var path, out, title, idsFile string
	var docs []string
	var plan, wait, asJSON, force bool
	var lf llmFlags
	kcfg := kg.DefaultConfig()
	cmd := &cobra.Command{
		Use:   "delete --index INDEX (--doc ID | --title T | --ids FILE) [--plan] [--out NEW]",
		Short: "Delete documents from an index, with every record that rests only on them",
		Long: `Delete documents and their chunks from an index. Every fact, hyperedge, entity,
mention, synonym edge, embedding and BM25 posting that rested only on them goes; a fact
also stated elsewhere stays with its remaining citations. Augmented facts (augment runs)
that cite a deleted chunk are removed, counted per run; a later augment --rollback of
the run removes exactly what remains of it. Nothing is sent to an LLM; a name that a
filter dropped while the deleted documents were there (a name in more than 5 % of the
chunks) may return with its facts, and such texts are embedded with the index's own
embedder: its local model folder, or its API model (GRAPHLOOM_EMBED_*; not with
--plan, which sends nothing). Between merges
the deletion is incremental (the deleted chunks' records go, the rest is kept); once
the chunks changed since the last merge pass --merge-share, or with --merge, the graph
is rebuilt from the stored extraction results of the remaining chunks and equals a
fresh build (docs/lifecycle.md).`,
		Example: `  graphloom delete --index harbour.gl --title "Port Keswyn" --plan
  graphloom delete --index harbour.gl --ids gone.txt --out harbour-smaller.gl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			liveIndexGC()
			if err := requireFlags(cmd, "index"); err != nil {
				return err
			}
			if n := btoi(len(docs) > 0) + btoi(title != "") + btoi(idsFile != ""); n != 1 {
				return usageError{fmt.Errorf("delete: give one of --doc, --title and --ids")}
			}
			if out == "" {
				out = path
			}
			if !plan {
				if err := guardOutput(cmd, outSpec{name: "--out", path: out, kind: outIndex, what: "index file", force: force, inPlace: "--index"},
					inSpec{"--index", path}, inSpec{"--ids", idsFile}); err != nil {
					return err
				}
				unlock, err := lockIndex(cmd, out, wait)
				if err != nil {
					return err
				}
				defer unlock()
			}
			where := func(i int) string { return fmt.Sprintf("argument %d", i+1) } // where docs[i] was given
			if idsFile != "" {
				var lines []int
				var err error
				if docs, lines, err = readIDs(idsFile); err != nil {
					return err
				}
				where = func(i int) string { return fmt.Sprintf("%s:%d", idsFile, lines[i]) }
			}
			ix, err := kg.ReadForChange(path)
			if err != nil {
				return err
			}
			if err := kcfg.ApplySettings(ix.Meta.Graph, nil); err != nil { // the index's own graph settings
				return fmt.Errorf("delete: %s: %w", path, err)
			}
			sel, err := selectDocs(ix, docs, title, where)
			if err != nil {
				return fmt.Errorf("delete: %s: %w", path, err)
			}
			var ex extract.Extractor
			if ix.Meta.Extractor == "rule" {
				ex = extract.NewRule(extract.DefaultRuleConfig()) // offline: for the title gazetteer's changes
			}
			emb, done := lf.deferredEmbedder(cmd.Context(), ix) // names a filter dropped may return
			defer done()
			if plan && !embed.IsLocal(ix.Meta.Embedder) {
				emb = nil // --plan sends nothing
			}
			ch, err := kg.Delete(cmd.Context(), ix, sel, ex, emb, kcfg)
			if err != nil {
				return fmt.Errorf("delete: %s: %w", path, err)
			}
			if !plan {
				retrieve.UpdateBM25(ix, retrieve.DefaultConfig(), ch.Remap)
				ix.Meta.Graphloom = buildVersion()
				if err := graphio.WriteFile(out, ix); err != nil {
					return err
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"index": path, "out": out, "plan": plan, "change": ch})
			}
			w := cmd.OutOrStdout()
			verb := "deleted"
			if plan {
				verb = "would delete (plan: nothing written)"
			}
			fmt.Fprintf(w, "%s %d documents, %d chunks from %s", verb, len(ch.Documents), ch.Chunks, path)
			if !plan {
				fmt.Fprintf(w, " → %s", out)
			}
			fmt.Fprintln(w)
			printChange(w, ch)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&path, "index", "", "index file")
	f.StringArrayVar(&docs, "doc", nil, "document id to delete (doc-…; repeatable; graphloom stats --documents lists them)")
	f.StringVar(&title, "title", "", "delete every document with this exact title")
	f.StringVar(&idsFile, "ids", "", "file of document ids to delete, one per line")
	f.StringVar(&out, "out", "", "write the smaller index here instead of replacing --index")
	f.BoolVar(&plan, "plan", false, "count what would go; write nothing")
	f.BoolVar(&wait, "wait", false, "if another graphloom process is writing the index, wait for it instead of failing")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	registerMergeFlags(cmd, &kcfg)
	addForce(cmd, &force)
	lf.register(cmd) // the embedding API of an index embedded through one
	for _, name := range []string{"pooling", "normalize", "query-prompt", "passage-prompt", "query-task", "passage-task", "embed-dtype"} {
		_ = cmd.Flags().MarkHidden(name) // a local model is reopened with the settings the index records
	}
	return cmd
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readIDs reads document ids, one per line (blank lines and # comments skipped),
// with the line each is on.
func readIDs(path string) ([]string, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var ids []string
	var lines []int
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			ids, lines = append(ids, l), append(lines, n)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("%s: no document ids", path)
	}
	return ids, lines, nil
}

// selectDocs returns the positions of the documents with the given ids, or with the
// given title; an id or title that matches nothing is an error naming where it was
// given (where(i) for ids[i]).
func selectDocs(ix *graphio.Index, ids []string, title string, where func(i int) string) ([]int32, error) {
	var sel []int32
	if title != "" {
		for i, d := range ix.Documents {
			if d.Title == title {
				sel = append(sel, int32(i))
			}
		}
		if len(sel) == 0 {
			return nil, fmt.Errorf("no document titled %q", title)
		}
		return sel, nil
	}
	at := map[string]int32{}
	for i, d := range ix.Documents {
		at[d.ID] = int32(i)
	}
	for k, id := range ids {
		i, ok := at[id]
		if !ok {
			return nil, fmt.Errorf("no document %q (%s)", id, where(k))
		}
		sel = append(sel, i)
	}
	return sel, nil
}
