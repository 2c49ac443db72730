// Package eval measures graphloom's retrievers the way the HippoRAG 2, LightRAG and
// HyperGraphRAG papers do, on the benchmarks they use.
//
// # Datasets
//
// [ReadDataset] reads a question file — a JSON array, JSONL, or a JSON object keyed by
// question id (PubMedQA) — and recognises each record's format from its fields:
//
//   - HippoRAG: question, answer (string or list), paragraphs[{title, text, is_supporting}];
//     a paragraph without is_supporting counts as gold, as in HippoRAG's main.py;
//   - MuSiQue: paragraphs[{title, paragraph_text, is_supporting}], answer_aliases;
//   - HotpotQA and 2WikiMultihopQA: context [[title, [sentences]]] and supporting_facts
//     [[title, sentence index]] (also the Hugging Face column layout);
//   - MoreHopQA: the same context, gold titles from question_decomposition[].paragraph_support_title;
//   - LiteraryQA: answer and answer_aliases, no gold passages;
//   - yes/no/maybe classification (PubMedQA): final_decision, or label ∈ {yes, no, maybe};
//   - multiple choice: options (a list, a {letter: text} object, ARC's {label, text}, or
//     fields A–E, option_a…, answer_a…, opa…) and the correct letter (or 0-based index,
//     MedMCQA's 1-based cop, or the option text);
//   - gold evidence as text spans (HyperGraphRAG's benchmark): golden_answers and
//     context (a list of strings).
//
// Every record becomes an [Example]: its answers (answer ∪ aliases, as HippoRAG's
// get_gold_answers), its gold passages or spans, and its kind (open, yesno, choice).
// A record that cannot be used is skipped and listed with its line number; a file in
// which no record is recognisable is an error naming the fields that were found.
//
// HotpotQA-style paragraphs are lists of sentences. HippoRAG joins them with "" for
// HotpotQA (whose sentences carry their leading space) and " " for 2WikiMultihopQA;
// since the format is recognised from content, not from a dataset name, [JoinSentences]
// inserts one space between two sentences exactly when neither side has whitespace at
// the seam — the same text in both cases, and sensible for MoreHopQA, which mixes the two.
//
// # Metrics
//
// Passage recall is HippoRAG's: Recall@k = |top-k ∩ gold| / |gold| with passages
// identified by "title\ntext", averaged over the questions that have gold evidence.
// Because an index may hold a passage as several chunks titled "<title> [chunk k]", or a
// corpus may render a paragraph's text differently from the question file, a [Matcher]
// also accepts, in order of preference: a chunk whose base title is the gold title and
// whose whitespace-normalised text is contained in the gold text (or contains it); and,
// only for a gold passage whose text the index does not hold anywhere (or that has no
// text), a passage with the gold title. Each retrieved passage satisfies at most one
// gold passage, so two gold passages sharing a title need two retrieved passages. Span
// gold is found by containment, in either direction, after lower-casing and collapsing
// whitespace.
//
// Answers are scored with SQuAD's normalisation (lower-case, ASCII punctuation removed,
// a/an/the dropped, whitespace collapsed): exact match and token precision, recall and F1,
// each the maximum over the gold answers. Yes/no/maybe answers give accuracy and per-class
// and macro precision, recall and F1; multiple-choice answers give accuracy on the letter
// parsed from the answer. With an LLM, a [Judge] scores correctness and completeness from
// 0 to 10 against the reference (the protocol of HyperGraphRAG+PPR, seed 002).
//
// [Evaluate] runs retrievers over a dataset and [ScoreRun] scores an existing run file;
// both return a [Report], which writes report.md, report.json and Recall@k charts.
// [ExtractionScore] measures an index's extracted triples against gold triples.
package eval
