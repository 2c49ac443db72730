package interop

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/graphio/interop/interoptest"
)

func readRows[T any](t *testing.T, path string) []T {
	t.Helper()
	rows, err := parquet.ReadFile[T](path)
	require.NoError(t, err)
	return rows
}

func writeGraphRAG(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "output")
	require.NoError(t, interoptest.GraphRAGSample().Write(dir))
	return dir
}

func TestImportGraphRAG(t *testing.T) {
	ix, rep, err := ImportGraphRAG(writeGraphRAG(t))
	require.NoError(t, err)
	assert.Len(t, ix.Documents, 2)
	require.Len(t, ix.Chunks, 3)
	assert.Equal(t, "Tomas Brell", ix.Chunks[1].Title, "a text unit is titled by its document")
	assert.Equal(t, int32(1), ix.Chunks[1].Order)
	assert.Len(t, ix.Entities, 5)
	assert.Equal(t, "PERSON", ix.Entities[1].Type)
	f := factByNames(ix, "gannet", GraphRAGRelation, "gull rock")
	require.NotNil(t, f)
	assert.Equal(t, float32(1.5), f.Weight)
	assert.Equal(t, []int32{2}, f.Chunks)
	assert.Equal(t, 4, rep.Counts["relationships"])
}

func TestGraphRAGRoundTrip(t *testing.T) {
	dir := writeGraphRAG(t)
	ix1, _, err := ImportGraphRAG(dir)
	require.NoError(t, err)
	gl := filepath.Join(t.TempDir(), "x.gl")
	require.NoError(t, graphio.WriteFile(gl, ix1))
	stored, err := graphio.ReadFile(gl)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "out")
	rep, err := ExportGraphRAG(stored, out)
	require.NoError(t, err)
	assert.Empty(t, rep.Dropped)
	g := interoptest.GraphRAGSample()
	assert.Equal(t, g.Documents, readRows[interoptest.GRDocument](t, filepath.Join(out, "documents.parquet")))
	assert.Equal(t, g.TextUnits, readRows[interoptest.GRTextUnit](t, filepath.Join(out, "text_units.parquet")))
	assert.Equal(t, g.Entities, readRows[interoptest.GREntity](t, filepath.Join(out, "entities.parquet")))
	assert.Equal(t, g.Relationships, readRows[interoptest.GRRelationship](t, filepath.Join(out, "relationships.parquet")))
	assert.Equal(t, int64(0), *readRows[interoptest.GREntity](t, filepath.Join(out, "entities.parquet"))[0].HumanReadableID, "human_readable_id 0 is not null")
	a, err := os.ReadFile(filepath.Join(dir, "communities.parquet"))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(out, "communities.parquet"))
	require.NoError(t, err)
	assert.Equal(t, a, b, "communities are kept byte for byte")
	ix2, _, err := ImportGraphRAG(out)
	require.NoError(t, err)
	assert.Equal(t, ix1.Chunks, ix2.Chunks)
	assert.Equal(t, ix1.Entities, ix2.Entities)
	assert.Equal(t, ix1.Facts, ix2.Facts)
	assert.Equal(t, ix1.Mentions, ix2.Mentions)
}

func TestGraphRAGExportAugmented(t *testing.T) {
	ix, _, err := ImportGraphRAG(writeGraphRAG(t))
	require.NoError(t, err)
	ix.Runs = []graphio.Run{{ID: "aug-7", Kind: "augment"}}
	b := graphio.NewBuilder(ix, "aug-7")
	s, _ := b.EntityIndex("tomas brell")
	o, _ := b.EntityIndex("gull rock")
	_, _, err = b.AddFactIDs(s, "owned ship wrecked on", o, []int32{1, 2})
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "out")
	rep, err := ExportGraphRAG(ix, out)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Counts["augmented relationships"])
	assert.Contains(t, strings.Join(rep.Notices, "\n"), "create_communities")
	rels := readRows[interoptest.GRRelationship](t, filepath.Join(out, "relationships.parquet"))
	require.Len(t, rels, 5)
	r := rels[4]
	assert.Equal(t, "TOMAS BRELL", *r.Source)
	assert.Equal(t, "GULL ROCK", *r.Target)
	assert.Contains(t, *r.Description, "aug-7")
	assert.Contains(t, *r.Description, "augmented")
	g := interoptest.GraphRAGSample()
	assert.Equal(t, []string{*g.TextUnits[1].ID, *g.TextUnits[2].ID}, r.TextUnitIDs)
	units := readRows[interoptest.GRTextUnit](t, filepath.Join(out, "text_units.parquet"))
	assert.Contains(t, units[1].RelationshipIDs, *r.ID)
	assert.Contains(t, units[2].RelationshipIDs, *r.ID)
}

func TestGraphRAGExportNative(t *testing.T) {
	ix := nativeIndex(t)
	out := filepath.Join(t.TempDir(), "out")
	_, err := ExportGraphRAG(ix, out)
	require.NoError(t, err)
	back, _, err := ImportGraphRAG(out)
	require.NoError(t, err)
	assert.Len(t, back.Chunks, len(ix.Chunks))
	assert.Len(t, back.Entities, len(ix.Entities))
	assert.Len(t, back.Facts, len(ix.Facts), "one relationship per fact")
	f := factByNames(back, "alder vane", GraphRAGRelation, "ostrid ford")
	require.NotNil(t, f)
	assert.Equal(t, []int32{1, 2}, f.Chunks)
}

func TestGraphRAGBadInput(t *testing.T) {
	dir := writeGraphRAG(t)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "entities.parquet"), []byte("PAR1 garbage PAR1"), 0o644))
	_, _, err := ImportGraphRAG(dir)
	require.ErrorContains(t, err, "entities.parquet: malformed parquet")
	_, _, err = ImportGraphRAG(t.TempDir())
	require.ErrorContains(t, err, "text_units.parquet")
}

// TestImportGraphRAGHugeRowCount: a parquet footer claiming 10¹⁰ rows (a corrupt or
// hostile file of a few kB) is a malformed-file error naming the file, not an
// allocation of terabytes that kills the process.
func TestImportGraphRAGHugeRowCount(t *testing.T) {
	dir := writeGraphRAG(t)
	path := filepath.Join(dir, "entities.parquet")
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	n := len(data)
	require.Equal(t, "PAR1", string(data[n-4:]))
	flen := int(binary.LittleEndian.Uint32(data[n-8 : n-4]))
	start := n - 8 - flen
	var md format.FileMetaData
	require.NoError(t, thrift.Unmarshal(new(thrift.CompactProtocol), data[start:n-8], &md))
	require.Positive(t, md.NumRows)
	md.NumRows = 1e10
	for i := range md.RowGroups {
		md.RowGroups[i].NumRows = 1e10
	}
	footer, err := thrift.Marshal(new(thrift.CompactProtocol), &md)
	require.NoError(t, err)
	out := append(append([]byte{}, data[:start]...), footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	out = append(out, "PAR1"...)
	require.NoError(t, os.WriteFile(path, out, 0o644))

	_, _, err = ImportGraphRAG(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "entities.parquet: malformed parquet")
	assert.Contains(t, err.Error(), "the footer counts 10000000000 rows")
}
