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
// # On-disk format v2
//
// A file starts with the 8-byte magic "GLOOMIDX" and a little-endian uint32 format
// version, followed by sections. Version 2 added embedding matrices stored in
// compressed rows ("embs.<kind>", see [Embedding]); version 1 files, which hold only
// dense matrices, are read as before. Each section has a header (name, flags, compressed
// and uncompressed lengths, CRC32C of the compressed payload) and a zstd-compressed
// payload; a final "end" section records the number of sections before it, so a
// truncated file is always detected. Files are written atomically (temporary file,
// fsync, rename) and read as a stream, one section at a time. See [Write] and [Read].
package graphio
