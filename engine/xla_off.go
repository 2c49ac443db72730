//go:build !xla

package engine

// xlaLinked reports whether the XLA/PJRT backend was compiled in (build tag "xla").
const xlaLinked = false

// disableAutoInstall is a no-op without the xla backend.
func disableAutoInstall() {}
