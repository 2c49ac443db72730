package kg_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
	"github.com/graphloom/graphloom/retrieve"
)

// TestSyncEqualsFreshBuild: an index of the example corpus, synced with the corpus
// after an edit (and, in other cases, a deletion and an addition too), has the records,
// the statistics, the documents (keys, in corpus order) and, for every retriever and
// every question of the example corpus, the rankings and scores of a fresh index of
// the edited corpus; only the changed and new documents' chunks are extracted. An
// index written before keys were kept is matched by the keys derived from its sources.
func TestSyncEqualsFreshBuild(t *testing.T) {
	a, b, qs := harbour(t)
	all := append(append([]ingest.Passage{}, a...), b...)
	edit := func(ps []ingest.Passage, i int) []ingest.Passage {
		out := append([]ingest.Passage{}, ps...)
		out[i].Text += " The harbour office keeps a second ledger, of wrecks, since 1790."
		return out
	}
	for _, tc := range []struct {
		name   string
		before []ingest.Passage
		after  []ingest.Passage
		legacy bool // the index has no stored keys
		// counts of the change
		added, changed, deleted, unchanged, extracted int
	}{
		{name: "edit one", before: all, after: edit(all, 3),
			changed: 1, unchanged: len(all) - 1, extracted: 1},
		{name: "edit one, delete one, add one", before: all[:len(all)-1],
			after: append(edit(all[1:len(all)-1], 2), all[len(all)-1]),
			added: 1, changed: 1, deleted: 1, unchanged: len(all) - 3, extracted: 2},
		{name: "edit one of an index without keys", before: all, after: edit(all, 5), legacy: true,
			changed: 1, unchanged: len(all) - 1, extracted: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := fresh(t, tc.after)
			ix := fresh(t, tc.before)
			if tc.legacy {
				for i := range ix.Documents {
					ix.Documents[i].Key = ""
				}
			}
			ix = roundTrip(t, ix)
			const root = "../examples/harbour/corpus.json"
			plan, err := kg.PlanSync(context.Background(), ix, tc.after, root, ingest.DefaultConfig())
			require.NoError(t, err)
			ch, err := kg.Sync(context.Background(), ix, tc.after, root, ingest.DefaultConfig(), rule(), nil, kg.DefaultConfig(), nil)
			require.NoError(t, err)
			retrieve.StoreBM25(ix, retrieve.DefaultConfig())
			ix = roundTrip(t, ix)
			require.NoError(t, ix.Validate())

			for _, c := range []*kg.Change{plan, ch} {
				assert.Len(t, c.Documents, tc.added)
				assert.Len(t, c.Changed, tc.changed)
				assert.Len(t, c.Deleted, tc.deleted)
				assert.Equal(t, tc.unchanged, c.Unchanged)
				assert.Equal(t, tc.extracted, c.Chunks, "one chunk per harbour passage")
				assert.Equal(t, tc.changed+tc.deleted, c.ChunksDeleted)
			}
			assert.Equal(t, tc.extracted, ch.Extracted, "only the changed and new documents' chunks are extracted")
			if tc.legacy {
				assert.Equal(t, len(tc.after)-tc.changed-tc.added, ch.Rekeyed, "the kept documents get their keys stored")
			}
			assert.Equal(t, docs(want), docs(ix))
			assert.Equal(t, graphOf(want), graphOf(ix))
			assert.Equal(t, counts(want), counts(ix))
			assert.Equal(t, rankings(t, want, qs), rankings(t, ix, qs))

			// A second sync finds nothing to do.
			ch, err = kg.Sync(context.Background(), ix, tc.after, root, ingest.DefaultConfig(), rule(), nil, kg.DefaultConfig(), nil)
			require.NoError(t, err)
			assert.Empty(t, ch.Documents)
			assert.Empty(t, ch.Changed)
			assert.Empty(t, ch.Deleted)
			assert.Zero(t, ch.Rekeyed)
			h, err := kg.History(ix)
			require.NoError(t, err)
			require.Len(t, h, 1, "a sync that found nothing to do is not recorded")
			assert.Equal(t, "sync", h[0].Op)
		})
	}
}

// docs lists an index's documents: key, id and title, in order.
func docs(ix *graphio.Index) []string {
	var out []string
	for _, d := range ix.Documents {
		out = append(out, d.Key+" "+d.ID+" "+d.Title)
	}
	return out
}
