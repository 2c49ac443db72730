package kg

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/graphloom/graphloom/graphio"
)

// GenerationMeta is the checkpoint metadata key under which a model trained on an
// index records the index's Generation.
const GenerationMeta = "index_generation"

// Generation fingerprints the state of ix a model trained on it saw: when it was
// built, its record counts (documents, chunks, entities, mentions, facts, hyperedges,
// synonym edges), its augmentation runs and its history of add, delete and sync
// operations (with the documents each touched, since Change.DocsDigest was kept).
// Any of those operations or an augmentation gives another generation; reading and
// writing the file does not. The form is "g<operations>-<12 hex digits>".
func Generation(ix *graphio.Index) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n%d %d %d %d %d %d %d\n", ix.Meta.Created, len(ix.Documents), len(ix.Chunks), len(ix.Entities),
		len(ix.Mentions), len(ix.Facts), len(ix.Hyperedges), len(ix.Synonyms))
	for _, r := range ix.Runs {
		fmt.Fprintf(h, "run %s\n", r.ID)
	}
	ops := 0
	if hist, err := History(ix); err == nil {
		ops = len(hist)
		for _, c := range hist {
			fmt.Fprintf(h, "%s %s %d %d %d %d\n", c.Op, c.Created, len(c.Documents), len(c.Changed), len(c.Deleted), c.Chunks)
			if c.DocsDigest != "" { // which documents (history recorded before it was kept: as it was)
				fmt.Fprintf(h, "docs %s\n", c.DocsDigest)
			}
		}
	} else {
		h.Write(ix.Blobs[historyBlob])
	}
	return fmt.Sprintf("g%d-%s", ops, hex.EncodeToString(h.Sum(nil)[:6]))
}

// StaleWarning returns a warning when what (a model, named for the user) recorded
// generation seen and ix is of another generation: documents were added, deleted or
// synced since it was trained (or it was trained on another index). A model that
// recorded no generation (saved before generations were kept) gets no warning.
func StaleWarning(ix *graphio.Index, seen, what string) string {
	if seen == "" {
		return ""
	}
	if now := Generation(ix); now != seen {
		return fmt.Sprintf("warning: %s is stale: it was trained on index generation %s and the index is now %s (documents added, deleted or synced, an augmentation run, or another index); train it again", what, seen, now)
	}
	return ""
}

// docsDigest returns the hex SHA-256 (12 digits) of the ids of c's documents added,
// changed and deleted, in order.
func docsDigest(c Change) string {
	h := sha256.New()
	for i, refs := range [][]DocRef{c.Documents, c.Changed, c.Deleted} {
		fmt.Fprintf(h, "%d:", i)
		for _, d := range refs {
			fmt.Fprintf(h, "%s,", d.ID)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}
