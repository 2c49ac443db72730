package interop

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio"
	"github.com/graphloom/graphloom/graphio/interop/interoptest"
)

func csvRows(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	require.NoError(t, err)
	return rows
}

func TestImportGFMRAGv2(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "harbour")
	g := interoptest.GFMSample()
	require.NoError(t, g.WriteV2(dir))
	ix, rep, err := ImportGFMRAG(dir)
	require.NoError(t, err)
	require.Len(t, ix.Chunks, 3)
	assert.Equal(t, g.Docs[0].DocName(), ix.Chunks[0].ID, "CrossAug's document names are HippoRAG chunk ids, so graphloom's")
	assert.Equal(t, "Port Keswyn", ix.Chunks[0].Title)
	assert.Equal(t, g.Docs[0].Text, ix.Chunks[0].Text)
	assert.Len(t, ix.Facts, 4)
	f := factByNames(ix, "tomas brell", "bought", "gannet")
	require.NotNil(t, f)
	assert.Equal(t, []int32{1}, f.Chunks)
	require.Len(t, ix.Synonyms, 1)
	assert.Contains(t, strings.Join(rep.Notices, "\n"), "1 nodes of other types")
}

func TestGFMRAGRoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "harbour")
	require.NoError(t, interoptest.GFMSample().WriteV2(dir))
	ix1, _, err := ImportGFMRAG(dir)
	require.NoError(t, err)
	gl := filepath.Join(t.TempDir(), "x.gl")
	require.NoError(t, graphio.WriteFile(gl, ix1))
	stored, err := graphio.ReadFile(gl)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "out")
	_, err = ExportGFMRAG(stored, out)
	require.NoError(t, err)
	for _, f := range []string{"nodes.csv", "relations.csv", "edges.csv"} {
		assert.Equal(t, csvRows(t, filepath.Join(dir, gfmStage1, f)), csvRows(t, filepath.Join(out, gfmStage1, f)), f)
	}
	assert.Equal(t, readJSON(t, filepath.Join(dir, gfmDocuments)), readJSON(t, filepath.Join(out, gfmDocuments)))
	ix2, _, err := ImportGFMRAG(out)
	require.NoError(t, err)
	assert.Equal(t, ix1.Chunks, ix2.Chunks)
	assert.Equal(t, ix1.Entities, ix2.Entities)
	assert.Equal(t, ix1.Facts, ix2.Facts)
	assert.Equal(t, ix1.Mentions, ix2.Mentions)
	assert.Equal(t, ix1.Synonyms, ix2.Synonyms)
}

func TestGFMRAGExportAugmented(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "harbour")
	g := interoptest.GFMSample()
	require.NoError(t, g.WriteV2(dir))
	ix, _, err := ImportGFMRAG(dir)
	require.NoError(t, err)
	ix.Runs = []graphio.Run{{ID: "aug-1", Kind: "augment"}}
	b := graphio.NewBuilder(ix, "aug-1")
	_, _, err = b.AddFact("Tomas Brell", "owned ship wrecked on", "Gull Rock", 1)
	require.NoError(t, err)
	s, _ := b.EntityIndex("tomas brell")
	o, _ := b.EntityIndex("gull rock")
	_, _, err = b.AddFactIDs(s, "owned ship wrecked on", o, []int32{1, 2})
	require.NoError(t, err)
	_, _, err = b.AddFact("Old Pilot", "nickname of", "Tomas Brell", 1)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "out")
	rep, err := ExportGFMRAG(ix, out)
	require.NoError(t, err)
	assert.Equal(t, 3, rep.Counts["augmented edges"], "one edge per cited chunk")
	var aug []string
	for _, r := range csvRows(t, filepath.Join(out, gfmStage1, "edges.csv")) {
		if strings.Contains(r[3], "graphloom_augmented") {
			aug = append(aug, r[0]+"|"+r[1]+"|"+r[2]+"|"+r[3])
		}
	}
	sort.Strings(aug)
	assert.Equal(t, sorted([]string{
		`old pilot|nickname of|tomas brell|{"chunk_id": "` + g.Docs[1].DocName() + `", "source": "graphloom_augmented", "run": "aug-1"}`,
		`tomas brell|owned ship wrecked on|gull rock|{"chunk_id": "` + g.Docs[1].DocName() + `", "source": "graphloom_augmented", "run": "aug-1"}`,
		`tomas brell|owned ship wrecked on|gull rock|{"chunk_id": "` + g.Docs[2].DocName() + `", "source": "graphloom_augmented", "run": "aug-1"}`,
	}), aug)
	nodes := csvRows(t, filepath.Join(out, gfmStage1, "nodes.csv"))
	assert.Contains(t, nodes, []string{"old pilot", "entity", `{"run": "aug-1"}`})
	ix2, _, err := ImportGFMRAG(out)
	require.NoError(t, err)
	f := factByNames(ix2, "tomas brell", "owned ship wrecked on", "gull rock")
	require.NotNil(t, f)
	assert.Equal(t, []int32{1, 2}, f.Chunks)
}

func TestImportGFMRAGv1AndNativeExport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "harbour")
	require.NoError(t, interoptest.GFMSample().WriteV1(dir))
	ix, rep, err := ImportGFMRAG(dir)
	require.NoError(t, err)
	assert.Len(t, ix.Chunks, 3)
	assert.Len(t, ix.Facts, 4)
	assert.Len(t, ix.Synonyms, 1)
	assert.Contains(t, rep.Notices[0], "cite no chunk")
	ments := 0
	for _, m := range ix.Mentions {
		if ix.Chunks[m.Chunk].Title == "Tomas Brell" {
			ments++
		}
	}
	assert.Equal(t, 3, ments, "document2entities gives mentions")

	out := filepath.Join(t.TempDir(), "native")
	rep, err = ExportGFMRAG(nativeIndex(t), out)
	require.NoError(t, err)
	assert.Equal(t, 2, rep.Counts["augmented edges"], "one per cited chunk")
	for _, f := range []string{"kg.txt", "document2entities.json", "nodes.csv", "edges.csv", "relations.csv"} {
		_, err := os.Stat(filepath.Join(out, gfmStage1, f))
		assert.NoError(t, err, f)
	}
	back, _, err := ImportGFMRAG(out)
	require.NoError(t, err)
	assert.Len(t, back.Facts, len(nativeIndex(t).Facts))
	f := factByNames(back, "alder vane", "built hall in", "ostrid ford")
	require.NotNil(t, f)
	assert.Equal(t, []int32{1, 2}, f.Chunks)
}

func TestGFMRAGBadInput(t *testing.T) {
	for _, tc := range []struct{ name, file, content, want string }{
		{"bad attributes", "processed/stage1/nodes.csv", "name,type,attributes\nx,entity,{oops\n", `nodes.csv: row 2 ("x"): attributes`},
		{"short row", "processed/stage1/edges.csv", "source,relation,target,attributes\na,b\n", "edges.csv: record on line 2"},
		{"unknown node", "processed/stage1/edges.csv", "source,relation,target,attributes\nnobody,knows,gannet,{}\n", `edges.csv: row 2: unknown node "nobody"`},
		{"documents not strings", "raw/documents.json", `{"a": 1}`, `documents.json: "a": want a string`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, interoptest.GFMSample().WriteV2(dir))
			require.NoError(t, os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.content), 0o644))
			_, _, err := ImportGFMRAG(dir)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	dir := t.TempDir()
	require.NoError(t, interoptest.GFMSample().WriteV1(dir))
	require.NoError(t, os.WriteFile(filepath.Join(dir, gfmStage1, "kg.txt"), []byte("a,b,c\nd,e\n"), 0o644))
	_, _, err := ImportGFMRAG(dir)
	assert.ErrorContains(t, err, "kg.txt:2: want head,relation,tail")
}

// A kg.txt line whose head, tail or relation normalises to nothing, or whose head is
// its tail, is not a fact: it is counted and kept for export, the others imported.
func TestImportGFMRAGv1NonFactLines(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, interoptest.GFMSample().WriteV1(dir))
	kg := filepath.Join(dir, gfmStage1, "kg.txt")
	data, err := os.ReadFile(kg)
	require.NoError(t, err)
	ix0, _, err := ImportGFMRAG(dir)
	require.NoError(t, err)
	extra := "paris,located in,\n?,rel,paris\nx,rel,x\na,,b\nnew head,founded,new tail\n"
	require.NoError(t, os.WriteFile(kg, append(data, extra...), 0o644))
	ix, rep, err := ImportGFMRAG(dir)
	require.NoError(t, err)
	assert.Len(t, ix.Facts, len(ix0.Facts)+1, "only the well-formed line adds a fact")
	assert.NotNil(t, factByNames(ix, "new head", "founded", "new tail"))
	assert.Contains(t, strings.Join(rep.Notices, "\n"), "4 lines of "+kg+" are not facts")
	require.NoError(t, ix.Validate())
}

func sorted(s []string) []string {
	sort.Strings(s)
	return s
}

// TestExportGFMRAGSameTitles: two passages of one title both reach
// dataset_corpus.json (keyed by title), the second under "TITLE (2)", and the export
// says so.
func TestExportGFMRAGSameTitles(t *testing.T) {
	ix := nativeIndex(t)
	ix.Chunks[1].Title = ix.Chunks[0].Title
	out := filepath.Join(t.TempDir(), "native")
	rep, err := ExportGFMRAG(ix, out)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(out, gfmCorpus))
	require.NoError(t, err)
	var corpus map[string]string
	require.NoError(t, json.Unmarshal(data, &corpus))
	title := ix.Chunks[0].Title
	assert.Equal(t, ix.Chunks[0].Text, corpus[title])
	assert.Equal(t, ix.Chunks[1].Text, corpus[title+" (2)"])
	assert.Len(t, corpus, len(ix.Chunks))
	assert.Contains(t, strings.Join(rep.Notices, "\n"), "1 passages share a title")
}
