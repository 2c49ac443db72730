package jsonmsg

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDescribe(t *testing.T) {
	type rec struct {
		ID   string   `json:"id"`
		Text *string  `json:"text"`
		K    int      `json:"k"`
		Tags []string `json:"tags"`
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"number for a string", `{"id":7}`, `field "id": want a string, got a number`},
		{"string for a pointer string", `{"text":[1]}`, `field "text": want a string, got an array`},
		{"fraction for an integer", `{"k":1.5}`, `field "k": want an integer, got the number 1.5`},
		{"whole value", `42`, `want an object, got a number`},
		{"array element", `{"tags":[1]}`, `field "tags": want a string, got a number`},
		{"syntax", `{"id":`, `unexpected end of JSON input`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r rec
			err := json.Unmarshal([]byte(tc.in), &r)
			require.Error(t, err)
			got := Describe(err)
			assert.Contains(t, got, tc.want)
			assert.NotContains(t, got, "Go value")
			assert.NotContains(t, got, "jsonmsg.")
		})
	}
}

func TestKind(t *testing.T) {
	for in, want := range map[string]string{`{}`: "an object", ` [1]`: "an array", `"x"`: "a string", `-1`: "a number", `null`: "null", `true`: "true", ``: "nothing"} {
		assert.Equal(t, want, Kind(json.RawMessage(in)), in)
	}
}
