// Command graphloom builds, augments and queries GraphRAG indices.
//
// It only wires flags to the pipeline packages; see the README for a tour.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError marks an error in the command line rather than in the work.
type usageError struct{ error }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal cancels the command's context (it stops at its next check and
	// writes nothing half-done); once it is seen, the signals are Go's again, so a
	// second Ctrl-C ends a step that does not check (a long generation, a load).
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := execute(ctx, newRootCmd())
	if err == nil {
		os.Exit(exitOK)
	}
	fmt.Fprintln(os.Stderr, "graphloom:", err)
	os.Exit(exitCode(err))
}

// exitCode is exitUsage for an error in the command line, exitError otherwise.
func exitCode(err error) int {
	var ue usageError
	// cobra reports an unknown subcommand from its own lookup, before any command's
	// argument check runs (usageArgs); its message is the only mark it has.
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command ") {
		return exitUsage
	}
	return exitError
}

// execute runs the command tree, turning a panic into an error (exit 1) with its
// stack on stderr, so that no panic escapes with Go's own exit code 2, which is the
// code of a usage error.
func execute(ctx context.Context, root *cobra.Command) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "%s\n", debug.Stack())
			err = fmt.Errorf("internal error (please report it with the stack above): %v", r)
		}
	}()
	return root.ExecuteContext(ctx)
}
