package kg

import (
	"context"
	"fmt"
	"time"

	"github.com/graphloom/graphloom/embed"
	"github.com/graphloom/graphloom/extract"
	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/ingest"
)

// Sync: make an index match its corpus as it is now.
//
// Documents are matched by content first (a document whose title and text are in the
// index is kept as it is, whatever its key: a moved file is not indexed again), then by
// key (ingest.Passage.Key: the file's path below the corpus folder, a record's id or
// title): a key whose text changed is indexed again, its old version deleted. Keys the
// corpus no longer has are deleted; documents with new keys added. The new index holds
// the documents and chunks in corpus order, chunked as a fresh build would chunk them;
// every chunk already in the index keeps its stored extraction result (by chunk id,
// which hashes the chunk's title and text), only the others are extracted, and the graph
// is rebuilt from the results as Add and Delete rebuild it, so the result equals a
// fresh build of the corpus (runs replayed, minus their records that cite a chunk that
// went).

// DocumentKey returns d's key: the one stored in the index or, for a document of an
// index written before keys were kept (or an imported one), the key ingest.SourceKey
// derives from its source and title for the corpus at root.
func DocumentKey(d *graphio.Document, root string) string {
	if d.Key != "" {
		return d.Key
	}
	return ingest.SourceKey(d.Source, d.Title, root)
}

// PlanSync reports what Sync would do with the corpus passages loaded from root
// (documents added, changed, deleted and kept; chunks to extract and to drop) without
// changing ix or calling an extractor. Its Created is empty.
func PlanSync(ctx context.Context, ix *graphio.Index, passages []ingest.Passage, root string, icfg ingest.Config) (*Change, error) {
	if err := checkChunking(ix, icfg); err != nil {
		return nil, err
	}
	target, ch, err := planSync(ctx, ix, passages, root, icfg)
	if err != nil {
		return nil, err
	}
	// The chunks a sync with the index's LLM extractor would ask again: kept, and
	// stored as unanswered.
	results, ok, err := Results(ix)
	if err != nil || !ok {
		return ch, err
	}
	kept := make(map[string]bool, len(target.Chunks))
	for _, c := range target.Chunks {
		kept[c.ID] = true
	}
	for i, r := range results {
		if r.Failed != "" && r.Unanswered && kept[ix.Chunks[i].ID] {
			ch.Retried++
		}
	}
	return ch, nil
}

// Sync makes ix match the corpus passages loaded from root (see the notes above): new
// documents are added, vanished ones deleted, changed ones indexed again; only chunks
// not already in ix are extracted. ex, emb and icfg must be the index's own, as for Add.
func Sync(ctx context.Context, ix *graphio.Index, passages []ingest.Passage, root string, icfg ingest.Config, ex extract.Extractor, emb embed.Embedder, cfg Config, progress Progress) (*Change, error) {
	if err := CheckCompatible(ix, icfg, ex, emb); err != nil {
		return nil, err
	}
	target, ch, err := planSync(ctx, ix, passages, root, icfg)
	if err != nil {
		return nil, err
	}
	ch.Created = time.Now().UTC().Format(time.RFC3339)
	stored, retryAt, err := unansweredChunks(ix, ex) // asked again, as by Add
	if err != nil {
		return nil, err
	}
	retry := make(map[int]bool, len(retryAt))
	for _, i := range retryAt {
		retry[i] = true
	}
	if len(ch.Documents)+len(ch.Changed)+len(ch.Deleted)+len(retryAt) == 0 {
		if ch.Rekeyed == 0 {
			return ch, nil
		}
		at := map[string]int{}
		for i, d := range ix.Documents {
			at[d.ID] = i
		}
		for _, d := range target.Documents {
			if i, ok := at[d.ID]; ok {
				ix.Documents[i].Key, ix.Documents[i].Source = d.Key, d.Source
			}
		}
		return ch, appendHistory(ix, ch)
	}
	results, oldEmb, err := rebuildInputs(ix, emb, stored)
	if err != nil {
		return nil, err
	}
	old := *ix
	at := make(map[string]int32, len(ix.Chunks))
	chunkMap := make([]int32, len(ix.Chunks))
	for i, c := range ix.Chunks {
		at[c.ID], chunkMap[i] = int32(i), -1
	}
	newResults := make([]extract.Result, len(target.Chunks))
	var in []extract.Chunk
	var inAt, keptAt []int
	var kept []graphio.Chunk
	var keptResults []extract.Result
	retriedIn := map[int]bool{} // positions in `in` of retried old chunks
	for i, c := range target.Chunks {
		if j, ok := at[c.ID]; ok {
			chunkMap[j] = int32(i)
			if !retry[int(j)] {
				keptAt, kept, keptResults = append(keptAt, i), append(kept, c), append(keptResults, results[j])
				continue
			}
			ch.Retried++ // kept, but extracted again: the LLM gave it no answer before
			retriedIn[len(in)] = true
		}
		inAt = append(inAt, i)
		in = append(in, extract.Chunk{ID: c.ID, Title: c.Title, Text: c.Text})
	}
	titles := func(cs []graphio.Chunk) []string {
		out := make([]string, len(cs))
		for i, c := range cs {
			out[i] = c.Title
		}
		return out
	}
	var fresult []extract.Result
	te, titled := ex.(titledExtractor)
	switch {
	case len(in) == 0:
	case titled:
		fresult, err = te.ExtractTitled(ctx, in, titles(target.Chunks), progress.stage("extract"))
	default:
		fresult, err = ex.Extract(ctx, in, progress.stage("extract"))
	}
	if err == nil && titled && ex.Name() == ix.Meta.Extractor { // not an imported index's chunks
		var againAt []int
		var again []extract.Result
		againAt, again, err = reextract(ctx, te, kept, titles(old.Chunks), titles(target.Chunks), titles(target.Chunks), ch)
		for j, i := range againAt {
			keptResults[i] = again[j]
		}
		if st, ok := ReadState(&old); ok && err == nil {
			err = reextractPending(ctx, ex, st, kept, titles(target.Chunks), keptResults, ch)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kg: sync: extract: %w", err)
	}
	for j, i := range keptAt {
		newResults[i] = keptResults[j]
	}
	for j, i := range inAt {
		newResults[i] = fresult[j]
		switch {
		case fresult[j].Failed == "":
		case retriedIn[j]:
			ch.RetryFailed++
		default:
			ch.Failed++
		}
	}
	ch.Extracted = len(in) - ch.Retried
	ix.Documents, ix.Chunks = target.Documents, target.Chunks
	if err := rebuildAndReplay(ctx, &old, ix, newResults, chunkMap, oldEmb, cfg, progress, ch); err != nil {
		return nil, err
	}
	return ch, appendHistory(ix, ch)
}

// planSync chunks passages into a new document and chunk list as a fresh build would
// (the target of the sync) and classifies the documents and chunks against ix.
func planSync(ctx context.Context, ix *graphio.Index, passages []ingest.Passage, root string, icfg ingest.Config) (*graphio.Index, *Change, error) {
	target := &graphio.Index{}
	irep := &ingest.Report{}
	if err := ingest.AddPassages(ctx, target, passages, icfg, nil, irep); err != nil {
		return nil, nil, fmt.Errorf("kg: sync: %w", err)
	}
	ch := &Change{Op: "sync", Duplicates: irep.Duplicates}
	byID := make(map[string]int, len(ix.Documents))
	byKey := make(map[string]int, len(ix.Documents))
	for i := range ix.Documents {
		byID[ix.Documents[i].ID] = i
		if k := DocumentKey(&ix.Documents[i], root); k != "" {
			if _, dup := byKey[k]; !dup {
				byKey[k] = i
			}
		}
	}
	used := make([]bool, len(ix.Documents))
	matched := make([]bool, len(target.Documents))
	for i, d := range target.Documents { // same content: kept, whatever its key
		if j, ok := byID[d.ID]; ok && !used[j] {
			used[j], matched[i] = true, true
			ch.Unchanged++
			if ix.Documents[j].Key != d.Key {
				ch.Rekeyed++
			}
		}
	}
	for i, d := range target.Documents { // same key, other content: indexed again
		if matched[i] {
			continue
		}
		if j, ok := byKey[d.Key]; ok && !used[j] {
			used[j] = true
			ch.Changed = append(ch.Changed, docRef(d))
			continue
		}
		ch.Documents = append(ch.Documents, docRef(d))
	}
	for j := range ix.Documents {
		if !used[j] {
			r := docRef(ix.Documents[j])
			r.Key = DocumentKey(&ix.Documents[j], root)
			ch.Deleted = append(ch.Deleted, r)
		}
	}
	have := make(map[string]bool, len(ix.Chunks))
	for _, c := range ix.Chunks {
		have[c.ID] = true
	}
	want := make(map[string]bool, len(target.Chunks))
	for _, c := range target.Chunks {
		want[c.ID] = true
		if !have[c.ID] {
			ch.Chunks++
		}
	}
	for _, c := range ix.Chunks {
		if !want[c.ID] {
			ch.ChunksDeleted++
		}
	}
	return target, ch, nil
}
