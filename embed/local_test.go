package embed_test

import (
	"context"
	"encoding/json"
	"math"
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

// TestLocalCosineFolderWithoutNormalize: a sentence-transformers folder compared by
// cosine without a Normalize module gives unit vectors (graphloom ranks by dot
// product), and its default_prompt_name's prompt to queries and passages; an index
// embedded with it before graphloom read either, its vectors as pooled and without
// the prompt, reopens with the vectors it was built with.
func TestLocalCosineFolderWithoutNormalize(t *testing.T) {
	d := filepath.Join(t.TempDir(), "m")
	_, err := encodertest.Write(d, encodertest.Spec{SentenceTransformers: true, Similarity: "-", Seed: 3,
		DefaultPrompt: "retrieval", Prompts: map[string]string{"retrieval": "passage: "}})
	require.NoError(t, err)
	norm := func(v []float32) float64 {
		var ss float64
		for _, x := range v {
			ss += float64(x) * float64(x)
		}
		return math.Sqrt(ss)
	}
	ctx := context.Background()
	text := []string{"Mara Vell founded Quillhaven in 1801."}
	now, err := embed.NewLocal(embed.LocalConfig{Dir: d}, nil)
	require.NoError(t, err)
	defer now.Close()
	v, err := now.Embed(ctx, text)
	require.NoError(t, err)
	assert.InDelta(t, 1, norm(v[0]), 1e-5)

	assert.Equal(t, "passage: ", now.Model().Prompt(true))
	off, none := false, ""
	before, err := embed.NewLocal(embed.LocalConfig{Dir: d, Normalize: &off, QueryPrompt: &none, PassagePrompt: &none}, nil)
	require.NoError(t, err)
	defer before.Close()
	pooled, err := before.Embed(ctx, text)
	require.NoError(t, err)
	require.Greater(t, math.Abs(norm(pooled[0])-1), 0.01, "the pooled vector is not unit length")
	require.NotEqual(t, now.Identity(), before.Identity())

	blob, err := json.Marshal(embed.LocalConfig{Dir: d}) // what such an index recorded: no normalize setting
	require.NoError(t, err)
	ix := &graphio.Index{Meta: graphio.Meta{Embedder: before.Identity()}, Blobs: map[string][]byte{"embedder": blob}}
	e, err := embed.ForIndex(ix, nil)
	require.NoError(t, err)
	defer e.(*embed.Local).Close()
	assert.Equal(t, before.Identity(), e.Identity())
	got, err := e.Embed(ctx, text)
	require.NoError(t, err)
	assert.InDeltaSlice(t, pooled[0], got[0], 1e-6)

	// The folder named explicitly (--embedder local:DIR) is read as the index needs.
	e, err = embed.ForIndex(ix, now)
	require.NoError(t, err)
	defer e.(*embed.Local).Close()
	assert.Equal(t, before.Identity(), e.Identity())

	// A folder compared by euclidean distance without a Normalize module is refused
	// now unless normalised; an index embedded with it as pooled still opens.
	eu := filepath.Join(t.TempDir(), "eu")
	_, err = encodertest.Write(eu, encodertest.Spec{SentenceTransformers: true, Similarity: "euclidean", Seed: 4})
	require.NoError(t, err)
	_, err = embed.NewLocal(embed.LocalConfig{Dir: eu}, nil)
	require.ErrorContains(t, err, `similarity_fn_name "euclidean"`)
	asPooled, err := embed.NewLocal(embed.LocalConfig{Dir: eu, Normalize: &off}, nil)
	require.NoError(t, err)
	defer asPooled.Close()
	blob, err = json.Marshal(embed.LocalConfig{Dir: eu})
	require.NoError(t, err)
	ix = &graphio.Index{Meta: graphio.Meta{Embedder: asPooled.Identity()}, Blobs: map[string][]byte{"embedder": blob}}
	e, err = embed.ForIndex(ix, nil)
	require.NoError(t, err)
	defer e.(*embed.Local).Close()
	assert.Equal(t, asPooled.Identity(), e.Identity())
}
