package kg

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
)

// TestGenerationNamesTheDocuments: two deletes of different documents recorded in
// the same second with the same counts give two generations; history recorded
// before the documents' digest was kept gives the generation it gave then.
func TestGenerationNamesTheDocuments(t *testing.T) {
	gen := func(doc string, digest bool) string {
		ix := &graphio.Index{Meta: graphio.Meta{Created: "2026-12-01T00:00:00Z"}, Blobs: map[string][]byte{}}
		c := Change{Op: "delete", Created: "2026-12-07T10:00:00Z", Documents: []DocRef{{ID: doc}}, Chunks: 1}
		require.NoError(t, appendHistory(ix, &c))
		require.NotEmpty(t, c.DocsDigest, "the caller's change has it too")
		if !digest { // as written before: no digest
			h, err := History(ix)
			require.NoError(t, err)
			require.NotEmpty(t, h[0].DocsDigest)
			h[0].DocsDigest = ""
			ix.Blobs[historyBlob], err = json.Marshal(h)
			require.NoError(t, err)
		}
		return Generation(ix)
	}
	assert.NotEqual(t, gen("doc-a", true), gen("doc-b", true))
	assert.Equal(t, gen("doc-a", false), gen("doc-b", false), "old history: counts and times only, as before")
	assert.NotEqual(t, gen("doc-a", true), gen("doc-a", false))
}
