package kg

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
)

// The index lifecycle: documents added to and deleted from a built index.
//
// Design: the index keeps every chunk's extraction result (resultsBlob, and one
// segment blob per incremental change since the last merge). Adding or deleting
// documents changes the chunk list and extracts only the chunks that are new. A change
// is then made one of two ways (see incremental.go):
//   - as a merge: everything derived from the results is rebuilt over the whole
//     corpus — the entity filter, the merged graph, the embeddings, the synonym
//     edges — as Build does, and the index equals a fresh build of the resulting
//     corpus (no LLM call, no extraction of old chunks, but linear in the index);
//   - incrementally, between merges, while the chunks changed since the last merge
//     stay below Config.MergeShare of the corpus: only the records the changed chunks
//     touch change, with the corpus statistics frozen at the last merge; the
//     difference from a fresh build is bounded (State, docs/lifecycle.md).
// Either way the caller rewrites the file atomically (the single-file format; the
// segments-plus-manifest layout is not implemented).
//
// Two corpus-wide inputs make "only the new chunks" need care:
//   - the rule extractor's title gazetteer (extract.Titles): an old chunk that holds
//     every word of a title that arrives or leaves is extracted again, offline (the
//     LLM extractor has no corpus-wide input, so nothing old is ever sent to it);
//   - the built-in hashed embedder's IDF table, fitted on the chunks: its counts are
//     brought up to date from the added and deleted chunks (embed.Hashed.Update, the
//     table a fit on every chunk gives) and everything is embedded again (offline);
//     the old vectors are therefore not even read (ReadForChange). Any other
//     embedder's vectors do not depend on the corpus: old rows are reused by text and
//     only new texts are embedded.
//
// What a change costs, why exact equality with a fresh build keeps it near half a
// build, and the segmented layout that would make it proportional to the change:
// docs/lifecycle.md.
//
// Runs (augmentations) are replayed on the rebuilt graph in their order, as they were
// merged (tagged with their run, so a later rollback removes exactly what remains of
// them); a run's fact or hyperedge citing a deleted chunk is dropped (a cross-chunk
// fact rests on all of its evidence), and counted per run.

// resultsBlob is where an index keeps its chunks' extraction results.
const resultsBlob = "extract.results"

// embedderBlob is where embed.Store keeps an embedder's state.
const embedderBlob = "embedder"

// historyBlob is where an index keeps the history of its add and delete operations.
const historyBlob = "lifecycle.history"

type storedResults struct {
	Chunks  []string         `json:"chunks"` // chunk ids, in index order
	Results []extract.Result `json:"results"`
}

// StoreResults keeps the extraction results of ix's chunks (one per chunk, in order)
// in the index, gzip-compressed JSON.
func StoreResults(ix *graphio.Index, results []extract.Result) error {
	sr := storedResults{Chunks: make([]string, len(ix.Chunks)), Results: results}
	for i, c := range ix.Chunks {
		sr.Chunks[i] = c.ID
	}
	var buf bytes.Buffer
	// Fastest compression: the blob is rewritten on every change, and the default
	// level spent 7 of an add's 185 s at 120K passages compressing it.
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	if err != nil {
		return fmt.Errorf("kg: store extraction results: %w", err)
	}
	if err := encodeResults(zw, sr); err != nil {
		return fmt.Errorf("kg: store extraction results: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("kg: store extraction results: %w", err)
	}
	if ix.Blobs == nil {
		ix.Blobs = map[string][]byte{}
	}
	ix.Blobs[resultsBlob] = buf.Bytes()
	return nil
}

// encodeResults writes sr as the JSON object json.Marshal gives, one chunk's result at
// a time: the whole document at once was a second copy of every result in memory (50
// MiB at 30K passages) while an index was rebuilt.
func encodeResults(w io.Writer, sr storedResults) error {
	chunks, err := json.Marshal(sr.Chunks)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, `{"chunks":%s,"results":`, chunks); err != nil {
		return err
	}
	if sr.Results == nil {
		_, err := io.WriteString(w, "null}\n")
		return err
	}
	sep := "["
	for _, r := range sr.Results {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := io.WriteString(w, sep); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		sep = ","
	}
	if sep == "[" {
		_, err = io.WriteString(w, "[]}\n")
	} else {
		_, err = io.WriteString(w, "]}\n")
	}
	return err
}

// Results returns the extraction result of every chunk of ix, in chunk order, and
// whether they are the extractor's own (stored by Build). An index without stored
// results (written before they were kept, or imported) gets results reconstructed
// from its extracted graph: each chunk's mentioned entities, the facts and hyperedges
// citing it. Rebuilding from those gives the same graph except that facts' weights
// count citing chunks rather than occurrences and names the entity filter removed
// are not known.
func Results(ix *graphio.Index) ([]extract.Result, bool, error) {
	if blob := ix.Blobs[resultsBlob]; blob != nil {
		sr, err := decodeResults(blob)
		if err != nil {
			return nil, false, err
		}
		var segs []int
		for name := range ix.Blobs {
			if k, err := strconv.Atoi(strings.TrimPrefix(name, resultsSegment)); strings.HasPrefix(name, resultsSegment) && err == nil {
				segs = append(segs, k)
			}
		}
		if len(segs) == 0 && len(sr.Chunks) == len(ix.Chunks) && len(sr.Results) == len(ix.Chunks) &&
			slices.EqualFunc(sr.Chunks, ix.Chunks, func(id string, c graphio.Chunk) bool { return id == c.ID }) {
			return sr.Results, true, nil
		}
		// Segments of the changes since the last merge: by chunk id, later ones winning.
		byID := make(map[string]extract.Result, len(ix.Chunks))
		add := func(sr storedResults) {
			for i, id := range sr.Chunks {
				if i < len(sr.Results) {
					byID[id] = sr.Results[i]
				}
			}
		}
		add(sr)
		slices.Sort(segs)
		for _, k := range segs {
			s, err := decodeResults(ix.Blobs[resultsSegment+strconv.Itoa(k)])
			if err != nil {
				return nil, false, err
			}
			add(s)
		}
		out := make([]extract.Result, len(ix.Chunks))
		all := true
		for i, c := range ix.Chunks {
			r, ok := byID[c.ID]
			out[i], all = r, all && ok
		}
		if all {
			return out, true, nil
		}
	}
	out := make([]extract.Result, len(ix.Chunks))
	for _, m := range ix.Mentions {
		if m.Run == "" {
			e := ix.Entities[m.Entity]
			out[m.Chunk].Entities = append(out[m.Chunk].Entities, extract.Entity{Text: e.Name, Type: e.Type})
		}
	}
	for _, f := range ix.Facts {
		if f.Run != "" {
			continue
		}
		for _, c := range f.Chunks {
			out[c].Triples = append(out[c].Triples, extract.Triple{Subject: ix.Entities[f.Subject].Name, Predicate: f.Predicate, Object: ix.Entities[f.Object].Name})
		}
	}
	for _, h := range ix.Hyperedges {
		if h.Run != "" {
			continue
		}
		names := make([]string, len(h.Entities))
		for i, e := range h.Entities {
			names[i] = ix.Entities[e].Name
		}
		for _, c := range h.Chunks {
			out[c].Hyperedges = append(out[c].Hyperedges, extract.Hyperedge{Text: h.Text, Entities: names, Score: h.Score})
		}
	}
	return out, false, nil
}

// newTitles returns the titles of added that old does not hold.
func newTitles(old, added []string) []string {
	have := make(map[string]bool, len(old))
	for _, t := range old {
		have[t] = true
	}
	var out []string
	for _, t := range added {
		if !have[t] {
			have[t] = true
			out = append(out, t)
		}
	}
	return out
}

// decodeResults decodes a blob StoreResults wrote.
func decodeResults(blob []byte) (storedResults, error) {
	var sr storedResults
	zr, err := gzip.NewReader(bytes.NewReader(blob))
	if err != nil {
		return sr, fmt.Errorf("kg: stored extraction results: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return sr, fmt.Errorf("kg: stored extraction results: %w", err)
	}
	if err := json.Unmarshal(raw, &sr); err != nil {
		return sr, fmt.Errorf("kg: stored extraction results: %w", err)
	}
	return sr, nil
}

// A titledExtractor has corpus-wide input (the rule extractor's title gazetteer).
type titledExtractor interface {
	ExtractTitled(ctx context.Context, chunks []extract.Chunk, corpusTitles []string, progress extract.Progress) ([]extract.Result, error)
	TitleSensitive(before, after, texts []string) []bool
}

// Change reports one add, delete or sync.
type Change struct {
	Op      string `json:"op"` // "add", "delete", "sync" or "merge"
	Created string `json:"created"`
	// Documents lists the documents added or deleted (a sync's new documents).
	Documents []DocRef `json:"documents"`
	// Changed lists the documents a sync indexed again because their text changed
	// under the same key (the new version; the old one is gone), Deleted the documents
	// it removed because their key left the corpus. Unchanged counts the documents it
	// kept, and Rekeyed those of them whose key was stored or changed (a file moved, or
	// an index written before keys were kept).
	Changed   []DocRef `json:"changed,omitempty"`
	Deleted   []DocRef `json:"deleted,omitempty"`
	Unchanged int      `json:"unchanged,omitempty"`
	Rekeyed   int      `json:"rekeyed,omitempty"`
	// Present counts documents of an add already in the index (same content), skipped;
	// Duplicates the copies within the added corpus merged into one (ingest's count).
	Present    int `json:"already_present"`
	Duplicates int `json:"duplicates"`
	Chunks     int `json:"chunks"` // chunks added or deleted (a sync's new chunks)
	// ChunksDeleted counts the chunks a sync removed.
	ChunksDeleted int `json:"chunks_deleted,omitempty"`
	// Extracted counts the new chunks sent to the extractor; Reextracted the old chunks
	// extracted again offline because the rule extractor's title gazetteer changed.
	Extracted   int `json:"extracted"`
	Reextracted int `json:"reextracted"`
	// Retried counts the old chunks asked of the LLM again because it gave them no
	// answer before (an index written with --allow-partial); RetryFailed those that
	// got none again (they stay marked, for the next change, and do not count in
	// Failed: they were missing before this change too).
	Retried     int `json:"retried,omitempty"`
	RetryFailed int `json:"retry_failed,omitempty"`
	// Extractor names the extractor of the new chunks when it is not the index's own
	// (an imported index's new documents are extracted by graphloom's).
	Extractor string `json:"extractor,omitempty"`
	// Failed counts the new chunks whose extraction failed.
	Failed int `json:"failed"`
	// Removed and Added count records by kind between the index before and after
	// (entities by name, facts and hyperedges by id, synonym edges by their names);
	// Trimmed counts facts that stay with fewer citations.
	Added   map[string]int `json:"added"`
	Removed map[string]int `json:"removed"`
	Trimmed int            `json:"facts_trimmed"`
	// RunRecordsRemoved counts, per augmentation run, its facts and hyperedges dropped
	// because a chunk they cite was deleted.
	RunRecordsRemoved map[string]int `json:"run_records_removed,omitempty"`
	// Incremental says the change was made between merges (frozen corpus statistics;
	// see State), not as a merge; IDFDrift is then the tracked drift after it.
	Incremental bool    `json:"incremental"`
	IDFDrift    float64 `json:"idf_drift,omitempty"`
	Graph       *Report `json:"graph,omitempty"`
	// DocsDigest hashes the ids of Documents, Changed and Deleted, for Generation: two
	// changes made in the same second with the same counts differ by their documents.
	// Empty in history recorded before it was kept (those generations stay as they were).
	DocsDigest string `json:"docs_digest,omitempty"`
	// Remap, after an incremental change, says where the old records went, for
	// retrieve.UpdateBM25 (nil after a merge: the postings are computed again).
	Remap *graphio.Remap `json:"-"`
}

// DocRef names a document in a Change.
type DocRef struct {
	ID     string `json:"id"`
	Key    string `json:"key,omitempty"`
	Title  string `json:"title"`
	Source string `json:"source"`
}

func docRef(d graphio.Document) DocRef {
	return DocRef{ID: d.ID, Key: d.Key, Title: d.Title, Source: d.Source}
}

// History returns the add and delete operations recorded in ix, oldest first (nil for
// an index that never had one). The graph report of each is not kept.
func History(ix *graphio.Index) ([]Change, error) {
	blob := ix.Blobs[historyBlob]
	if blob == nil {
		return nil, nil
	}
	var h []Change
	if err := json.Unmarshal(blob, &h); err != nil {
		return nil, fmt.Errorf("kg: index history: %w", err)
	}
	return h, nil
}

func appendHistory(ix *graphio.Index, ch *Change) error {
	h, err := History(ix)
	if err != nil {
		return err
	}
	ch.DocsDigest = docsDigest(*ch) // in the caller's report too
	c := *ch
	c.Graph = nil
	h = append(h, c)
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	ix.Blobs[historyBlob] = b
	return nil
}

// Add ingests passages into ix (chunked with icfg, which must be the index's chunking),
// extracts the new chunks only, and rebuilds the graph (see the package's lifecycle
// notes). A passage whose document is already in ix is skipped and counted as Present.
// ex must be the index's extractor and emb its embedder (nil for the built-in one).
func Add(ctx context.Context, ix *graphio.Index, passages []ingest.Passage, icfg ingest.Config, ex extract.Extractor, emb embed.Embedder, cfg Config, progress Progress) (*Change, error) {
	if err := CheckCompatible(ix, icfg, ex, emb); err != nil {
		return nil, err
	}
	ch := &Change{Op: "add", Created: time.Now().UTC().Format(time.RFC3339)}
	have := map[string]bool{}
	for _, d := range ix.Documents {
		have[d.ID] = true
	}
	var fresh []ingest.Passage
	for _, p := range passages {
		if have[graphio.DocumentID(p.Title, p.Text)] {
			ch.Present++
			continue
		}
		fresh = append(fresh, p)
	}
	old := *ix
	nd, nc := len(ix.Documents), len(ix.Chunks)
	irep := &ingest.Report{}
	if err := ingest.AddPassages(ctx, ix, fresh, icfg, nil, irep); err != nil {
		return nil, err
	}
	ch.Duplicates, ch.Chunks = irep.Duplicates, len(ix.Chunks)-nc
	for _, d := range ix.Documents[nd:] {
		ch.Documents = append(ch.Documents, docRef(d))
	}
	stored, retryAt, err := unansweredChunks(&old, ex)
	if err != nil {
		return nil, err
	}
	if ch.Chunks == 0 && len(retryAt) == 0 {
		return ch, nil
	}
	st, inc := incrementalOK(&old, ch.Chunks+len(retryAt), emb, cfg)
	var results []extract.Result
	var oldEmb embed.Embedder
	if !inc {
		if results, oldEmb, err = rebuildInputs(&old, emb, stored); err != nil {
			return nil, err
		}
	}
	titles := func(cs []graphio.Chunk) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.Title
		}
		return out
	}
	in := make([]extract.Chunk, 0, len(ix.Chunks)-nc)
	for _, c := range ix.Chunks[nc:] {
		in = append(in, extract.Chunk{ID: c.ID, Title: c.Title, Text: c.Text})
	}
	var fresult, again []extract.Result
	var againAt []int
	if te, ok := ex.(titledExtractor); ok {
		fresult, err = te.ExtractTitled(ctx, in, titles(ix.Chunks), progress.stage("extract"))
		if err == nil && ex.Name() == ix.Meta.Extractor { // not an imported index's chunks
			before, after := titles(ix.Chunks[:nc]), titles(ix.Chunks)
			if inc {
				// The titles that came, alone: NewTitles of every title, twice, was most
				// of finding the chunks that name one.
				before, after = nil, newTitles(before, after[nc:])
			}
			againAt, again, err = reextract(ctx, te, ix.Chunks[:nc], before, after, titles(ix.Chunks), ch)
		}
	} else {
		fresult, err = ex.Extract(ctx, in, progress.stage("extract"))
	}
	if err == nil && len(retryAt) > 0 {
		var retried []extract.Result
		if retried, err = retryChunks(ctx, ex, ix.Chunks, retryAt, progress); err == nil {
			againAt, again = append(againAt, retryAt...), append(again, retried...)
			ch.Retried = len(retryAt)
			for _, r := range retried {
				if r.Failed != "" {
					ch.RetryFailed++
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kg: add: extract: %w", err)
	}
	ch.Extracted = len(in)
	if ex.Name() != ix.Meta.Extractor {
		ch.Extractor = ex.Name()
	}
	for _, r := range fresult {
		if r.Failed != "" {
			ch.Failed++
		}
	}
	identity := make([]int32, nc)
	for i := range identity {
		identity[i] = int32(i)
	}
	if inc {
		var redoAt []int32
		for _, i := range againAt {
			redoAt = append(redoAt, int32(i))
		}
		for i := range fresult {
			redoAt = append(redoAt, int32(nc+i))
		}
		if err := changeIncrementally(ctx, &old, ix, identity, redoAt, append(again, fresult...), nil, st, cfg, ch); err != nil {
			return nil, err
		}
		return ch, appendHistory(ix, ch)
	}
	for j, i := range againAt {
		results[i] = again[j]
	}
	if st, ok := ReadState(&old); ok && ex.Name() == ix.Meta.Extractor {
		if err := reextractPending(ctx, ex, st, ix.Chunks[:nc], titles(ix.Chunks), results, ch); err != nil {
			return nil, fmt.Errorf("kg: add: extract: %w", err)
		}
	}
	results = append(slices.Clip(results), fresult...)
	if err := rebuildAndReplay(ctx, &old, ix, results, identity, oldEmb, cfg, progress, ch); err != nil {
		return nil, err
	}
	return ch, appendHistory(ix, ch)
}

// Delete removes documents (by position in ix.Documents) and their chunks from ix and
// rebuilds the graph from the remaining chunks' results (see the package's lifecycle
// notes): facts, hyperedges, entities, mentions, synonym edges and embeddings that
// rested only on the deleted chunks go, a fact also stated elsewhere keeps its other
// citations, and augmentation records citing a deleted chunk go. ex (may be nil) is
// used only to extract again, offline, the chunks the rule extractor's title gazetteer
// makes depend on a deleted title; emb must be the index's embedder, or nil (the
// built-in one, or the vectors already in the index).
func Delete(ctx context.Context, ix *graphio.Index, docs []int32, ex extract.Extractor, emb embed.Embedder, cfg Config) (*Change, error) {
	if ix.Meta.Extractor != "" && ex != nil && ex.Name() != ix.Meta.Extractor {
		return nil, fmt.Errorf("kg: delete: the index was extracted with %q, not %q", ix.Meta.Extractor, ex.Name())
	}
	ch := &Change{Op: "delete", Created: time.Now().UTC().Format(time.RFC3339)}
	gone := make([]bool, len(ix.Documents))
	for _, d := range docs {
		if d < 0 || int(d) >= len(ix.Documents) {
			return nil, fmt.Errorf("kg: delete: document %d of %d", d, len(ix.Documents))
		}
		gone[d] = true
	}
	old := *ix
	docMap := make([]int32, len(ix.Documents))
	var keptDocs []graphio.Document
	for i, d := range ix.Documents {
		if gone[i] {
			docMap[i] = -1
			ch.Documents = append(ch.Documents, docRef(d))
			continue
		}
		docMap[i] = int32(len(keptDocs))
		keptDocs = append(keptDocs, d)
	}
	chunkMap := make([]int32, len(ix.Chunks))
	var keptChunks []graphio.Chunk
	var keptAt []int
	var before, after, removed []string
	for i, c := range ix.Chunks {
		before = append(before, c.Title)
		var also []graphio.ChunkRef // the other documents that produced it and stay
		for _, a := range c.Also {
			if docMap[a.Doc] >= 0 {
				also = append(also, graphio.ChunkRef{Doc: docMap[a.Doc], Order: a.Order})
			}
		}
		switch {
		case docMap[c.Doc] >= 0:
			c.Doc = docMap[c.Doc]
		case len(also) > 0: // its document goes, another that produced it stays: hand it over
			c.Doc, c.Order, also = also[0].Doc, also[0].Order, also[1:]
		default:
			chunkMap[i] = -1
			ch.Chunks++
			removed = append(removed, c.Content())
			continue
		}
		c.Also = also
		after = append(after, c.Title)
		chunkMap[i] = int32(len(keptChunks))
		keptChunks = append(keptChunks, c)
		keptAt = append(keptAt, i)
	}
	if len(keptChunks) == 0 {
		return nil, fmt.Errorf("kg: delete: that would delete every document of the index")
	}
	st, inc := incrementalOK(&old, ch.Chunks, emb, cfg)
	var keptResults []extract.Result
	var oldEmb embed.Embedder
	if !inc {
		results, _, err := Results(&old)
		if err != nil {
			return nil, err
		}
		if oldEmb, err = reuseEmbedder(&old, emb); err != nil {
			return nil, err
		}
		for _, i := range keptAt {
			keptResults = append(keptResults, results[i])
		}
	}
	ix.Documents, ix.Chunks = keptDocs, keptChunks
	if inc {
		// The old chunks that name a deleted title are extracted again at the merge.
		if _, ok := ex.(titledExtractor); ok {
			left := make(map[string]bool, len(after))
			for _, t := range after {
				left[t] = true
			}
			for _, t := range before {
				if !left[t] && !slices.Contains(st.PendingTitles, t) {
					st.PendingTitles = append(st.PendingTitles, t)
				}
			}
		}
		if err := changeIncrementally(ctx, &old, ix, chunkMap, nil, nil, removed, st, cfg, ch); err != nil {
			return nil, err
		}
		return ch, appendHistory(ix, ch)
	}
	var againAt []int
	var again []extract.Result
	if te, ok := ex.(titledExtractor); ok && ch.Chunks > 0 {
		var err error
		if againAt, again, err = reextract(ctx, te, keptChunks, before, after, after, ch); err != nil {
			return nil, fmt.Errorf("kg: delete: extract: %w", err)
		}
	}
	for j, i := range againAt {
		keptResults[i] = again[j]
	}
	if st, ok := ReadState(&old); ok {
		if err := reextractPending(ctx, ex, st, keptChunks, after, keptResults, ch); err != nil {
			return nil, fmt.Errorf("kg: delete: extract: %w", err)
		}
	}
	if err := rebuildAndReplay(ctx, &old, ix, keptResults, chunkMap, oldEmb, cfg, nil, ch); err != nil {
		return nil, err
	}
	return ch, appendHistory(ix, ch)
}

// Merge makes ix equal a fresh build of its corpus after incremental changes (see
// State), with no document added or deleted: everything derived from the stored
// extraction results is computed again over the whole corpus (the chunks a delete's
// titles made depend on them extracted again, offline, with ex when it is the rule
// extractor; ex may be nil), runs replayed, as a change made as a merge does. emb must
// be the index's embedder, or nil (the built-in one). It is recorded in the history.
func Merge(ctx context.Context, ix *graphio.Index, ex extract.Extractor, emb embed.Embedder, cfg Config) (*Change, error) {
	if ix.Meta.Extractor != "" && ex != nil && ex.Name() != ix.Meta.Extractor {
		return nil, fmt.Errorf("kg: merge: the index was extracted with %q, not %q", ix.Meta.Extractor, ex.Name())
	}
	ch := &Change{Op: "merge", Created: time.Now().UTC().Format(time.RFC3339)}
	results, oldEmb, err := rebuildInputs(ix, emb, nil)
	if err != nil {
		return nil, err
	}
	old := *ix
	titles := make([]string, len(ix.Chunks))
	for i, c := range ix.Chunks {
		titles[i] = c.Title
	}
	if st, ok := ReadState(&old); ok {
		if err := reextractPending(ctx, ex, st, ix.Chunks, titles, results, ch); err != nil {
			return nil, fmt.Errorf("kg: merge: extract: %w", err)
		}
	}
	identity := make([]int32, len(ix.Chunks))
	for i := range identity {
		identity[i] = int32(i)
	}
	if err := rebuildAndReplay(ctx, &old, ix, results, identity, oldEmb, cfg, nil, ch); err != nil {
		return nil, err
	}
	return ch, appendHistory(ix, ch)
}

// reextract extracts again, with the corpus titles corpus, the chunks whose rule
// extraction may differ between a corpus of titles before and one of titles after
// (any two lists whose difference is the titles that came or went), returning their
// positions in chunks and their new results.
func reextract(ctx context.Context, te titledExtractor, chunks []graphio.Chunk, before, after, corpus []string, ch *Change) ([]int, []extract.Result, error) {
	texts := make([]string, len(chunks))
	for i, c := range chunks {
		texts[i] = c.Text
	}
	var idx []int
	var in []extract.Chunk
	for i, s := range te.TitleSensitive(before, after, texts) {
		if s {
			idx = append(idx, i)
			in = append(in, extract.Chunk{ID: chunks[i].ID, Title: chunks[i].Title, Text: chunks[i].Text})
		}
	}
	if len(in) == 0 {
		return nil, nil, nil
	}
	out, err := te.ExtractTitled(ctx, in, corpus, nil)
	if err != nil {
		return nil, nil, err
	}
	ch.Reextracted = len(in)
	return idx, out, nil
}

// unansweredChunks returns the positions of ix's chunks whose stored extraction got no
// answer from the LLM (extract.Result.Unanswered: an index written with
// --allow-partial), when ex is the LLM extractor that made the index: a change asks
// them again. Other extractors never leave such chunks, and their results are not
// decoded here; for the LLM's, it returns them too (Results), for the change to reuse.
func unansweredChunks(ix *graphio.Index, ex extract.Extractor) ([]extract.Result, []int, error) {
	if _, llm := ex.(*extract.LLM); !llm || ex.Name() != ix.Meta.Extractor {
		return nil, nil, nil
	}
	results, ok, err := Results(ix)
	if err != nil || !ok {
		return results, nil, err
	}
	var at []int
	for i, r := range results {
		if r.Failed != "" && r.Unanswered {
			at = append(at, i)
		}
	}
	return results, at, nil
}

// retryChunks extracts the chunks at the given positions again.
func retryChunks(ctx context.Context, ex extract.Extractor, chunks []graphio.Chunk, at []int, progress Progress) ([]extract.Result, error) {
	in := make([]extract.Chunk, len(at))
	for k, i := range at {
		in[k] = extract.Chunk{ID: chunks[i].ID, Title: chunks[i].Title, Text: chunks[i].Text}
	}
	return ex.Extract(ctx, in, progress.stage("retry"))
}

// rebuildAndReplay rebuilds ix's graph from results, replays old's runs with chunk
// positions mapped by chunkMap (old chunk → new, -1 when deleted) and fills in ch's
// counts against old.
func rebuildAndReplay(ctx context.Context, old, ix *graphio.Index, results []extract.Result, chunkMap []int32, emb embed.Embedder, cfg Config, progress Progress, ch *Change) error {
	// The old vectors are needed no more (an embedder other than the built-in one
	// answers old texts from its own copy), nor the old graph unless a run is replayed
	// from it: let them go before the new ones are made.
	before := keysOf(old)
	old.Embeddings = nil
	if len(old.Runs) == 0 {
		old.Entities, old.Mentions, old.Facts, old.Hyperedges, old.Synonyms = nil, nil, nil, nil, nil
	}
	rep, err := rebuild(ctx, ix, results, emb, cfg, progress, refit(old, ix, chunkMap, emb))
	if err != nil {
		return err
	}
	ch.Graph = rep
	for _, r := range old.Runs {
		n, err := replayRun(ctx, old, ix, r.ID, chunkMap, emb, cfg)
		if err != nil {
			return err
		}
		if n > 0 {
			if ch.RunRecordsRemoved == nil {
				ch.RunRecordsRemoved = map[string]int{}
			}
			ch.RunRecordsRemoved[r.ID] = n
		}
	}
	ch.Added, ch.Removed, ch.Trimmed = diffRecords(before, keysOf(ix))
	return nil
}

// refit brings the built-in embedder's document frequencies, fitted on old's chunks,
// up to date with ix's (chunkMap maps old chunks to new, -1 when deleted) by counting
// the changed chunks alone (embed.Hashed.Update; integer counts, so the table is the
// one a fit on every chunk gives), and reports whether it did. It does not when emb is
// another embedder or its table was not fitted on old's chunks (then Rebuild fits it
// on every chunk).
func refit(old, ix *graphio.Index, chunkMap []int32, emb embed.Embedder) bool {
	h, ok := emb.(*embed.Hashed)
	if !ok || h.Documents() != len(old.Chunks) {
		return false
	}
	kept := make([]bool, len(ix.Chunks))
	var removed, added []string
	for i, c := range chunkMap {
		if c < 0 {
			removed = append(removed, old.Chunks[i].Content())
		} else {
			kept[c] = true
		}
	}
	for i, k := range kept {
		if !k {
			added = append(added, ix.Chunks[i].Content())
		}
	}
	return h.Update(added, removed) == nil
}

// replayRun merges the facts and hyperedges run added to old into ix, as the
// augmentation merged them (entities created and tagged as needed, mentions in the
// cited chunks, the new records embedded, synonym edges for the run's new entities).
// A record citing a chunk chunkMap maps to -1 is dropped; it returns how many were.
func replayRun(ctx context.Context, old, ix *graphio.Index, run string, chunkMap []int32, emb embed.Embedder, cfg Config) (int, error) {
	oldEnt := len(ix.Entities)
	b := graphio.NewBuilder(ix, run)
	entity := func(e int32) int32 {
		oe := old.Entities[e]
		name := oe.Name
		if len(oe.Surface) > 0 {
			name = oe.Surface[0]
		}
		return b.Entity(name, oe.Type)
	}
	mapChunks := func(cs []int32) ([]int32, bool) {
		out := make([]int32, len(cs))
		for i, c := range cs {
			if out[i] = chunkMap[c]; out[i] < 0 {
				return nil, false
			}
		}
		return out, true
	}
	dropped := 0
	for _, f := range old.Facts {
		if f.Run != run {
			continue
		}
		cs, ok := mapChunks(f.Chunks)
		if !ok {
			dropped++
			continue
		}
		s, o := entity(f.Subject), entity(f.Object)
		if s < 0 || o < 0 || s == o {
			continue
		}
		for _, c := range cs {
			b.AddMention(s, c)
			b.AddMention(o, c)
		}
		if _, _, err := b.AddFactIDs(s, f.Predicate, o, cs); err != nil {
			return 0, fmt.Errorf("kg: replay run %s: %w", run, err)
		}
	}
	for _, h := range old.Hyperedges {
		if h.Run != run {
			continue
		}
		cs, ok := mapChunks(h.Chunks)
		if !ok {
			dropped++
			continue
		}
		var ents []int32
		for _, e := range h.Entities {
			if id := entity(e); id >= 0 {
				ents = append(ents, id)
			}
		}
		for _, c := range cs {
			b.AddHyperedge(h.Text, ents, c, h.Score)
		}
	}
	if err := EmbedNew(ctx, ix, emb, cfg.EmbedBatch); err != nil {
		return 0, fmt.Errorf("kg: replay run %s: %w", run, err)
	}
	if _, err := AddSynonyms(ix, run, oldEnt, cfg); err != nil {
		return 0, fmt.Errorf("kg: replay run %s: %w", run, err)
	}
	return dropped, nil
}

// recordKeys holds an index's records by kind, each as the 64-bit FNV-1a hash of its
// key (entities by name, facts and hyperedges by id, synonym edges by their names,
// chunks and documents by id) with, for facts, the number of citing chunks. Hashes
// keep the old index's side of a change's counts small, so the old graph can go
// before the new one is built; a collision (about 1 in 10^9 at a million records)
// would only miscount the report.
type recordKeys map[string]map[uint64]int

func keysOf(ix *graphio.Index) recordKeys {
	m := recordKeys{"entity": {}, "fact": {}, "hyperedge": {}, "synonym": {}, "chunk": {}, "document": {}}
	h := func(parts ...string) uint64 {
		f := fnv.New64a()
		for _, p := range parts {
			f.Write([]byte(p))
			f.Write([]byte{0})
		}
		return f.Sum64()
	}
	for _, d := range ix.Documents {
		m["document"][h(d.ID)] = 1
	}
	for _, c := range ix.Chunks {
		m["chunk"][h(c.ID)] = 1
	}
	for _, e := range ix.Entities {
		m["entity"][h(e.Name)] = 1
	}
	for _, f := range ix.Facts {
		m["fact"][h(f.ID)] = len(f.Chunks)
	}
	for _, e := range ix.Hyperedges {
		m["hyperedge"][h(e.ID)] = 1
	}
	for _, s := range ix.Synonyms {
		m["synonym"][h(ix.Entities[s.A].Name, ix.Entities[s.B].Name)] = 1
	}
	return m
}

// diffRecords counts records of each kind in after and not before (added) and the
// other way round (removed), and facts in both with fewer citations in after.
func diffRecords(b, a recordKeys) (added, removed map[string]int, trimmed int) {
	added, removed = map[string]int{}, map[string]int{}
	for kind, bm := range b {
		for k, n := range bm {
			if m, ok := a[kind][k]; !ok {
				removed[kind]++
			} else if kind == "fact" && m < n {
				trimmed++
			}
		}
		for k := range a[kind] {
			if _, ok := bm[k]; !ok {
				added[kind]++
			}
		}
	}
	return added, removed, trimmed
}

// ReadForChange reads the index at path for Add, Delete or Sync, in one pass: the
// file is mapped (graphio.ReadOptions.Map), its matrices checked and their pages handed
// back (Release). An incremental change (see State) copies the vectors it keeps one
// matrix at a time; a merge of a built-in embedder's index computes every vector
// again and never touches the old ones; another embedder's vectors are read back for
// the texts they embedded. None holds all the old matrices in memory beside the new
// ones (at 30K passages they are 330 of the index's 337 MiB). The mapping is never
// unmapped: this is for a process that changes one index and exits.
func ReadForChange(path string) (*graphio.Index, error) {
	return graphio.ReadFileWith(path, graphio.ReadOptions{Map: true, Release: true})
}

// CheckCompatible refuses to add to ix with a chunking, extractor or embedder other
// than the index's own, naming both.
func CheckCompatible(ix *graphio.Index, icfg ingest.Config, ex extract.Extractor, emb embed.Embedder) error {
	if err := checkChunking(ix, icfg); err != nil {
		return err
	}
	if fw, ok := ImportedFrom(ix); ok {
		if ex == nil {
			return fmt.Errorf("kg: the index was imported from %s (extracted with %q), whose extractor graphloom cannot run; give graphloom's extractor (rule or llm) for the new documents", fw, ix.Meta.Extractor)
		}
		// The new chunks are extracted by graphloom's extractor; the imported ones keep
		// the framework's extraction.
	} else if ex == nil || ex.Name() != ix.Meta.Extractor {
		name := "none"
		if ex != nil {
			name = ex.Name()
		}
		return fmt.Errorf("kg: the index was extracted with %q, this run would extract with %q; use the index's extractor", ix.Meta.Extractor, name)
	}
	want := ix.Meta.Embedder
	switch {
	case embed.IsHashed(want):
		if emb != nil {
			if _, ok := emb.(*embed.Hashed); !ok {
				return fmt.Errorf("kg: the index was embedded with the built-in embedder (%s), this run would embed with %q", want, emb.Identity())
			}
		}
	case emb == nil:
		return fmt.Errorf("kg: the index was embedded with %q, this run would embed with the built-in embedder (hash); give the index's embedder", want)
	case emb.Identity() != want:
		return fmt.Errorf("kg: the index was embedded with %q, this run would embed with %q", want, emb.Identity())
	default:
		if err := embed.Verify(ix, emb); err != nil { // an API model of that name: the one that built the index
			return fmt.Errorf("kg: %w", err)
		}
	}
	return nil
}

// importers names the extractor identities graphio/interop's importers record: the
// framework the index came from.
var importers = []struct{ prefix, framework string }{
	{"lightrag", "LightRAG"}, {"hipporag:", "HippoRAG"}, {"gfmrag", "GFM-RAG"}, {"graphrag", "Microsoft GraphRAG"},
}

// ImportedFrom returns the framework ix was imported from (graphloom import), judged by
// the extractor it records, and whether it was imported. The chunks of an imported
// index were extracted by that framework: Add extracts new documents with graphloom's
// extractor and leaves the imported chunks' extraction as it is.
func ImportedFrom(ix *graphio.Index) (string, bool) {
	for _, im := range importers {
		if ix.Meta.Extractor == im.prefix || strings.HasSuffix(im.prefix, ":") && strings.HasPrefix(ix.Meta.Extractor, im.prefix) {
			return im.framework, true
		}
	}
	return "", false
}

// checkChunking refuses a chunking other than the index's own, naming both.
func checkChunking(ix *graphio.Index, icfg ingest.Config) error {
	if got := icfg.Describe(); ix.Meta.Chunking != "" && ix.Meta.Chunking != got {
		return fmt.Errorf("kg: the index was chunked with %s, this run would chunk with %s; give the index's chunking", ix.Meta.Chunking, got)
	}
	if ix.Meta.Tokenizer != "" && ix.Meta.Tokenizer != icfg.Encoding {
		return fmt.Errorf("kg: the index was chunked in %s tokens, this run would chunk in %s", ix.Meta.Tokenizer, icfg.Encoding)
	}
	return nil
}

// rebuildInputs returns what a change rebuilt from the stored results starts from:
// the extraction results (Results, unless the caller already decoded them) and the
// embedder whose vectors it may reuse (reuseEmbedder).
func rebuildInputs(ix *graphio.Index, emb embed.Embedder, results []extract.Result) ([]extract.Result, embed.Embedder, error) {
	if results == nil {
		var err error
		if results, _, err = Results(ix); err != nil {
			return nil, nil, err
		}
	}
	oldEmb, err := reuseEmbedder(ix, emb)
	if err != nil {
		return nil, nil, err
	}
	return results, oldEmb, nil
}

// reuseEmbedder returns the embedder a rebuild of ix embeds with: the built-in
// embedder restored from the index (its up-to-date table after incremental changes;
// refit brings it up to date with the change, or Rebuild fits it again), or emb (the index's own,
// possibly nil) answering from the vectors already in ix for texts it embedded before.
func reuseEmbedder(ix *graphio.Index, emb embed.Embedder) (embed.Embedder, error) {
	if embed.IsHashed(ix.Meta.Embedder) {
		if ix.Blobs[liveEmbedderBlob] != nil {
			// Changed incrementally since the last merge: the table brought up to date
			// with the index's chunks, not the one its vectors were embedded with.
			return liveTable(ix)
		}
		return embed.ForIndex(ix, nil)
	}
	if ix.Meta.Embedder == "" {
		return nil, fmt.Errorf("kg: the index has no embeddings")
	}
	r := &reusing{inner: emb, id: ix.Meta.Embedder, state: ix.Blobs[embedderBlob], cache: map[string][]float32{}}
	add := func(k graphio.NodeKind, n int, text func(i int) string) {
		m := ix.Embeddings[k]
		if m == nil {
			return
		}
		r.dim = m.Dim
		for i := range min(n, m.Rows()) {
			r.cache[text(i)] = m.RowInto(i, make([]float32, m.Dim))
		}
	}
	add(graphio.KindChunk, len(ix.Chunks), func(i int) string { return ix.Chunks[i].Content() })
	add(graphio.KindEntity, len(ix.Entities), func(i int) string { return ix.Entities[i].Name })
	add(graphio.KindFact, len(ix.Facts), func(i int) string { return FactText(ix, &ix.Facts[i]) })
	add(graphio.KindHyperedge, len(ix.Hyperedges), func(i int) string { return ix.Hyperedges[i].Text })
	return r, nil
}

// reusing is an embedder whose vectors do not depend on the corpus, answering the
// texts it already embedded from the index and the others through inner.
type reusing struct {
	inner embed.Embedder // nil: every text must be known
	id    string
	dim   int
	state []byte // the index's embedder state (a local model's settings), kept as it was
	cache map[string][]float32
}

func (r *reusing) Identity() string { return r.id }
func (r *reusing) Dim() int         { return r.dim }

// IndexState implements embed.StateHolder: the index's embedder state is kept.
func (r *reusing) IndexState() []byte { return r.state }

// Embed implements embed.Embedder.
func (r *reusing) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var miss []string
	var at []int
	for i, t := range texts {
		if v, ok := r.cache[t]; ok {
			out[i] = v
		} else {
			miss, at = append(miss, t), append(at, i)
		}
	}
	if len(miss) == 0 {
		return out, nil
	}
	if r.inner == nil {
		return nil, fmt.Errorf("kg: %d texts are new (the first: %q) and the index's embedder %q is not configured", len(miss), miss[0], r.id)
	}
	vs, err := r.inner.Embed(ctx, miss)
	if err != nil {
		return nil, err
	}
	for j, i := range at {
		out[i] = vs[j]
		r.cache[miss[j]] = vs[j]
	}
	return out, nil
}
