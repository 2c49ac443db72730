package embed_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/models/encoder/encodertest"
)

// TestLocalForIndex: an index records a local folder; ForIndex reopens it from the
// recorded path, accepts the same folder and refuses another one or a hashed index.
func TestLocalForIndex(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for i, d := range []string{a, b} {
		_, err := encodertest.Write(d, encodertest.Spec{SentenceTransformers: true, Normalize: true, Seed: uint64(i + 1),
			Prompts: map[string]string{"query": "query: "}})
		require.NoError(t, err)
	}
	la, err := embed.NewLocal(embed.LocalConfig{Dir: a}, nil)
	require.NoError(t, err)
	defer la.Close()
	lb, err := embed.NewLocal(embed.LocalConfig{Dir: b}, nil)
	require.NoError(t, err)
	defer lb.Close()
	assert.Regexp(t, `^local:a@[0-9a-f]{16}$`, la.Identity())
	assert.True(t, embed.IsLocal(la.Identity()))

	ctx := context.Background()
	text := []string{"where was the harbour"}
	pv, err := la.Embed(ctx, text)
	require.NoError(t, err)
	qv, err := embed.Queries(ctx, la, text)
	require.NoError(t, err)
	qp, err := la.Embed(ctx, []string{"query: where was the harbour"})
	require.NoError(t, err)
	assert.Equal(t, qp[0], qv[0], "a query is embedded as its prompt + text")
	assert.NotEqual(t, pv[0], qv[0])

	ix := &graphio.Index{}
	require.NoError(t, embed.Store(ix, la))
	reopened, err := embed.ForIndex(ix, nil)
	require.NoError(t, err)
	assert.Equal(t, la.Identity(), reopened.Identity())
	rv, err := reopened.Embed(ctx, text)
	require.NoError(t, err)
	assert.Equal(t, pv[0], rv[0])
	same, err := embed.ForIndex(ix, la)
	require.NoError(t, err)
	assert.Same(t, la, same)

	_, err = embed.ForIndex(ix, lb)
	require.ErrorIs(t, err, embed.ErrMismatch)
	assert.ErrorContains(t, err, `the index was embedded with "`+la.Identity()+`", the requested embedder is "`+lb.Identity()+`"`)

	h, err := embed.NewHashed(embed.DefaultHashedConfig())
	require.NoError(t, err)
	hashed := &graphio.Index{}
	require.NoError(t, embed.Store(hashed, h))
	_, err = embed.ForIndex(hashed, la)
	assert.ErrorIs(t, err, embed.ErrMismatch, "a local embedder asked for on a hashed index")
}
