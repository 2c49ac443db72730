package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/augment"
	"github.com/graphloom/graphloom/graphio"
)

// runStability runs the stability report (augment.Stability) over seeds and prints
// each run and the spread.
func runStability(cmd *cobra.Command, ix *graphio.Index, opts augment.Options, seeds []int64, over string, asJSON bool) error {
	opts.Log, opts.Progress = nil, nil
	rep, err := augment.Stability(cmd.Context(), ix, seeds, over, opts)
	if err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if asJSON {
		return printJSON(w, rep)
	}
	names := make([]string, len(seeds))
	for i, s := range seeds {
		names[i] = fmt.Sprint(s)
	}
	fmt.Fprintf(w, "stability of augment --plan over --%s %s (each run trains; no checkpoint):\n", over, strings.Join(names, ", "))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "  --%s\ttest ROC-AUC ± its SE\tbest shortcut\t≥ θ\tselected\ttest ECE → calibrated\ttrain\n", over)
	for _, r := range rep.Runs {
		fmt.Fprintf(tw, "  %d\t%.3f ± %.3f\t%.3f\t%d of %d\t%d\t%.3f → %.3f\t%.0fs\n", r.Seed, r.TestAUC, r.TestAUCSE, r.BestShortcut,
			r.AboveThreshold, r.Sampled, len(r.Selected), r.ECE, r.ECECalibrated, r.TrainSeconds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ms := func(x [2]float64) string { return fmt.Sprintf("%.3f ± %.3f", x[0], x[1]) }
	fmt.Fprintf(w, "over %d runs (mean ± sd):\n", len(rep.Runs))
	fmt.Fprintf(w, "  test ROC-AUC %s (a run's own standard error %.3f on average); best shortcut baseline %s\n",
		ms(rep.TestAUC), rep.TestAUCSE[0], ms(rep.BestShortcut))
	fmt.Fprintf(w, "  subgraphs ≥ θ %.1f ± %.1f (the farthest run %.0f %% from the mean)\n",
		rep.AboveThreshold[0], rep.AboveThreshold[1], 100*rep.AboveDeviation)
	fmt.Fprintf(w, "  selected sets: mean pairwise Jaccard %.2f (least pair %.2f)\n", rep.Jaccard, rep.JaccardMin)
	fmt.Fprintf(w, "  test ECE %s uncalibrated, %s calibrated (higher after calibration on %d of %d runs)\n",
		ms(rep.ECE), ms(rep.ECECalibrated), rep.ECEHigher, len(rep.Runs))
	return nil
}
