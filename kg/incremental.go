package kg

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
)

// Incremental changes: between merges, an add or a delete changes the records its
// chunks touch and leaves the others as they are (docs/lifecycle.md).
//
// A merge is what Build does and what every change did before: everything derived
// from the extraction results is computed again over the whole corpus, and the index
// equals a fresh build. Between merges the corpus statistics are frozen at the last
// merge's:
//   - the built-in embedder's IDF table: new records are embedded with the table the
//     old vectors were embedded with (blob "embedder", which queries use too); the
//     table brought up to date (embed.Hashed.Update) is kept beside it (blob
//     liveEmbedderBlob) and the drift between the two is tracked;
//   - the generic-entity filter: the names it dropped at the merge stay dropped, new
//     chunks' names are judged by that list, and a name that crosses the threshold
//     since is dropped or restored at the next merge;
//   - the mention-only filter: a name counts as a triple's endpoint when it is an
//     entity already, or an endpoint in the changed chunks.
//
// What stays exact between merges: every deleted chunk's mentions, citations and
// vector go, and with them every fact, hyperedge and entity resting only on them, and
// their synonym edges and BM25 postings; new chunks are extracted, merged, embedded,
// linked and indexed as a build would (BM25 postings are term frequencies: exact).
// What is bounded: vectors (each word weight within 1 ± State.IDFDrift of a fresh
// build's), synonym edges (a new entity is searched against all, so an old entity gains
// it where it is in the new one's top SynonymMax; where it would enter only the old
// one's top list, or a deleted neighbour would leave room for another, the edge comes
// at the merge), the filters (above), the title re-extraction a delete defers
// (State.PendingTitles), and surface forms, types, hyperedge members and scores seen
// only in deleted chunks (kept until the merge). A merge runs when the chunks changed
// since the last one pass Config.MergeShare of the corpus, when the tracked drift
// passes Config.MergeIDFDrift, or when asked (Config.Merge).

// stateBlob holds the lifecycle state (State) of an index.
const stateBlob = "lifecycle.state"

// liveEmbedderBlob holds the built-in embedder's table brought up to date since the
// last merge; absent right after a merge (then it is the "embedder" blob's).
const liveEmbedderBlob = "embedder.live"

// resultsSegment prefixes the blobs holding the extraction results of chunks changed
// since the last merge (resultsSegment + "1", "2", …): later segments win.
const resultsSegment = resultsBlob + "."

// State is an index's record of its last merge and of the changes since.
type State struct {
	// MergeChunks is the chunk count at the last merge; Changed counts the chunks
	// added and deleted since, Changes the changes.
	MergeChunks int `json:"merge_chunks"`
	Changed     int `json:"changed_chunks"`
	Changes     int `json:"changes"`
	// Generic lists the names the generic-entity filter dropped at the last merge.
	Generic []string `json:"generic,omitempty"`
	// IDFDrift is the largest relative change of a word's IDF weight between the table
	// the vectors were embedded with and the up-to-date one (embed.Hashed.IDFDrift).
	IDFDrift float64 `json:"idf_drift"`
	// Filter is the entity filter's configuration at the last merge.
	Filter string `json:"filter"`
	// PendingTitles lists the titles of documents deleted since the last merge whose
	// leaving the rule extractor's title gazetteer has not been followed by extracting
	// again the old chunks that name them: that is deferred to the merge (a deleted
	// title may stay an entity named by other chunks until then).
	PendingTitles []string `json:"pending_titles,omitempty"`
}

// reextractPending extracts again, offline, the chunks (in place in results) that
// name a title of st.PendingTitles, with titles as the gazetteer: at a merge, the
// re-extraction the changes since the last one deferred.
func reextractPending(ctx context.Context, ex extract.Extractor, st State, chunks []graphio.Chunk, titles []string, results []extract.Result, ch *Change) error {
	te, ok := ex.(titledExtractor)
	if !ok || len(st.PendingTitles) == 0 {
		return nil
	}
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = c.Text
	}
	var idx []int
	var in []extract.Chunk
	for i, s := range te.TitleSensitive(st.PendingTitles, nil, texts) {
		if s {
			idx = append(idx, i)
			in = append(in, extract.Chunk{ID: chunks[i].ID, Title: chunks[i].Title, Text: chunks[i].Text})
		}
	}
	if len(in) == 0 {
		return nil
	}
	out, err := te.ExtractTitled(ctx, in, titles, nil)
	if err != nil {
		return err
	}
	for j, i := range idx {
		results[i] = out[j]
	}
	ch.Reextracted += len(in)
	return nil
}

// ReadState returns ix's lifecycle state and whether it has one (an index built
// before it was kept has none: its next change is a merge).
func ReadState(ix *graphio.Index) (State, bool) {
	var st State
	b := ix.Blobs[stateBlob]
	if b == nil || json.Unmarshal(b, &st) != nil {
		return State{}, false
	}
	return st, true
}

func writeState(ix *graphio.Index, st State) error {
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	ix.Blobs[stateBlob] = b
	return nil
}

// storeMergeState records a merge: the state after rebuilding ix from results with
// filter f, with no change since; the live table and result segments go.
func storeMergeState(ix *graphio.Index, f *entityFilter, cfg Config) error {
	st := State{MergeChunks: len(ix.Chunks), Filter: cfg.describeFilter()}
	for n := range f.generic {
		st.Generic = append(st.Generic, n)
	}
	slices.Sort(st.Generic)
	delete(ix.Blobs, liveEmbedderBlob)
	for name := range ix.Blobs {
		if strings.HasPrefix(name, resultsSegment) {
			delete(ix.Blobs, name)
		}
	}
	return writeState(ix, st)
}

// incrementalOK reports whether a change of changed chunks may be made incrementally
// (see the notes above), and the state when it may.
func incrementalOK(ix *graphio.Index, changed int, emb embed.Embedder, cfg Config) (State, bool) {
	st, ok := ReadState(ix)
	if !ok || cfg.Merge || cfg.MergeShare <= 0 || len(ix.Runs) > 0 || !embed.IsHashed(ix.Meta.Embedder) ||
		st.Filter != cfg.describeFilter() || ix.Meta.EntityFilter != st.Filter ||
		ix.Meta.Graph != nil && !maps.Equal(ix.Meta.Graph, cfg.Settings()) { // other settings: a merge
		return st, false
	}
	if emb != nil {
		if _, ok := emb.(*embed.Hashed); !ok {
			return st, false
		}
	}
	if _, imported := ImportedFrom(ix); imported {
		return st, false
	}
	if float64(st.Changed+changed) > cfg.MergeShare*float64(st.MergeChunks) {
		return st, false
	}
	if cfg.MergeIDFDrift > 0 && st.IDFDrift > cfg.MergeIDFDrift {
		return st, false
	}
	return st, true
}

// appendResults stores the results of the chunks at positions at (new numbering) as a
// new results segment.
func appendResults(ix *graphio.Index, at []int32, results []extract.Result) error {
	if len(at) == 0 {
		return nil
	}
	next := 1
	for name := range ix.Blobs {
		if k, err := strconv.Atoi(strings.TrimPrefix(name, resultsSegment)); strings.HasPrefix(name, resultsSegment) && err == nil && k >= next {
			next = k + 1
		}
	}
	seg := &graphio.Index{Chunks: make([]graphio.Chunk, len(at))}
	for i, c := range at {
		seg.Chunks[i].ID = ix.Chunks[c].ID
	}
	if err := StoreResults(seg, results); err != nil {
		return err
	}
	ix.Blobs[resultsSegment+strconv.Itoa(next)] = seg.Blobs[resultsBlob]
	return nil
}

// changeIncrementally applies a change to ix, whose Documents and Chunks already hold
// the new lists (old is ix as it was, for the change's counts): chunkMap gives each
// old chunk's new position (-1 when deleted; kept chunks in order, new chunks after
// them), redo the results of the chunks at redoAt (new positions) that are new or were
// extracted again, removed the deleted chunks' texts (for the live IDF table). It
// updates the graph, vectors, synonym edges, stored results and state, fills in ch's
// counts and ch.Remap (for retrieve.UpdateBM25).
func changeIncrementally(ctx context.Context, old, ix *graphio.Index, chunkMap []int32, redoAt []int32, redo []extract.Result, removed []string, st State, cfg Config, ch *Change) error {
	t0 := time.Now()
	nDocs, nChunks := len(old.Documents), len(old.Chunks)
	oldLen := make([]int, len(ix.Facts)) // citations before, for the trimmed count
	for i := range ix.Facts {
		oldLen[i] = len(ix.Facts[i].Chunks)
	}
	rep := &Report{Chunks: len(ix.Chunks), StageSeconds: map[string]any{}}
	frozen, err := embed.ForIndex(ix, nil)
	if err != nil {
		return err
	}
	// Old chunks whose contributions go: deleted, or extracted again.
	gone := make([]bool, len(chunkMap))
	redoNew := make(map[int32]bool, len(redoAt))
	for _, c := range redoAt {
		redoNew[c] = true
	}
	for i, c := range chunkMap {
		gone[i] = c < 0 || redoNew[c]
	}
	mapChunks := func(cs []int32) ([]int32, int) {
		out := cs[:0:0]
		dropped := 0
		for _, c := range cs {
			if gone[c] {
				dropped++
				continue
			}
			out = append(out, chunkMap[c])
		}
		return out, dropped
	}
	ne := len(ix.Entities)
	hadMention, hasRef := make([]bool, ne), make([]bool, ne)
	mentions := ix.Mentions[:0:0]
	mentions = slices.Grow(mentions, len(ix.Mentions))
	for _, m := range ix.Mentions {
		hadMention[m.Entity] = true
		if gone[m.Chunk] {
			continue
		}
		hasRef[m.Entity] = true
		m.Chunk = chunkMap[m.Chunk]
		mentions = append(mentions, m)
	}
	keepFact := make([]bool, len(ix.Facts))
	for i := range ix.Facts {
		f := &ix.Facts[i]
		cs, dropped := mapChunks(f.Chunks)
		f.Chunks, f.Weight = cs, f.Weight-float32(dropped)
		if keepFact[i] = len(cs) > 0; keepFact[i] {
			hasRef[f.Subject], hasRef[f.Object] = true, true
		}
	}
	keepHyper := make([]bool, len(ix.Hyperedges))
	for i := range ix.Hyperedges {
		h := &ix.Hyperedges[i]
		cs, _ := mapChunks(h.Chunks)
		h.Chunks = cs
		if keepHyper[i] = len(cs) > 0; keepHyper[i] {
			for _, e := range h.Entities {
				hasRef[e] = true
			}
		}
	}
	entMap := make([]int32, ne)
	var entities []graphio.Entity
	for i, e := range ix.Entities {
		if hadMention[i] && !hasRef[i] {
			entMap[i] = -1
			continue
		}
		entMap[i] = int32(len(entities))
		entities = append(entities, e)
	}
	for i := range mentions {
		mentions[i].Entity = entMap[mentions[i].Entity]
	}
	factMap := make([]int32, len(ix.Facts))
	var facts []graphio.Fact
	for i, f := range ix.Facts {
		if !keepFact[i] {
			factMap[i] = -1
			continue
		}
		f.Subject, f.Object = entMap[f.Subject], entMap[f.Object]
		factMap[i] = int32(len(facts))
		facts = append(facts, f)
	}
	hyperMap := make([]int32, len(ix.Hyperedges))
	var hypers []graphio.Hyperedge
	for i, h := range ix.Hyperedges {
		if !keepHyper[i] {
			hyperMap[i] = -1
			continue
		}
		ents := make([]int32, 0, len(h.Entities))
		for _, e := range h.Entities {
			if m := entMap[e]; m >= 0 {
				ents = append(ents, m)
			}
		}
		h.Entities = ents
		hyperMap[i] = int32(len(hypers))
		hypers = append(hypers, h)
	}
	// What goes, by key (as diffRecords counts), to tell records removed and made
	// again by the changed chunks from records removed.
	went := changeKeys{entity: map[string]bool{}, fact: map[string]int{}, hyper: map[string]bool{}, synonym: map[[2]string]bool{}}
	for i, e := range ix.Entities {
		if entMap[i] < 0 {
			went.entity[e.Name] = true
		}
	}
	for i, f := range ix.Facts {
		if factMap[i] < 0 {
			went.fact[f.ID] = oldLen[i]
		}
	}
	for i, h := range ix.Hyperedges {
		if hyperMap[i] < 0 {
			went.hyper[h.ID] = true
		}
	}
	syns := ix.Synonyms[:0:0]
	for _, s := range ix.Synonyms {
		a, b := entMap[s.A], entMap[s.B]
		if a < 0 || b < 0 {
			went.synonym[[2]string{ix.Entities[s.A].Name, ix.Entities[s.B].Name}] = true
			continue
		}
		s.A, s.B = a, b
		syns = append(syns, s)
	}
	maps := map[graphio.NodeKind][]int32{graphio.KindChunk: chunkMap, graphio.KindEntity: entMap, graphio.KindFact: factMap, graphio.KindHyperedge: hyperMap}
	for k, m := range maps {
		if e := ix.Embeddings[k]; e == nil || e.Rows() != len(m) {
			return fmt.Errorf("kg: the index has no %s vectors, or not one per record", k)
		}
	}
	ix.Entities, ix.Mentions, ix.Facts, ix.Hyperedges, ix.Synonyms = entities, mentions, facts, hypers, syns

	// The changed chunks' results, merged as a build merges them, with the filter
	// frozen at the last merge.
	filter := &entityFilter{generic: map[string]bool{}, inFact: map[string]bool{}, cfg: cfg}
	for _, n := range st.Generic {
		filter.generic[n] = true
	}
	for _, e := range ix.Entities {
		filter.inFact[e.Name] = true
	}
	for _, r := range redo {
		if r.Failed != "" {
			continue
		}
		for _, t := range r.Triples {
			filter.inFact[graphio.NormalizeName(t.Subject)] = true
			filter.inFact[graphio.NormalizeName(t.Object)] = true
		}
		if cfg.Hyperedges {
			for _, h := range r.Hyperedges {
				for _, e := range h.Entities {
					filter.inFact[graphio.NormalizeName(e)] = true
				}
			}
		}
	}
	oldEnt := len(ix.Entities)
	order := make([]int, len(redoAt))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(redoAt[a] - redoAt[b]) })
	b := graphio.NewChunkBuilder(ix, "") // the changed chunks have no mention left
	filtered := map[string]string{}
	for _, i := range order {
		r := redo[i]
		if r.Failed != "" {
			rep.FailedChunks++
			continue
		}
		rep.InvalidTriples += r.Dropped
		merge(b, redoAt[i], r, cfg, rep, filter, filtered)
	}
	rep.StageSeconds["merge"] = round3(time.Since(t0).Seconds())

	// The kept rows and the new records' vectors, in fresh arrays: the old matrices
	// (mapped from the file) are read once and their pages handed back.
	t0 = time.Now()
	keptChunks := 0 // old chunks, extracted again or not, keep their vectors
	for _, c := range chunkMap {
		if c >= 0 {
			keptChunks++
		}
	}
	kept := map[graphio.NodeKind]int{graphio.KindChunk: keptChunks, graphio.KindEntity: oldEnt,
		graphio.KindFact: len(facts), graphio.KindHyperedge: len(hypers)}
	texts := map[graphio.NodeKind][]string{}
	for i := kept[graphio.KindChunk]; i < len(ix.Chunks); i++ {
		texts[graphio.KindChunk] = append(texts[graphio.KindChunk], ix.Chunks[i].Content())
	}
	for i := kept[graphio.KindEntity]; i < len(ix.Entities); i++ {
		texts[graphio.KindEntity] = append(texts[graphio.KindEntity], ix.Entities[i].Name)
	}
	for i := kept[graphio.KindFact]; i < len(ix.Facts); i++ {
		texts[graphio.KindFact] = append(texts[graphio.KindFact], FactText(ix, &ix.Facts[i]))
	}
	for i := kept[graphio.KindHyperedge]; i < len(ix.Hyperedges); i++ {
		texts[graphio.KindHyperedge] = append(texts[graphio.KindHyperedge], ix.Hyperedges[i].Text)
	}
	for _, k := range []graphio.NodeKind{graphio.KindChunk, graphio.KindEntity, graphio.KindFact, graphio.KindHyperedge} {
		var add *graphio.Embedding
		if len(texts[k]) > 0 {
			if add, err = embed.Matrix(ctx, frozen, texts[k], cfg.EmbedBatch, nil); err != nil {
				return fmt.Errorf("kg: embed the %s texts: %w", k, err)
			}
		}
		old, m := ix.Embeddings[k], maps[k]
		ix.Embeddings[k] = old.KeepAppend(func(i int) bool { return m[i] >= 0 }, add)
		ix.ReleaseMapped(old)
	}
	rep.StageSeconds["embed"] = round3(time.Since(t0).Seconds())
	t0 = time.Now()
	n, err := AddSynonyms(ix, "", oldEnt, cfg)
	if err != nil {
		return err
	}
	rep.SynonymEdges = n
	rep.StageSeconds["synonyms"] = round3(time.Since(t0).Seconds())

	ch.Remap = &graphio.Remap{Chunks: chunkMap, Facts: factMap, Entities: entMap, Hyperedges: hyperMap}

	// The IDF table brought up to date, and the drift from the frozen one.
	live, err := liveTable(ix)
	if err != nil {
		return err
	}
	isOld := make([]bool, len(ix.Chunks))
	for _, c := range chunkMap {
		if c >= 0 {
			isOld[c] = true
		}
	}
	var added []string
	for _, c := range redoAt {
		if !isOld[c] {
			added = append(added, ix.Chunks[c].Content())
		}
	}
	if err := live.Update(added, removed); err != nil {
		return err
	}
	lb, err := live.MarshalBinary()
	if err != nil {
		return err
	}
	ix.Blobs[liveEmbedderBlob] = lb
	st.IDFDrift = live.IDFDrift(frozen.(*embed.Hashed))
	st.Changed += len(added) + len(removed)
	st.Changes++
	var resAt []int32
	var res []extract.Result
	for i, c := range redoAt {
		resAt, res = append(resAt, c), append(res, redo[i])
	}
	if err := appendResults(ix, resAt, res); err != nil {
		return err
	}
	if err := writeState(ix, st); err != nil {
		return err
	}
	stats := graphio.ComputeStats(ix, 0)
	rep.Entities, rep.Facts, rep.Hyperedges = stats.Entities, stats.Facts, stats.Hyperedges
	ch.Graph, ch.Incremental, ch.IDFDrift = rep, true, st.IDFDrift
	ch.Added, ch.Removed, ch.Trimmed = went.count(ix, nDocs, nChunks, chunkMap, oldEnt, len(facts), len(hypers), len(syns), factMap, oldLen)
	return nil
}

// changeKeys holds the keys of the records an incremental change removed: entities
// by name, facts (with their citations) and hyperedges by id, synonym edges by their
// names.
type changeKeys struct {
	entity  map[string]bool
	fact    map[string]int
	hyper   map[string]bool
	synonym map[[2]string]bool
}

// count returns the change's counts as diffRecords gives them (records added and
// removed by key, facts kept with fewer citations), from what the change did rather
// than by hashing every record twice: records at or after the kept counts are new,
// unless their key went and came back.
func (g changeKeys) count(ix *graphio.Index, nDocs, nChunks int, chunkMap []int32, keptEnt, keptFacts, keptHypers, keptSyns int, factMap []int32, oldLen []int) (added, removed map[string]int, trimmed int) {
	added, removed = map[string]int{}, map[string]int{}
	if d := len(ix.Documents) - nDocs; d > 0 {
		added["document"] = d
	} else if d < 0 {
		removed["document"] = -d
	}
	kept := 0
	for _, c := range chunkMap {
		if c >= 0 {
			kept++
		}
	}
	added["chunk"], removed["chunk"] = len(ix.Chunks)-kept, nChunks-kept
	back := func(n int, key func(i int) bool) int {
		k := 0
		for i := range n {
			if key(i) {
				k++
			}
		}
		return k
	}
	ne := back(len(ix.Entities)-keptEnt, func(i int) bool { return g.entity[ix.Entities[keptEnt+i].Name] })
	added["entity"], removed["entity"] = len(ix.Entities)-keptEnt-ne, len(g.entity)-ne
	nf := 0
	for i := keptFacts; i < len(ix.Facts); i++ {
		if n, ok := g.fact[ix.Facts[i].ID]; ok {
			nf++
			if len(ix.Facts[i].Chunks) < n {
				trimmed++
			}
		}
	}
	added["fact"], removed["fact"] = len(ix.Facts)-keptFacts-nf, len(g.fact)-nf
	nh := back(len(ix.Hyperedges)-keptHypers, func(i int) bool { return g.hyper[ix.Hyperedges[keptHypers+i].ID] })
	added["hyperedge"], removed["hyperedge"] = len(ix.Hyperedges)-keptHypers-nh, len(g.hyper)-nh
	ns := back(len(ix.Synonyms)-keptSyns, func(i int) bool {
		s := ix.Synonyms[keptSyns+i]
		return g.synonym[[2]string{ix.Entities[s.A].Name, ix.Entities[s.B].Name}]
	})
	added["synonym"], removed["synonym"] = len(ix.Synonyms)-keptSyns-ns, len(g.synonym)-ns
	for i, m := range factMap {
		if m >= 0 && len(ix.Facts[m].Chunks) < oldLen[i] {
			trimmed++
		}
	}
	for k, v := range added {
		if v == 0 {
			delete(added, k)
		}
	}
	for k, v := range removed {
		if v == 0 {
			delete(removed, k)
		}
	}
	return added, removed, trimmed
}

// liveTable returns the built-in embedder's table brought up to date since the last
// merge (the frozen one right after a merge).
func liveTable(ix *graphio.Index) (*embed.Hashed, error) {
	b := ix.Blobs[liveEmbedderBlob]
	if b == nil {
		b = ix.Blobs[embedderBlob]
	}
	h, err := embed.UnmarshalHashed(b)
	if err != nil {
		return nil, fmt.Errorf("kg: the index's embedder table: %w", err)
	}
	return h, nil
}
