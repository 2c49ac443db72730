package augment

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

// harbourIndex builds the example corpus's index with the offline rule extractor.
func harbourIndex(t *testing.T) *graphio.Index {
	t.Helper()
	ix, _, err := ingest.Build(context.Background(), "../examples/harbour/corpus.json", ingest.DefaultConfig(), nil)
	require.NoError(t, err)
	_, err = kg.Build(context.Background(), ix, extract.NewRule(extract.DefaultRuleConfig()), nil, kg.DefaultConfig(), nil)
	require.NoError(t, err)
	return ix
}

// TestUngroundedCompletionsAreRejected drives a scripted server that answers every
// completion with a new entity found in no passage ("Zed Fakeman") and with
// (Tomas Brell | fake relation | Aldwick) citing evidence chunks that name neither:
// neither is merged, and both are counted by reason.
func TestUngroundedCompletionsAreRejected(t *testing.T) {
	ix := harbourIndex(t)
	_, ok := graphio.NewBuilder(ix, "").EntityIndex("tomas brell")
	require.True(t, ok)

	fakeCited := 0
	srv := llmtest.NewServer(t)
	srv.SetDefault(func(r llmtest.Request) llmtest.Reply {
		u := r.LastUser()
		evText := u[strings.Index(u, "Evidence passages:\n")+len("Evidence passages:\n"):]
		evText = evText[:strings.Index(evText, "\n\n")]
		var ev []evidenceJSON
		if err := json.Unmarshal([]byte(evText), &ev); err != nil {
			return llmtest.Reply{Content: "{}"}
		}
		root := strings.TrimSpace(strings.Split(strings.Split(u, "Subgraph root entity:\n")[1], "\n")[0])
		props := []string{fmt.Sprintf(`{"triple": ["Zed Fakeman", "visited", %q], "chunk_ids": [%q]}`, root, ev[0].ChunkID)}
		for _, e := range ev {
			if !strings.Contains(e.Passage, "Tomas Brell") && !strings.Contains(e.Passage, "Aldwick") {
				props = append(props, fmt.Sprintf(`{"triple": ["Tomas Brell", "fake relation", "Aldwick"], "chunk_ids": [%q]}`, e.ChunkID))
				fakeCited++
				break
			}
		}
		return llmtest.Reply{Content: `{"new_triples": [` + strings.Join(props, ", ") + `]}`}
	})
	c, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "m"})
	require.NoError(t, err)
	opts := testOptions(&LLMCompleter{C: c})
	opts.Config.RandomSelector = true
	opts.Config.Budget, opts.Config.Roots = 8, 40
	rep, err := Run(context.Background(), ix, "aug-ground", opts)
	require.NoError(t, err)
	require.Equal(t, 8, rep.Calls)
	require.Positive(t, fakeCited)
	assert.Equal(t, rep.Calls, rep.Rejections[RejectNewEntity], "Zed Fakeman, once per call")
	assert.Equal(t, fakeCited, rep.Rejections[RejectUngrounded], "the fake relation, whenever it was proposed")
	assert.Zero(t, rep.Accepted)
	_, ok = graphio.NewBuilder(ix, "").EntityIndex("zed fakeman")
	assert.False(t, ok, "no entity for Zed Fakeman")
	for _, f := range ix.Facts {
		assert.NotEqual(t, "fake relation", f.Predicate)
	}
}
