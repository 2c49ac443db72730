package encoder

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/engine"
)

// TestGoBackendRecognised guards the per-sequence attention's switch: on the Go
// backend (the tests' GOMLX_BACKEND=go) the backend must be recognised by its name.
func TestGoBackendRecognised(t *testing.T) {
	if b := os.Getenv("GOMLX_BACKEND"); b != "" && !strings.HasPrefix(b, "go") {
		t.Skipf("GOMLX_BACKEND=%s", b)
	}
	eng, err := engine.New(engine.Config{Backend: "go"})
	require.NoError(t, err)
	defer eng.Close()
	assert.True(t, isGoBackend(eng.Backend()), "backend named %q", eng.Backend().Name())
	assert.False(t, isGoBackend(nil))
}
