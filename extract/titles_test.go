package extract

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCleanTitle(t *testing.T) {
	for in, want := range map[string]string{
		"Boy (album)":                      "Boy",
		"Boy (album) [chunk 2]":            "Boy",
		"Roses from the South (1954 film)": "Roses from the South",
		"Lost!":                            "Lost!",
		"(1999)":                           "(1999)",
	} {
		assert.Equal(t, want, CleanTitle(in), in)
	}
}

func TestTitlesBecomeEntities(t *testing.T) {
	r := NewRule(DefaultRuleConfig())
	chunks := []Chunk{
		{ID: "a", Title: "Hannele's Journey to Heaven", Text: "Hannele's Journey to Heaven is a 1922 German silent film directed by Urban Gad."},
		{ID: "b", Title: "Urban Gad", Text: "Peter Urban Gad was a Danish film director. His wife was Asta Nielsen."},
		{ID: "c", Title: "Maroon 5", Text: "Maroon 5 is an American pop rock band."},
		{ID: "d", Title: "What Lovers Do", Text: `"What Lovers Do" is a song by American pop rock band Maroon 5.`},
	}
	res, err := r.Extract(context.Background(), chunks, nil)
	require.NoError(t, err)
	names := func(r Result) []string {
		var out []string
		for _, e := range r.Entities {
			out = append(out, strings.TrimRight(e.Text, ".,")) // a sentence-final token keeps its stop
		}
		return out
	}
	assert.Contains(t, names(res[0]), "Hannele's Journey to Heaven", "a title in the text is one span, not three")
	assert.Contains(t, names(res[0]), "Urban Gad", "another document's title")
	assert.Contains(t, names(res[1]), "Urban Gad", "each chunk mentions its own title")
	assert.Contains(t, names(res[3]), "Maroon 5", "a title with a number")
	assert.Contains(t, names(res[3]), "What Lovers Do", "a quoted title")

	off := DefaultRuleConfig()
	off.Titles = false
	res, err = NewRule(off).Extract(context.Background(), chunks, nil)
	require.NoError(t, err)
	assert.NotContains(t, names(res[3]), "What Lovers Do")
}
