package interop

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/graphio/interop/interoptest"
)

func writeSample(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "lightrag")
	require.NoError(t, interoptest.Sample().Write(dir))
	return dir
}

func factByNames(ix *graphio.Index, s, p, o string) *graphio.Fact {
	for i := range ix.Facts {
		f := &ix.Facts[i]
		if ix.Entities[f.Subject].Name == s && f.Predicate == p && ix.Entities[f.Object].Name == o {
			return f
		}
	}
	return nil
}

func chunkIDsOf(ix *graphio.Index, cs []int32) []string {
	var out []string
	for _, c := range cs {
		out = append(out, ix.Chunks[c].ID)
	}
	return out
}

func TestImportLightRAG(t *testing.T) {
	dir := writeSample(t)
	ix, rep, err := ImportLightRAG(dir)
	require.NoError(t, err)
	fx := interoptest.Sample()
	assert.Len(t, ix.Documents, 4)
	require.Len(t, ix.Chunks, 5)
	assert.Len(t, ix.Entities, 7, "PORT KESWYN merges into Port Keswyn")
	assert.Len(t, ix.Facts, 9, "the Port Keswyn–PORT KESWYN relation is a self-loop graphloom cannot hold")
	assert.Equal(t, 10, rep.Counts["relations"])
	assert.Equal(t, 8, rep.Counts["vectors.entities"])
	assert.Len(t, rep.Notices, 3, rep.Notices)

	// Chunks keep their LightRAG ids, content and order.
	for i, c := range ix.Chunks {
		assert.Equal(t, graphio.ChunkID(c.Title, c.Text), c.ID, "graphloom's own chunk id")
		if c.Title != "" {
			assert.Equal(t, interoptest.ChunkID(fx.Chunks[i].Content), c.ID, "LightRAG's md5(content) when a title line splits off")
		}
		assert.Equal(t, fx.Chunks[i].Content, chunkContent(&c))
		assert.Equal(t, interoptest.DocID(fx.Docs[fx.Chunks[i].Doc]), ix.Documents[c.Doc].ID)
	}
	assert.Equal(t, "Port Keswyn", ix.Chunks[0].Title)
	assert.Equal(t, "", ix.Chunks[4].Title, "a chunk without a title line is all text")
	assert.Equal(t, int32(1), ix.Chunks[3].Order)

	pk := slices.IndexFunc(ix.Entities, func(e graphio.Entity) bool { return e.Name == "port keswyn" })
	require.GreaterOrEqual(t, pk, 0)
	assert.Equal(t, []string{"Port Keswyn", "PORT KESWYN"}, ix.Entities[pk].Surface)
	assert.Equal(t, "location", ix.Entities[pk].Type)

	f := factByNames(ix, "tomas brell", "harbourmaster", "port keswyn")
	require.NotNil(t, f)
	assert.Equal(t, float32(1), f.Weight)
	assert.Equal(t, []string{ix.Chunks[0].ID}, chunkIDsOf(ix, f.Chunks))
	f = factByNames(ix, "port keswyn", "location coast", "brackwater coast")
	require.NotNil(t, f)
	assert.Equal(t, float32(2), f.Weight, "LightRAG's weight, not the chunk count")

	// Mentions: source_id of the node and of its relations.
	mentions := map[string][]string{}
	for _, m := range ix.Mentions {
		mentions[ix.Entities[m.Entity].Name] = append(mentions[ix.Entities[m.Entity].Name], ix.Chunks[m.Chunk].ID)
	}
	assert.ElementsMatch(t, []string{ix.Chunks[3].ID, ix.Chunks[4].ID}, mentions["gull rock"])
	assert.Len(t, mentions["port keswyn"], 3, "chunks 0 and 4 from Port Keswyn, 1 from PORT KESWYN")
	assert.Nil(t, ix.Embeddings, "LightRAG's vectors cannot embed graphloom queries")
}

// readAll parses every JSON file of a LightRAG directory and decodes its GraphML, for
// comparing two directories field by field.
func readAll(t *testing.T, dir string) (map[string]any, *Graph) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	out := map[string]any{}
	for _, p := range files {
		var v any
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		require.NoError(t, json.Unmarshal(b, &v), p)
		out[filepath.Base(p)] = v
	}
	f, err := os.Open(filepath.Join(dir, LightRAGGraphFile))
	require.NoError(t, err)
	defer f.Close()
	g, err := DecodeGraphML(f, LightRAGGraphFile)
	require.NoError(t, err)
	return out, g
}

func nodeMap(g *Graph) map[string]map[string]string {
	m := map[string]map[string]string{}
	for _, n := range g.Nodes {
		m[n.ID] = n.Data
	}
	return m
}

func edgeList(g *Graph) []string {
	var out []string
	for _, e := range g.Edges {
		b, _ := json.Marshal(e.Data)
		out = append(out, e.Source+"|"+e.Target+"|"+string(b))
	}
	sort.Strings(out)
	return out
}

func TestLightRAGRoundTrip(t *testing.T) {
	dir := writeSample(t)
	ix1, _, err := ImportLightRAG(dir)
	require.NoError(t, err)
	// Through graphloom's own format, as the CLI does.
	gl := filepath.Join(t.TempDir(), "x.gl")
	require.NoError(t, graphio.WriteFile(gl, ix1))
	stored, err := graphio.ReadFile(gl)
	require.NoError(t, err)

	out := filepath.Join(t.TempDir(), "out")
	rep, err := ExportLightRAG(stored, out)
	require.NoError(t, err)
	assert.Equal(t, 8, rep.Counts["entities"])
	assert.Equal(t, 10, rep.Counts["relations"])
	assert.Empty(t, rep.Dropped, "nothing of an imported index is lost")

	// Every field of every file comes back.
	want, wg := readAll(t, dir)
	got, gg := readAll(t, out)
	for name, v := range want {
		assert.Equal(t, v, got[name], name)
	}
	assert.Equal(t, nodeMap(wg), nodeMap(gg))
	assert.Equal(t, edgeList(wg), edgeList(gg))
	for _, k := range wg.Keys {
		assert.Equal(t, k.Type, gg.KeyType(k.For, k.Name), k.Name)
	}

	// And importing the export gives the same index.
	ix2, _, err := ImportLightRAG(out)
	require.NoError(t, err)
	assert.Equal(t, ix1.Documents, ix2.Documents)
	assert.Equal(t, ix1.Chunks, ix2.Chunks)
	assert.Equal(t, ix1.Entities, ix2.Entities)
	assert.Equal(t, ix1.Mentions, ix2.Mentions)
	assert.Equal(t, ix1.Facts, ix2.Facts)
	var s1, s2 lightragSidecar
	require.NoError(t, decodeSidecar(ix1.Blobs[lightragBlob], &s1))
	require.NoError(t, decodeSidecar(ix2.Blobs[lightragBlob], &s2))
	s1.NodeKeys, s2.NodeKeys = nil, nil // key ids are renumbered, types are checked above
	assert.Equal(t, s1, s2)
}

func TestLightRAGExportAugmented(t *testing.T) {
	ix, _, err := ImportLightRAG(writeSample(t))
	require.NoError(t, err)
	run := "aug-20261201T000000-abcd"
	ix.Runs = append(ix.Runs, graphio.Run{ID: run, Kind: "augment", Created: "2026-12-01T00:00:00Z"})
	b := graphio.NewBuilder(ix, run)
	brell, _ := b.EntityIndex("tomas brell")
	gull, _ := b.EntityIndex("gull rock")
	// A cross-chunk fact between existing entities, citing two chunks…
	_, isNew, err := b.AddFactIDs(brell, "owned ship wrecked on", gull, []int32{3, 4})
	require.NoError(t, err)
	require.True(t, isNew)
	b.AddMention(brell, 4)
	// …one merged into an existing relation, and one with a new entity.
	gannet, _ := b.EntityIndex("gannet")
	_, _, err = b.AddFactIDs(gannet, "sank near", gull, []int32{4})
	require.NoError(t, err)
	_, _, err = b.AddFact("Harbour Ledger", "records", "Tomas Brell", 0)
	require.NoError(t, err)

	out := filepath.Join(t.TempDir(), "out")
	rep, err := ExportLightRAG(ix, out)
	require.NoError(t, err)
	_, g := readAll(t, out)
	nodes := nodeMap(g)
	fx := interoptest.Sample()
	c := func(i int) string { return interoptest.ChunkID(fx.Chunks[i].Content) } // LightRAG's keys
	assert.Equal(t, strings.Join([]string{c(0), c(2), c(3), c(4)}, SEP), nodes["Tomas Brell"]["source_id"], "the run's mention extends source_id")
	require.Contains(t, nodes, "Harbour Ledger")
	assert.Contains(t, nodes["Harbour Ledger"]["description"], run)
	assert.Equal(t, "UNKNOWN", nodes["Harbour Ledger"]["entity_type"])
	var found, merged bool
	for _, e := range g.Edges {
		switch {
		case e.Source == "Tomas Brell" && e.Target == "Gull Rock":
			found = true
			assert.Equal(t, c(3)+SEP+c(4), e.Data["source_id"])
			assert.Contains(t, e.Data["description"], run)
			assert.Contains(t, e.Data["description"], "augmented")
			assert.Equal(t, "owned ship wrecked on", e.Data["keywords"])
			assert.Equal(t, "2", e.Data["weight"])
		case e.Source == "Gannet" && e.Target == "Gull Rock":
			merged = true
			assert.Equal(t, "2", e.Data["weight"], "1 + the augmented fact's 1")
			assert.Equal(t, "wrecked on,sank near", e.Data["keywords"])
			assert.True(t, strings.HasPrefix(e.Data["description"], "The Gannet was wrecked on Gull Rock in 1790."+SEP), e.Data["description"])
		}
	}
	assert.True(t, found)
	assert.True(t, merged)
	assert.Equal(t, 1, rep.Dropped["run records (run ids are in the descriptions)"])
	assert.Equal(t, 1, rep.Dropped["vdb_entities vectors for records graphloom added (no vector from LightRAG's embedder; LightRAG re-embeds on its next insert of them)"])
	assert.Equal(t, 2, rep.Dropped["vdb_relationships vectors for records graphloom added (no vector from LightRAG's embedder; LightRAG re-embeds on its next insert of them)"])
	kv, _ := readAll(t, out)
	rc := kv["kv_store_relation_chunks.json"].(map[string]any)
	assert.Equal(t, []any{c(3), c(4)}, rc["Gull Rock"+SEP+"Tomas Brell"].(map[string]any)["chunk_ids"])

	// Importing the export keeps the augmented relation and its provenance.
	ix2, _, err := ImportLightRAG(out)
	require.NoError(t, err)
	f := factByNames(ix2, "tomas brell", "owned ship wrecked on", "gull rock")
	require.NotNil(t, f)
	assert.Equal(t, []string{ix.Chunks[3].ID, ix.Chunks[4].ID}, chunkIDsOf(ix2, f.Chunks))
}

// nativeIndex builds a small graphloom index with embeddings, a synonym edge, a
// hyperedge and an augmentation run.
func nativeIndex(t testing.TB) *graphio.Index {
	t.Helper()
	ix := &graphio.Index{Meta: graphio.Meta{Created: "2026-12-01T00:00:00Z", Embedder: "test"}}
	b := graphio.NewBuilder(ix, "")
	texts := []string{"Alder Vane was born in Corran Bay.", "Alder Vane founded Dunmore Hall.", "Dunmore Hall is in Ostrid Ford."}
	for i, tx := range texts {
		d, _ := b.AddDocument(fmt.Sprintf("P%d", i), tx, fmt.Sprintf("c.json#%d", i))
		b.AddChunk(d, 0, fmt.Sprintf("P%d", i), tx, 8)
	}
	must := func(_ int32, _ bool, err error) { require.NoError(t, err) }
	must(b.AddFact("Alder Vane", "born in", "Corran Bay", 0))
	must(b.AddFact("Alder Vane", "founded", "Dunmore Hall", 1))
	must(b.AddFact("Dunmore Hall", "is in", "Ostrid Ford", 2))
	must(b.AddFact("Dunmore Hall", "founded by", "Alder Vane", 1))
	ix.Entities[0].Type = "PERSON"
	b.AddHyperedge("Alder Vane founded Dunmore Hall.", []int32{0, 2}, 1, 0.9)
	b.AddSynonym(1, 3, 0.85)
	run := "aug-1"
	ix.Runs = []graphio.Run{{ID: run, Kind: "augment", Created: "2026-12-01T01:00:00Z"}}
	ra := graphio.NewBuilder(ix, run)
	s, _ := ra.EntityIndex("alder vane")
	o, _ := ra.EntityIndex("ostrid ford")
	must(ra.AddFactIDs(s, "built hall in", o, []int32{1, 2}))
	ra.AddMention(o, 1)
	ix.Embeddings = map[graphio.NodeKind]*graphio.Embedding{}
	for k, n := range map[graphio.NodeKind]int{graphio.KindEntity: len(ix.Entities), graphio.KindChunk: len(ix.Chunks),
		graphio.KindFact: len(ix.Facts), graphio.KindHyperedge: len(ix.Hyperedges)} {
		m := &graphio.Embedding{Dim: 4}
		for i := 0; i < n; i++ {
			v := []float32{float32(i + 1), float32(k), 1, 0}
			m.Data = append(m.Data, normalized(v)...)
		}
		ix.Embeddings[k] = m
	}
	require.NoError(t, ix.Validate())
	return ix
}

func TestLightRAGExportNative(t *testing.T) {
	ix := nativeIndex(t)
	out := filepath.Join(t.TempDir(), "out")
	rep, err := ExportLightRAG(ix, out)
	require.NoError(t, err)
	assert.Equal(t, 1, rep.Dropped["synonym edges"])
	assert.Equal(t, 1, rep.Dropped["hyperedges"])
	assert.Equal(t, len(ix.Entities), rep.Counts["vectors.entities"])
	assert.Equal(t, 4, rep.Counts["relations"], "founded and founded by merge into one undirected relation")
	assert.Equal(t, 3, rep.Counts["vectors.chunks"])

	back, _, err := ImportLightRAG(out)
	require.NoError(t, err)
	assert.Len(t, back.Entities, len(ix.Entities))
	assert.Len(t, back.Chunks, 3)
	for i, c := range back.Chunks {
		assert.Equal(t, ix.Chunks[i].Content(), chunkContent(&c))
		assert.Equal(t, ix.Chunks[i].ID, c.ID, "graphloom's chunk ids are kept")
	}
	f := factByNames(back, "alder vane", "built hall in", "ostrid ford")
	require.NotNil(t, f)
	assert.Equal(t, []string{ix.Chunks[1].ID, ix.Chunks[2].ID}, chunkIDsOf(back, f.Chunks))
	var sc lightragSidecar
	require.NoError(t, decodeSidecar(back.Blobs[lightragBlob], &sc))
	for _, e := range sc.Edges {
		if e.Source == "Alder Vane" && e.Target == "Ostrid Ford" {
			assert.Contains(t, e.Data["description"], "aug-1")
		}
	}
	// Vectors: graphloom's rows, normalised, in the matrix; float16 copies agree.
	v := sc.VDB["chunks"]
	require.NotNil(t, v)
	assert.Equal(t, 4, v.Dim)
	var rec struct {
		Vector string `json:"vector"`
	}
	require.NoError(t, json.Unmarshal(v.Data[0], &rec))
	h, err := decodeFloat16Vector(rec.Vector)
	require.NoError(t, err)
	assert.InDeltaSlice(t, ix.Embeddings[graphio.KindChunk].Row(0), h, 1e-3)
}

// TestFloat16 holds LightRAG's vector codec to hand-derived float16 bit patterns:
// round to nearest with ties to even (numpy's astype), subnormals, overflow to ±Inf,
// signed zeros, infinities and the canonical NaN, in both directions.
func TestFloat16(t *testing.T) {
	f32 := math.Float32frombits
	encodeCases := []struct {
		f float32
		h uint16
	}{
		{0, 0x0000}, {f32(0x80000000), 0x8000}, {1, 0x3c00}, {-2, 0xc000},
		{0.33333334, 0x3555},
		{1 + 1.0/2048, 0x3c00}, // a tie: to even (1)
		{1 + 3.0/2048, 0x3c02}, // a tie: to even (1 + 2⁻⁹)
		{65504, 0x7bff},        // the largest half
		{65520, 0x7c00},        // a tie between 65504 and 2¹⁶: to even, Inf
		{1e6, 0x7c00}, {-1e6, 0xfc00},
		{6.1035156e-05, 0x0400}, // 2⁻¹⁴, the smallest normal
		{3.0517578e-05, 0x0200}, // 2⁻¹⁵, subnormal
		{5.9604645e-08, 0x0001}, // 2⁻²⁴, the smallest subnormal
		{2.9802322e-08, 0x0000}, // 2⁻²⁵: a tie to even, 0
		{8.940697e-08, 0x0002},  // 3·2⁻²⁵: a tie to even, 2·2⁻²⁴
		{1e-10, 0x0000}, {-1e-10, 0x8000},
		{float32(math.Inf(1)), 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{f32(0x7fc00000), 0x7e00}, // the canonical NaN
	}
	var in []float32
	for _, tc := range encodeCases {
		in = append(in, tc.f)
	}
	raw := unpackFloat16(t, encodeFloat16Vector(in))
	require.Len(t, raw, len(encodeCases))
	for i, tc := range encodeCases {
		assert.Equal(t, tc.h, raw[i], "%v (%#08x)", tc.f, math.Float32bits(tc.f))
	}

	decodeCases := []struct {
		h uint16
		f uint32 // float32 bits
	}{
		{0x0000, 0}, {0x8000, 0x80000000}, {0x3c00, math.Float32bits(1)}, {0xc000, math.Float32bits(-2)},
		{0x3555, math.Float32bits(0.333251953125)}, {0x7bff, math.Float32bits(65504)},
		{0x0400, math.Float32bits(6.1035156e-05)},
		{0x0001, math.Float32bits(5.9604645e-08)}, {0x8001, math.Float32bits(-5.9604645e-08)},
		{0x03ff, math.Float32bits(1023 * 5.9604645e-08)}, // the largest subnormal
		{0x7c00, 0x7f800000}, {0xfc00, 0xff800000}, {0x7e00, 0x7fc00000},
	}
	var hs []uint16
	for _, tc := range decodeCases {
		hs = append(hs, tc.h)
	}
	got, err := decodeFloat16Vector(packFloat16(hs))
	require.NoError(t, err)
	require.Len(t, got, len(decodeCases))
	for i, tc := range decodeCases {
		assert.Equal(t, tc.f, math.Float32bits(got[i]), "%#04x", tc.h)
	}
	// A NaN with another payload stays a NaN (its payload bits are the library's).
	got, err = decodeFloat16Vector(packFloat16(unpackFloat16(t, encodeFloat16Vector([]float32{f32(0x7f800001), f32(0xffc12345)}))))
	require.NoError(t, err)
	assert.True(t, math.IsNaN(float64(got[0])) && math.IsNaN(float64(got[1])), "%v", got)

	v := []float32{0.5, -0.25, 0.125, 3}
	got, err = decodeFloat16Vector(encodeFloat16Vector(v))
	require.NoError(t, err)
	assert.Equal(t, v, got)
}

// packFloat16 and unpackFloat16 write and read LightRAG's vector format (base64 of
// zlib of little-endian float16) with the standard library, independently of the codec.
func packFloat16(hs []uint16) string {
	var raw []byte
	for _, h := range hs {
		raw = binary.LittleEndian.AppendUint16(raw, h)
	}
	var b bytes.Buffer
	zw := zlib.NewWriter(&b)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	return base64.StdEncoding.EncodeToString(b.Bytes())
}

func unpackFloat16(t *testing.T, s string) []uint16 {
	t.Helper()
	z, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	zr, err := zlib.NewReader(bytes.NewReader(z))
	require.NoError(t, err)
	raw, err := io.ReadAll(zr)
	require.NoError(t, err)
	require.Zero(t, len(raw)%2)
	out := make([]uint16, len(raw)/2)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return out
}

func TestLightRAGBadInput(t *testing.T) {
	for _, tc := range []struct {
		name, file, content, want string
	}{
		{"truncated graphml", LightRAGGraphFile, "<graphml><graph><node id=\"a\">", LightRAGGraphFile},
		{"bad weight", LightRAGGraphFile, `<graphml><key id="w" for="edge" attr.name="weight" attr.type="double"/><graph edgedefault="undirected"><node id="A"/><node id="B"/><edge source="A" target="B"><data key="w">heavy</data></edge></graph></graphml>`, `edge 0 (A → B): weight "heavy"`},
		{"unknown node", LightRAGGraphFile, `<graphml><graph><node id="A"/><edge source="A" target="Z"/></graph></graphml>`, `unknown node "Z"`},
		{"bad chunk record", "kv_store_text_chunks.json", `{"chunk-1": {"tokens": "many"}}`, `kv_store_text_chunks.json: record "chunk-1"`},
		{"not json", "kv_store_full_docs.json", `{"doc-1": {`, "kv_store_full_docs.json"},
		{"short matrix", "vdb_chunks.json", `{"embedding_dim": 4, "data": [{"__id__": "c"}], "matrix": ""}`, "vdb_chunks.json: matrix holds 0 bytes"},
		{"bad vector", "vdb_entities.json", `{"embedding_dim": 1, "data": [{"__id__": "e", "vector": "AAAA"}], "matrix": "AAAAAA=="}`, `vdb_entities.json: data record 0 ("e"): vector: not zlib`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeSample(t)
			require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644))
			_, _, err := ImportLightRAG(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, _, err := ImportLightRAG(t.TempDir())
	require.ErrorContains(t, err, "no kv_store_text_chunks.json")
}
