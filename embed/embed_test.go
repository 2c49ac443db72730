package embed

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm"
	"github.com/graphloom/graphloom/llm/llmtest"
)

func cos(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func TestHashedGeometry(t *testing.T) {
	h, err := NewHashed(DefaultHashedConfig())
	require.NoError(t, err)
	h.Fit([]string{"Odile Varrant founded the guild.", "The Meridian sank near Gull Rock.", "Tomas Brell kept the ledger."})
	v := h.Vector("Odile Varrant")
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	assert.InDelta(t, 1, math.Sqrt(norm), 1e-5, "unit length")
	assert.Equal(t, v, h.Vector("odile  VARRANT!"), "case and punctuation do not matter")
	assert.Greater(t, cos(v, h.Vector("Odile Varant")), 0.45, "a misspelling stays close")
	assert.Greater(t, cos(h.Vector("Tallow Point"), h.Vector("Tallow Point Lighthouse")), 0.7, "a name inside a longer name")
	assert.Less(t, cos(v, h.Vector("Tomas Brell")), 0.3, "different names are far apart")
	assert.Greater(t, cos(h.Vector("who sank near Gull Rock"), h.Vector("The Meridian sank near Gull Rock.")),
		cos(h.Vector("who sank near Gull Rock"), h.Vector("Tomas Brell kept the ledger.")))
	assert.Equal(t, make([]float32, h.Dim()), h.Vector(""), "empty text is the zero vector")
}

func TestHashedStateRoundTripAndIdentity(t *testing.T) {
	h, _ := NewHashed(HashedConfig{Dim: 64})
	before := h.Identity()
	h.Fit([]string{"a b c", "b c d"})
	assert.NotEqual(t, before, h.Identity(), "fitting changes the identity")
	b, err := h.MarshalBinary()
	require.NoError(t, err)
	h2, err := UnmarshalHashed(b)
	require.NoError(t, err)
	assert.Equal(t, h.Identity(), h2.Identity())
	assert.Equal(t, h.Vector("b c x"), h2.Vector("b c x"))
	for _, bad := range [][]byte{nil, []byte("HTF1"), b[:len(b)-1], append([]byte("XXXX"), b[4:]...)} {
		_, err := UnmarshalHashed(bad)
		assert.Error(t, err)
	}
}

type fakeAPI struct{ id string }

func (f fakeAPI) Identity() string { return f.id }
func (f fakeAPI) Dim() int         { return 2 }
func (f fakeAPI) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0}
	}
	return out, nil
}

func TestForIndex(t *testing.T) {
	h, _ := NewHashed(HashedConfig{Dim: 32})
	h.Fit([]string{"x y"})
	ix := &graphio.Index{}
	_, err := ForIndex(ix, nil)
	assert.ErrorContains(t, err, "no embeddings")
	require.NoError(t, Store(ix, h))
	got, err := ForIndex(ix, nil)
	require.NoError(t, err)
	assert.Equal(t, h.Identity(), got.Identity())

	api := fakeAPI{"api:bge-m3"}
	require.NoError(t, Store(ix, api))
	_, err = ForIndex(ix, nil)
	assert.ErrorIs(t, err, ErrMismatch)
	_, err = ForIndex(ix, fakeAPI{"api:other"})
	assert.ErrorIs(t, err, ErrMismatch)
	got, err = ForIndex(ix, api)
	require.NoError(t, err)
	assert.Equal(t, api, got)
	m, err := Matrix(context.Background(), api, []string{"a", "b", "c"}, 2, nil)
	require.NoError(t, err)
	assert.Equal(t, 3, m.Rows())
}

func TestWordRowsAndBound(t *testing.T) {
	h, err := NewHashed(HashedConfig{})
	require.NoError(t, err)
	names := []string{"Tallow Point", "Tallow Point Lighthouse", "tallow point", "Harbour Town", "Harbour Towns",
		"Port Keswyn", "Keswyn", "Lamplighters' Guild", "Lamplighter Guild", "the Guild", "Ada Brell", "Tomas Brell",
		"Brell", "Brackwater Coast", "Brackwater", "Varrant", "Varant", "1790", "", "Aldwick", "Aldwick Aldwick"}
	h.Fit(append(names, "the harbour of the town", "a guild of the coast"))
	ptr, idx, val := h.WordRows(names)
	require.Len(t, ptr, len(names)+1)
	row := func(i int) map[int32]float64 {
		m := map[int32]float64{}
		for k := ptr[i]; k < ptr[i+1]; k++ {
			m[idx[k]] = float64(val[k])
		}
		return m
	}
	assert.Empty(t, row(18), "no words, empty row")
	assert.Equal(t, row(0), row(2), "case does not matter")
	assert.Len(t, row(20), 1, "a repeated word is one feature")
	for i := range names {
		var s float64
		for _, v := range row(i) {
			s += v * v
		}
		if i != 18 {
			assert.InDelta(t, 1, s, 1e-6, "row %d is a unit vector", i)
		}
	}
	assert.InDelta(t, 0.6, float64(h.WordBound(0.8)), 1e-6)
	assert.Equal(t, float32(0), h.WordBound(0.4))
	// Every pair at a synonym threshold clears the bound (with the collision slack).
	vecs, err := h.Embed(context.Background(), names)
	require.NoError(t, err)
	pairs := 0
	for _, min := range []float64{0.8, 0.7} {
		for i := range names {
			for j := i + 1; j < len(names); j++ {
				var cos float64
				for d := range vecs[i] {
					cos += float64(vecs[i][d]) * float64(vecs[j][d])
				}
				if cos < min {
					continue
				}
				pairs++
				var w float64
				for f, v := range row(i) {
					w += v * row(j)[f]
				}
				assert.GreaterOrEqual(t, w, float64(h.WordBound(float32(min)-0.15)), "%q ~ %q (cosine %.3f)", names[i], names[j], cos)
			}
		}
	}
	assert.GreaterOrEqual(t, pairs, 3, "the names have synonym pairs")
}

// referenceVector is the hashed embedder written plainly: features counted in a map
// and hashed through hash/fnv over the prefixed strings.
func referenceVector(h *Hashed, text string) []float64 {
	hash := func(s string) uint64 {
		f := fnv.New64a()
		f.Write([]byte(s))
		return finishHash(f.Sum64())
	}
	counts := map[feature]int{}
	ws := h.words(text)
	for _, w := range ws {
		counts[feature{hash("w\x00" + w), true}]++
	}
	if len(ws) > 0 {
		r := []rune(" " + strings.Join(ws, " ") + " ")
		for n := h.cfg.MinGram; n <= h.cfg.MaxGram; n++ {
			for i := 0; i+n <= len(r); i++ {
				counts[feature{hash("c\x00" + string(r[i:i+n])), false}]++
			}
		}
	}
	wv, cv := make([]float64, h.cfg.Dim), make([]float64, h.cfg.Dim)
	for f, tf := range counts {
		w := 1 + math.Log(float64(tf))
		v, np := cv, 1
		if f.word {
			v, np = wv, wordProbes
			w *= h.idf(f) / math.Sqrt(wordProbes)
		}
		x := f.h
		for range np {
			x = x*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
			y := x ^ x>>29
			sign := 1.0
			if y>>63 == 1 {
				sign = -1
			}
			v[int((y>>20)%uint64(h.cfg.Dim))] += sign * w
		}
	}
	unit := func(v []float64) {
		var s float64
		for _, x := range v {
			s += x * x
		}
		for i := range v {
			if s > 0 {
				v[i] /= math.Sqrt(s)
			}
		}
	}
	unit(wv)
	unit(cv)
	out := make([]float64, h.cfg.Dim)
	for i := range out {
		out[i] = wv[i] + h.cfg.CharWeight*cv[i]
	}
	unit(out)
	return out
}

func TestHashedMatchesReference(t *testing.T) {
	texts := []string{
		"", "!!!", "a", "Odile Varrant founded the guild in 1801.",
		"The Meridian sank near Gull Rock; the Meridian's crew survived.",
		"Zoë Ærøskøbing — naïve café, São Paulo, 東京 and Αθήνα", "tallow tallow tallow point",
		strings.Repeat("long passage with repeated words and numbers 42 ", 40),
	}
	for _, cfg := range []HashedConfig{DefaultHashedConfig(), {Dim: 64, MinGram: 2, MaxGram: 5, CharWeight: 0.5}} {
		h, err := NewHashed(cfg)
		require.NoError(t, err)
		h.Fit(texts[3:])
		for _, text := range texts {
			got, want := h.Vector(text), referenceVector(h, text)
			for i := range want {
				require.InDelta(t, want[i], float64(got[i]), 1e-6, "%q coordinate %d", text, i)
			}
		}
		// The batch path (one scratch reused across texts) gives the same vectors.
		vs, err := h.Embed(context.Background(), append(texts, texts...))
		require.NoError(t, err)
		for i, v := range vs {
			assert.Equal(t, h.Vector(texts[i%len(texts)]), v)
		}
	}
	assert.Equal(t, finishHash(fnvString(wordSeed, "paris")), hash64("w\x00paris"))
}

func TestHashedFitCountsDocuments(t *testing.T) {
	// Fit on many texts (several workers) gives the table a sequential count gives.
	var texts []string
	for i := range 500 {
		texts = append(texts, fmt.Sprintf("document %d mentions name%d and name%d twice name%d", i, i%7, i%13, i%7))
	}
	h, _ := NewHashed(HashedConfig{Dim: 64, IDFBuckets: 1 << 12})
	h.Fit(texts)
	want := make([]uint32, len(h.df))
	for _, text := range texts {
		var sc scratch
		for _, fc := range h.features(text, &sc) {
			want[fc.f.h%uint64(len(want))]++
		}
	}
	assert.Equal(t, want, h.df)
	assert.Equal(t, uint32(500), h.docs)
	// "document" is in every text: its IDF is the floor, 1 + log(501/501).
	assert.InDelta(t, 1.0, h.idf(feature{hash64("w\x00document"), true}), 1e-12)
}

// TestHashedSparseTable checks that a loaded embedder, which keeps its table sparse,
// embeds, marshals and identifies itself as the fitted one, and that the identity is
// the hash of the whole table as earlier versions computed it (indices store it).
func TestHashedSparseTable(t *testing.T) {
	var texts []string
	for i := range 300 {
		texts = append(texts, fmt.Sprintf("passage %d about harbour%d keeper%d", i, i%17, i%5))
	}
	for _, buckets := range []int{1 << 12, 1<<14 + 3, 1 << 16} { // one window, a partial one, several
		h, err := NewHashed(HashedConfig{Dim: 64, IDFBuckets: buckets})
		require.NoError(t, err)
		h.Fit(texts)
		d := sha256.New()
		for _, v := range h.df {
			d.Write(binary.LittleEndian.AppendUint32(nil, v))
		}
		d.Write(binary.LittleEndian.AppendUint32(nil, h.docs))
		sum := d.Sum(nil)
		assert.True(t, strings.HasSuffix(h.Identity(), ":"+hex.EncodeToString(sum[:6])), "identity = hash of the whole table (%d buckets)", buckets)

		b, err := h.MarshalBinary()
		require.NoError(t, err)
		loaded, err := UnmarshalHashed(b)
		require.NoError(t, err)
		require.Nil(t, loaded.df, "held sparse")
		assert.Equal(t, h.Identity(), loaded.Identity())
		for _, q := range []string{"harbour3 keeper", "passage 17", "nothing known here", ""} {
			assert.Equal(t, h.Vector(q), loaded.Vector(q), q)
		}
		again, err := loaded.MarshalBinary()
		require.NoError(t, err)
		assert.Equal(t, b, again)
		for bucket := range buckets {
			require.Equal(t, h.df[bucket], loaded.dfAt(uint64(bucket)))
		}
		// Refitting a loaded embedder expands its table.
		loaded.Fit(texts[:100])
		h.Fit(texts[:100])
		assert.Equal(t, h.df, loaded.df)
		assert.Equal(t, h.Identity(), loaded.Identity())
	}
	// A blob that names a bucket twice (never written) keeps its last count, as a table
	// did; zero counts are dropped.
	h, _ := NewHashed(HashedConfig{Dim: 64, IDFBuckets: 16})
	b, _ := h.MarshalBinary()
	b = append(b, 3, 5, 0, 7, 2, 0, 1, 9) // bucket 3: 5 then 7; bucket 5: 0; bucket 6: 9
	loaded, err := UnmarshalHashed(b)
	require.NoError(t, err)
	assert.Equal(t, []uint32{3, 6}, loaded.sparse.pos)
	assert.Equal(t, []uint32{7, 9}, loaded.sparse.val)
}

// TestHashedUpdateEqualsFit checks that bringing a fitted table up to date with added
// and removed texts gives the table (and identity, and vectors) of a fit on the
// corpus after the change, and that removing a text the table never counted fails
// and changes nothing.
func TestHashedUpdateEqualsFit(t *testing.T) {
	var a, b []string
	for i := range 200 {
		a = append(a, fmt.Sprintf("passage %d about harbour%d keeper%d in Tallow Point", i, i%17, i%5))
	}
	for i := range 9 {
		b = append(b, fmt.Sprintf("new passage %d names lighthouse%d and Varrant", i, i))
	}
	fit := func(texts []string) *Hashed {
		h, err := NewHashed(HashedConfig{Dim: 64, IDFBuckets: 1 << 12})
		require.NoError(t, err)
		h.Fit(texts)
		return h
	}
	loaded := func(h *Hashed) *Hashed { // as an index holds it: sparse
		raw, err := h.MarshalBinary()
		require.NoError(t, err)
		l, err := UnmarshalHashed(raw)
		require.NoError(t, err)
		return l
	}
	ab := append(slices.Clone(a), b...)
	for _, tc := range []struct {
		name           string
		from, want     []string
		added, removed []string
	}{
		{"add", a, ab, b, nil},
		{"delete", ab, a, nil, b},
		{"replace", append(slices.Clone(a[:190]), b[:3]...), append(slices.Clone(a[:190]), b[3:]...), b[3:], b[:3]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := loaded(fit(tc.from))
			require.NoError(t, h.Update(tc.added, tc.removed))
			want := fit(tc.want)
			assert.Equal(t, want.Identity(), h.Identity())
			assert.Equal(t, want.df, h.df)
			assert.Equal(t, want.Documents(), h.Documents())
			assert.Equal(t, want.Vector(tc.want[0]+" Varrant"), h.Vector(tc.want[0]+" Varrant"))
		})
	}
	h := fit(a)
	id := h.Identity()
	require.Error(t, h.Update(nil, []string{"zebra quagga okapi never seen"}))
	assert.Equal(t, id, h.Identity())
	assert.Equal(t, 200, h.Documents())
}

// TestAPIProbe: an index built through an embedding API stores the model's probe
// vector; the same model (another server, a slightly different quantisation) is
// accepted, another model served under the same name and width is refused, and an
// index written before probes were stored is accepted as before.
func TestAPIProbe(t *testing.T) {
	ctx := context.Background()
	const dim = 48
	api := func(f func(string) []float32) *API {
		srv := llmtest.NewServer(t)
		srv.SetEmbedDim(dim)
		if f != nil {
			srv.SetEmbedder(f)
		}
		c, err := llm.New(llm.Config{BaseURL: srv.URL(), EmbedModel: "bge-m3"})
		require.NoError(t, err)
		a, err := NewAPI(ctx, c)
		require.NoError(t, err)
		return a
	}
	built := api(nil)
	ix := &graphio.Index{}
	require.NoError(t, Store(ix, built))
	require.NotEmpty(t, ix.Blobs[blobKey])
	stored := slices.Clone(ix.Blobs[blobKey])

	noise := rand.New(rand.NewPCG(1, 2))
	quantised := func(s string) []float32 { // the same model, its weights rounded: 1 % noise
		v := llmtest.Embed(s, dim)
		for i := range v {
			v[i] += float32(noise.NormFloat64() * 0.01 / math.Sqrt(dim))
		}
		return v
	}
	other := func(s string) []float32 { // another model: the same words land elsewhere
		v := llmtest.Embed(s, dim)
		slices.Reverse(v)
		return v
	}
	for _, c := range []struct {
		name string
		a    *API
		ok   bool
	}{
		{"same model, another server", api(nil), true},
		{"same model, quantised", api(quantised), true},
		{"another model under the name", api(other), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ForIndex(ix, c.a)
			if c.ok {
				require.NoError(t, err)
				assert.Same(t, c.a, got)
				return
			}
			require.ErrorIs(t, err, ErrMismatch)
			assert.Contains(t, err.Error(), "api:bge-m3 embeds a probe text at cosine")
		})
	}
	old := &graphio.Index{Meta: graphio.Meta{Embedder: "api:bge-m3"}}
	_, err := ForIndex(old, api(other))
	assert.NoError(t, err, "an index without a stored probe is not checked")

	// Vectors a verified server added keep the probe of the model that built the index.
	require.NoError(t, Store(ix, api(quantised)))
	assert.Equal(t, stored, ix.Blobs[blobKey])
	require.NoError(t, Store(old, built))
	assert.Equal(t, stored, old.Blobs[blobKey], "an index without one gets the model's")

	// The model behind the name replaced on the same server, with the answers cached:
	// the probe is asked of the server, not read from the cache.
	srv := llmtest.NewServer(t)
	srv.SetEmbedDim(dim)
	cache := t.TempDir()
	cached := func() *API {
		c, err := llm.New(llm.Config{BaseURL: srv.URL(), EmbedModel: "bge-m3", CacheDir: cache})
		require.NoError(t, err)
		a, err := NewAPI(ctx, c)
		require.NoError(t, err)
		return a
	}
	same := &graphio.Index{}
	require.NoError(t, Store(same, cached()))
	_, err = ForIndex(same, cached())
	require.NoError(t, err)
	srv.SetEmbedder(other)
	_, err = ForIndex(same, cached())
	require.ErrorIs(t, err, ErrMismatch, "a re-pulled model under the same name and server")
}

// TestAPICacheFollowsModel: vectors cached under a model name are served only while
// the same model answers under it. A model re-pulled or replaced on the same server is
// asked anew (and said to have changed); when the first one comes back its cached
// vectors serve again. A cache written before models were told apart is read as the
// first model's.
func TestAPICacheFollowsModel(t *testing.T) {
	ctx := context.Background()
	const dim = 32
	texts := []string{"Ada Lovelace wrote the first program.", "The Analytical Engine was never built."}
	first := func(s string) []float32 { return llmtest.Embed(s, dim) }
	other := func(s string) []float32 { // another model: the same words land elsewhere
		v := llmtest.Embed(s, dim)
		slices.Reverse(v)
		return v
	}
	unit := func(v []float32) []float32 { return normalize(slices.Clone(v)) }
	for _, legacy := range []bool{false, true} {
		t.Run(map[bool]string{false: "recorded", true: "cache from before"}[legacy], func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.SetEmbedDim(dim)
			srv.SetEmbedder(first)
			cache := t.TempDir()
			client := func() *llm.Client {
				c, err := llm.New(llm.Config{BaseURL: srv.URL(), EmbedModel: "bge-m3", CacheDir: cache})
				require.NoError(t, err)
				return c
			}
			open := func() *API {
				a, err := NewAPI(ctx, client())
				require.NoError(t, err)
				return a
			}
			embedded := func(a *API, want func(string) []float32, asked int) {
				t.Helper()
				before := srv.Count()
				vs, err := a.Embed(ctx, texts)
				require.NoError(t, err)
				for i, s := range texts {
					assert.InDeltaSlice(t, unit(want(s)), vs[i], 1e-6, "text %d", i)
				}
				assert.Equal(t, asked, srv.Count()-before, "embedding requests sent")
			}
			if legacy { // written by Embed alone, as before the probe keyed the cache
				_, err := client().Embed(ctx, append([]string{probeText}, texts...))
				require.NoError(t, err)
			} else {
				a := open()
				assert.False(t, a.ModelChanged())
				embedded(a, first, 1)
			}
			for _, step := range []struct {
				model   func(string) []float32 // served under the name
				changed bool
				asked   int // embedding requests for the texts
				why     string
			}{
				{first, false, 0, "the same model"},
				{other, true, 1, "another model under the name"},
				{other, false, 0, "its vectors are cached now"},
				{first, false, 0, "the first model back"},
			} {
				srv.SetEmbedder(step.model)
				a := open()
				assert.Equal(t, step.changed, a.ModelChanged(), step.why)
				embedded(a, step.model, step.asked)
			}
		})
	}
}

// TestHashedCombiningMarks: the hashed embedder's words keep their combining marks
// and read text in NFC (identity v5, state HTF2): a decomposed "ü" embeds as the
// precomposed one, and a Devanagari word is one word. An index embedded before (v4,
// HTF1) keeps splitting as it did, so its queries meet its passages' features.
func TestHashedCombiningMarks(t *testing.T) {
	h, err := NewHashed(HashedConfig{})
	require.NoError(t, err)
	h.Fit([]string{"Thomas S\u00fcdhof won the prize.", "राम और रीमा", "Mara Vell founded Quillhaven."})
	assert.Contains(t, h.Identity(), "hash-tfidf:v5:")
	assert.Equal(t, []string{"राम", "और", "रीमा"}, h.words("राम और रीमा"))
	assert.InDeltaSlice(t, h.Vector("Thomas S\u00fcdhof"), h.Vector("Thomas Su\u0308dhof"), 1e-7)

	state, err := h.MarshalBinary()
	require.NoError(t, err)
	require.Equal(t, "HTF2", string(state[:4]))
	back, err := UnmarshalHashed(state)
	require.NoError(t, err)
	assert.Equal(t, h.Identity(), back.Identity())

	old := append([]byte("HTF1"), state[4:]...) // the same table, as a v4 index stored it
	v4, err := UnmarshalHashed(old)
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(h.Identity(), ":v5:", ":v4:", 1), v4.Identity())
	assert.Equal(t, []string{"र", "म", "और", "र", "म"}, v4.words("राम और रीमा"), "as v4 split it: Ram and Reema alike")
	again, err := v4.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, old, again, "a v4 embedder stays v4")
}
