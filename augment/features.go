package augment

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/kernels"
)

// Node feature sets of the scorer (Config.NodeFeatures).
const (
	// FeaturesAuto is FeaturesEvidence when the index's entity embeddings come from
	// the built-in hashed embedder, else FeaturesBoth.
	FeaturesAuto = "auto"
	// FeaturesEvidence describes each entity by what the text says about it against
	// what the graph holds (evidenceFeatureNames), never by its name.
	FeaturesEvidence = "evidence"
	// FeaturesEmbedding is the paper's input: the entity's name embedding.
	FeaturesEmbedding = "embedding"
	// FeaturesBoth concatenates the evidence features and the name embedding.
	FeaturesBoth = "both"
)

// evidenceFeatureNames name the evidence features of an entity, in column order. The
// first group is static (the text and the entity's type), the second depends on the
// graph the view is drawn from — for a corrupted training view, the graph without
// the corruption — and the last on the view itself. "Co-members" are the other
// entities of the entity's hyperedges (the sentences that mention it), "co-mentions"
// those of its chunks.
var evidenceFeatureNames = []string{
	"log_chunks", "log_hyperedges", "log_comembers", "log_comentions", "log_synonyms",
	"type_person", "type_place", "type_organization", "type_date", "type_facility", "type_other", "type_none",
	"log_name_words", "name_has_digit",
	"log_fact_degree", "log_comembers_unlinked", "share_comembers_linked", "log_comentions_unlinked",
	"log_sentences_unlinked", "share_sentences_unlinked",
	"log_view_fact_degree", "log_fact_neighbours_outside_view",
}

const (
	numStaticEvidence = 14
	numEvidence       = 22
	// wordBuckets is the width of each hashed word bag: the stems of the lower-case
	// words of the sentences that mention an entity (what the text says about it) and
	// those of them no predicate of its facts contains (what the graph does not say).
	wordBuckets = 32
)

// featurizer turns subgraphs into the scorer's input. Its evidence features say, per
// entity, how much the text says about it (chunks, sentences, co-occurring entities)
// and how much of that the graph links (facts), so that a region whose entities
// co-occur in sentences without facts between them — an extraction that missed
// something — stands out whatever the entities are called. They transfer to entities
// the scorer never saw, which hashed name embeddings do not (see Config.NodeFeatures).
type featurizer struct {
	ix        *graphio.Index
	evidence  bool
	emb       *graphio.Embedding // nil without the name embedding
	dim       int
	static    []float32 // numStaticEvidence per entity
	factNb    [][]int32 // distinct fact neighbours, sorted
	linked    [][]int32 // hyperedge co-members that are fact neighbours, sorted
	comember  []int32   // hyperedge co-member counts
	comention []int32   // chunk co-mention counts
	// sentLinks holds, per entity, one entry per hyperedge with other members:
	// the members it has a fact with (empty: the sentence links it to nothing).
	sentLinks [][][]int32
	// ctxWords are the stems of an entity's sentences with their counts, sorted by
	// stem; predWords the stems of the predicates of its facts, per fact neighbour.
	ctxWords  [][]wordCount
	predWords []map[int32][]string
	ctxBag    []float32 // wordBuckets per entity
}

// wordCount is a stem and how often it occurs.
type wordCount struct {
	stem  string
	count int
}

// resolveFeatures returns the feature set Config.NodeFeatures names for ix.
func resolveFeatures(ix *graphio.Index, mode string) (string, error) {
	switch mode {
	case FeaturesEvidence, FeaturesEmbedding, FeaturesBoth:
		return mode, nil
	case FeaturesAuto:
		if embed.IsHashed(ix.Meta.Embedder) || ix.Embeddings[graphio.KindEntity] == nil {
			return FeaturesEvidence, nil
		}
		return FeaturesBoth, nil
	}
	return "", checkNodeFeatures(mode)
}

// checkNodeFeatures rejects an unknown feature set.
func checkNodeFeatures(mode string) error {
	switch mode {
	case FeaturesAuto, FeaturesEvidence, FeaturesEmbedding, FeaturesBoth:
		return nil
	}
	return fmt.Errorf("augment: unknown node features %q (want %s, %s, %s or %s)", mode, FeaturesAuto, FeaturesEvidence, FeaturesEmbedding, FeaturesBoth)
}

// newFeaturizer precomputes the static features and the neighbour lists of ix.
func newFeaturizer(ix *graphio.Index, mode string) (*featurizer, error) {
	mode, err := resolveFeatures(ix, mode)
	if err != nil {
		return nil, err
	}
	f := &featurizer{ix: ix, evidence: mode != FeaturesEmbedding}
	if mode != FeaturesEvidence {
		f.emb = ix.Embeddings[graphio.KindEntity]
		if f.emb == nil {
			return nil, fmt.Errorf("augment: node features %q need entity embeddings, and the index has none", mode)
		}
		f.dim += f.emb.Dim
	}
	if !f.evidence {
		return f, nil
	}
	f.dim += numEvidence + 2*wordBuckets
	n := len(ix.Entities)
	nb := make([]map[int32]bool, n)
	addPair := func(sets []map[int32]bool, a, b int32) {
		if a == b {
			return
		}
		for _, p := range [][2]int32{{a, b}, {b, a}} {
			if sets[p[0]] == nil {
				sets[p[0]] = map[int32]bool{}
			}
			sets[p[0]][p[1]] = true
		}
	}
	f.predWords = make([]map[int32][]string, n)
	for _, fa := range ix.Facts {
		addPair(nb, fa.Subject, fa.Object)
		if fa.Subject == fa.Object {
			continue
		}
		stems := contentStems(fa.Predicate)
		for _, p := range [][2]int32{{fa.Subject, fa.Object}, {fa.Object, fa.Subject}} {
			if f.predWords[p[0]] == nil {
				f.predWords[p[0]] = map[int32][]string{}
			}
			f.predWords[p[0]][p[1]] = append(f.predWords[p[0]][p[1]], stems...)
		}
	}
	f.ctxWords = make([][]wordCount, n)
	f.ctxBag = make([]float32, n*wordBuckets)
	ctx := make([]map[string]int, n)
	for _, h := range ix.Hyperedges {
		stems := contentStems(h.Text)
		for _, a := range h.Entities {
			if ctx[a] == nil {
				ctx[a] = map[string]int{}
			}
			for _, w := range stems {
				ctx[a][w]++
			}
		}
	}
	for i, m := range ctx {
		for w, c := range m {
			f.ctxWords[i] = append(f.ctxWords[i], wordCount{w, c})
		}
		slices.SortFunc(f.ctxWords[i], func(a, b wordCount) int { return strings.Compare(a.stem, b.stem) })
		bag := f.ctxBag[i*wordBuckets : (i+1)*wordBuckets]
		for _, wc := range f.ctxWords[i] {
			bag[wordBucket(wc.stem)] += float32(wc.count)
		}
		for j, c := range bag {
			bag[j] = float32(math.Log1p(float64(c)))
		}
	}
	co := make([]map[int32]bool, n)
	hyper := make([]int, n)
	for _, h := range ix.Hyperedges {
		for i, a := range h.Entities {
			hyper[a]++
			for _, b := range h.Entities[i+1:] {
				addPair(co, a, b)
			}
		}
	}
	f.sentLinks = make([][][]int32, n)
	for _, h := range ix.Hyperedges {
		for _, a := range h.Entities {
			var links []int32
			others := false
			for _, b := range h.Entities {
				if b != a {
					others = true
					if nb[a][b] && !slices.Contains(links, b) {
						links = append(links, b)
					}
				}
			}
			if others {
				f.sentLinks[a] = append(f.sentLinks[a], links)
			}
		}
	}
	chunks := make([]int, n)
	byChunk := map[int32][]int32{}
	for _, m := range ix.Mentions {
		chunks[m.Entity]++
		byChunk[m.Chunk] = append(byChunk[m.Chunk], m.Entity)
	}
	ment := make([]map[int32]bool, n)
	for _, es := range byChunk {
		for i, a := range es {
			for _, b := range es[i+1:] {
				addPair(ment, a, b)
			}
		}
	}
	syn := make([]int, n)
	for _, s := range ix.Synonyms {
		if s.A != s.B {
			syn[s.A]++
			syn[s.B]++
		}
	}
	f.static = make([]float32, n*numStaticEvidence)
	f.factNb, f.linked = make([][]int32, n), make([][]int32, n)
	f.comember, f.comention = make([]int32, n), make([]int32, n)
	for i, e := range ix.Entities {
		row := f.static[i*numStaticEvidence : (i+1)*numStaticEvidence]
		row[0], row[1], row[2], row[3], row[4] = log1p(chunks[i]), log1p(hyper[i]), log1p(len(co[i])), log1p(len(ment[i])), log1p(syn[i])
		row[5+typeColumn(e.Type)] = 1
		row[12] = log1p(len(strings.Fields(e.Name)))
		if strings.IndexFunc(e.Name, unicode.IsDigit) >= 0 {
			row[13] = 1
		}
		for m := range nb[i] {
			f.factNb[i] = append(f.factNb[i], m)
			if co[i][m] {
				f.linked[i] = append(f.linked[i], m)
			}
		}
		slices.Sort(f.factNb[i])
		slices.Sort(f.linked[i])
		f.comember[i], f.comention[i] = int32(len(co[i])), int32(len(ment[i]))
	}
	return f, nil
}

// typeColumn maps an extractor's entity type to one of the seven type columns.
func typeColumn(t string) int {
	switch strings.ToUpper(t) {
	case "PERSON", "PER":
		return 0
	case "GPE", "LOCATION", "LOC", "GSP", "GEO":
		return 1
	case "ORGANIZATION", "ORG":
		return 2
	case "DATE", "TIME":
		return 3
	case "FACILITY", "FAC":
		return 4
	case "":
		return 6
	}
	return 5
}

func log1p(n int) float32 { return float32(math.Log1p(float64(max(n, 0)))) }

// graph turns a subgraph into the scorer's input: each entity's features (see
// featurizer), node type 0 (entity) or nodeTypeRoot, every edge in both directions
// with its relation. mask is what a corrupted training view's graph lacks (nil for
// clean views and for scoring): the graph-dependent features are computed without it,
// as they would be on an index that never held what it removes.
func (f *featurizer) graph(s *subgraph, mask *walkMask) *kernels.Graph {
	g := &kernels.Graph{NumNodes: len(s.nodes), NodeType: make([]int32, len(s.nodes)), X: make([]float32, 0, len(s.nodes)*f.dim)}
	var viewDeg []int
	if f.evidence {
		viewDeg = make([]int, len(s.nodes))
		for _, e := range s.edges {
			if e.rel == relFact {
				viewDeg[e.u]++
				viewDeg[e.v]++
			}
		}
	}
	for i, n := range s.nodes {
		if f.evidence {
			g.X = append(g.X, f.static[int(n)*numStaticEvidence:int(n+1)*numStaticEvidence]...)
			deg := len(f.factNb[n]) - mask.droppedAt(n, f.factNb[n])
			linked := len(f.linked[n]) - mask.droppedAt(n, f.linked[n])
			share := float32(0)
			if f.comember[n] > 0 {
				share = float32(linked) / float32(f.comember[n])
			}
			unlinked := 0
			for _, links := range f.sentLinks[n] {
				if len(links) == mask.droppedAt(n, links) {
					unlinked++
				}
			}
			sentShare := float32(0)
			if len(f.sentLinks[n]) > 0 {
				sentShare = float32(unlinked) / float32(len(f.sentLinks[n]))
			}
			g.X = append(g.X, log1p(deg), log1p(int(f.comember[n])-linked), share, log1p(int(f.comention[n])-deg),
				log1p(unlinked), sentShare, log1p(viewDeg[i]), log1p(deg-viewDeg[i]))
			g.X = append(g.X, f.ctxBag[int(n)*wordBuckets:int(n+1)*wordBuckets]...)
			g.X = append(g.X, f.unexplained(n, mask)...)
		}
		if f.emb != nil {
			g.X = f.emb.AppendRow(g.X, int(n))
		}
		if n == s.root {
			g.NodeType[i] = nodeTypeRoot
		}
	}
	for _, e := range s.edges {
		g.Src = append(g.Src, e.u, e.v)
		g.Dst = append(g.Dst, e.v, e.u)
		g.EdgeType = append(g.EdgeType, int32(e.rel), int32(e.rel))
	}
	return g
}

// unexplained is the hashed bag (log1p counts) of the stems of n's sentences that no
// predicate of its facts — those the mask leaves — contains.
func (f *featurizer) unexplained(n int32, mask *walkMask) []float32 {
	said := map[string]bool{}
	for nb, ws := range f.predWords[n] {
		if mask != nil && (mask.dropNodes[nb] || mask.dropPairs[pairKey(n, nb)]) {
			continue
		}
		for _, w := range ws {
			said[w] = true
		}
	}
	bag := make([]float32, wordBuckets)
	for _, wc := range f.ctxWords[n] {
		if !said[wc.stem] {
			bag[wordBucket(wc.stem)] += float32(wc.count)
		}
	}
	for j, c := range bag {
		bag[j] = float32(math.Log1p(float64(c)))
	}
	return bag
}

// contentStems returns the Snowball stems of the lower-case words of text of three or
// more letters that are not stop words: the words that say what a sentence or a
// predicate is about, without the names in it (capitalised), which would not transfer.
func contentStems(text string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) }) {
		if r := []rune(w); len(r) < 3 || !unicode.IsLower(r[0]) {
			continue
		}
		if english.IsStopWord(w) {
			continue
		}
		out = append(out, english.Stem(w, false))
	}
	return out
}

// wordBucket hashes a stem into one of wordBuckets columns (FNV-1a).
func wordBucket(stem string) int {
	h := uint32(2166136261)
	for i := 0; i < len(stem); i++ {
		h = (h ^ uint32(stem[i])) * 16777619
	}
	return int(h % wordBuckets)
}

// droppedAt counts the neighbours of u in nbs whose fact with u the mask removes
// (a dropped pair, or a deleted neighbour).
func (m *walkMask) droppedAt(u int32, nbs []int32) int {
	if m == nil {
		return 0
	}
	n := 0
	for _, v := range nbs {
		if m.dropNodes[v] || m.dropPairs[pairKey(u, v)] {
			n++
		}
	}
	return n
}
