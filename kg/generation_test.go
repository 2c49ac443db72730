package kg_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kg"
)

// TestGeneration: an index keeps its generation through a write and a read; an add,
// a delete, a sync and an augmentation run each give a new one, and StaleWarning
// warns a model that saw an earlier one (and not one that recorded none).
func TestGeneration(t *testing.T) {
	a, b, _ := harbour(t)
	a, b = a[:4], b[:2]
	ix := fresh(t, a)
	g0 := kg.Generation(ix)
	assert.Regexp(t, `^g0-[0-9a-f]{12}$`, g0)
	ix = roundTrip(t, ix)
	assert.Equal(t, g0, kg.Generation(ix), "reading and writing keep the generation")
	assert.Empty(t, kg.StaleWarning(ix, g0, "model m"))
	assert.Empty(t, kg.StaleWarning(ix, "", "model m"), "a model that recorded no generation")

	seen := map[string]string{"built": g0}
	step := func(name string, change func()) {
		change()
		g := kg.Generation(ix)
		for prev, pg := range seen {
			assert.NotEqual(t, pg, g, "%s gives the generation of %s", name, prev)
		}
		seen[name] = g
	}
	step("add", func() {
		_, err := kg.Add(context.Background(), ix, b, ingest.DefaultConfig(), rule(), nil, kg.DefaultConfig(), nil)
		require.NoError(t, err)
	})
	step("delete", func() {
		_, err := kg.Delete(context.Background(), ix, []int32{int32(len(ix.Documents) - 1)}, rule(), nil, kg.DefaultConfig())
		require.NoError(t, err)
	})
	step("sync", func() {
		_, err := kg.Sync(context.Background(), ix, a, "", ingest.DefaultConfig(), rule(), nil, kg.DefaultConfig(), nil)
		require.NoError(t, err)
	})
	step("augment", func() {
		ix.Runs = append(ix.Runs, graphio.Run{ID: "aug-1", Kind: "augment"})
	})
	assert.Regexp(t, `^g3-`, kg.Generation(ix), "three lifecycle operations")
	w := kg.StaleWarning(ix, g0, "CAGE encoder x.gl.cage")
	assert.Contains(t, w, "CAGE encoder x.gl.cage is stale")
	assert.Contains(t, w, g0)
	assert.Contains(t, w, kg.Generation(ix))
}
