package kg

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/extract"
)

// TestEncodeResultsIsJSON checks that the streamed encoding of stored extraction
// results is the document encoding/json writes for them.
func TestEncodeResultsIsJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		sr   storedResults
	}{
		{"none", storedResults{}},
		{"empty", storedResults{Chunks: []string{}, Results: []extract.Result{}}},
		{"two", storedResults{Chunks: []string{"chunk-a", "chunk-b"}, Results: []extract.Result{
			{Entities: []extract.Entity{{Text: "Port Keswyn", Type: "place"}}, Triples: []extract.Triple{{Subject: "a", Predicate: "<in>", Object: "b"}}},
			{Failed: "timeout \"quoted\""},
		}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got bytes.Buffer
			require.NoError(t, encodeResults(&got, tc.sr))
			want, err := json.Marshal(tc.sr)
			require.NoError(t, err)
			assert.Equal(t, string(want)+"\n", got.String())
		})
	}
}
