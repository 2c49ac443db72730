package llm

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtractJSONRepairs(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want string // compared as JSON
	}{
		{"plain object", `{"a": 1}`, `{"a":1}`},
		{"plain array", ` [1, 2] `, `[1,2]`},
		{"leading and trailing prose", `Sure! Here it is: {"a": [1, 2]} Hope that helps.`, `{"a":[1,2]}`},
		{"think block", "<think>I could answer {\"wrong\": 1}</think>\n{\"right\": 2}", `{"right":2}`},
		{"think block upper case", "<THINK>{\"wrong\": 1}</THINK>{\"right\": 2}", `{"right":2}`},
		{"orphan closing think tag", "reasoning {\"wrong\": 1} here</think>{\"right\": 2}", `{"right":2}`},
		{"unclosed think keeps answer before it", "{\"right\": 2}<think>more {\"wrong\":1}", `{"right":2}`},
		{"JSON only inside think", "<think>{\"a\": 1}", `{"a":1}`},
		{"markdown fence with tag", "Here:\n```json\n{\"a\": 1}\n```\nDone.", `{"a":1}`},
		{"markdown fence without tag", "```\n[\"x\"]\n```", `["x"]`},
		{"unclosed fence", "```json\n{\"a\": 1", `{"a":1}`},
		{"fence preferred over earlier prose braces", "Use {name} placeholders.\n```json\n{\"name\": \"Bob\"}\n```", `{"name":"Bob"}`},
		{"brackets inside strings ignored", `{"a": "x } ] {", "b": [1]}`, `{"a":"x } ] {","b":[1]}`},
		{"trailing comma object", `{"a": 1, "b": 2,}`, `{"a":1,"b":2}`},
		{"trailing comma array", `[1, 2, 3, ]`, `[1,2,3]`},
		{"trailing comma nested", `{"a": [1, {"b": 2,},],}`, `{"a":[1,{"b":2}]}`},
		{"missing comma between members", "{\"a\": 1\n \"b\": 2}", `{"a":1,"b":2}`},
		{"missing comma between string members", `{"a": "b" "c": "d"}`, `{"a":"b","c":"d"}`},
		{"missing comma between strings", `["a" "b"]`, `["a","b"]`},
		{"missing comma between objects", `[{"a": 1} {"a": 2}]`, `[{"a":1},{"a":2}]`},
		{"single quoted strings", `{'name': 'Alice', 'tags': ['x', 'y']}`, `{"name":"Alice","tags":["x","y"]}`},
		{"single quoted with apostrophe", `{'name': 'O'Brien'}`, `{"name":"O'Brien"}`},
		{"single quoted with double quote inside", `{'q': 'say "hi"'}`, `{"q":"say \"hi\""}`},
		{"python literals", `{'ok': True, 'bad': False, 'none': None}`, `{"ok":true,"bad":false,"none":null}`},
		{"python tuple", `{'pair': (1, 2)}`, `{"pair":[1,2]}`},
		{"js literals", `{"a": undefined, "b": NaN, "c": -Infinity}`, `{"a":null,"b":null,"c":null}`},
		{"smart quotes", `{“name”: “Alice”, ‘x’: ‘y’}`, `{"name":"Alice","x":"y"}`},
		{"smart quotes inside a normal string kept", `{"q": "she said “hi”"}`, `{"q":"she said “hi”"}`},
		{"unquoted keys", `{name: "Bob", age: 3}`, `{"name":"Bob","age":3}`},
		{"line comments", "{\n  // the name\n  \"a\": 1, # python style\n  \"b\": 2\n}", `{"a":1,"b":2}`},
		{"block comment", `{"a": /* one */ 1}`, `{"a":1}`},
		{"unescaped inner quotes", `{"text": "He said "hello" to me", "n": 1}`, `{"text":"He said \"hello\" to me","n":1}`},
		{"raw newline in string", "{\"a\": \"line1\nline2\"}", `{"a":"line1\nline2"}`},
		{"raw tab in string", "{\"a\": \"x\ty\"}", `{"a":"x\ty"}`},
		{"invalid escape", `{"path": "C:\dir\x"}`, `{"path":"C:\\dir\\x"}`},
		{"escaped single quote", `{"a": "it\'s"}`, `{"a":"it's"}`},
		{"numbers", `[+1, .5, 1., 007, -.25, 1e5, 2E-3]`, `[1,0.5,1,7,-0.25,1e5,2e-3]`},
		{"number-like words", `["2024-01-01", 1-2, 5a3f]`, `["2024-01-01","1-2","5a3f"]`},
		{"ellipsis placeholder", `{"items": [1, 2, ...]}`, `{"items":[1,2]}`},
		{"unicode ellipsis", `["a", "b", …]`, `["a","b"]`},
		{"truncated string", `{"entities": [{"name": "Ali`, `{"entities":[{"name":"Ali"}]}`},
		{"truncated after key", `{"a": 1, "b"`, `{"a":1,"b":null}`},
		{"truncated after colon", `{"a": 1, "b":`, `{"a":1,"b":null}`},
		{"truncated after comma", `[1, 2,`, `[1,2]`},
		{"truncated literal", `{"ok": tr`, `{"ok":true}`},
		{"truncated exponent", `[1e`, `[1]`},
		{"truncated escape", `["abc\`, `["abc"]`},
		{"deep truncation", `{"a": {"b": [{"c": [1, 2`, `{"a":{"b":[{"c":[1,2]}]}}`},
		{"missing value", `{"a": , "b": 1}`, `{"a":null,"b":1}`},
		{"mismatched closer", `{"a": [1, 2}`, `{"a":[1,2]}`},
		{"bare word value", `{"type": PERSON}`, `{"type":"PERSON"}`},
		{"JSON string holding JSON", `"{\"a\": 1}"`, `{"a":1}`},
		{"scalar alone", `42`, `42`},
		{"nbsp and bom", "\ufeff{\u00a0\"a\": 1}", `{"a":1}`},
		{"control characters escaped", "{\"a\": \"x\x01y\"}", `{"a":"x\u0001y"}`},
		{"invalid utf8 replaced", "{\"a\": \"x\xffy\"}", `{"a":"x\ufffdy"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ExtractJSON(tc.in)
			require.NoError(t, err)
			require.True(t, json.Valid([]byte(got)), "not strict JSON: %s", got)
			assert.JSONEq(t, tc.want, got)
		})
	}
}

func TestExtractJSONFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want error
	}{
		{"empty", "", ErrNoJSON},
		{"prose only", "I cannot help with that.", ErrNoJSON},
		{"think only", "<think>hmm</think>", ErrNoJSON},
		{"hopeless", "{ @@@ }", ErrBrokenJSON},
		{"garbage after open bracket", "[ = ]", ErrBrokenJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ExtractJSON(tc.in)
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, err, ErrUnparseable)
			assert.Equal(t, KindUnparseable, Classify(err))
			var pe *ParseError
			require.ErrorAs(t, err, &pe)
		})
	}
}

func TestParseJSONPicksCandidateThatFits(t *testing.T) {
	type entity struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	text := "Entities [1] are below.\n" + `[{"name": "Alice", "type": "PERSON"}, {"name": "Acme", "type": "ORG",}]`
	var got []entity
	require.NoError(t, ParseJSON(text, &got))
	assert.Equal(t, []entity{{"Alice", "PERSON"}, {"Acme", "ORG"}}, got)

	// A placeholder in prose ({name}) needs guessed repairs, so the real object wins
	// even though it comes later.
	var one entity
	require.NoError(t, ParseJSON(`Fill in {name}: {"name": "Bob", "type": "PERSON"}`, &one))
	assert.Equal(t, entity{"Bob", "PERSON"}, one)
}

func TestParseJSONErrors(t *testing.T) {
	var v struct{ A int }
	err := ParseJSON(`{"A": "not a number"}`, &v)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrJSONMismatch)
	assert.ErrorIs(t, err, ErrUnparseable)

	err = ParseJSON("no json here", &v)
	assert.ErrorIs(t, err, ErrNoJSON)

	err = ParseJSON(`{"A": 1}`, v) // not a pointer
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrUnparseable)

	long := strings.Repeat("word ", 100)
	err = ParseJSON(long, &v)
	var pe *ParseError
	require.ErrorAs(t, err, &pe)
	assert.LessOrEqual(t, len([]rune(pe.Snippet)), 81)
}

func TestParseJSONDoesNotLeaveHalfDecodedValues(t *testing.T) {
	type out struct {
		A []int  `json:"a"`
		B string `json:"b"`
	}
	// The first candidate decodes A, then fails on B; the second fits.
	var v out
	require.NoError(t, ParseJSON(`{"a": [1, 2], "b": 3} then {"b": "ok"}`, &v))
	assert.Equal(t, out{B: "ok"}, v)
}

func TestExtractJSONBoundsWork(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
	}{
		{"deep nesting", strings.Repeat("[", 100000)},
		{"many starts", strings.Repeat("{ @ ", 20000)},
		{"long string", `{"a": "` + strings.Repeat("x", 1<<20)},
		{"many fences", strings.Repeat("```json\n{\n```\n", 1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _ = ExtractJSON(tc.in) // must return promptly without panicking
		})
	}
}

func TestParseErrorIsClassified(t *testing.T) {
	err := ParseJSON("nothing", new(any))
	wrapped := errors.Join(errors.New("stage extract"), err)
	assert.Equal(t, KindUnparseable, Classify(wrapped))
}

// TestDropUnfinished: a text cut short loses the element of the outermost open array
// the cut fell in, whole; an element that ended before the cut stays; a flat object
// cut anywhere, or an array cut in its first element, has nothing to keep.
func TestDropUnfinished(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"inside the last triple's string", `{"triples": [["a","b","c"], ["Tomas Brell","harbourmaster of","Port Kes`, `{"triples": [["a","b","c"]`, true},
		{"between a triple's parts", `{"triples": [["a","b","c"], ["Tomas Brell",`, `{"triples": [["a","b","c"]`, true},
		{"after a whole element", `[["a","b","c"], ["d","e","f"]`, `[["a","b","c"], ["d","e","f"]`, true},
		{"a hyperedge cut in its members", `{"hyperedges": [{"text": "x, y", "entities": [{"name": "A"}], "score": 7}, {"text": "z", "entities": [{"name": "B"}, {"na`, `{"hyperedges": [{"text": "x, y", "entities": [{"name": "A"}], "score": 7}`, true},
		{"a named entity cut", `{"named_entities": ["Port Keswyn", "Tomas Br`, `{"named_entities": ["Port Keswyn"`, true},
		{"a number may be cut", `{"scores": [1, 23`, `{"scores": [1`, true},
		{"brackets and commas inside strings", `[["see [1], ok", "b", "c"], ["x", "y`, `[["see [1], ok", "b", "c"]`, true},
		{"escaped quote", `[["say \"a, b\"", "p", "o"], ["q`, `[["say \"a, b\"", "p", "o"]`, true},
		{"whole", `{"a": [1, 2]}`, `{"a": [1, 2]}`, true},
		{"flat answer: its last member goes", `{"question": "Q?", "answer": "Par`, `{"question": "Q?"`, true},
		{"first element unfinished", `{"triples": [["Tomas Brell", "harb`, ``, false},
		{"first value unfinished", `{"question": "What is the harb`, ``, false},
		{"a second list cut before its first element", `{"new_triples": [{"triple": ["A", "r", "B"], "chunk_ids": ["c1"]}], "new_hyperedges": [{"text": "t", "entities": ["A", "B`, `{"new_triples": [{"triple": ["A", "r", "B"], "chunk_ids": ["c1"]}]`, true},
		{"cut after a member's key", `{"new_triples": [["a", "b", "c"]], "new_hyperedges":`, `{"new_triples": [["a", "b", "c"]]`, true},
		{"reasoning with a stray quote before", `<think>the 12" pipe, [sic</think>{"triples": [["a","b","c"], ["d","e","Port Kes`, `<think>the 12" pipe, [sic</think>{"triples": [["a","b","c"]`, true},
		{"prose after a whole value stays (ParseJSON takes the value)", "{\"triples\": [[\"a\",\"b\",\"c\"]]}\nNote: \"Tomas", "{\"triples\": [[\"a\",\"b\",\"c\"]]}\nNote: \"Tomas", true},
		{"DSPy markers", "[[ ## fact_after_filter ## ]]\n{\"fact\": [[\"a\",\"b\",\"c\"]]}\n\n[[ ## compl", "[[ ## fact_after_filter ## ]]\n{\"fact\": [[\"a\",\"b\",\"c\"]]}", true},
	} {
		got, ok := DropUnfinished(tc.in)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

// TestParseAnswerDropsTheCutValue: an answer cut at the token limit loses the value it
// was cut in (ParseJSON alone closes the string and keeps its stump); an answer that
// stopped keeps everything; one cut in its first value is an unparseable answer.
func TestParseAnswerDropsTheCutValue(t *testing.T) {
	cut := `{"triples": [["Tomas Brell", "owned", "the Gannet"], ["Tomas Brell", "harbourmaster of", "Port Kes`
	var v struct{ Triples [][]string }
	require.NoError(t, ParseJSON(cut, &v))
	assert.Equal(t, []string{"Tomas Brell", "harbourmaster of", "Port Kes"}, v.Triples[1], "ParseJSON repairs the stump")

	v.Triples = nil
	require.NoError(t, ParseAnswer(ChatResponse{Content: cut, FinishReason: FinishLength}, &v))
	assert.Equal(t, [][]string{{"Tomas Brell", "owned", "the Gannet"}}, v.Triples, "the triple the cut fell in goes whole")

	v.Triples = nil
	require.NoError(t, ParseAnswer(ChatResponse{Content: cut + `wyn"]]}`, FinishReason: "stop"}, &v))
	assert.Len(t, v.Triples, 2)

	err := ParseAnswer(ChatResponse{Content: `{"question": "What is the harb`, FinishReason: FinishLength}, &v)
	assert.ErrorIs(t, err, ErrCutEarly)
	assert.Equal(t, KindUnparseable, Classify(err))
}
