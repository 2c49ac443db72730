package augment

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/graphloom/graphloom/graphio"
)

// Rejection reasons counted in the report.
const (
	RejectMalformed    = "malformed"          // not exactly three parts
	RejectEmptyPart    = "empty_part"         // a part normalises to the empty string
	RejectSelfLoop     = "subject_is_object"  // subject = object
	RejectKnown        = "repeats_known"      // among the prompt's known triples
	RejectInIndex      = "already_in_index"   // the index holds the fact already
	RejectHallucinate  = "invalid_chunk_id"   // cites a chunk id the prompt did not give
	RejectUncited      = "uncited"            // cites nothing, and the prompt had several chunks
	RejectHyperText    = "hyperedge_no_text"  // hyperedge without text
	RejectHyperEnts    = "hyperedge_entities" // hyperedge with fewer than two entities
	RejectHyperInIndex = "hyperedge_in_index" // the index holds a hyperedge with this text already
	// Grounding checks, beyond the paper's citation check: a completion must be
	// supported by the text it cites, not only cite valid ids.
	RejectPronoun    = "pronoun_endpoint"             // subject or object is a pronoun ("she", "it")
	RejectNewEntity  = "new_entity_not_in_evidence"   // an entity the index lacks that no evidence passage names verbatim
	RejectUngrounded = "endpoint_not_in_cited_chunks" // subject or object (or a known alias) absent from the cited chunks
)

// pronouns are endpoints that name nothing on their own.
var pronouns = map[string]bool{}

func init() {
	for _, p := range strings.Fields(`i me my mine we us our ours you your yours he him his she her hers it its they them
		their theirs this that these those who whom whose which what someone something somebody anyone anything one
		himself herself itself themselves there here`) {
		pronouns[p] = true
	}
}

// grounder checks that endpoints occur in chunk texts, at word boundaries after
// NormalizeName, directly or through a known alias (an entity linked by a synonym edge).
type grounder struct {
	ix      *graphio.Index
	text    map[int32]string    // normalised " content " per chunk, built on demand
	aliases map[string][]string // normalised entity name → normalised synonym names
	byName  map[string]int32
}

func newGrounder(ix *graphio.Index) *grounder {
	g := &grounder{ix: ix, text: map[int32]string{}, aliases: map[string][]string{}, byName: make(map[string]int32, len(ix.Entities))}
	for i, e := range ix.Entities {
		g.byName[graphio.NormalizeName(e.Name)] = int32(i)
	}
	for _, s := range ix.Synonyms {
		a, b := graphio.NormalizeName(ix.Entities[s.A].Name), graphio.NormalizeName(ix.Entities[s.B].Name)
		g.aliases[a] = append(g.aliases[a], b)
		g.aliases[b] = append(g.aliases[b], a)
	}
	return g
}

func (g *grounder) chunkText(c int32) string {
	t, ok := g.text[c]
	if !ok {
		t = " " + graphio.NormalizeName(g.ix.Chunks[c].Content()) + " "
		g.text[c] = t
	}
	return t
}

// occurs reports whether the normalised name occurs in one of the chunks.
func (g *grounder) occurs(name string, chunks []int32) bool {
	for _, c := range chunks {
		if strings.Contains(g.chunkText(c), " "+name+" ") {
			return true
		}
	}
	return false
}

// check returns the rejection reason of an endpoint (normalised), or "".
func (g *grounder) check(name string, cited, evidence []int32) string {
	if pronouns[name] {
		return RejectPronoun
	}
	if g.occurs(name, cited) {
		return ""
	}
	if _, known := g.byName[name]; !known {
		if !g.occurs(name, evidence) {
			return RejectNewEntity
		}
		return RejectUngrounded
	}
	for _, a := range g.aliases[name] {
		if g.occurs(a, cited) {
			return ""
		}
	}
	return RejectUngrounded
}

// Accepted is a validated new fact.
type Accepted struct {
	Triple  []string `json:"triple"` // as proposed (surface forms)
	Chunks  []string `json:"chunk_ids"`
	Score   float64  `json:"score"` // missingness score of the subgraph (max over subgraphs)
	norm    [3]string
	chunkIx []int32
}

// AcceptedHyper is a validated new hyperedge.
type AcceptedHyper struct {
	Text     string   `json:"text"`
	Entities []string `json:"entities"`
	Chunks   []string `json:"chunk_ids"`
	Score    float64  `json:"score"`
	chunkIx  []int32
}

var chunkIDPattern = regexp.MustCompile(`chunk-[A-Za-z0-9_-]+`)

// resolveCitations maps cited ids to the prompt's chunks: exact match, or after
// stripping quotes and spaces and lower-casing, or the first chunk-… token inside the
// string (anchors §D.8). It reports false if any cited id is not one of the prompt's.
func resolveCitations(cited []string, prompt []string, promptIx []int32) ([]int32, string, bool) {
	byID := map[string]int32{}
	for i, id := range prompt {
		byID[strings.ToLower(id)] = promptIx[i]
	}
	var out []int32
	for _, c := range cited {
		key := strings.ToLower(strings.Trim(strings.TrimSpace(c), `"'`+"`"))
		ix, ok := byID[key]
		if !ok {
			if m := chunkIDPattern.FindString(key); m != "" {
				ix, ok = byID[m]
			}
		}
		if !ok {
			return nil, c, false
		}
		if !slices.Contains(out, ix) {
			out = append(out, ix)
		}
	}
	slices.Sort(out)
	return out, "", true
}

// MaxRejectedListed bounds Report.Rejected (the counts are never bounded).
const MaxRejectedListed = 1000

// Rejected is one proposal validation refused: which subgraph's completion, which of
// its proposals, the field at fault and its value.
type Rejected struct {
	Root     string   `json:"root"`     // the subgraph's root entity
	Proposal int      `json:"proposal"` // position among the completion's triples (or hyperedges), from 1
	Kind     string   `json:"kind"`     // "triple" or "hyperedge"
	Triple   []string `json:"triple,omitempty"`
	Text     string   `json:"text,omitempty"`
	Field    string   `json:"field"`           // "triple", "chunk_ids", "entities" or "text"
	Value    string   `json:"value,omitempty"` // what is at fault: an invented chunk id, an ungrounded name, …
	Reason   string   `json:"reason"`          // the rejection kind (Reject…)
}

// validate checks every proposal, counts rejections by reason, and merges accepted
// facts proposed for several subgraphs (union of chunks, highest score). Beyond the
// paper's checks (well-formed, new, citing the prompt's chunks) it checks grounding:
// no pronoun endpoints, every subject and object (or a known alias) named in the
// cited chunks, and entities the index lacks named verbatim in the evidence.
func validate(ix *graphio.Index, sel []Selected, comps []Completion, rej map[string]int, listed *[]Rejected) ([]Accepted, []AcceptedHyper) {
	inIndex := make(map[string]bool, len(ix.Facts))
	for _, f := range ix.Facts {
		inIndex[f.ID] = true
	}
	hyperInIndex := make(map[string]bool, len(ix.Hyperedges))
	for _, h := range ix.Hyperedges {
		hyperInIndex[h.ID] = true
	}
	ground := newGrounder(ix)
	var facts []Accepted
	byKey := map[string]int{}
	var hypers []AcceptedHyper
	hyperKey := map[string]int{}
	for i, c := range comps {
		s := &sel[i]
		known := map[[3]string]bool{}
		for _, k := range s.Known {
			known[[3]string{graphio.NormalizeName(k[0]), graphio.NormalizeName(k[1]), graphio.NormalizeName(k[2])}] = true
		}
		// cite resolves a proposal's citations; a refusal names the field's value at
		// fault (the first cited id not in the prompt).
		cite := func(ids []string) ([]int32, string, string) {
			if len(ids) == 0 {
				if len(s.chunkIx) == 1 {
					return []int32{s.chunkIx[0]}, "", ""
				}
				return nil, RejectUncited, ""
			}
			got, bad, ok := resolveCitations(ids, s.Chunks, s.chunkIx)
			if !ok {
				return nil, RejectHallucinate, bad
			}
			return got, "", ""
		}
		refuse := func(r Rejected) {
			rej[r.Reason]++
			if listed != nil && len(*listed) < MaxRejectedListed {
				r.Root = s.Root
				*listed = append(*listed, r)
			}
		}
		for k, p := range c.Triples {
			triple := func(reason, field, value string) Rejected {
				return Rejected{Proposal: k + 1, Kind: "triple", Triple: p.Triple, Field: field, Value: value, Reason: reason}
			}
			if len(p.Triple) != 3 {
				refuse(triple(RejectMalformed, "triple", fmt.Sprintf("%d parts", len(p.Triple))))
				continue
			}
			n := [3]string{graphio.NormalizeName(p.Triple[0]), graphio.NormalizeName(p.Triple[1]), graphio.NormalizeName(p.Triple[2])}
			switch id := graphio.FactID(n[0], n[1], n[2]); {
			case n[0] == "" || n[1] == "" || n[2] == "":
				refuse(triple(RejectEmptyPart, "triple", ""))
				continue
			case n[0] == n[2]:
				refuse(triple(RejectSelfLoop, "triple", ""))
				continue
			case known[n]:
				refuse(triple(RejectKnown, "triple", ""))
				continue
			case inIndex[id]:
				refuse(triple(RejectInIndex, "triple", id))
				continue
			}
			chunks, why, bad := cite(p.ChunkIDs)
			field := "chunk_ids"
			if why == "" {
				field = "triple"
				if why = ground.check(n[0], chunks, s.chunkIx); why == "" {
					why = ground.check(n[2], chunks, s.chunkIx)
					bad = p.Triple[2]
				} else {
					bad = p.Triple[0]
				}
			}
			if why != "" {
				refuse(triple(why, field, bad))
				continue
			}
			key := n[0] + "\x00" + n[1] + "\x00" + n[2]
			if j, ok := byKey[key]; ok {
				a := &facts[j]
				a.Score = max(a.Score, s.Score)
				for _, c := range chunks {
					if !slices.Contains(a.chunkIx, c) {
						a.chunkIx = append(a.chunkIx, c)
					}
				}
				slices.Sort(a.chunkIx)
				a.Chunks = chunkIDs(ix, a.chunkIx)
				continue
			}
			byKey[key] = len(facts)
			facts = append(facts, Accepted{Triple: p.Triple, Score: s.Score, norm: n, chunkIx: chunks, Chunks: chunkIDs(ix, chunks)})
		}
		for k, h := range c.Hyperedges {
			hyper := func(reason, field, value string) Rejected {
				return Rejected{Proposal: k + 1, Kind: "hyperedge", Text: h.Text, Field: field, Value: value, Reason: reason}
			}
			var ents []string
			for _, e := range h.Entities {
				if graphio.NormalizeName(e) != "" && !slices.Contains(ents, e) {
					ents = append(ents, e)
				}
			}
			text := strings.TrimSpace(h.Text)
			switch {
			case text == "":
				refuse(hyper(RejectHyperText, "text", ""))
				continue
			case len(ents) < 2:
				refuse(hyper(RejectHyperEnts, "entities", fmt.Sprintf("%d distinct", len(ents))))
				continue
			case hyperInIndex[graphio.HyperedgeID(text)]:
				// Merging it would change nothing the index holds, but would create
				// the entities it names that the index lacks, members of no hyperedge.
				refuse(hyper(RejectHyperInIndex, "text", graphio.HyperedgeID(text)))
				continue
			}
			chunks, why, bad := cite(h.ChunkIDs)
			field := "chunk_ids"
			for _, e := range ents {
				if why != "" {
					break
				}
				if why = ground.check(graphio.NormalizeName(e), chunks, s.chunkIx); why != "" {
					field, bad = "entities", e
				}
			}
			if why != "" {
				refuse(hyper(why, field, bad))
				continue
			}
			if _, dup := hyperKey[text]; dup {
				continue
			}
			hyperKey[text] = len(hypers)
			hypers = append(hypers, AcceptedHyper{Text: text, Entities: ents, Chunks: chunkIDs(ix, chunks), Score: s.Score, chunkIx: chunks})
		}
	}
	return facts, hypers
}

func chunkIDs(ix *graphio.Index, cs []int32) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = ix.Chunks[c].ID
	}
	return out
}
