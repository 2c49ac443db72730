package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/graphloom/graphloom/graphio"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "graphloom",
		Short:         "Build, augment and query GraphRAG indices",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error { return checkFlags(cmd) }
	root.PersistentFlags().Bool("quiet", false, "no progress bars")
	root.AddCommand(newIndexCmd(), newStatsCmd(), newQueryCmd(), newAugmentCmd(), newEvalCmd(), newEnvCmd(), newVersionCmd())
	return root
}

func buildVersion() string {
	if version != "dev" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print graphloom's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "graphloom %s\n", buildVersion())
			return err
		},
	}
}

// bar returns a progress callback drawing a bar on stderr when it is a terminal and
// --quiet is off, and a no-op otherwise; call the returned finish when done.
func bar(cmd *cobra.Command, desc string) (progress func(done, total int), finish func()) {
	quiet, _ := cmd.Flags().GetBool("quiet")
	if quiet || !term.IsTerminal(int(os.Stderr.Fd())) {
		return func(int, int) {}, func() {}
	}
	var b *progressbar.ProgressBar
	return func(done, total int) {
			if b == nil {
				b = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
					progressbar.OptionSetDescription(desc), progressbar.OptionShowCount(),
					progressbar.OptionShowIts(), progressbar.OptionSetPredictTime(true),
					progressbar.OptionClearOnFinish(), progressbar.OptionThrottle(100e6))
			}
			_ = b.Set(done)
		}, func() {
			if b != nil {
				_ = b.Finish()
			}
		}
}

// stageBars returns a progress factory drawing one bar per named stage.
func stageBars(cmd *cobra.Command) func(stage string) func(done, total int) {
	var finish func()
	return func(stage string) func(done, total int) {
		if finish != nil {
			finish()
		}
		var p func(done, total int)
		p, finish = bar(cmd, stage)
		return p
	}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// requireFlags turns missing required flags into a usage error.
func requireFlags(cmd *cobra.Command, names ...string) error {
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			return usageError{fmt.Errorf("%s: --%s is required", cmd.Name(), n)}
		}
	}
	return nil
}

// lockIndex takes the writer lock of the index at path for this command (see
// graphio.LockWriter), waiting for it with --wait, and removes temporary files that
// killed writers left behind. Call the returned unlock when the index is written.
func lockIndex(cmd *cobra.Command, path string, wait bool) (unlock func(), err error) {
	holder := fmt.Sprintf("pid %d: graphloom %s %s (since %s)", os.Getpid(), cmd.Name(), path, time.Now().UTC().Format(time.RFC3339))
	l, err := graphio.LockWriter(cmd.Context(), path, holder, wait, func(other string) {
		cmd.PrintErrf("waiting for the writer lock of %s (%s)…\n", path, other)
	})
	if errors.Is(err, graphio.ErrLocked) {
		return nil, fmt.Errorf("%w: wait for it to finish, or pass --wait", err)
	}
	if err != nil {
		return nil, err
	}
	if removed, err := l.RemoveStaleTemps(); err != nil {
		cmd.PrintErrf("warning: %v\n", err)
	} else if len(removed) > 0 {
		cmd.PrintErrf("removed %d temporary file(s) left by an interrupted write: %s\n", len(removed), strings.Join(removed, ", "))
	}
	return func() { _ = l.Unlock() }, nil
}
