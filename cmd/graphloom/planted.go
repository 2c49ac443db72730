package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/augment"
	"github.com/graphloom/graphloom/graphio"
)

// plantedSeeds is how many seeds augment --planted runs (seed, seed+1, …).
const plantedSeeds = 3

// runPlanted runs the planted-missingness benchmark (augment.Planted) and prints the
// per-seed rows and the mean ± standard deviation per selector and fact class.
func runPlanted(cmd *cobra.Command, ix *graphio.Index, opts augment.Options, n int, asJSON bool) error {
	if opts.Plan {
		return usageError{fmt.Errorf("augment: --planted runs completion; drop --plan")}
	}
	seeds := make([]int64, plantedSeeds)
	for i := range seeds {
		seeds[i] = opts.Config.Seed + int64(i)
	}
	opts.Log, opts.Progress = nil, nil
	rows, err := augment.Planted(cmd.Context(), ix, n, seeds, opts)
	if err != nil {
		return err
	}
	sum := augment.SummarisePlanted(rows)
	w := cmd.OutOrStdout()
	if asJSON {
		return printJSON(w, map[string]any{"rows": rows, "summary": sum})
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "seed\tselector\tclass\tdeleted\trecovered\tregions (both ends)\tat ⅛ ¼ ½ budget\treachable\ttouched (one end)\tselected\tscorer test AUC (best shortcut)")
	for _, r := range rows {
		auc := "-"
		if r.Selector == "gnn" {
			auc = fmt.Sprintf("%.3f (%.3f)", r.TestAUC, r.BestBaseline)
		}
		b := r.RegionsByBudget
		rec := fmt.Sprint(r.Recovered)
		if r.NotCompleted {
			rec = "- (not completed)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%d\t%d %d %d\t%d\t%d\t%d\t%s\n", r.Seed, r.Selector, r.Class, r.Deleted, rec, r.Regions,
			b[0], b[1], b[2], r.Reachable, r.Touched, r.Selected, auc)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "selector\tclass\tseeds\tdeleted\trecovered (mean ± sd)\tregions (mean ± sd)\tat ⅛ ¼ ½ budget\treachable\ttouched (mean ± sd)\tselected")
	for _, s := range sum {
		b := s.RegionsByBudget
		rec := fmt.Sprintf("%.2f ± %.2f", s.Recovered[0], s.Recovered[1])
		if s.NotCompleted {
			rec = "- (not completed)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%.2f ± %.2f\t%.1f %.1f %.1f\t%.1f\t%.2f ± %.2f\t%.1f\n", s.Selector, s.Class, s.Seeds, s.Deleted,
			rec, s.Regions[0], s.Regions[1], b[0], b[1], b[2], s.Reachable, s.Touched[0], s.Touched[1], s.Selected[0])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nwhere the gnn looks: ROC-AUC at telling the sampled subgraphs whose root is an end of a deleted fact")
	fmt.Fprintln(tw, "seed\tclass\troot-end subgraphs\tscore ROC-AUC\twithin equal root degree\troot degree alone")
	for _, r := range rows {
		if r.Selector == "gnn" && r.RootEnds > 0 {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%.3f\t%.3f\t%.3f\n", r.Seed, r.Class, r.RootEnds, r.RootEndAUC, r.RootEndAUCWithinDegree, r.RootEndDegreeAUC)
		}
	}
	return tw.Flush()
}
