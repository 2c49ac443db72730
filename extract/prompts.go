package extract

// All prompts of the LLM extractors live here. The contracts follow HippoRAG 2's
// OpenIE (NER → {"named_entities": [...]}, then triples conditioned on those entities →
// {"triples": [[s, p, o], ...]}) and HyperGraphRAG's EXT++ self-consistency extraction
// (three internal passes merged by union). The one-shot examples are written for
// graphloom; no prompt text is copied from those projects.

const nerSystem = `Your task is to extract named entities from the given paragraph.
Respond with a JSON object with one key, "named_entities": a list of the entity names, written as they appear in the text.
Include people, places, organisations, ships, buildings, events, works, dates and numbers that name something. Do not include pronouns.`

const nerExampleInput = `Paragraph:
Ilse Moravec
Ilse Moravec (born 1931 in Brno) was a Czech glass engraver. In 1958 she joined the Lindner Workshop in Jablonec, where she met the designer Karel Sova. Her bowl "River Hours" is held by the Museum of Decorative Arts in Prague.`

const nerExampleOutput = `{"named_entities": ["Ilse Moravec", "1931", "Brno", "Czech", "1958", "Lindner Workshop", "Jablonec", "Karel Sova", "River Hours", "Museum of Decorative Arts", "Prague"]}`

const tripleSystem = `Your task is to construct an RDF graph (a list of triples) from the given paragraph and its list of named entities.
Respond with a JSON object with one key, "triples": a list of [subject, predicate, object] lists.
Each triple should contain at least one, preferably two, of the named entities in the list. Resolve pronouns to the specific names they refer to, so that every triple is understandable on its own.`

const tripleExampleInput = `Paragraph:
Ilse Moravec
Ilse Moravec (born 1931 in Brno) was a Czech glass engraver. In 1958 she joined the Lindner Workshop in Jablonec, where she met the designer Karel Sova. Her bowl "River Hours" is held by the Museum of Decorative Arts in Prague.

{"named_entities": ["Ilse Moravec", "1931", "Brno", "Czech", "1958", "Lindner Workshop", "Jablonec", "Karel Sova", "River Hours", "Museum of Decorative Arts", "Prague"]}`

const tripleExampleOutput = `{"triples": [
  ["Ilse Moravec", "born in", "1931"],
  ["Ilse Moravec", "born in", "Brno"],
  ["Ilse Moravec", "nationality", "Czech"],
  ["Ilse Moravec", "profession", "glass engraver"],
  ["Ilse Moravec", "joined in 1958", "Lindner Workshop"],
  ["Lindner Workshop", "located in", "Jablonec"],
  ["Ilse Moravec", "met", "Karel Sova"],
  ["Karel Sova", "profession", "designer"],
  ["Ilse Moravec", "created", "River Hours"],
  ["River Hours", "held by", "Museum of Decorative Arts"],
  ["Museum of Decorative Arts", "located in", "Prague"]
]}`

// hyperSystem is the EXT++ prompt: self-consistency over three internal passes,
// verbatim knowledge segments, coreference-resolved entity names, importance scores.
const hyperSystem = `You extract n-ary facts ("hyper-relations") from a passage for a knowledge hypergraph.
A hyper-relation is a knowledge segment: one to three consecutive sentences copied VERBATIM from the passage that state one complete fact, with every entity that takes part in it.

Procedure (do it silently):
1. Internally perform the extraction of knowledge segments and their entities three times, independently.
2. Merge the three results by union: keep every segment found in any pass; merge near-identical segments, keeping the most complete one and its highest score; merge entities that refer to the same thing under one name; where passes disagree, keep what the text supports.
3. Output only the merged result.

Rules:
- "text" must be copied exactly from the passage (1–3 whole consecutive sentences); never paraphrase.
- List the segment's entities in order of appearance. Resolve pronouns and descriptions ("she", "the brig", "the town") to the full name they refer to, taken from the passage.
- "score" rates how complete and important the fact is, from 0 (trivial) to 10 (essential).
- Every segment must have at least one entity.

Respond with a JSON object only:
{"hyperedges": [{"text": "...", "entities": [{"name": "...", "type": "..."}], "score": 0-10}]}`

const hyperExampleInput = `Passage:
Ilse Moravec
Ilse Moravec (born 1931 in Brno) was a Czech glass engraver. In 1958 she joined the Lindner Workshop in Jablonec, where she met the designer Karel Sova. Her bowl "River Hours" is held by the Museum of Decorative Arts in Prague.`

const hyperExampleOutput = `{"hyperedges": [
  {"text": "Ilse Moravec (born 1931 in Brno) was a Czech glass engraver.", "entities": [{"name": "Ilse Moravec", "type": "person"}, {"name": "1931", "type": "date"}, {"name": "Brno", "type": "place"}, {"name": "Czech", "type": "nationality"}], "score": 9},
  {"text": "In 1958 she joined the Lindner Workshop in Jablonec, where she met the designer Karel Sova.", "entities": [{"name": "1958", "type": "date"}, {"name": "Ilse Moravec", "type": "person"}, {"name": "Lindner Workshop", "type": "organisation"}, {"name": "Jablonec", "type": "place"}, {"name": "Karel Sova", "type": "person"}], "score": 8},
  {"text": "Her bowl \"River Hours\" is held by the Museum of Decorative Arts in Prague.", "entities": [{"name": "Ilse Moravec", "type": "person"}, {"name": "River Hours", "type": "work"}, {"name": "Museum of Decorative Arts", "type": "organisation"}, {"name": "Prague", "type": "place"}], "score": 7}
]}`
