package engine

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/gomlx/compute"
	"golang.org/x/sys/cpu"
)

// Info describes the backend and how the binary was built; `graphloom env` prints it.
type Info struct {
	Backend        string `json:"backend"`         // backend name: "go" or "xla"
	BackendConfig  string `json:"backend_config"`  // as resolved, e.g. "xla:cuda"
	Description    string `json:"description"`     // backend's own description
	Device         string `json:"device"`          // description of device 0
	NumDevices     int    `json:"num_devices"`     // devices the backend sees
	CPUSIMD        string `json:"cpu_simd"`        // widest vector ISA the CPU offers: "avx512", "avx2", "neon", "none" (cpuSIMD)
	SIMDBuild      bool   `json:"simd_build"`      // built with GOEXPERIMENT=simd (needed for the go backend's SIMD matmul)
	GoExperiment   string `json:"goexperiment"`    // GOEXPERIMENT recorded in the build info, if any
	XLALinked      bool   `json:"xla_linked"`      // built with -tags xla
	PluginPath     string `json:"plugin_path"`     // PJRT plugin file in use (xla only), "" if none
	GoMLXVersion   string `json:"gomlx_version"`   // github.com/gomlx/gomlx module version
	ComputeVersion string `json:"compute_version"` // github.com/gomlx/compute module version
	GoVersion      string `json:"go_version"`      // Go toolchain that built the binary
	Linked         string `json:"linked"`          // backends compiled in, comma-separated
}

// String renders the Info as aligned "key: value" lines.
func (i Info) String() string {
	var b strings.Builder
	row := func(k, v string) { fmt.Fprintf(&b, "%-16s %s\n", k+":", v) }
	row("backend", i.BackendConfig)
	row("description", i.Description)
	row("device", fmt.Sprintf("%s (%d device(s))", i.Device, i.NumDevices))
	row("cpu simd", i.CPUSIMD)
	row("simd build", fmt.Sprintf("%v (GOEXPERIMENT=%q)", i.SIMDBuild, i.GoExperiment))
	row("xla linked", fmt.Sprintf("%v", i.XLALinked))
	if i.PluginPath != "" {
		row("pjrt plugin", i.PluginPath)
	}
	row("gomlx", i.GoMLXVersion)
	row("compute", i.ComputeVersion)
	row("go", i.GoVersion)
	row("linked", i.Linked)
	return b.String()
}

// Describe reports the build and CPU facts without creating a backend: Backend and
// BackendConfig are what New would pick, device fields are empty.
func Describe(cfg Config) Info {
	config := ResolveBackend(cfg.Backend)
	return describe(nil, config)
}

func describe(backend compute.Backend, config string) Info {
	name, pluginCfg, _ := strings.Cut(config, ":")
	info := Info{
		Backend:       name,
		BackendConfig: config,
		CPUSIMD:       cpuSIMD(),
		SIMDBuild:     simdBuild,
		XLALinked:     xlaLinked,
		GoVersion:     runtime.Version(),
		Linked:        strings.Join(compute.List(), ","),
	}
	if isXLA(name) {
		info.PluginPath = pluginPath(pluginCfg)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "GOEXPERIMENT" {
				info.GoExperiment = s.Value
			}
		}
		for _, dep := range bi.Deps {
			v := dep.Version
			if dep.Replace != nil {
				v = dep.Replace.Version + " (replaced)"
			}
			switch dep.Path {
			case "github.com/gomlx/gomlx":
				info.GoMLXVersion = v
			case "github.com/gomlx/compute":
				info.ComputeVersion = v
			}
		}
	}
	if info.GoMLXVersion == "" {
		info.GoMLXVersion = "unknown (no module build info)"
	}
	if info.ComputeVersion == "" {
		info.ComputeVersion = "unknown (no module build info)"
	}
	if backend != nil {
		info.Backend = backend.String()
		info.Description = backend.Description()
		info.NumDevices = backend.NumDevices()
		if info.NumDevices > 0 {
			info.Device = backend.DeviceDescription(0)
		}
	}
	return info
}

// cpuSIMD names the widest vector instruction set the CPU supports that GoMLX's SIMD
// kernels can use: in a GOEXPERIMENT=simd build as the Go runtime reads it (so
// GODEBUG=cpu.avx512f=off reports avx2, as the kernels then run), else by x/sys/cpu.
func cpuSIMD() string {
	switch runtime.GOARCH {
	case "amd64":
		if avx512, avx2, ok := x86SIMD(); ok {
			switch {
			case avx512:
				return "avx512"
			case avx2:
				return "avx2"
			}
			return "none"
		}
		switch {
		case cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL:
			return "avx512"
		case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
			return "avx2"
		}
		return "none"
	case "arm64":
		if cpu.ARM64.HasASIMD {
			return "neon"
		}
	}
	return "none"
}
