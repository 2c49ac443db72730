// Package extract turns chunk text into the raw material of a knowledge graph:
// entities, (subject, predicate, object) triples and n-ary hyperedges.
//
// Three extractors implement [Extractor]:
//   - [Rule], offline: prose v2 part-of-speech tags and named entities plus sentence
//     patterns (subject–verb–object, copula, prepositional attachment, apposition,
//     alias introduction), one hyperedge per sentence naming two or more entities;
//   - [LLM], HippoRAG 2's two-step OpenIE contract (NER, then triples conditioned on it);
//   - [LLM] with hyperedges on, which adds the EXT++ self-consistency hyperedge call of
//     HyperGraphRAG (seed 002).
//
// All prompts live in prompts.go.
package extract

import "context"

// Chunk is the input of an extractor: one passage of text with its id and title.
type Chunk struct {
	ID, Title, Text string
}

// Entity is an entity mention as extracted.
type Entity struct {
	Text string // surface form
	Type string // PERSON, GPE, DATE, … or ""
}

// Triple is an extracted (subject, predicate, object) statement.
type Triple struct {
	Subject, Predicate, Object string
	// Sources lists other texts of the same extraction call whose content the triple
	// depends on (a pronoun resolved to a name found there); see Rule.ExtractDocs.
	Sources []int `json:",omitempty"`
}

// Hyperedge is an n-ary fact: a verbatim text segment and its entities in order.
type Hyperedge struct {
	Text     string
	Entities []string
	Score    float32 // importance; the rule extractor uses the number of entities
}

// Result is what an extractor found in one chunk.
type Result struct {
	Entities   []Entity
	Triples    []Triple
	Hyperedges []Hyperedge
	// Aliases pairs a name with another name the text introduces for the same thing
	// ("X, known as Y"); the offline augmentation uses them to join chunks.
	Aliases [][2]string
	// Dropped counts extracted items rejected by validation (a triple without exactly
	// three parts, a duplicate, a hyperedge whose text is not in the chunk).
	Dropped int
	// Failed is set when the chunk could not be processed (e.g. an unparseable LLM
	// answer); the result is then empty and the failure is counted, not fatal.
	Failed string
	// Unanswered, with Failed, says the LLM gave no answer for a reason a rerun may
	// not meet (timeouts, 5xx, 429, a server gone, an interrupted run): a rerun asks
	// again. Without it the failure is an answer that could not be read (which the
	// answer cache gives a rerun again) or a request the server refused (a 4xx, which
	// it refuses again).
	Unanswered bool `json:",omitempty"`
}

// Progress is called as chunks are done, with the number done and the total.
type Progress func(done, total int)

// An Extractor extracts entities, triples and hyperedges from chunks. Results are in
// the order of chunks.
type Extractor interface {
	// Name identifies the extractor and its model, e.g. "rule" or "llm:qwen3-32b".
	Name() string
	Extract(ctx context.Context, chunks []Chunk, progress Progress) ([]Result, error)
}
