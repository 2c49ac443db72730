package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/graphloom/graphloom/augment"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
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
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := kernels.KernelsError(); err != nil {
			return err // an override this CPU cannot run: refused before any work
		}
		return checkFlags(cmd)
	}
	root.PersistentFlags().Bool("quiet", false, "no progress bars")
	root.AddCommand(newIndexCmd(), newDeleteCmd(), newStatsCmd(), newQueryCmd(), newAugmentCmd(), newEvalCmd(), newEnvCmd(), newFakeLLMCmd(), newSynthCmd(), newCalibrateCmd(), newServeCmd(), newImportCmd(), newExportCmd(), newTrainCmd(), newLMCmd(), newVersionCmd())
	decimalFlags(root)
	usageArgs(root)
	return root
}

// usageArgs makes every command's argument check (cobra.NoArgs, ExactArgs, …) return a
// usageError, so that a wrong number of arguments exits 2 like a wrong flag.
func usageArgs(c *cobra.Command) {
	if c.HasParent() && c.HasSubCommands() && !c.Runnable() {
		// A group ("train", "lm"): cobra shows its help for any argument, exit 0;
		// an unknown subcommand is a usage error, as at the root.
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())}
			}
			return cmd.Help()
		}
	}
	if check := c.Args; check != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		usageArgs(sub)
	}
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
		Use:     "version",
		Short:   "Print graphloom's version",
		Example: "  graphloom version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "graphloom %s\n", buildVersion())
			return err
		},
	}
}

// progressIntervalEnv sets the interval of plain progress lines (a Go duration; default 10s).
const progressIntervalEnv = "GRAPHLOOM_PROGRESS_INTERVAL"

// bar returns a progress callback for a stage: a bar on stderr when it is a terminal,
// otherwise a plain line every GRAPHLOOM_PROGRESS_INTERVAL (default 10 s, also while no
// progress is reported, so a stalled stage is visible) and one when the stage ends;
// nothing with --quiet. Call the returned finish when done.
func bar(cmd *cobra.Command, desc string) (progress func(done, total int), finish func()) {
	return barWith(cmd, desc, nil)
}

// barWith is bar with extra() (may be nil) appended to plain progress lines.
func barWith(cmd *cobra.Command, desc string, extra func() string) (progress func(done, total int), finish func()) {
	quiet, _ := cmd.Flags().GetBool("quiet")
	if quiet {
		return func(int, int) {}, func() {}
	}
	if !term.IsTerminal(int(os.Stderr.Fd())) {
		return plainProgress(cmd.ErrOrStderr(), desc, progressInterval(), extra)
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

func progressInterval() time.Duration {
	if v := os.Getenv(progressIntervalEnv); v != "" {
		if d, err := time.ParseDuration(v); err == nil && d > 0 {
			return d
		}
	}
	return 10 * time.Second
}

// plainProgress prints "desc: done/total (p%), elapsed" lines to w every interval
// while the stage runs, with extra() appended when it says something (the LLM's
// retries), and a last line when it ends.
func plainProgress(w io.Writer, desc string, interval time.Duration, extra func() string) (func(done, total int), func()) {
	var mu sync.Mutex
	done, total, seen := 0, 0, false
	start := time.Now()
	line := func(final bool) {
		mu.Lock()
		d, t, ok := done, total, seen
		mu.Unlock()
		if final && !ok {
			return
		}
		s := fmt.Sprintf("%s: ", desc)
		if ok && t > 0 {
			s += fmt.Sprintf("%d/%d (%.0f%%)", d, t, 100*float64(d)/float64(t))
		} else {
			s += "waiting"
		}
		s += ", " + time.Since(start).Round(time.Second).String()
		if final {
			s += ", done"
		}
		if extra != nil {
			if e := extra(); e != "" {
				s += "; " + e
			}
		}
		fmt.Fprintln(w, s)
	}
	stop := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				line(false)
			}
		}
	}()
	var once sync.Once
	return func(d, t int) {
			mu.Lock()
			done, total, seen = d, t, true
			mu.Unlock()
		}, func() {
			once.Do(func() {
				close(stop)
				<-stopped
				line(true)
			})
		}
}

// stageBars returns a progress factory drawing one bar (or plain lines) per named
// stage, with extra() (may be nil) appended to plain lines, and a function ending the
// last stage.
func stageBars(cmd *cobra.Command, extra func() string) (func(stage string) func(done, total int), func()) {
	var finish func()
	end := func() {
		if finish != nil {
			finish()
			finish = nil
		}
	}
	return func(stage string) func(done, total int) {
		end()
		var p func(done, total int)
		p, finish = barWith(cmd, stage, extra)
		return p
	}, end
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

// lockHolder describes this command as the holder of the writer lock of path.
func lockHolder(cmd *cobra.Command, path string) string {
	return fmt.Sprintf("pid %d: %s %s (since %s)", os.Getpid(), cmd.CommandPath(), path, time.Now().UTC().Format(time.RFC3339))
}

// lockIndex takes the writer lock of the index at path for this command (see
// graphio.LockWriter), waiting for it with --wait, and removes temporary files that
// killed writers left behind. Call the returned unlock when the index is written.
func lockIndex(cmd *cobra.Command, path string, wait bool) (unlock func(), err error) {
	l, err := graphio.LockWriter(cmd.Context(), path, lockHolder(cmd, path), wait, func(other string) {
		cmd.PrintErrf("waiting for the writer lock of %s (%s)…\n", path, other)
	})
	if errors.Is(err, graphio.ErrLocked) {
		return nil, fmt.Errorf("%w: wait for it to finish, or pass --wait", err)
	}
	if err != nil {
		return nil, err
	}
	removed, err := l.RemoveStaleTemps()
	if err == nil {
		var more []string
		more, err = augment.RemoveStaleReportTemps(path)
		removed = append(removed, more...)
	}
	if err != nil {
		cmd.PrintErrf("warning: %v\n", err)
	}
	if len(removed) > 0 {
		cmd.PrintErrf("removed %d temporary file(s) left by an interrupted write: %s\n", len(removed), strings.Join(removed, ", "))
	}
	return func() { _ = l.Unlock() }, nil
}
