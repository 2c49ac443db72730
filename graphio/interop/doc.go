// Package interop reads and writes the on-disk indices of other GraphRAG frameworks
// and GraphML, so an index built with LightRAG can be imported into graphloom,
// augmented and handed back, and any graphloom index can be opened in Gephi, NetworkX
// or Neo4j (APOC).
//
// # Fidelity
//
// graphloom's data model (package graphio) holds documents, chunks, entities, facts,
// mentions, hyperedges and synonym edges. A foreign format has fields graphloom does
// not model (LightRAG's entity descriptions, file paths, timestamps, vectors made by
// another embedder, …). An importer keeps those records verbatim in a sidecar blob of
// the index, keyed by the foreign ids, so an export to the same format writes them
// back unchanged: import → export → import keeps every field the format defines.
// Records that a graphloom run added (see graphio.Run) are written from the model,
// with their provenance (cited chunk ids, run id, augmented origin) in the format's
// own fields.
//
// What a format cannot hold is counted in the export's [Report] (Dropped), never lost
// silently. Malformed input is an error naming the file and the record.
package interop

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Report says what an import or export read, wrote and could not carry.
type Report struct {
	Format string `json:"format"`
	// Counts holds the number of records read or written, by kind.
	Counts map[string]int `json:"counts"`
	// Dropped counts what the target format cannot hold, by field or record kind.
	Dropped map[string]int `json:"dropped,omitempty"`
	// Notices are things the user should know (merged names, missing vectors, …).
	Notices []string `json:"notices,omitempty"`
}

func newReport(format string) *Report {
	return &Report{Format: format, Counts: map[string]int{}, Dropped: map[string]int{}}
}

func (r *Report) drop(what string, n int) {
	if n > 0 {
		r.Dropped[what] += n
	}
}

func (r *Report) notice(format string, args ...any) {
	r.Notices = append(r.Notices, fmt.Sprintf(format, args...))
}

// String renders the report on a few lines.
func (r *Report) String() string {
	var b strings.Builder
	list := func(m map[string]int) string {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintf(&b, "%s: %s", r.Format, list(r.Counts))
	if len(r.Dropped) > 0 {
		fmt.Fprintf(&b, "\nnot representable in %s (dropped): %s", r.Format, list(r.Dropped))
	}
	for _, n := range r.Notices {
		fmt.Fprintf(&b, "\nnotice: %s", n)
	}
	return b.String()
}

// SEP is LightRAG's GRAPH_FIELD_SEP, joining the elements of list-valued attributes.
const SEP = "<SEP>"

func splitSep(s string) []string {
	if s == "" {
		return nil
	}
	var out []string
	for _, p := range strings.Split(s, SEP) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
