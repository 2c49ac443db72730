package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/graphloom/graphloom/engine"
	"github.com/graphloom/graphloom/kernels"
)

// envInfo is what `graphloom env` prints: the tensor backend's Info and the path of
// the package kernels' CPU kernels (PPR, sparse scoring), with those this CPU offers.
type envInfo struct {
	engine.Info
	Kernels        string   `json:"kernels"`         // avx512, avx2 or portable ($GRAPHLOOM_KERNELS overrides)
	KernelsOffered []string `json:"kernels_offered"` // the paths this CPU and build offer
}

func newEnvInfo(info engine.Info) envInfo {
	e := envInfo{Info: info, Kernels: kernels.Kernels().String()}
	for _, p := range kernels.CPUKernels() {
		e.KernelsOffered = append(e.KernelsOffered, p.String())
	}
	return e
}

// String renders the backend's lines and the kernels' line.
func (e envInfo) String() string {
	return e.Info.String() + fmt.Sprintf("%-16s %s (offered: %s; $%s overrides)\n", "kernels:", e.Kernels,
		strings.Join(e.KernelsOffered, ", "), kernels.KernelsEnv)
}

func newEnvCmd() *cobra.Command {
	var backend string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print the tensor backend, device, SIMD level and PJRT plugin",
		Long: `Start the tensor backend graphloom would use ($GOMLX_BACKEND, default "go": the pure-Go
SIMD backend; "xla:cuda" or "xla:/path/xla_cuda_plugin.so" in builds with -tags xla) and print what
it reports: device, CPU SIMD level, whether the binary was built with GOEXPERIMENT=simd, plugin
path and versions; and the path of graphloom's own CPU kernels (PPR, sparse scoring): avx512,
avx2 or portable, the best this CPU offers unless $GRAPHLOOM_KERNELS names another.`,
		Example: `  graphloom env
  GOMLX_BACKEND=xla:cuda graphloom env --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			eng, err := engine.New(engine.Config{Backend: backend})
			if err != nil {
				return err
			}
			defer eng.Close()
			info := newEnvInfo(eng.Info())
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
