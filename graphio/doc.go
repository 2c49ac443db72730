// Package graphio holds graphloom's index: the data model of a GraphRAG knowledge
// graph (documents, chunks, entities, facts, hyperedges, synonym edges and embedding
// matrices), builders that merge duplicates, derived typed edges and CSR adjacency
// views for the graph kernels, and the on-disk index format.
//
// # Identity
//
// Ids follow HippoRAG 2 so indices interoperate with its stores: a chunk is
// "chunk-"+md5(title+"\n"+text), an entity "entity-"+md5(normalised name), a fact
// "fact-"+md5 of the Python tuple repr of its normalised triple. Records refer to each
// other by int32 position (an entity's index in Index.Entities, and so on), which is
// what the kernels consume; ids are what users and other frameworks see.
//
// # Provenance
//
// Every entity, mention, fact, hyperedge and synonym edge carries the id of the run
// that added it: empty for records made by extraction, an augmentation run id for
// records an augmentation merged in. Augmentation only appends records, so removing one
// run's records restores the index exactly (see [Index.RemoveRun]).
//
// # On-disk format v3
//
// A file starts with the 8-byte magic "GLOOMIDX" and a little-endian uint32 format
// version, followed by sections. Each section has a header (name, codec, stored and
// raw lengths, CRC32C of the header and payload) and a payload; a final "end" section
// records the number of sections before it, so a truncated file is always detected.
// In version 3 every section is stored raw (version 2 files' records are
// zstd-compressed, and read as before). Embedding matrices ("embr.<kind>", version 3) are
// stored uncompressed in their in-memory layout, aligned to their file offsets, so a
// reader uses them in place: from a memory-mapped file (ReadOptions.Map) a query
// process touches page-cache pages only, and a streaming reader neither inflates nor
// decodes them. Version 2 files hold zstd-compressed matrices, dense ("emb.<kind>") or
// in compressed rows ("embs.<kind>"); version 1 files only dense ones. Both are read
// as before. Optional sections a reader does not know are skipped: documents' keys
// ("dockeys", see [Document.Key]) are one, written only when some document has a key,
// so files of every version without it still read (with empty keys); the other
// documents that produced a chunk ("chunkalso", see [Chunk.Also]) another. Files are
// written atomically (temporary file, fsync, rename) and read as
// a stream, one section at a time, or mapped. See [Write], [Read] and [ReadFileWith].
package graphio
