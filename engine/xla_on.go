//go:build xla

package engine

// Linking github.com/gomlx/go-xla/compute/xla registers the "xla" backend with
// github.com/gomlx/compute. It needs cgo; the PJRT plugin itself is loaded at run time
// from the path given in GOMLX_BACKEND or PJRT_PLUGIN_LIBRARY_PATH (see package doc).
import "github.com/gomlx/go-xla/compute/xla"

// xlaLinked reports whether the XLA/PJRT backend was compiled in (build tag "xla").
const xlaLinked = true

// disableAutoInstall stops go-xla from downloading PJRT plugins; it reads
// GOMLX_NO_AUTO_INSTALL only at package initialisation, so graphloom sets the switch.
func disableAutoInstall() { xla.EnableAutoInstall(false) }

// init turns the downloader off as soon as the backend is linked: go-xla would
// otherwise install a plugin when it is opened under any of its names, or by code
// that does not go through New.
func init() { disableAutoInstall() }
