package augment

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadGoldNamesTheRecord: a malformed facts.json is refused naming the file, the
// fact (counted from 1) and the field.
func TestReadGoldNamesTheRecord(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ name, data, want string }{
		{"not an array", `{"id": "f1"}`, "want a JSON array of facts"},
		{"a field of the wrong type", `[{"id": "f1", "triple": ["a", "b", "c"]}, {"id": "f2", "triple": "a b c"}]`, `fact 2: field "triple": want`},
		{"a triple of two parts", `[{"id": "f1", "triple": ["a", "b"]}]`, `fact 1: field "triple" has 2 parts, want 3`},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "facts.json")
			require.NoError(t, os.WriteFile(path, []byte(c.data), 0o644))
			_, err := ReadGold(path)
			require.Error(t, err)
			assert.Contains(t, err.Error(), path)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	path := filepath.Join(dir, "ok.json")
	require.NoError(t, os.WriteFile(path, []byte(`[{"id": "f1", "triple": ["Ada", "born in", "Aldwick"], "chunks": ["c1", "c2"]}]`), 0o644))
	g, err := ReadGold(path)
	require.NoError(t, err)
	assert.Equal(t, []GoldFact{{ID: "f1", Triple: []string{"Ada", "born in", "Aldwick"}, Chunks: []string{"c1", "c2"}}}, g)
}
