package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/engine"
)

func newEnvCmd() *cobra.Command {
	var backend string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print the tensor backend, device, SIMD level and PJRT plugin",
		Long: `Start the tensor backend graphloom would use ($GOMLX_BACKEND, default "go": the pure-Go
SIMD backend; "xla:cuda" or "xla:/path/xla_cuda_plugin.so" in builds with -tags xla) and print what
it reports: device, CPU SIMD level, whether the binary was built with GOEXPERIMENT=simd, plugin
path and versions.`,
		Example: `  graphloom env
  GOMLX_BACKEND=xla:cuda graphloom env --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eng, err := engine.New(engine.Config{Backend: backend})
			if err != nil {
				return err
			}
			defer eng.Close()
			info := eng.Info()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), info)
			}
			_, err = fmt.Fprint(cmd.OutOrStdout(), info.String())
			return err
		},
	}
	cmd.Flags().StringVar(&backend, "backend", "", `backend, e.g. "go" or "xla:cuda" (default $GOMLX_BACKEND or "go")`)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}
