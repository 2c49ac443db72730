// Package synth generates synthetic question–answer pairs from a knowledge graph:
// SelfGraphRAG's SynthGen (seed 001). Two kinds of items:
//
//   - hop: a path v_a –r1→ v_b –r2→ v_c of PathLength facts (two by default) between
//     ends no fact links (unless Config.AdjacentEnds); the question needs every edge
//     of the path and its answer is the path's last node;
//
//   - sum: a node v_p with at least SumNeighbours distinct in-neighbours, of whose
//     incoming facts SumNeighbours are sampled; the question is about v_p and
//     answerable only from those facts.
//
//   - hyper (Config.Hyperedges): the same summary on the hypergraph of HyperGraphRAG's
//     n-ary facts (seed 002): a node v in at least SumNeighbours hyperedges, of which
//     SumNeighbours are sampled, each with one other member named; the question names
//     those members and asks for v.
//
// The evidence of an item is its facts verbalised ([Verbalize]) or its hyperedges'
// texts ([VerbalizeHyperedges]), and the LLM
// generator (seed 001's M(Verbalize(·); π_Q)) writes the pair from that evidence
// alone. The template generator writes them from relation templates, offline; it is
// graphloom's own, not the paper's method, and is marked so in every item.
package synth

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/graphloom/graphloom/graphio"
)

// Item types.
const (
	TypeHop = "hop"
	TypeSum = "sum"
	// TypeHyper is the in-neighbour summary on the hypergraph (Config.Hyperedges).
	TypeHyper = "hyper"
)

// Config holds SynthGen's settings.
type Config struct {
	// PathLength is the number of facts of a hop path; the paper bounds it at 2
	// ("a hyperparameter of SynthGen rather than a fixed constraint").
	PathLength int
	// AdjacentEnds keeps the hop paths whose ends a fact links, either way: questions a
	// single fact answers. The paper asks for "multi-hop questions that require
	// reasoning across non-adjacent nodes", so the default, false, leaves them out.
	// Calibration keeps them (calibrate.Config.Synth).
	AdjacentEnds bool
	// SumNeighbours is the number of distinct in-neighbours sampled for a sum item;
	// the paper fixes it at 3.
	SumNeighbours int
	// MaxHop and MaxSum cap the items of each type (0: no cap). When the enumeration
	// yields more, a seeded uniform sample is kept. Defaults 500 and 500: a deviation,
	// SelfGraphRAG keeps every item it enumerates.
	MaxHop, MaxSum int
	// Seed drives every sample (paths, neighbourhoods, neighbour draws).
	Seed uint64
	// MaxTokens bounds each generated answer (LLM generator); default 256.
	MaxTokens int
	// Hyperedges asks about the index's hyperedges instead of its facts: one kind of
	// item, hyper, the in-neighbour summary where a hyperedge has neither direction
	// nor relation phrase, so a node's neighbours are its co-members and the
	// evidence of each is the hyperedge's text (up to MaxSum nodes, SumNeighbours
	// hyperedges each). It reaches corpora whose extraction gives far more n-ary
	// facts than binary ones (the Go specification's index: 42 facts, 326
	// hyperedges). Not in seed 001, which generates from triples: graphloom's
	// extension to seed 002's hypergraph. Default off.
	Hyperedges bool
}

// DefaultConfig returns the paper's settings.
func DefaultConfig() Config {
	return Config{PathLength: 2, SumNeighbours: 3, MaxHop: 500, MaxSum: 500, Seed: 1, MaxTokens: 256}
}

// Candidate is a subgraph to ask about: its facts in edge-insertion order (or, for
// hyper, its hyperedges and the member named from each) and the node the answer
// names.
type Candidate struct {
	Type       string
	Facts      []int32 // fact indices; for hop in path order
	Hyperedges []int32 // hyper: hyperedge indices, ascending
	Named      []int32 // hyper: per hyperedge, the member the question names
	Answer     int32   // entity the question asks for: the path's end, or the summarised node
}

// Item is one synthetic question–answer pair with its provenance.
type Item struct {
	ID        string      `json:"id"`
	Type      string      `json:"type"`
	Question  string      `json:"question"`
	Answer    string      `json:"answer"`
	Generator string      `json:"generator"`
	Nodes     []string    `json:"nodes"`              // entities of the subgraph, in order of appearance
	Edges     [][3]string `json:"edges,omitempty"`    // its facts as [subject, predicate, object]
	FactIDs   []string    `json:"fact_ids,omitempty"` // the index's fact ids
	// HyperedgeIDs are a hyper item's hyperedges (its evidence, in place of facts).
	HyperedgeIDs []string `json:"hyperedge_ids,omitempty"`
	Chunks       []string `json:"chunk_ids"`
	Evidence     string   `json:"evidence"` // Verbalize(edges), or VerbalizeHyperedges
}

// Verbalize is seed 001's linearisation of a subgraph: each fact (v_i, r, v_j)
// becomes the sentence "v_i [r] v_j", concatenated in edge-insertion order (the
// order given). It is deterministic.
func Verbalize(ix *graphio.Index, facts []int32) string {
	lines := make([]string, len(facts))
	for i, f := range facts {
		x := &ix.Facts[f]
		lines[i] = ix.Entities[x.Subject].Name + " [" + x.Predicate + "] " + ix.Entities[x.Object].Name
	}
	return strings.Join(lines, "\n")
}

// VerbalizeHyperedges is the evidence of a hyper item: its hyperedges' texts (each
// the verbatim knowledge segment the extractor kept), one per line, in the order
// given.
func VerbalizeHyperedges(ix *graphio.Index, hs []int32) string {
	lines := make([]string, len(hs))
	for i, h := range hs {
		lines[i] = strings.Join(strings.Fields(ix.Hyperedges[h].Text), " ")
	}
	return strings.Join(lines, "\n")
}

// evidence is a candidate's evidence text.
func evidence(ix *graphio.Index, c Candidate) string {
	if c.Type == TypeHyper {
		return VerbalizeHyperedges(ix, c.Hyperedges)
	}
	return Verbalize(ix, c.Facts)
}

// HopPaths enumerates the directed paths of cfg.PathLength facts with distinct nodes
// (v_a –r1→ v_b –r2→ … → v_z) whose ends are not adjacent — no fact links v_a and v_z
// either way, so the question needs the path and not one fact (seed 001: "multi-hop
// questions that require reasoning across non-adjacent nodes"; cfg.AdjacentEnds keeps
// them too) — in index order, and keeps a seeded sample of cfg.MaxHop when there are
// more. total is the number of such paths, before the sample.
func HopPaths(ix *graphio.Index, cfg Config) (paths []Candidate, total int) {
	n := max(1, cfg.PathLength)
	out := outgoing(ix)
	var adjacent map[[2]int32]bool // the pairs a fact links, either way
	if n > 1 && !cfg.AdjacentEnds {
		adjacent = make(map[[2]int32]bool, len(ix.Facts))
		for _, f := range ix.Facts {
			adjacent[[2]int32{min(f.Subject, f.Object), max(f.Subject, f.Object)}] = true
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x68_6f_70))
	// Reservoir sampling keeps memory bounded however many paths there are.
	keep := func(c Candidate) {
		total++
		if cfg.MaxHop <= 0 || len(paths) < cfg.MaxHop {
			paths = append(paths, c)
			return
		}
		if j := rng.IntN(total); j < cfg.MaxHop {
			paths[j] = c
		}
	}
	var walk func(path []int32, visited []int32)
	walk = func(path []int32, visited []int32) {
		if len(path) == n {
			start, end := ix.Facts[path[0]].Subject, ix.Facts[path[len(path)-1]].Object
			if !adjacent[[2]int32{min(start, end), max(start, end)}] {
				keep(Candidate{Type: TypeHop, Facts: slices.Clone(path), Answer: end})
			}
			return
		}
		at := ix.Facts[path[len(path)-1]].Object
		for _, f := range out[at] {
			o := ix.Facts[f].Object
			if slices.Contains(visited, o) {
				continue
			}
			walk(append(path, f), append(visited, o))
		}
	}
	for f := range ix.Facts {
		x := &ix.Facts[f]
		if x.Subject == x.Object {
			continue
		}
		walk([]int32{int32(f)}, []int32{x.Subject, x.Object})
	}
	sortCandidates(paths)
	return paths, total
}

// SumNeighbourhoods finds the nodes with at least cfg.SumNeighbours distinct
// in-neighbours and, for each, samples that many of them and one incoming fact from
// each (seeded); a seeded sample of cfg.MaxSum nodes is kept when there are more.
func SumNeighbourhoods(ix *graphio.Index, cfg Config) (out []Candidate, total int) {
	k := max(1, cfg.SumNeighbours)
	in := map[int32]map[int32][]int32{} // node → in-neighbour → facts
	for f := range ix.Facts {
		x := &ix.Facts[f]
		if x.Subject == x.Object {
			continue
		}
		if in[x.Object] == nil {
			in[x.Object] = map[int32][]int32{}
		}
		in[x.Object][x.Subject] = append(in[x.Object][x.Subject], int32(f))
	}
	var nodes []int32
	for v, nb := range in {
		if len(nb) >= k {
			nodes = append(nodes, v)
		}
	}
	slices.Sort(nodes)
	total = len(nodes)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x73_75_6d))
	if cfg.MaxSum > 0 && len(nodes) > cfg.MaxSum {
		rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		nodes = nodes[:cfg.MaxSum]
		slices.Sort(nodes)
	}
	for _, v := range nodes {
		srcs := make([]int32, 0, len(in[v]))
		for s := range in[v] {
			srcs = append(srcs, s)
		}
		slices.Sort(srcs)
		rng.Shuffle(len(srcs), func(i, j int) { srcs[i], srcs[j] = srcs[j], srcs[i] })
		var facts []int32
		for _, s := range srcs[:k] {
			fs := in[v][s]
			facts = append(facts, fs[rng.IntN(len(fs))])
		}
		slices.Sort(facts) // edge-insertion order
		out = append(out, Candidate{Type: TypeSum, Facts: facts, Answer: v})
	}
	return out, total
}

// HyperNeighbourhoods finds the nodes that can be asked about from cfg.SumNeighbours
// of their hyperedges (those some chunk states), each hyperedge naming a different
// other member, and draws for each such node the hyperedges and the members named
// (seeded); a seeded sample of cfg.MaxSum of the nodes is kept when there are more.
// total is the number of such nodes. Whether a node can be asked is a matching of
// its hyperedges to distinct co-members (matchMembers), so a node is never passed
// over for the order its hyperedges were drawn in.
func HyperNeighbourhoods(ix *graphio.Index, cfg Config) (out []Candidate, total int) {
	k := max(1, cfg.SumNeighbours)
	of := map[int32][]int32{}                       // node → its hyperedges with another member
	distinct := make([][]int32, len(ix.Hyperedges)) // each one's members, once each, in its order
	for h := range ix.Hyperedges {
		x := &ix.Hyperedges[h]
		if len(x.Chunks) == 0 {
			continue
		}
		var members []int32
		for _, e := range x.Entities {
			if !slices.Contains(members, e) {
				members = append(members, e)
			}
		}
		if len(members) < 2 {
			continue
		}
		distinct[h] = members
		for _, e := range members {
			of[e] = append(of[e], int32(h))
		}
	}
	var nodes []int32
	for v, hs := range of {
		if len(hs) >= k {
			nodes = append(nodes, v)
		}
	}
	slices.Sort(nodes)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x68_79_70))
	for _, v := range nodes {
		hs := slices.Clone(of[v])
		rng.Shuffle(len(hs), func(i, j int) { hs[i], hs[j] = hs[j], hs[i] })
		members := make([][]int32, len(hs))
		for i, h := range hs {
			for _, e := range distinct[h] {
				if e != v {
					members[i] = append(members[i], e)
				}
			}
			rng.Shuffle(len(members[i]), func(a, b int) { members[i][a], members[i][b] = members[i][b], members[i][a] })
		}
		named := matchMembers(members, k)
		if named == nil {
			continue
		}
		var picks [][2]int32 // hyperedge, member named: in index order
		for i, u := range named {
			if u >= 0 {
				picks = append(picks, [2]int32{hs[i], u})
			}
		}
		slices.SortFunc(picks, func(a, b [2]int32) int { return cmp.Compare(a[0], b[0]) })
		c := Candidate{Type: TypeHyper, Answer: v}
		for _, p := range picks {
			c.Hyperedges, c.Named = append(c.Hyperedges, p[0]), append(c.Named, p[1])
		}
		out = append(out, c)
	}
	total = len(out)
	if cfg.MaxSum > 0 && len(out) > cfg.MaxSum {
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		out = out[:cfg.MaxSum]
		slices.SortFunc(out, func(a, b Candidate) int { return cmp.Compare(a.Answer, b.Answer) })
	}
	return out, total
}

// matchMembers matches k of the hyperedges to distinct members, members[i] being
// hyperedge i's candidates in order of preference: Kuhn's augmenting paths, the
// hyperedges tried in order, stopped at k matched. It returns, per hyperedge, the
// member matched or -1, or nil when no k of them can name distinct members.
func matchMembers(members [][]int32, k int) []int32 {
	owner := map[int32]int{} // member → the hyperedge it is matched to
	named := make([]int32, len(members))
	for i := range named {
		named[i] = -1
	}
	var augment func(i int, seen map[int32]bool) bool
	augment = func(i int, seen map[int32]bool) bool {
		for _, u := range members[i] {
			if seen[u] {
				continue
			}
			seen[u] = true
			if j, taken := owner[u]; !taken || augment(j, seen) {
				owner[u], named[i] = i, u
				return true
			}
		}
		return false
	}
	matched := 0
	for i := range members {
		if augment(i, map[int32]bool{}) {
			if matched++; matched == k {
				return named
			}
		}
	}
	return nil
}

func outgoing(ix *graphio.Index) [][]int32 {
	out := make([][]int32, len(ix.Entities))
	for f := range ix.Facts {
		x := &ix.Facts[f]
		out[x.Subject] = append(out[x.Subject], int32(f))
	}
	return out
}

func sortCandidates(cs []Candidate) {
	slices.SortFunc(cs, func(a, b Candidate) int { return slices.Compare(a.Facts, b.Facts) })
}

// item fills an Item's provenance from a candidate.
func item(ix *graphio.Index, c Candidate, n int) Item {
	it := Item{ID: fmt.Sprintf("synth-%s-%d", c.Type, n), Type: c.Type, Evidence: evidence(ix, c)}
	seenNode := map[int32]bool{}
	seenChunk := map[int32]bool{}
	node := func(e int32) {
		if !seenNode[e] {
			seenNode[e] = true
			it.Nodes = append(it.Nodes, ix.Entities[e].Name)
		}
	}
	var chunks []int32
	addChunks := func(cs []int32) {
		for _, ch := range cs {
			if !seenChunk[ch] {
				seenChunk[ch] = true
				chunks = append(chunks, ch)
			}
		}
	}
	for _, f := range c.Facts {
		x := &ix.Facts[f]
		node(x.Subject)
		node(x.Object)
		it.Edges = append(it.Edges, [3]string{ix.Entities[x.Subject].Name, x.Predicate, ix.Entities[x.Object].Name})
		it.FactIDs = append(it.FactIDs, x.ID)
		addChunks(x.Chunks)
	}
	for _, h := range c.Hyperedges {
		x := &ix.Hyperedges[h]
		for _, e := range x.Entities {
			node(e)
		}
		it.HyperedgeIDs = append(it.HyperedgeIDs, x.ID)
		addChunks(x.Chunks)
	}
	slices.Sort(chunks)
	for _, ch := range chunks {
		it.Chunks = append(it.Chunks, ix.Chunks[ch].ID)
	}
	return it
}
