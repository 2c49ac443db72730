// Package ingest reads a corpus (a JSON array of {"title","text"} as HippoRAG ships
// corpora, JSONL, a GFM-RAG {title: text} object, or a directory of .txt/.md files),
// skips unusable inputs with a report, merges duplicate passages, splits long passages
// into token-bounded chunks on sentence boundaries, and returns the documents and chunks
// of a new index.
package ingest
