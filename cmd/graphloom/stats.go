package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/calibrate"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

func newStatsCmd() *cobra.Command {
	var path string
	var asJSON, full, docs bool
	var top int
	cmd := &cobra.Command{
		Use:   "stats --index INDEX",
		Short: "Print counts and structure of an index",
		Example: `  graphloom stats --index harbour.gl
  graphloom stats --index harbour.gl --json --top 25`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "index"); err != nil {
				return err
			}
			ix, err := graphio.ReadFileWith(path, graphio.ReadOptions{Map: true}) // read once, then exit
			if err != nil {
				return err
			}
			history, err := kg.History(ix)
			if err != nil {
				return fmt.Errorf("stats: %s: %w", path, err)
			}
			if docs {
				return printDocuments(cmd, ix, history, asJSON)
			}
			s := graphio.ComputeStats(ix, top)
			if st, err := os.Stat(path); err == nil {
				s.SizeBytes = st.Size()
			}
			cal, err := retrieve.ReadCalibration(ix)
			if err != nil {
				return fmt.Errorf("stats: %s: %w", path, err)
			}
			var cs *calibrationStats
			if cal != nil {
				cs = &calibrationStats{}
				cs.StaleWhy = calibrationStale(ix, cal)
				cs.Stale = cs.StaleWhy != ""
				if len(cal.Report) > 0 {
					if err := json.Unmarshal(cal.Report, &cs.Report); err != nil {
						return fmt.Errorf("stats: %s: calibration report: %w", path, err)
					}
				}
			}
			var life *kg.State
			if st, ok := kg.ReadState(ix); ok {
				life = &st
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), struct {
					graphio.Stats
					Calibration *calibrationStats `json:"calibration,omitempty"`
					Lifecycle   *kg.State         `json:"lifecycle,omitempty"`
				}{s, cs, life})
			}
			if err := printStats(cmd, path, s, full); err != nil {
				return err
			}
			if cs != nil {
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "calibration	fitted %s", cs.Report.Created)
				if cs.Stale {
					fmt.Fprintf(w, " — STALE: %s", cs.StaleWhy)
				}
				fmt.Fprintln(w)
				var b strings.Builder
				printCalibration(&b, &cs.Report)
				for _, l := range strings.SplitAfter(b.String(), "\n") {
					if l != "" {
						fmt.Fprint(w, "  "+l)
					}
				}
			}
			if life != nil {
				share := 0.0
				if life.MergeChunks > 0 {
					share = float64(life.Changed) / float64(life.MergeChunks)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "lifecycle\tlast merge at %d chunks; since: %d changes, %d chunks added or deleted (%.1f %%; a change past index --merge-share merges), IDF drift %.3g, %d deleted titles awaiting re-extraction\n",
					life.MergeChunks, life.Changes, life.Changed, 100*share, life.IDFDrift, len(life.PendingTitles))
			}
			if len(history) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "history\t%d add/delete/sync operations\n", len(history))
			}
			for _, h := range history {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s\t%s: %s\n", h.Op, h.Created, changeCounts(h))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&path, "index", "", "index file")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&docs, "documents", false, "list the documents (id, title, source, key, when added) and the add/delete/sync history instead (with --json: {documents, history})")
	cmd.Flags().IntVar(&top, "top", 10, "how many top entities to list")
	cmd.Flags().BoolVar(&full, "full", false, fmt.Sprintf("print entity names whole (otherwise names over %d characters are cut; --json is always whole)", maxNameRunes))
	limitFlag(cmd, "top", atLeast0(1e6))
	return cmd
}

// maxNameRunes is the most characters of an entity name stats prints without --full.
const maxNameRunes = 80

// shortName cuts a name over maxNameRunes characters, saying how long it was.
func shortName(name string) string {
	r := []rune(name)
	if len(r) <= maxNameRunes {
		return name
	}
	return fmt.Sprintf("%s… (%d characters; --full shows them)", string(r[:maxNameRunes]), len(r))
}

func printStats(cmd *cobra.Command, path string, s graphio.Stats, full bool) error {
	w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "index\t%s (%.1f KiB)\n", path, float64(s.SizeBytes)/1024)
	fmt.Fprintf(w, "documents\t%d (%d duplicate passages merged)\n", s.Documents, s.Duplicates)
	fmt.Fprintf(w, "chunks\t%d (%d tokens, %s)\n", s.Chunks, s.Tokens, s.Tokenizer)
	fmt.Fprintf(w, "entities\t%d (avg. degree %.2f)\n", s.Entities, s.AvgEntityDegree)
	if s.EntityFilter != "" {
		fmt.Fprintf(w, "entity filter\t%.1f%% of extracted names filtered (%s; %s)\n", 100*s.FilteredShare, formatCounts(s.FilteredEntities), s.EntityFilter)
	}
	fmt.Fprintf(w, "facts\t%d (%d augmented)\n", s.Facts, s.AugmentedFacts)
	fmt.Fprintf(w, "hyperedges\t%d (isolated %.1f%%, %.2f entities each)\n", s.Hyperedges, 100*s.IsolatedHyperedges, s.EntitiesPerHyperedge)
	fmt.Fprintf(w, "synonym edges\t%d\n", s.SynonymEdges)
	fmt.Fprintf(w, "runs\t%d\n", s.Runs)
	for _, r := range s.RunList {
		sel := ""
		if r.Selector != "" {
			sel = ", selector " + r.Selector
		}
		fmt.Fprintf(w, "  %s\t%s %s%s: %d facts, %d entities added\n", r.ID, r.Kind, r.Created, sel, r.Facts, r.Entities)
	}
	if s.Extractor != "" {
		fmt.Fprintf(w, "extractor\t%s\n", s.Extractor)
	}
	if s.Embedder != "" {
		kinds := make([]string, 0, len(s.Embeddings))
		for k := range s.Embeddings {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		fmt.Fprintf(w, "embedder\t%s %v\n", s.Embedder, kinds)
	}
	if len(s.TopEntities) > 0 {
		fmt.Fprintf(w, "top entities\t")
		for i, e := range s.TopEntities {
			if i > 0 {
				fmt.Fprint(w, ", ")
			}
			name := e.Name
			if !full {
				name = shortName(name)
			}
			fmt.Fprintf(w, "%s (%d)", name, e.Degree)
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}

// formatCounts prints a count per name, sorted by name: "generic 8, stop-phrase 3".
func formatCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func sumCounts(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// changeCounts says in a few words what one add, delete or sync did.
func changeCounts(h kg.Change) string {
	if h.Op == "sync" {
		return fmt.Sprintf("%d documents added, %d changed, %d deleted, %d new chunks, %d chunks dropped",
			len(h.Documents), len(h.Changed), len(h.Deleted), h.Chunks, h.ChunksDeleted)
	}
	return fmt.Sprintf("%d documents, %d chunks", len(h.Documents), h.Chunks)
}

// docRow is one document as `stats --documents` lists it.
type docRow struct {
	ID     string `json:"id"` // content hash of title and text
	Key    string `json:"key"`
	Title  string `json:"title"`
	Source string `json:"source"`
	Count  int    `json:"count"`
	Added  string `json:"added"` // when: the index's creation, or the add/sync that brought this content
}

// printDocuments lists an index's documents (id, title, source, key, when added) and
// its add/delete/sync history.
func printDocuments(cmd *cobra.Command, ix *graphio.Index, history []kg.Change, asJSON bool) error {
	added := map[string]string{}
	for _, h := range history {
		for _, d := range append(append([]kg.DocRef{}, h.Documents...), h.Changed...) {
			if h.Op != "delete" {
				added[d.ID] = h.Created
			}
		}
	}
	rows := make([]docRow, len(ix.Documents))
	for i := range ix.Documents {
		d := &ix.Documents[i]
		rows[i] = docRow{ID: d.ID, Key: kg.DocumentKey(d, ix.Meta.Corpus), Title: d.Title, Source: d.Source, Count: d.Count, Added: ix.Meta.Created}
		if t, ok := added[d.ID]; ok {
			rows[i].Added = t
		}
	}
	if asJSON {
		return printJSON(cmd.OutOrStdout(), map[string]any{"documents": rows, "history": history})
	}
	w := cmd.OutOrStdout()
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Title, r.Source, r.Key, r.Added)
	}
	for _, h := range history {
		fmt.Fprintf(w, "%s %s: %s\n", h.Op, h.Created, changeCounts(h))
		if h.Op != "sync" {
			for _, d := range h.Documents {
				fmt.Fprintf(w, "  %s\t%s\n", d.ID, d.Title)
			}
			continue
		}
		for _, l := range []struct {
			verb string
			docs []kg.DocRef
		}{{"added", h.Documents}, {"changed", h.Changed}, {"deleted", h.Deleted}} {
			for _, d := range l.docs {
				fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", l.verb, d.ID, d.Key, d.Title)
			}
		}
	}
	return nil
}

// calibrationStats is the calibration section of stats.
type calibrationStats struct {
	Stale    bool             `json:"stale"`
	StaleWhy string           `json:"stale_reason,omitempty"`
	Report   calibrate.Report `json:"report"`
}
