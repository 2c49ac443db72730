package interoptest

import (
	"crypto/sha512"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
)

// GraphRAG v3 output rows (docs/index/outputs.md), with pandas' optional columns.
type (
	GRDocument struct {
		ID              *string  `parquet:"id,optional"`
		HumanReadableID *int64   `parquet:"human_readable_id,optional"`
		Title           *string  `parquet:"title,optional"`
		Text            *string  `parquet:"text,optional"`
		TextUnitIDs     []string `parquet:"text_unit_ids,optional,list" parquet-element:",optional"`
		CreationDate    *string  `parquet:"creation_date,optional"`
	}
	GRTextUnit struct {
		ID              *string  `parquet:"id,optional"`
		HumanReadableID *int64   `parquet:"human_readable_id,optional"`
		Text            *string  `parquet:"text,optional"`
		NTokens         *int64   `parquet:"n_tokens,optional"`
		DocumentID      *string  `parquet:"document_id,optional"`
		EntityIDs       []string `parquet:"entity_ids,optional,list" parquet-element:",optional"`
		RelationshipIDs []string `parquet:"relationship_ids,optional,list" parquet-element:",optional"`
		CovariateIDs    []string `parquet:"covariate_ids,optional,list" parquet-element:",optional"`
	}
	GREntity struct {
		ID              *string  `parquet:"id,optional"`
		HumanReadableID *int64   `parquet:"human_readable_id,optional"`
		Title           *string  `parquet:"title,optional"`
		Type            *string  `parquet:"type,optional"`
		Description     *string  `parquet:"description,optional"`
		TextUnitIDs     []string `parquet:"text_unit_ids,optional,list" parquet-element:",optional"`
		Frequency       *int64   `parquet:"frequency,optional"`
		Degree          *int64   `parquet:"degree,optional"`
	}
	GRRelationship struct {
		ID              *string  `parquet:"id,optional"`
		HumanReadableID *int64   `parquet:"human_readable_id,optional"`
		Source          *string  `parquet:"source,optional"`
		Target          *string  `parquet:"target,optional"`
		Description     *string  `parquet:"description,optional"`
		Weight          *float64 `parquet:"weight,optional"`
		CombinedDegree  *int64   `parquet:"combined_degree,optional"`
		TextUnitIDs     []string `parquet:"text_unit_ids,optional,list" parquet-element:",optional"`
	}
	grCommunity struct {
		ID        *string  `parquet:"id,optional"`
		Community *int64   `parquet:"community,optional"`
		Level     *int64   `parquet:"level,optional"`
		Title     *string  `parquet:"title,optional"`
		EntityIDs []string `parquet:"entity_ids,optional,list" parquet-element:",optional"`
	}
)

// GraphRAG is a set of GraphRAG v3 output tables.
type GraphRAG struct {
	Documents     []GRDocument
	TextUnits     []GRTextUnit
	Entities      []GREntity
	Relationships []GRRelationship
}

func p[T any](v T) *T { return &v }

// GraphRAGSample is the harbour passages as GraphRAG v3 would index them: two
// documents, three text units, upper-case entity titles, described weighted
// relationships.
func GraphRAGSample() *GraphRAG {
	texts := []string{"Port Keswyn is a harbour town. Tomas Brell was its harbourmaster.", "Tomas Brell was born in Fennmouth.", "The brig Gannet was wrecked on Gull Rock near Port Keswyn."}
	docOf := []int{0, 0, 1}
	g := &GraphRAG{}
	var unitIDs []string
	for i, t := range texts {
		sum := sha512.Sum512([]byte(t))
		unitIDs = append(unitIDs, hex.EncodeToString(sum[:]))
		_ = i
	}
	for d, title := range []string{"Tomas Brell", "Gannet"} {
		var ids []string
		text := ""
		for i, t := range texts {
			if docOf[i] == d {
				ids = append(ids, unitIDs[i])
				text += t + " "
			}
		}
		g.Documents = append(g.Documents, GRDocument{p(fmt.Sprintf("doc-%d", d)), p(int64(d)), p(title), p(text), ids, p("2026-12-01T00:00:00+00:00")})
	}
	type ent struct {
		title, typ string
		units      []int
	}
	es := []ent{{"PORT KESWYN", "GEO", []int{0, 2}}, {"TOMAS BRELL", "PERSON", []int{0, 1}}, {"FENNMOUTH", "GEO", []int{1}}, {"GANNET", "VESSEL", []int{2}}, {"GULL ROCK", "GEO", []int{2}}}
	for i, e := range es {
		var ids []string
		for _, u := range e.units {
			ids = append(ids, unitIDs[u])
		}
		g.Entities = append(g.Entities, GREntity{p(fmt.Sprintf("e%d-uuid", i)), p(int64(i)), p(e.title), p(e.typ), p("The " + e.title + "."), ids, p(int64(len(ids))), p(int64(1))})
	}
	type rel struct {
		s, t, d string
		w       float64
		units   []int
	}
	rs := []rel{{"TOMAS BRELL", "PORT KESWYN", "Tomas Brell was harbourmaster of Port Keswyn", 2, []int{0}},
		{"TOMAS BRELL", "FENNMOUTH", "Tomas Brell was born in Fennmouth", 1, []int{1}},
		{"GANNET", "GULL ROCK", "The Gannet was wrecked on Gull Rock", 1.5, []int{2}},
		{"GULL ROCK", "PORT KESWYN", "Gull Rock is near Port Keswyn", 1, []int{2}}}
	unitRels := map[int][]string{}
	for i, r := range rs {
		var ids []string
		for _, u := range r.units {
			ids = append(ids, unitIDs[u])
			unitRels[u] = append(unitRels[u], fmt.Sprintf("r%d-uuid", i))
		}
		g.Relationships = append(g.Relationships, GRRelationship{p(fmt.Sprintf("r%d-uuid", i)), p(int64(i)), p(r.s), p(r.t), p(r.d), p(r.w), p(int64(3)), ids})
	}
	for i, t := range texts {
		var ents []string
		for j, e := range es {
			for _, u := range e.units {
				if u == i {
					ents = append(ents, fmt.Sprintf("e%d-uuid", j))
				}
			}
		}
		g.TextUnits = append(g.TextUnits, GRTextUnit{p(unitIDs[i]), p(int64(i)), p(t), p(int64(12)), p(fmt.Sprintf("doc-%d", docOf[i])), ents, unitRels[i], []string{}})
	}
	return g
}

// Fixture rows are written with required columns: parquet-go writes a pointer to a
// zero value in an optional column as null, which pandas never does for 0 or [].
type (
	grDocumentW struct {
		ID              string   `parquet:"id"`
		HumanReadableID int64    `parquet:"human_readable_id"`
		Title           string   `parquet:"title"`
		Text            string   `parquet:"text"`
		TextUnitIDs     []string `parquet:"text_unit_ids,list"`
		CreationDate    string   `parquet:"creation_date"`
	}
	grTextUnitW struct {
		ID              string   `parquet:"id"`
		HumanReadableID int64    `parquet:"human_readable_id"`
		Text            string   `parquet:"text"`
		NTokens         int64    `parquet:"n_tokens"`
		DocumentID      string   `parquet:"document_id"`
		EntityIDs       []string `parquet:"entity_ids,list"`
		RelationshipIDs []string `parquet:"relationship_ids,list"`
		CovariateIDs    []string `parquet:"covariate_ids,list"`
	}
	grEntityW struct {
		ID              string   `parquet:"id"`
		HumanReadableID int64    `parquet:"human_readable_id"`
		Title           string   `parquet:"title"`
		Type            string   `parquet:"type"`
		Description     string   `parquet:"description"`
		TextUnitIDs     []string `parquet:"text_unit_ids,list"`
		Frequency       int64    `parquet:"frequency"`
		Degree          int64    `parquet:"degree"`
	}
	grRelationshipW struct {
		ID              string   `parquet:"id"`
		HumanReadableID int64    `parquet:"human_readable_id"`
		Source          string   `parquet:"source"`
		Target          string   `parquet:"target"`
		Description     string   `parquet:"description"`
		Weight          float64  `parquet:"weight"`
		CombinedDegree  int64    `parquet:"combined_degree"`
		TextUnitIDs     []string `parquet:"text_unit_ids,list"`
	}
)

func conv[T, U any](rows []T, f func(T) U) []U {
	out := make([]U, len(rows))
	for i, r := range rows {
		out[i] = f(r)
	}
	return out
}

// Write writes the tables (and a communities table) to dir.
func (g *GraphRAG) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f := func(name string) string { return filepath.Join(dir, name+".parquet") }
	if err := parquet.WriteFile(f("documents"), conv(g.Documents, func(d GRDocument) grDocumentW {
		return grDocumentW{*d.ID, *d.HumanReadableID, *d.Title, *d.Text, d.TextUnitIDs, *d.CreationDate}
	})); err != nil {
		return err
	}
	if err := parquet.WriteFile(f("text_units"), conv(g.TextUnits, func(u GRTextUnit) grTextUnitW {
		return grTextUnitW{*u.ID, *u.HumanReadableID, *u.Text, *u.NTokens, *u.DocumentID, u.EntityIDs, u.RelationshipIDs, u.CovariateIDs}
	})); err != nil {
		return err
	}
	if err := parquet.WriteFile(f("entities"), conv(g.Entities, func(e GREntity) grEntityW {
		return grEntityW{*e.ID, *e.HumanReadableID, *e.Title, *e.Type, *e.Description, e.TextUnitIDs, *e.Frequency, *e.Degree}
	})); err != nil {
		return err
	}
	if err := parquet.WriteFile(f("relationships"), conv(g.Relationships, func(r GRRelationship) grRelationshipW {
		return grRelationshipW{*r.ID, *r.HumanReadableID, *r.Source, *r.Target, *r.Description, *r.Weight, *r.CombinedDegree, r.TextUnitIDs}
	})); err != nil {
		return err
	}
	return parquet.WriteFile(f("communities"), []grCommunity{{p("c0"), p(int64(0)), p(int64(0)), p("Community 0"), []string{"e0-uuid", "e1-uuid"}}})
}
