package augment

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/llm"
)

// The completion prompt follows the reference's structure (anchors §D.7) in words
// written for graphloom: system rules, a one-shot example, then the subgraph's hint,
// root, entities, known triples and evidence passages with their chunk ids.

const completionSystem = `You complete a local knowledge graph of RDF triples from evidence passages.
The subgraph you are given was flagged by a graph neural network as likely incomplete: relations, entities, or both may be missing.

Silently read the evidence and work out which facts the passages support but the known triples lack. Prefer facts that join information across passages (one passage names a person, another says what that person did), and temporal, conditional, causal, prerequisite, role, ownership, part–whole and sequence relations; grounded summary triples are welcome.

Rules:
- Do not repeat or rephrase a known triple.
- No vague predicates such as "related to", "associated with" or "connected to".
- Every triple cites at least one chunk_id, copied exactly from the evidence; a fact that combines passages cites all of them.
- Use the existing entity names where they apply; introduce a new entity only if a passage names it explicitly.
- Return JSON only, with the key "new_triples"%s.`

const hyperRule = ` and, for n-ary facts, the key "new_hyperedges"`

const completionExampleUser = `Subgraph incompleteness hint:
{"gnn_missing_score": 0.91, "possible_missingness_types": ["missing_relations", "missing_entities", "missing_relations_and_entities"], "instruction": "Recover facts the evidence supports that the known triples lack."}

Subgraph root entity:
ilse moravec

Existing entities in the sampled subgraph:
["ilse moravec", "lindner workshop", "jablonec", "karel sova", "river hours"]

Known triples in this sampled subgraph:
[["ilse moravec", "joined", "lindner workshop"], ["lindner workshop", "located in", "jablonec"], ["karel sova", "designed", "river hours"]]

Evidence passages:
[{"chunk_id": "chunk-ex1", "passage": "Ilse Moravec joined the Lindner Workshop in 1958. The engraver known there as Madame Brno trained every apprentice."},
 {"chunk_id": "chunk-ex2", "passage": "Madame Brno engraved the bowl River Hours after a drawing by Karel Sova."},
 {"chunk_id": "chunk-ex3", "passage": "The Lindner Workshop closed in 1971, when its glassworks in Jablonec burned down."}]`

const completionExampleAssistant = `{"new_triples": [
  {"triple": ["ilse moravec", "known as", "madame brno"], "chunk_ids": ["chunk-ex1"]},
  {"triple": ["ilse moravec", "engraved", "river hours"], "chunk_ids": ["chunk-ex1", "chunk-ex2"]},
  {"triple": ["river hours", "based on drawing by", "karel sova"], "chunk_ids": ["chunk-ex2"]},
  {"triple": ["ilse moravec", "joined in", "1958"], "chunk_ids": ["chunk-ex1"]},
  {"triple": ["lindner workshop", "closed because of", "fire in jablonec"], "chunk_ids": ["chunk-ex3"]}
]}`

const strategy = `Strategy (do it silently):
1. List what each passage says about the subgraph's entities.
2. Match names across passages, including aliases and descriptions of the same entity.
3. Combine statements from different passages into facts none of them states alone.
4. Drop anything already among the known triples or not supported by the passages.
5. Cite every passage each fact relies on.`

type hintJSON struct {
	Score       float64  `json:"gnn_missing_score"`
	Types       []string `json:"possible_missingness_types"`
	Instruction string   `json:"instruction"`
}

type evidenceJSON struct {
	ChunkID string `json:"chunk_id"`
	Passage string `json:"passage"`
}

// messages builds the completion request for one selected subgraph.
func messages(ix *graphio.Index, s *Selected, cfg Config, hyper bool) []llm.Message {
	mj := func(v any) string {
		b, _ := json.Marshal(v)
		return string(b)
	}
	hint := hintJSON{Score: round3(s.Score), Types: []string{"missing_relations", "missing_entities", "missing_relations_and_entities"},
		Instruction: "Recover facts the evidence supports that the known triples lack."}
	var ev []evidenceJSON
	for _, c := range s.chunkIx {
		text := ix.Chunks[c].Content()
		if r := []rune(text); len(r) > cfg.MaxChunkChars {
			text = string(r[:cfg.MaxChunkChars])
		}
		ev = append(ev, evidenceJSON{ChunkID: ix.Chunks[c].ID, Passage: text})
	}
	known := s.Known
	if known == nil {
		known = [][]string{}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Subgraph incompleteness hint:\n%s\n\n", mj(hint))
	fmt.Fprintf(&b, "Subgraph root entity:\n%s\n\n", s.Root)
	fmt.Fprintf(&b, "Existing entities in the sampled subgraph:\n%s\n\n", mj(s.Entities))
	fmt.Fprintf(&b, "Known triples in this sampled subgraph:\n%s\n\n", mj(known))
	fmt.Fprintf(&b, "Evidence passages:\n%s\n\n", mj(ev))
	b.WriteString(strategy)
	b.WriteString("\n\nOutput schema:\n{\"new_triples\": [{\"triple\": [\"subject\", \"predicate\", \"object\"], \"chunk_ids\": [\"chunk-id\"]}]")
	rule := ""
	if hyper {
		rule = hyperRule
		b.WriteString(",\n \"new_hyperedges\": [{\"text\": \"one sentence stating an n-ary fact\", \"entities\": [\"entity\", \"...\"], \"chunk_ids\": [\"chunk-id\"]}]")
	}
	b.WriteString("}")
	return []llm.Message{
		llm.System(fmt.Sprintf(completionSystem, rule)),
		llm.User(completionExampleUser),
		llm.Assistant(completionExampleAssistant),
		llm.User(b.String()),
	}
}

func round3(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
