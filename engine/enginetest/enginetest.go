// Package enginetest gives tests an engine on the pure-Go backend, closed when the
// test ends.
package enginetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
)

// New returns a pure-Go engine closed at the end of t.
func New(t testing.TB) *engine.Engine {
	t.Helper()
	e, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	t.Cleanup(e.Close)
	return e
}
