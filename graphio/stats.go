package graphio

import (
	"encoding/json"
	"sort"
)

// Stats summarises an index.
type Stats struct {
	Documents       int            `json:"documents"`
	Duplicates      int            `json:"duplicate_passages"` // extra copies merged into documents
	Chunks          int            `json:"chunks"`
	Tokens          int64          `json:"tokens"`
	Entities        int            `json:"entities"`
	Mentions        int            `json:"mentions"`
	Facts           int            `json:"facts"`
	AugmentedFacts  int            `json:"augmented_facts"`
	Hyperedges      int            `json:"hyperedges"`
	SynonymEdges    int            `json:"synonym_edges"`
	Runs            int            `json:"runs"`
	Embeddings      map[string]int `json:"embedding_dims,omitempty"` // node kind → dimension
	Embedder        string         `json:"embedder,omitempty"`
	Extractor       string         `json:"extractor,omitempty"`
	Tokenizer       string         `json:"tokenizer,omitempty"`
	AvgEntityDegree float64        `json:"avg_entity_degree"` // fact + synonym edges per entity
	// IsolatedHyperedges is the fraction of hyperedges anchored to no entity, the
	// structural-quality metric of HyperGraphRAG+EXT++ (seed 002, Fig. 4).
	IsolatedHyperedges float64 `json:"isolated_hyperedge_fraction"`
	// EntitiesPerHyperedge averages the entities of hyperedges that have any (seed 002).
	EntitiesPerHyperedge float64      `json:"entities_per_connected_hyperedge"`
	TopEntities          []EntityStat `json:"top_entities"`
	// EntityFilter is the entity-hygiene setting of the build; FilteredEntities counts
	// the names it kept out per rule, and FilteredShare is their share of all names
	// extracted (kept + filtered). TopEntities lists entities after filtering.
	EntityFilter     string         `json:"entity_filter,omitempty"`
	FilteredEntities map[string]int `json:"filtered_entities,omitempty"`
	FilteredShare    float64        `json:"filtered_entity_share"`
	// RunList describes the runs (augmentations) recorded in the index, oldest first.
	RunList   []RunStat `json:"run_list"`
	SizeBytes int64     `json:"size_bytes,omitempty"` // on disk, when known
}

// RunStat describes one recorded run.
type RunStat struct {
	ID       string `json:"id"`
	Kind     string `json:"kind"`
	Created  string `json:"created"`
	Selector string `json:"selector,omitempty"` // from the run's summary, when it has one
	Facts    int    `json:"facts_added"`        // facts of the run still in the index
	Entities int    `json:"entities_added"`
}

// EntityStat is an entity with its degree in the knowledge graph.
type EntityStat struct {
	Name   string `json:"name"`
	Degree int    `json:"degree"` // fact edges + synonym edges + chunks it occurs in
}

// ComputeStats returns the statistics of ix, listing the top most connected entities
// (none when top ≤ 0).
func ComputeStats(ix *Index, top int) Stats {
	s := Stats{
		Documents: len(ix.Documents), Chunks: len(ix.Chunks), Entities: len(ix.Entities),
		Mentions: len(ix.Mentions), Facts: len(ix.Facts), Hyperedges: len(ix.Hyperedges),
		SynonymEdges: len(ix.Synonyms), Runs: len(ix.Runs),
		Embedder: ix.Meta.Embedder, Extractor: ix.Meta.Extractor, Tokenizer: ix.Meta.Tokenizer,
	}
	for _, d := range ix.Documents {
		s.Duplicates += d.Count - 1
	}
	s.EntityFilter, s.FilteredEntities = ix.Meta.EntityFilter, ix.Meta.FilteredEntities
	filtered := 0
	for _, n := range ix.Meta.FilteredEntities {
		filtered += n
	}
	if filtered+len(ix.Entities) > 0 {
		s.FilteredShare = float64(filtered) / float64(filtered+len(ix.Entities))
	}
	for _, c := range ix.Chunks {
		s.Tokens += int64(c.Tokens)
	}
	byRun := map[string]*RunStat{}
	s.RunList = make([]RunStat, len(ix.Runs))
	for i, r := range ix.Runs {
		var sum struct {
			Selector string `json:"selector"`
		}
		_ = json.Unmarshal([]byte(r.Summary), &sum) // best effort: older runs may lack it
		s.RunList[i] = RunStat{ID: r.ID, Kind: r.Kind, Created: r.Created, Selector: sum.Selector}
		byRun[r.ID] = &s.RunList[i]
	}
	for _, f := range ix.Facts {
		if f.Run != "" {
			s.AugmentedFacts++
			if r := byRun[f.Run]; r != nil {
				r.Facts++
			}
		}
	}
	for _, e := range ix.Entities {
		if r := byRun[e.Run]; r != nil && e.Run != "" {
			r.Entities++
		}
	}
	if len(ix.Embeddings) > 0 {
		s.Embeddings = map[string]int{}
		for k, e := range ix.Embeddings {
			s.Embeddings[k.String()] = e.Dim
		}
	}
	deg := make([]int, len(ix.Entities))
	graphDeg := 0
	for _, e := range ix.TypedEdgesOf(EntityGraph) {
		deg[e.U]++
		deg[e.V]++
		graphDeg += 2
	}
	if len(ix.Entities) > 0 {
		s.AvgEntityDegree = float64(graphDeg) / float64(len(ix.Entities))
	}
	for e, cs := range ix.EntityChunks() {
		deg[e] += len(cs)
	}
	connected, members := 0, 0
	for _, h := range ix.Hyperedges {
		if len(h.Entities) > 0 {
			connected++
			members += len(h.Entities)
		}
	}
	if len(ix.Hyperedges) > 0 {
		s.IsolatedHyperedges = 1 - float64(connected)/float64(len(ix.Hyperedges))
	}
	if connected > 0 {
		s.EntitiesPerHyperedge = float64(members) / float64(connected)
	}
	s.TopEntities = []EntityStat{}
	order := make([]int, len(deg))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return deg[order[a]] > deg[order[b]] })
	for _, i := range order[:min(max(top, 0), len(order))] {
		s.TopEntities = append(s.TopEntities, EntityStat{Name: ix.Entities[i].Name, Degree: deg[i]})
	}
	return s
}

// TypedEdgesOf is TypedEdges without the node space.
func (ix *Index) TypedEdgesOf(set EdgeSet) []TypedEdge {
	e, _ := ix.TypedEdges(set)
	return e
}
