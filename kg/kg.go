// Package kg builds the knowledge graph of an index: it runs an extractor over the
// chunks, merges entities, triples and hyperedges into the index, embeds chunks,
// entities, facts and hyperedges, and links entities by synonym edges (HippoRAG 2's
// entity resolution).
package kg

import (
	"context"
	"fmt"
	"time"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
	"github.com/graphloom/graphloom/kernels"
)

// Config holds the graph-construction knobs.
type Config struct {
	// SynonymThreshold is the least cosine between entity embeddings for a synonym
	// edge; HippoRAG 2: 0.8.
	SynonymThreshold float32
	// SynonymMax caps synonym neighbours per entity: 100 (HippoRAG 2 keeps up to
	// 101: it stops once more than 100 are taken). A pair joined by a fact and by a
	// synonym edge carries the sum of both weights (HippoRAG 2's graph keeps the
	// synonym's cosine alone: its quirk).
	SynonymMax int
	// SynonymMinAlnum skips entities whose names have fewer letters and digits; HippoRAG 2
	// skips names of 2 or fewer, so 3. Such short names are neither searched from nor
	// found as neighbours (HippoRAG 2 only skips searching from them).
	SynonymMinAlnum int
	// ExactKNNLimit is the most entities compared exactly by the synonym search; beyond
	// it dense embeddings are searched through an IVF index (see kernels.SimilarRows)
	// and the hashed embedder's through word blocking (hashedNameBlocks: exact scores,
	// pairs only among names sharing rare enough words). 0 = 20,000.
	ExactKNNLimit int
	// EmbedBatch is the number of texts per embedding request; HippoRAG 2: 8–16 for
	// local models, 64 suits APIs. Default 64.
	EmbedBatch int
	// Hyperedges keeps the extractor's hyperedges (HyperGraphRAG); default true.
	Hyperedges bool
	// StemSynonyms also links entities whose names differ only in inflection (equal
	// Snowball stems, e.g. "harbour towns" and "harbour town") by a synonym edge of
	// weight 1 — entity normalisation that the hashed embedder's cosine misses at
	// HippoRAG 2's 0.8. Default true (graphloom).
	StemSynonyms bool

	// EntityRules drops names that are no entity: single characters, bare numbers
	// (four-digit years stay, as dates), document-structure words alone or with a
	// number ("chapter 3", "figure", "notice") and names made only of stop words.
	// Default true (graphloom; an LLM extractor is asked not to produce them).
	EntityRules bool
	// MaxEntityShare drops, as generic, a name found in more than this share of the
	// chunks (HippoRAG's node specificity taken to its limit: such a node joins
	// unrelated passages and drains PPR mass). 0 keeps every name. Default 0.05.
	MaxEntityShare float64
	// GenericMinChunks is the least number of chunks for the generic filter to apply
	// (below it a share says little: on the 45-passage example corpus every main character is in more than 5% of the chunks). Default 200.
	GenericMinChunks int
	// MentionOnly keeps entities that are only mentioned — in no triple and, with
	// hyperedges, in no hyperedge. HippoRAG 2 makes phrase nodes of triple
	// endpoints only, so the default is false; a chunk's own title (see
	// extract.Titles) counts as a mention. A deviation either way: every name the
	// extractor recognises in a chunk (its NER names, its hyperedges' members) is
	// recorded as a mention of that chunk, and mentions join an entity to its
	// passages in the PPR graph and divide its fact weight among them
	// (graphio.EntityChunks); HippoRAG 2 joins an entity only to the chunks whose
	// triples name it, using NER for OpenIE's conditioning alone. With hyperedges on,
	// entities named only in a hyperedge are nodes too (HyperGraphRAG's).
	MentionOnly bool

	// MergeShare is the share of the chunks at the last merge that may be added or
	// deleted, all changes since it together, before a change is made as a merge
	// (everything derived from the extraction results computed again, the index equal
	// to a fresh build) rather than incrementally (frozen corpus statistics, bounded
	// difference; see docs/lifecycle.md). 0 makes every change a merge. Default 0.10.
	MergeShare float64
	// MergeIDFDrift, when positive, also makes a change a merge once the largest
	// relative change of a word's IDF weight since the last merge (State.IDFDrift)
	// passes it. Default 0 (the drift is tracked and reported, the share decides):
	// a word new since the merge has a drift of log 2 / (log N + 1) alone, about 0.06
	// at 30K chunks, so a low bound would merge on almost every change.
	MergeIDFDrift float64
	// Merge makes the next change a merge whatever the drift (graphloom index --merge).
	Merge bool
}

// defaultExactKNNLimit is Config.ExactKNNLimit's default.
const defaultExactKNNLimit = 20000

// DefaultConfig returns HippoRAG 2's defaults.
func DefaultConfig() Config {
	return Config{SynonymThreshold: 0.8, SynonymMax: 100, SynonymMinAlnum: 3, EmbedBatch: 64, Hyperedges: true, StemSynonyms: true,
		EntityRules: true, MaxEntityShare: 0.05, GenericMinChunks: 200, MergeShare: 0.10}
}

// Report summarises a graph build.
type Report struct {
	Chunks       int `json:"chunks"`
	FailedChunks int `json:"failed_chunks"`
	// UnansweredChunks are the failed chunks the LLM gave no answer for (a rerun
	// asks again); the others' answers could not be read.
	UnansweredChunks int     `json:"unanswered_chunks,omitempty"`
	Entities         int     `json:"entities"`
	Facts            int     `json:"facts"`
	InvalidTriples   int     `json:"invalid_triples"` // rejected by validation or when merging
	Hyperedges       int     `json:"hyperedges"`
	SynonymEdges     int     `json:"synonym_edges"`
	IsolatedHyper    float64 `json:"isolated_hyperedge_fraction"`
	// FilteredEntities counts, per rule (FilterShort, FilterGeneric, …), the distinct
	// names the entity filter kept out of the graph; FilteredFacts the triples that
	// lost an endpoint to it.
	FilteredEntities map[string]int `json:"filtered_entities,omitempty"`
	FilteredFacts    int            `json:"filtered_facts,omitempty"`
	StageSeconds     map[string]any `json:"stage_seconds"`
	FailureExamples  []string       `json:"failure_examples,omitempty"`
}

// Progress returns the progress callback for a named stage.
type Progress func(stage string) func(done, total int)

func (p Progress) stage(name string) func(done, total int) {
	if p == nil {
		return nil
	}
	return p(name)
}

// Build extracts and embeds the knowledge graph of ix, whose documents and chunks are
// already ingested, replacing any graph it had. A nil embedder uses the built-in
// hashed embedder fitted on the chunks. The extraction results are kept in the index
// (see StoreResults), so that documents can later be added and deleted without
// extracting the other chunks again.
func Build(ctx context.Context, ix *graphio.Index, ex extract.Extractor, emb embed.Embedder, cfg Config, progress Progress) (*Report, error) {
	if len(ix.Chunks) == 0 {
		return nil, fmt.Errorf("kg: the index has no chunks")
	}
	t0 := time.Now()
	in := make([]extract.Chunk, len(ix.Chunks))
	for i, c := range ix.Chunks {
		in[i] = extract.Chunk{ID: c.ID, Title: c.Title, Text: c.Text}
	}
	results, err := ex.Extract(ctx, in, progress.stage("extract"))
	if err != nil {
		return &Report{Chunks: len(ix.Chunks), StageSeconds: map[string]any{}}, fmt.Errorf("kg: extract: %w", err)
	}
	ix.Meta.Extractor = ex.Name()
	extractSeconds := round3(time.Since(t0).Seconds())
	rep, err := Rebuild(ctx, ix, results, emb, cfg, progress)
	if rep != nil {
		rep.StageSeconds["extract"] = extractSeconds
	}
	return rep, err
}

// Rebuild replaces the graph of ix by the one its chunks' extraction results (one per
// chunk, in chunk order) give: the entity filter, the merge, the embeddings and the
// synonym edges are computed over the whole corpus, exactly as Build does after
// extracting. It stores results in the index. Runs (augmentations) are not replayed:
// see Add and Delete.
func Rebuild(ctx context.Context, ix *graphio.Index, results []extract.Result, emb embed.Embedder, cfg Config, progress Progress) (*Report, error) {
	return rebuild(ctx, ix, results, emb, cfg, progress, false)
}

// rebuild is Rebuild; fitted says that the built-in embedder emb already holds the
// table Fit on ix's chunks would give (brought up to date by embed.Hashed.Update).
func rebuild(ctx context.Context, ix *graphio.Index, results []extract.Result, emb embed.Embedder, cfg Config, progress Progress, fitted bool) (*Report, error) {
	if len(ix.Chunks) == 0 {
		return nil, fmt.Errorf("kg: the index has no chunks")
	}
	if len(results) != len(ix.Chunks) {
		return nil, fmt.Errorf("kg: %d extraction results for %d chunks", len(results), len(ix.Chunks))
	}
	rep := &Report{Chunks: len(ix.Chunks), StageSeconds: map[string]any{}}
	ix.Entities, ix.Mentions, ix.Facts, ix.Hyperedges, ix.Synonyms, ix.Embeddings = nil, nil, nil, nil, nil, nil
	stage := func(name string, t0 time.Time) { rep.StageSeconds[name] = round3(time.Since(t0).Seconds()) }
	if err := StoreResults(ix, results); err != nil {
		return rep, err
	}

	t0 := time.Now()
	b := graphio.NewBuilder(ix, "")
	filter := newEntityFilter(results, cfg)
	filtered := map[string]string{}
	ix.Meta.EntityFilter = cfg.describeFilter()
	ix.Meta.Graph = cfg.Settings()
	for ci, r := range results {
		if r.Failed != "" {
			rep.FailedChunks++
			if r.Unanswered {
				rep.UnansweredChunks++
			}
			if len(rep.FailureExamples) < 5 {
				rep.FailureExamples = append(rep.FailureExamples, fmt.Sprintf("%s: %s", ix.Chunks[ci].ID, r.Failed))
			}
			continue
		}
		rep.InvalidTriples += r.Dropped
		merge(b, int32(ci), r, cfg, rep, filter, filtered)
	}
	rep.FilteredEntities = map[string]int{}
	for _, rule := range filtered {
		rep.FilteredEntities[rule]++
	}
	ix.Meta.FilteredEntities = rep.FilteredEntities
	if err := storeMergeState(ix, filter, cfg); err != nil {
		return rep, err
	}
	stage("merge", t0)

	if emb == nil {
		h, err := embed.NewHashed(embed.DefaultHashedConfig())
		if err != nil {
			return rep, err
		}
		emb = h
	}
	if h, ok := emb.(*embed.Hashed); ok && !fitted {
		// The built-in embedder's IDF is a corpus statistic: fitted on the chunks.
		texts := make([]string, len(ix.Chunks))
		for i := range ix.Chunks {
			texts[i] = ix.Chunks[i].Content()
		}
		h.Fit(texts)
	}
	t0 = time.Now()
	if err := EmbedAll(ctx, ix, emb, cfg.EmbedBatch, progress.stage("embed")); err != nil {
		return rep, err
	}
	stage("embed", t0)

	t0 = time.Now()
	n, err := AddSynonyms(ix, "", 0, cfg)
	if err != nil {
		return rep, err
	}
	stage("synonyms", t0)

	st := graphio.ComputeStats(ix, 0)
	rep.Entities, rep.Facts, rep.Hyperedges, rep.SynonymEdges = st.Entities, st.Facts, st.Hyperedges, n
	rep.IsolatedHyper = st.IsolatedHyperedges
	return rep, nil
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }

// merge adds one chunk's extraction to the index, leaving out the names the filter
// rejects (recorded in filtered: normalised name → rule).
func merge(b *graphio.Builder, chunk int32, r extract.Result, cfg Config, rep *Report, filter *entityFilter, filtered map[string]string) {
	drop := func(name string, mentionOnly bool) bool {
		rule := filter.reject(name, mentionOnly)
		if rule != "" {
			filtered[graphio.NormalizeName(name)] = rule
		}
		return rule != ""
	}
	for _, e := range r.Entities {
		if drop(e.Text, true) {
			continue
		}
		if id := b.Entity(e.Text, e.Type); id >= 0 {
			b.AddMention(id, chunk)
		}
	}
	for _, t := range r.Triples {
		if drop(t.Subject, false) || drop(t.Object, false) {
			rep.FilteredFacts++
			continue
		}
		if _, _, err := b.AddFact(t.Subject, t.Predicate, t.Object, chunk); err != nil {
			rep.InvalidTriples++
		}
	}
	if !cfg.Hyperedges {
		return
	}
	for _, h := range r.Hyperedges {
		var ents []int32
		for _, name := range h.Entities {
			if drop(name, false) {
				continue
			}
			if id := b.Entity(name, ""); id >= 0 {
				ents = append(ents, id)
			}
		}
		b.AddHyperedge(h.Text, ents, chunk, h.Score)
	}
}

// FactText is the text a fact is embedded as: "subject predicate object".
func FactText(ix *graphio.Index, f *graphio.Fact) string {
	return ix.Entities[f.Subject].Name + " " + f.Predicate + " " + ix.Entities[f.Object].Name
}

// EmbedAll embeds every chunk, entity, fact and hyperedge of ix with emb and records emb
// as the index's embedder.
// An index read without its matrices (see ReadForChange) is whole again after it.
func EmbedAll(ctx context.Context, ix *graphio.Index, emb embed.Embedder, batch int, progress func(done, total int)) error {
	ix.ReplaceEmbeddings(map[graphio.NodeKind]*graphio.Embedding{})
	return embedFrom(ctx, ix, emb, batch, progress, map[graphio.NodeKind]int{})
}

// EmbedNew embeds the records appended after the first rows already embedded of each
// kind (as augmentation appends), with the index's own embedder.
func EmbedNew(ctx context.Context, ix *graphio.Index, emb embed.Embedder, batch int) error {
	from := map[graphio.NodeKind]int{}
	for k, m := range ix.Embeddings {
		from[k] = m.Rows()
	}
	return embedFrom(ctx, ix, emb, batch, nil, from)
}

func embedFrom(ctx context.Context, ix *graphio.Index, emb embed.Embedder, batch int, progress func(done, total int), from map[graphio.NodeKind]int) error {
	texts := map[graphio.NodeKind][]string{}
	for i := from[graphio.KindChunk]; i < len(ix.Chunks); i++ {
		texts[graphio.KindChunk] = append(texts[graphio.KindChunk], ix.Chunks[i].Content())
	}
	for i := from[graphio.KindEntity]; i < len(ix.Entities); i++ {
		texts[graphio.KindEntity] = append(texts[graphio.KindEntity], ix.Entities[i].Name)
	}
	for i := from[graphio.KindFact]; i < len(ix.Facts); i++ {
		texts[graphio.KindFact] = append(texts[graphio.KindFact], FactText(ix, &ix.Facts[i]))
	}
	for i := from[graphio.KindHyperedge]; i < len(ix.Hyperedges); i++ {
		texts[graphio.KindHyperedge] = append(texts[graphio.KindHyperedge], ix.Hyperedges[i].Text)
	}
	total := 0
	for _, t := range texts {
		total += len(t)
	}
	done := 0
	for _, k := range []graphio.NodeKind{graphio.KindChunk, graphio.KindEntity, graphio.KindFact, graphio.KindHyperedge} {
		m, err := embed.Matrix(ctx, emb, texts[k], batch, func(d, _ int) {
			if progress != nil {
				progress(done+d, total)
			}
		})
		if err != nil {
			return fmt.Errorf("kg: embed the %s texts: %w", k, err)
		}
		done += len(texts[k])
		if old := ix.Embeddings[k]; old != nil {
			old.Append(m)
		} else {
			ix.Embeddings[k] = m
		}
	}
	return embed.Store(ix, emb)
}

// AddSynonyms links entities whose embeddings have cosine ≥ cfg.SynonymThreshold, at
// most cfg.SynonymMax neighbours each, skipping names with fewer than
// cfg.SynonymMinAlnum letters and digits. Only entities at index ≥ from are queried
// (0 = all); edges are tagged with run. It returns the number of new edges.
func AddSynonyms(ix *graphio.Index, run string, from int, cfg Config) (int, error) {
	m := ix.Embeddings[graphio.KindEntity]
	if m == nil || len(ix.Entities) == 0 || from >= len(ix.Entities) {
		return 0, nil // no entity to query
	}
	skip := make([]bool, len(ix.Entities))
	for i, e := range ix.Entities {
		skip[i] = graphio.AlnumLen(e.Name) < cfg.SynonymMinAlnum
	}
	kc := kernels.KNNConfig{K: cfg.SynonymMax, MinScore: cfg.SynonymThreshold, ExactLimit: cfg.ExactKNNLimit, Seed: 42, From: from}
	if kc.ExactLimit <= 0 {
		kc.ExactLimit = defaultExactKNNLimit
	}
	var nbrs [][]kernels.Neighbor
	var err error
	if s := m.Sparse; s != nil {
		if block, ok := hashedNameBlocks(ix, skip, cfg); ok {
			nbrs, err = kernels.SimilarSparseRowsBlocked(s.Ptr, s.Idx, s.Val, m.Dim, block, skip, kc)
		} else {
			nbrs, err = kernels.SimilarSparseRows(s.Ptr, s.Idx, s.Val, m.Dim, skip, kc)
		}
	} else {
		nbrs, err = kernels.SimilarRows(m.Data, m.Dim, skip, kc)
	}
	if err != nil {
		return 0, fmt.Errorf("kg: synonyms: %w", err)
	}
	b := graphio.NewSynonymBuilder(ix, run)
	n := 0
	for i := from; i < len(nbrs); i++ {
		for _, nb := range nbrs[i] {
			if b.AddSynonym(int32(i), nb.Index, nb.Score) {
				n++
			}
		}
	}
	if cfg.StemSynonyms {
		n += addStemSynonyms(b, from, cfg)
	}
	return n, nil
}

// HashCollisionTolerance is how far hash collisions are assumed to raise the cosine of
// two names' hashed vectors above that of their unhashed features, for the synonym
// search's word blocking (hashedNameBlocks). On the 2Wiki scale corpora (40K and
// 149K entities) 0.15 finds every pair the exact search finds; 0.10 missed 2 of 25,736.
const HashCollisionTolerance = 0.15

// hashedNameBlocks returns the blocking rows for the synonym search when the entities
// are embedded by the built-in hashed embedder and there are more than
// cfg.ExactKNNLimit of them: the names' unhashed words, which two names at the
// synonym threshold must share with a dot product of at least
// embed.Hashed.WordBound(threshold − HashCollisionTolerance). The exact search's cost
// grows with the square of the entity count (every hashed coordinate's posting list
// grows with the corpus); the blocked one's with the pairs that share a rare word.
func hashedNameBlocks(ix *graphio.Index, skip []bool, cfg Config) (kernels.BlockRows, bool) {
	limit := cfg.ExactKNNLimit
	if limit <= 0 {
		limit = defaultExactKNNLimit
	}
	live := 0
	for _, s := range skip {
		if !s {
			live++
		}
	}
	if live <= limit || !embed.IsHashed(ix.Meta.Embedder) {
		return kernels.BlockRows{}, false
	}
	e, err := embed.ForIndex(ix, nil)
	h, ok := e.(*embed.Hashed)
	if err != nil || !ok {
		return kernels.BlockRows{}, false
	}
	bound := h.WordBound(cfg.SynonymThreshold - HashCollisionTolerance)
	if bound <= 0 {
		return kernels.BlockRows{}, false
	}
	names := make([]string, len(ix.Entities))
	for i, e := range ix.Entities {
		names[i] = e.Name
	}
	p, idx, val := h.WordRows(names)
	return kernels.BlockRows{Ptr: p, Idx: idx, Val: val, Min: bound}, true
}

// BuildOffline ingests a corpus file with the default chunking and builds its graph
// as `graphloom index` does without an LLM: the rule extractor (with rule) and the
// built-in hashed embedder.
func BuildOffline(ctx context.Context, corpus string, cfg Config, rule extract.RuleConfig) (*graphio.Index, error) {
	ix, _, err := ingest.Build(ctx, corpus, ingest.DefaultConfig(), nil)
	if err != nil {
		return nil, err
	}
	if _, err := Build(ctx, ix, extract.NewRule(rule), nil, cfg, nil); err != nil {
		return nil, err
	}
	return ix, nil
}
