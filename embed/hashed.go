package embed

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/graphloom/graphloom/graphio"
)

const hashedPrefix = "hash-tfidf"

// wordProbes is the number of coordinates each word is hashed to (weight 1/√wordProbes
// each); character n-grams, being many per text, take one coordinate each, which keeps
// name vectors sparse for the synonym search.
const wordProbes = 2

// HashedConfig holds the built-in embedder's parameters.
type HashedConfig struct {
	// Dim is the vector dimension features are hashed into; default 768.
	Dim int
	// MinGram and MaxGram bound the character n-grams taken from each word (padded
	// with spaces); defaults 3 and 4. They make "Varrant" and "Varant" close.
	MinGram, MaxGram int
	// CharWeight scales the character n-gram part against the word part; default 1.
	CharWeight float64
	// IDFBuckets is the size of the hashed document-frequency table; default 2^20.
	IDFBuckets int
}

// DefaultHashedConfig returns the defaults.
func DefaultHashedConfig() HashedConfig {
	return HashedConfig{Dim: 768, MinGram: 3, MaxGram: 4, CharWeight: 1, IDFBuckets: 1 << 20}
}

// Hashed is the built-in offline embedder: words and character n-grams, weighted by
// sublinear term frequency × inverse document frequency (fitted on the corpus), hashed
// with random signs into Dim coordinates and L2-normalised. It needs no model file;
// its fitted state (the document-frequency table) is stored in the index.
type Hashed struct {
	cfg  HashedConfig
	docs uint32   // documents the IDF was fitted on
	df   []uint32 // document frequency per feature bucket; nil while held sparse
	// sparse holds the table as loaded (UnmarshalHashed): its non-zero buckets in
	// increasing order. Embedding a query reads a few hundred buckets, so a query
	// process never expands the 2^20-bucket table (4 MiB of fresh memory); Fit does.
	sparse struct{ pos, val []uint32 }
	id     string
	// v4 is the format of an index embedded before words kept their combining marks
	// and were read in NFC (identity v4, state HTF1): its texts are split as they
	// were, so that its queries meet its passages' features.
	v4 bool
}

// NewHashed returns an unfitted embedder (every feature gets the same IDF until Fit).
func NewHashed(cfg HashedConfig) (*Hashed, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	h := newHashed(cfg)
	h.updateID()
	return h, nil
}

// resolve fills the zero fields of c with the defaults and checks the result.
func (cfg HashedConfig) resolve() (HashedConfig, error) {
	d := DefaultHashedConfig()
	if cfg.Dim == 0 {
		cfg.Dim = d.Dim
	}
	if cfg.MinGram == 0 && cfg.MaxGram == 0 {
		cfg.MinGram, cfg.MaxGram = d.MinGram, d.MaxGram
	}
	if cfg.CharWeight == 0 {
		cfg.CharWeight = d.CharWeight
	}
	if cfg.IDFBuckets == 0 {
		cfg.IDFBuckets = d.IDFBuckets
	}
	if cfg.Dim < 8 || cfg.Dim > 1<<16 || cfg.MinGram < 1 || cfg.MaxGram < cfg.MinGram || cfg.IDFBuckets < 1 || cfg.CharWeight < 0 {
		return cfg, fmt.Errorf("embed: invalid hashed embedder config %+v", cfg)
	}
	return cfg, nil
}

// newHashed is NewHashed on a checked config, without the identity.
func newHashed(cfg HashedConfig) *Hashed {
	return &Hashed{cfg: cfg, df: make([]uint32, cfg.IDFBuckets)}
}

// dfAt returns the document frequency of bucket b.
func (h *Hashed) dfAt(b uint64) uint32 {
	if h.df != nil {
		return h.df[b]
	}
	if i, ok := slices.BinarySearch(h.sparse.pos, uint32(b)); ok {
		return h.sparse.val[i]
	}
	return 0
}

// eachNonZero calls f for every bucket with a non-zero count, in increasing order.
func (h *Hashed) eachNonZero(f func(b int, v uint32)) {
	if h.df == nil {
		for i, p := range h.sparse.pos {
			f(int(p), h.sparse.val[i])
		}
		return
	}
	for b, v := range h.df {
		if v != 0 {
			f(b, v)
		}
	}
}

func (h *Hashed) updateID() {
	// The table (every bucket, zeros too) and the document count, little-endian,
	// hashed a window of 16K buckets at a time: the windows are written from one
	// zeroed buffer holding their non-zero buckets, so a sparse table is hashed without
	// being expanded.
	const window = 1 << 14
	buf := make([]byte, 4*window)
	d := sha256.New()
	base, dirty := 0, false // buckets before base are hashed; buf holds [base, base+window)
	hashBelow := func(b int) {
		for base+window <= b {
			d.Write(buf)
			if dirty {
				clear(buf)
				dirty = false
			}
			base += window
		}
	}
	h.eachNonZero(func(b int, v uint32) {
		hashBelow(b)
		binary.LittleEndian.PutUint32(buf[4*(b-base):], v)
		dirty = true
	})
	hashBelow(h.cfg.IDFBuckets)
	d.Write(buf[:4*(h.cfg.IDFBuckets-base)])
	d.Write(binary.LittleEndian.AppendUint32(nil, h.docs))
	var sum [sha256.Size]byte
	d.Sum(sum[:0])
	version := "v5"
	if h.v4 {
		version = "v4"
	}
	h.id = fmt.Sprintf("%s:%s:dim=%d:grams=%d-%d:cw=%g:docs=%d:%s", hashedPrefix, version, h.cfg.Dim, h.cfg.MinGram, h.cfg.MaxGram,
		h.cfg.CharWeight, h.docs, hex.EncodeToString(sum[:6]))
}

// Identity implements Embedder; it changes with the fitted statistics.
func (h *Hashed) Identity() string { return h.id }

// Dim implements Embedder.
func (h *Hashed) Dim() int { return h.cfg.Dim }

// feature is a hashed feature: its bucket in the DF table, its coordinate, its sign,
// and whether it is a word (else a character n-gram).
type feature struct {
	h    uint64
	word bool
}

func hash64(s string) uint64 { return finishHash(fnvString(fnvOffset, s)) }

// FNV-1a, 64 bits (hash/fnv's constants), so features hash without building the
// prefixed string.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime
	}
	return h
}

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// finishHash is a splitmix step: fnv's low bits mix poorly for short strings.
func finishHash(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// Hashes of the feature prefixes "w\x00" and "c\x00": hash64("w\x00"+w) is
// finishHash(fnvString(wordSeed, w)).
var (
	wordSeed = fnvString(fnvOffset, "w\x00")
	gramSeed = fnvString(fnvOffset, "c\x00")
)

// words splits text into lower-case words: runs of letters, digits and combining
// marks in NFC (graphio.TextWords), or, for a v4 embedder, of letters and digits
// as the text is.
func (h *Hashed) words(text string) []string {
	if h.v4 {
		return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	}
	return graphio.TextWords(text)
}

// featureCount is a feature and how often a text has it.
type featureCount struct {
	f feature
	n int
}

// scratch holds one goroutine's buffers for embedding texts, reused across texts: an
// index embeds hundreds of thousands of them, and per-text maps and vectors were half
// of everything the offline indexer allocated.
type scratch struct {
	words, grams []uint64
	counts       []featureCount
	joined       []byte
	offs         []int
	wv, cv       []float64
}

// features returns the features of text with their counts: its words, and the
// character n-grams of its words joined by single spaces (so n-grams also span word
// boundaries, which keeps "tallow point" close to "tallow point lighthouse"). The
// n-grams come first, ordered by hash, then the words, ordered by hash: each part is
// summed into its own vector in hash order, so a vector is a function of the text
// alone. The two parts are sorted apart as plain integers, which is most of the cost
// of embedding a passage (a text's n-grams outnumber its words about ten to one). The
// result aliases sc.
func (h *Hashed) features(text string, sc *scratch) []featureCount {
	sc.words, sc.grams = sc.words[:0], sc.grams[:0]
	ws := h.words(text)
	for _, w := range ws {
		sc.words = append(sc.words, finishHash(fnvString(wordSeed, w)))
	}
	if len(ws) > 0 {
		// The n-grams of " w1 w2 … " counted in runes: words holds valid UTF-8
		// (strings.ToLower replaces invalid bytes), so a run of runes is a byte range.
		j := append(sc.joined[:0], ' ')
		for _, w := range ws {
			j = append(append(j, w...), ' ')
		}
		sc.joined = j
		offs := sc.offs[:0]
		for i := range string(j) {
			offs = append(offs, i)
		}
		offs = append(offs, len(j))
		sc.offs = offs
		runes := len(offs) - 1
		for n := h.cfg.MinGram; n <= h.cfg.MaxGram; n++ {
			for i := 0; i+n <= runes; i++ {
				sc.grams = append(sc.grams, finishHash(fnvBytes(gramSeed, j[offs[i]:offs[i+n]])))
			}
		}
	}
	slices.Sort(sc.grams)
	slices.Sort(sc.words)
	sc.counts = sc.counts[:0]
	for _, part := range []struct {
		hs   []uint64
		word bool
	}{{sc.grams, false}, {sc.words, true}} {
		start := len(sc.counts)
		for _, x := range part.hs {
			if k := len(sc.counts) - 1; k >= start && sc.counts[k].f.h == x {
				sc.counts[k].n++
				continue
			}
			sc.counts = append(sc.counts, featureCount{feature{x, part.word}, 1})
		}
	}
	return sc.counts
}

// Fit sets the document frequencies from a corpus (typically the chunks), counting
// on every core (integer counts: the table does not depend on the split).
func (h *Hashed) Fit(texts []string) {
	if h.df == nil {
		h.df = make([]uint32, h.cfg.IDFBuckets)
		h.sparse.pos, h.sparse.val = nil, nil
	}
	clear(h.df)
	h.docs = uint32(len(texts))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(texts)/64))
	dfs := make([][]uint32, workers)
	var wg sync.WaitGroup
	for w := range workers {
		dfs[w] = h.df
		if w > 0 {
			dfs[w] = make([]uint32, len(h.df))
		}
		wg.Add(1)
		go func(df []uint32) {
			defer wg.Done()
			var sc scratch
			for i := w; i < len(texts); i += workers {
				for _, fc := range h.features(texts[i], &sc) {
					df[fc.f.h%uint64(len(df))]++
				}
			}
		}(dfs[w])
	}
	wg.Wait()
	for _, df := range dfs[1:] {
		for i, v := range df {
			h.df[i] += v
		}
	}
	h.updateID()
}

// Documents returns the number of texts the table was fitted on.
func (h *Hashed) Documents() int { return int(h.docs) }

// Update changes the document frequencies as Fit on a corpus with the texts added
// and the texts removed would set them, when h was fitted on the corpus before the
// change (the counts are integers: the table equals the refitted one exactly). It costs
// the changed texts alone, where Fit costs the whole corpus; an index's add and delete
// use it. It fails, changing nothing, when a removed text's features are not counted
// (it was not in the corpus h was fitted on).
func (h *Hashed) Update(added, removed []string) error {
	if int64(h.docs)+int64(len(added))-int64(len(removed)) < 0 {
		return fmt.Errorf("embed: update: %d texts removed from a table fitted on %d", len(removed), h.docs)
	}
	if h.df == nil {
		h.df = make([]uint32, h.cfg.IDFBuckets)
		for i, p := range h.sparse.pos {
			h.df[p] = h.sparse.val[i]
		}
		h.sparse.pos, h.sparse.val = nil, nil
	}
	df := slices.Clone(h.df)
	var sc scratch
	for _, t := range removed {
		for _, fc := range h.features(t, &sc) {
			b := fc.f.h % uint64(len(df))
			if df[b] == 0 {
				return fmt.Errorf("embed: update: a removed text has a feature the table never counted (not in the fitted corpus)")
			}
			df[b]--
		}
	}
	for _, t := range added {
		for _, fc := range h.features(t, &sc) {
			df[fc.f.h%uint64(len(df))]++
		}
	}
	h.df = df
	h.docs = uint32(int64(h.docs) + int64(len(added)) - int64(len(removed)))
	h.updateID()
	return nil
}

func (h *Hashed) idf(f feature) float64 {
	df := float64(h.dfAt(f.h % uint64(h.cfg.IDFBuckets)))
	return math.Log((1+float64(h.docs))/(1+df)) + 1
}

// Vector embeds one text.
func (h *Hashed) Vector(text string) []float32 { return h.vector(text, &scratch{}) }

// vector is Vector with reusable buffers. Features are added in hash order, so the
// vector is a function of the text alone (a map's order once decided in which order
// colliding features were summed).
func (h *Hashed) vector(text string, sc *scratch) []float32 {
	if len(sc.wv) != h.cfg.Dim {
		sc.wv, sc.cv = make([]float64, h.cfg.Dim), make([]float64, h.cfg.Dim)
	}
	wv, cv := sc.wv, sc.cv
	clear(wv)
	clear(cv)
	for _, fc := range h.features(text, sc) {
		f, tf := fc.f, fc.n
		// Words are weighted by TF-IDF; character n-grams by sublinear TF alone, since
		// their IDF would stress exactly the rare n-grams in which two spellings of a
		// name differ.
		w := 1 + math.Log(float64(tf))
		v, np := cv, 1
		if f.word {
			// A word lands on wordProbes coordinates with independent signs (weight
			// spread to keep the norm), so two one-word names whose hashes collide on
			// one coordinate are not identical vectors.
			v, np = wv, wordProbes
			w *= h.idf(f) / math.Sqrt(wordProbes)
		}
		x := f.h
		for p := 0; p < np; p++ {
			x = x*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019
			y := x ^ x>>29
			if y>>63 == 1 {
				v[int((y>>20)%uint64(h.cfg.Dim))] -= w
			} else {
				v[int((y>>20)%uint64(h.cfg.Dim))] += w
			}
		}
	}
	normalize := func(v []float64) {
		var s float64
		for _, x := range v {
			s += x * x
		}
		if s > 0 {
			s = 1 / math.Sqrt(s)
			for i := range v {
				v[i] *= s
			}
		}
	}
	normalize(wv)
	normalize(cv)
	out := make([]float32, h.cfg.Dim)
	var s float64
	for i := range out {
		x := wv[i] + h.cfg.CharWeight*cv[i]
		out[i] = float32(x)
		s += x * x
	}
	if s > 0 {
		inv := float32(1 / math.Sqrt(s))
		for i := range out {
			out[i] *= inv
		}
	}
	return out
}

// Embed implements Embedder, in parallel over texts.
func (h *Hashed) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(texts)/16))
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var sc scratch
			for i := w; i < len(texts); i += workers {
				out[i] = h.vector(texts[i], &sc)
			}
		}(w)
	}
	wg.Wait()
	return out, ctx.Err()
}

// MarshalBinary encodes the configuration and the fitted table (sparse: only non-zero
// buckets), for storage in the index.
func (h *Hashed) MarshalBinary() ([]byte, error) {
	b := []byte("HTF2")
	if h.v4 {
		b = []byte("HTF1")
	}
	for _, v := range []uint64{uint64(h.cfg.Dim), uint64(h.cfg.MinGram), uint64(h.cfg.MaxGram),
		math.Float64bits(h.cfg.CharWeight), uint64(h.cfg.IDFBuckets), uint64(h.docs)} {
		b = binary.AppendUvarint(b, v)
	}
	prev := 0
	h.eachNonZero(func(i int, v uint32) {
		b = binary.AppendUvarint(b, uint64(i-prev))
		b = binary.AppendUvarint(b, uint64(v))
		prev = i
	})
	return b, nil
}

// UnmarshalHashed decodes an embedder written by MarshalBinary.
func UnmarshalHashed(b []byte) (*Hashed, error) {
	if len(b) < 4 || string(b[:4]) != "HTF1" && string(b[:4]) != "HTF2" {
		return nil, fmt.Errorf("not a hashed embedder state")
	}
	v4 := string(b[:4]) == "HTF1"
	b = b[4:]
	var vals [6]uint64
	for i := range vals {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("truncated hashed embedder state")
		}
		vals[i], b = v, b[n:]
	}
	if vals[4] == 0 || vals[4] > 1<<26 || vals[0] > 1<<16 || vals[1] > 64 || vals[2] > 64 {
		return nil, fmt.Errorf("implausible hashed embedder state %v", vals)
	}
	cfg := HashedConfig{Dim: int(vals[0]), MinGram: int(vals[1]), MaxGram: int(vals[2]),
		CharWeight: math.Float64frombits(vals[3]), IDFBuckets: int(vals[4])}
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	h := &Hashed{cfg: cfg, docs: uint32(vals[5]), v4: v4} // its identity once, after the table is read
	// Entries are two uvarints each: count them to allocate the table once.
	n := 0
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	h.sparse.pos, h.sparse.val = make([]uint32, 0, n/2), make([]uint32, 0, n/2)
	pos := 0
	for len(b) > 0 {
		d, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("corrupt hashed embedder state")
		}
		b = b[n:]
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return nil, fmt.Errorf("corrupt hashed embedder state")
		}
		b = b[n:]
		pos += int(d)
		if pos >= cfg.IDFBuckets || d > uint64(cfg.IDFBuckets) || v > math.MaxUint32 {
			return nil, fmt.Errorf("corrupt hashed embedder state: bucket %d of %d", pos, cfg.IDFBuckets)
		}
		sp := &h.sparse
		switch n := len(sp.pos); {
		case n > 0 && d == 0: // the same bucket again: the last count stands, as it did in a table
			sp.val[n-1] = uint32(v)
		default:
			sp.pos, sp.val = append(sp.pos, uint32(pos)), append(sp.val, uint32(v))
		}
	}
	// Zero counts (never written, but readable) are dropped: the table is the same.
	keep := 0
	for i, v := range h.sparse.val {
		if v != 0 {
			h.sparse.pos[keep], h.sparse.val[keep] = h.sparse.pos[i], v
			keep++
		}
	}
	h.sparse.pos, h.sparse.val = h.sparse.pos[:keep], h.sparse.val[:keep]
	h.updateID()
	return h, nil
}

// WordRows returns the word part of each text's vector before hashing, as compressed
// rows over the texts' own vocabulary (feature ids in order of first occurrence): the
// words weighted as Vector weighs them (sublinear TF × IDF), each row L2-normalised.
// Where no two features share a coordinate, the dot product of two texts' hashed word
// parts equals that of their word rows. A text without words has an empty row.
func (h *Hashed) WordRows(texts []string) (ptr []int64, idx []int32, val []float32) {
	vocab := map[string]int32{}
	ptr = make([]int64, 1, len(texts)+1)
	var order []string
	tf := map[string]int{}
	for _, t := range texts {
		clear(tf)
		order = order[:0]
		for _, w := range h.words(t) {
			if tf[w]++; tf[w] == 1 {
				order = append(order, w)
			}
		}
		start := len(val)
		var norm float64
		for _, w := range order {
			id, ok := vocab[w]
			if !ok {
				id = int32(len(vocab))
				vocab[w] = id
			}
			x := (1 + math.Log(float64(tf[w]))) * h.idf(feature{hash64("w\x00" + w), true})
			idx = append(idx, id)
			val = append(val, float32(x))
			norm += x * x
		}
		if norm > 0 {
			inv := 1 / math.Sqrt(norm)
			for k := start; k < len(val); k++ {
				val[k] = float32(float64(val[k]) * inv)
			}
		}
		ptr = append(ptr, int64(len(idx)))
	}
	return ptr, idx, val
}

// WordBound returns the least dot product of two texts' word rows (WordRows) when
// their vectors have cosine ≥ minScore and no features share a coordinate. A vector
// is (w + c·n)/√(1+c²) for the unit word part w, the unit n-gram part n and c =
// CharWeight, and n·n' ≤ 1, so w·w' ≥ (1+c²)·minScore − c². It is 0 when there is no
// bound (minScore too low for the words alone to decide).
func (h *Hashed) WordBound(minScore float32) float32 {
	c2 := h.cfg.CharWeight * h.cfg.CharWeight
	return float32(max(0, (1+c2)*float64(minScore)-c2))
}

// IDFDrift returns the largest relative change of a word's IDF weight between the
// table h and the table from (fitted on the same corpus before a change), over every
// bucket: max |idf_h/idf_from − 1|. Vectors embedded with from's table differ from h's
// only by their words' weights, each by a factor within 1 ± the drift (character
// n-grams carry no IDF). Both tables must have the same configuration.
func (h *Hashed) IDFDrift(from *Hashed) float64 {
	if h.cfg != from.cfg {
		return math.Inf(1)
	}
	dense := func(t *Hashed) []uint32 {
		if t.df != nil {
			return t.df
		}
		df := make([]uint32, t.cfg.IDFBuckets)
		for i, p := range t.sparse.pos {
			df[p] = t.sparse.val[i]
		}
		return df
	}
	a, b := dense(h), dense(from)
	nh, nf := math.Log(1+float64(h.docs)), math.Log(1+float64(from.docs))
	drift := 0.0
	for i := range a {
		if i > 0 && a[i] == a[i-1] && b[i] == b[i-1] {
			continue // the same pair of counts as the bucket before
		}
		w := nh - math.Log(1+float64(a[i])) + 1
		w0 := nf - math.Log(1+float64(b[i])) + 1
		drift = max(drift, math.Abs(w/w0-1))
	}
	return drift
}
