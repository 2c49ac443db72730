package eval

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJoinSentences(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sents []string
		want  string
	}{
		{"HotpotQA: sentences carry their space", []string{"Maroon 5 is a band.", " It has a drummer."}, "Maroon 5 is a band. It has a drummer."},
		{"2Wiki: no leading space", []string{"Maroon 5 is a band.", "It has a drummer."}, "Maroon 5 is a band. It has a drummer."},
		{"trailing space kept", []string{"One. ", "Two."}, "One. Two."},
		{"empty sentence", []string{"One.", "", "Two."}, "One. Two."},
		{"single", []string{"One."}, "One."},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, JoinSentences(tc.sents))
		})
	}
}

func parse(t *testing.T, data string) *Dataset {
	t.Helper()
	ds, err := ParseDataset([]byte(data), "test.json")
	require.NoError(t, err)
	return ds
}

func TestAdapters(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   string
		format Format
		want   Example
	}{
		{
			name:   "HippoRAG: answer list, missing is_supporting counts as gold",
			format: FormatHippoRAG,
			data: `[{"id": "q1", "question": "Where was Brell born?", "answer": ["Aldwick"], "answer_aliases": ["Aldwick town", "Aldwick"],
				"paragraphs": [{"title": "Tomas Brell", "text": "Born in Aldwick.", "is_supporting": true},
				               {"title": "Port Keswyn", "text": "A harbour.", "is_supporting": false},
				               {"title": "Aldwick", "text": "A town."}]}]`,
			want: Example{ID: "q1", Question: "Where was Brell born?", Answers: []string{"Aldwick", "Aldwick town"},
				Gold: []GoldPassage{{"Tomas Brell", "Born in Aldwick."}, {"Aldwick", "A town."}}, Kind: KindOpen},
		},
		{
			name:   "MuSiQue: paragraph_text",
			format: FormatMuSiQue,
			data: `{"id": "2hop_1", "question": "Q?", "answer": "Saint Ebba", "answer_aliases": ["St Ebba"], "answerable": true,
				"paragraphs": [{"idx": 0, "title": "A", "paragraph_text": "x", "is_supporting": false},
				               {"idx": 1, "title": "B", "paragraph_text": "y", "is_supporting": true}]}`,
			want: Example{ID: "2hop_1", Question: "Q?", Answers: []string{"Saint Ebba", "St Ebba"}, Gold: []GoldPassage{{"B", "y"}}, Kind: KindOpen},
		},
		{
			name:   "HotpotQA: context and supporting_facts",
			format: FormatHotpotQA,
			data: `{"_id": "5a8b", "question": "Which band?", "answer": "Maroon 5", "type": "bridge",
				"supporting_facts": [["Maroon 5", 0], ["Maroon 5", 1], ["What Lovers Do", 0]],
				"context": [["What Lovers Do", ["A song by Maroon 5.", " Released 2017."]], ["Maroon 5", ["A band.", " From LA."]], ["Other", ["No."]]]}`,
			want: Example{ID: "5a8b", Question: "Which band?", Answers: []string{"Maroon 5"},
				Gold: []GoldPassage{{"Maroon 5", "A band. From LA."}, {"What Lovers Do", "A song by Maroon 5. Released 2017."}}, Kind: KindOpen},
		},
		{
			name:   "2WikiMultihopQA: sentences without leading spaces",
			format: FormatHotpotQA,
			data: `{"_id": "w1", "question": "Who?", "answer": "Anselm", "supporting_facts": [["Mira", 0]],
				"context": [["Mira", ["Mira married Anselm.", "They lived at the light."]]]}`,
			want: Example{ID: "w1", Question: "Who?", Answers: []string{"Anselm"}, Gold: []GoldPassage{{"Mira", "Mira married Anselm. They lived at the light."}}, Kind: KindOpen},
		},
		{
			name:   "HotpotQA, Hugging Face columns",
			format: FormatHotpotQA,
			data: `{"id": "hf1", "question": "Q?", "answer": "A",
				"supporting_facts": {"title": ["T2"], "sent_id": [0]},
				"context": {"title": ["T1", "T2"], "sentences": [["s1."], ["s2.", " s3."]]}}`,
			want: Example{ID: "hf1", Question: "Q?", Answers: []string{"A"}, Gold: []GoldPassage{{"T2", "s2. s3."}}, Kind: KindOpen},
		},
		{
			name:   "MoreHopQA: support titles from the decomposition, one missing from the context",
			format: FormatMoreHopQA,
			data: `{"_id": "m1", "question": "ASCII code?", "answer": "116", "previous_answer": "Matt Flynn",
				"context": [["Maroon 5", ["A band."]], ["What Lovers Do", ["A song."]]],
				"question_decomposition": [{"sub_id": "1", "paragraph_support_title": "What Lovers Do"},
				  {"sub_id": "2", "paragraph_support_title": "Maroon 5"},
				  {"sub_id": "3", "paragraph_support_title": "", "details": [{"sub_id": "3_1", "paragraph_support_title": "Matt Flynn"}]}]}`,
			want: Example{ID: "m1", Question: "ASCII code?", Answers: []string{"116"},
				Gold: []GoldPassage{{"What Lovers Do", "A song."}, {"Maroon 5", "A band."}, {Title: "Matt Flynn"}}, Kind: KindOpen},
		},
		{
			name:   "LiteraryQA: answers only",
			format: FormatLiteraryQA,
			data: `{"id": "b__q000", "title": "The Variable Man", "question": "Why is Terra at war?", "answer": "Because of expansion.",
				"answer_aliases": ["They will not let Terra grow."], "answerable": true, "paragraphs": []}`,
			want: Example{ID: "b__q000", Question: "Why is Terra at war?", Answers: []string{"Because of expansion.", "They will not let Terra grow."}, Kind: KindOpen},
		},
		{
			name:   "PubMedQA original: records keyed by PMID",
			format: FormatYesNo,
			data: `{"21645374": {"QUESTION": "Do mitochondria play a role?", "CONTEXTS": ["Background.", "Results."],
				"LABELS": ["BACKGROUND", "RESULTS"], "final_decision": "Yes", "LONG_ANSWER": "They do."}}`,
			want: Example{ID: "21645374", Question: "Do mitochondria play a role?", Answers: []string{"yes"}, Label: "yes",
				Spans: []string{"Background.", "Results."}, Gold: []GoldPassage{{Text: "Background. Results."}}, Kind: KindYesNo},
		},
		{
			name:   "PubMedQA, Hugging Face layout",
			format: FormatYesNo,
			data: `[{"pubid": 42, "question": "Is it safe?", "context": {"contexts": ["A.", "B."], "labels": ["X", "Y"]},
				"long_answer": "Probably.", "final_decision": "maybe"}]`,
			want: Example{ID: "42", Question: "Is it safe?", Answers: []string{"maybe"}, Label: "maybe", Spans: []string{"A.", "B."},
				Gold: []GoldPassage{{Text: "A. B."}}, Kind: KindYesNo},
		},
		{
			name:   "yes/no by label",
			format: FormatYesNo,
			data:   `{"id": "y1", "question": "Is the lamp lit?", "label": "NO"}`,
			want:   Example{ID: "y1", Question: "Is the lamp lit?", Answers: []string{"no"}, Label: "no", Kind: KindYesNo},
		},
		{
			name:   "multiple choice: options object and answer_idx (MedQA)",
			format: FormatChoice,
			data: `{"question": "Where?", "options": {"A": "Aldwick", "B": "Port Keswyn", "C": "Fennmouth", "D": "Saint Ebba"},
				"answer": "Fennmouth", "answer_idx": "C"}`,
			want: Example{ID: "q1", Question: "Where?", Answers: []string{"Fennmouth"}, Options: []string{"Aldwick", "Port Keswyn", "Fennmouth", "Saint Ebba"},
				Label: "C", Kind: KindChoice},
		},
		{
			name:   "multiple choice: fields A-D and a letter (LatamQA style)",
			format: FormatChoice,
			data:   `{"id": "l1", "question": "¿Dónde?", "A": "uno", "B": "dos", "C": "tres", "D": "cuatro", "correct_answer": "(b)"}`,
			want:   Example{ID: "l1", Question: "¿Dónde?", Answers: []string{"dos"}, Options: []string{"uno", "dos", "tres", "cuatro"}, Label: "B", Kind: KindChoice},
		},
		{
			name:   "multiple choice: choices list and 0-based index (MMLU)",
			format: FormatChoice,
			data:   `{"question": "2+2?", "choices": ["3", "4", "5", "6"], "answer": 1}`,
			want:   Example{ID: "q1", Question: "2+2?", Answers: []string{"4"}, Options: []string{"3", "4", "5", "6"}, Label: "B", Kind: KindChoice},
		},
		{
			name:   "multiple choice: MedMCQA opa-opd and 1-based cop",
			format: FormatChoice,
			data:   `{"id": "x", "question": "Which?", "opa": "w", "opb": "x", "opc": "y", "opd": "z", "cop": 4}`,
			want:   Example{ID: "x", Question: "Which?", Answers: []string{"z"}, Options: []string{"w", "x", "y", "z"}, Label: "D", Kind: KindChoice},
		},
		{
			name:   "multiple choice: ARC choices and answerKey",
			format: FormatChoice,
			data:   `{"id": "arc", "question": "Q?", "choices": {"text": ["p", "q", "r"], "label": ["A", "B", "C"]}, "answerKey": "A"}`,
			want:   Example{ID: "arc", Question: "Q?", Answers: []string{"p"}, Options: []string{"p", "q", "r"}, Label: "A", Kind: KindChoice},
		},
		{
			name:   "HyperGraphRAG: golden_answers and context spans",
			format: FormatSpans,
			data: `{"id": 7, "question": "How does the plan fail?", "golden_answers": ["He is locked in the writing-room."],
				"context": ["Vadassy is locked in the writing-room.", "The spy retrieves the camera."]}`,
			want: Example{ID: "7", Question: "How does the plan fail?", Answers: []string{"He is locked in the writing-room."},
				Spans: []string{"Vadassy is locked in the writing-room.", "The spy retrieves the camera."}, Kind: KindOpen},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ds := parse(t, tc.data)
			require.Len(t, ds.Examples, 1, "skipped: %v", ds.Skipped)
			assert.Equal(t, tc.format, ds.Format)
			got := ds.Examples[0]
			assert.Equal(t, tc.format, got.Format)
			assert.Equal(t, tc.want.ID, got.ID)
			assert.Equal(t, tc.want.Question, got.Question)
			assert.Equal(t, tc.want.Answers, got.Answers)
			assert.Equal(t, tc.want.Gold, got.Gold)
			assert.Equal(t, tc.want.Spans, got.Spans)
			assert.Equal(t, tc.want.Kind, got.Kind)
			assert.Equal(t, tc.want.Options, got.Options)
			assert.Equal(t, tc.want.Label, got.Label)
		})
	}
}

func TestReaderQuestion(t *testing.T) {
	ex := Example{Question: "Where?", Kind: KindChoice, Options: []string{"Aldwick", "Fennmouth"}}
	assert.Equal(t, "Where?\nOptions:\nA. Aldwick\nB. Fennmouth\nAnswer with the letter of the correct option.", ex.ReaderQuestion())
	ex = Example{Question: "Is it?", Kind: KindYesNo}
	assert.Equal(t, "Is it?\nAnswer with yes, no or maybe.", ex.ReaderQuestion())
}

func TestMalformedRecords(t *testing.T) {
	t.Run("JSONL: malformed and unusable lines are skipped with their line numbers", func(t *testing.T) {
		data := `{"id": "a", "question": "Q1?", "answer": "x"}
{"id": "b", "question": "Q2?", "answer": 
[1, 2]

{"id": "c", "question": "", "answer": "y"}
{"id": "d", "question": "Q4?", "options": ["p", "q"], "answer": "Z"}
{"id": "e", "question": "Q5?", "answer": "z", "paragraphs": [{"title": "T"}]}
{"title": "a corpus record", "text": "in a dataset"}
{"id": "g", "question": "Q7?", "answer": ["w"]}
`
		ds := parse(t, data)
		assert.Equal(t, []string{"a", "g"}, []string{ds.Examples[0].ID, ds.Examples[1].ID})
		assert.Equal(t, 1, ds.Examples[0].Line)
		assert.Equal(t, 9, ds.Examples[1].Line)
		var lines []int
		for _, s := range ds.Skipped {
			lines = append(lines, s.Line)
		}
		assert.Equal(t, []int{2, 3, 5, 6, 7, 8}, lines)
		assert.Contains(t, ds.Skipped[0].Reason, "malformed JSON")
		assert.Contains(t, ds.Skipped[1].Reason, "not a JSON object")
		assert.Contains(t, ds.Skipped[2].Reason, "empty question")
		assert.Contains(t, ds.Skipped[3].Reason, `"Z" names none of the 2 options`)
		assert.Contains(t, ds.Skipped[4].Reason, "paragraphs[0]: no text")
		assert.Contains(t, ds.Skipped[5].Reason, "unrecognised record: no question field")
	})
	t.Run("JSON array: records keep the line they start on", func(t *testing.T) {
		data := "[\n  {\"question\": \"Q1?\", \"answer\": \"x\"},\n  {\"question\": \"Q2?\"},\n  {\"question\": \"Q3?\",\n   \"answer\": \"y\"}\n]"
		ds := parse(t, data)
		require.Len(t, ds.Examples, 2)
		assert.Equal(t, 2, ds.Examples[0].Line)
		assert.Equal(t, 4, ds.Examples[1].Line)
		assert.Equal(t, "q3", ds.Examples[1].ID)
		assert.Equal(t, []Skipped{{Line: 3, Reason: "unrecognised record: question without answers or gold evidence (fields: [question])"}}, ds.Skipped)
	})
	t.Run("JSON array syntax error names the line", func(t *testing.T) {
		_, err := ParseDataset([]byte("[\n {\"question\": \"Q?\", \"answer\": \"x\"},\n {\"question\": oops}\n]"), "bad.json")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "bad.json:3: malformed JSON")
	})
	t.Run("unknown format is a clear error", func(t *testing.T) {
		_, err := ParseDataset([]byte(`[{"title": "Port Keswyn", "text": "A harbour town."}]`), "corpus.json")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "corpus.json: unknown dataset format: line 1")
		assert.Contains(t, err.Error(), "fields: [text title]")
	})
	t.Run("empty file", func(t *testing.T) {
		_, err := ParseDataset([]byte("  \n"), "empty.json")
		assert.ErrorContains(t, err, "empty file")
	})
	t.Run("an id given twice is an error naming both lines", func(t *testing.T) {
		_, err := ParseDataset([]byte("{\"id\": \"a\", \"question\": \"Q1?\", \"answer\": \"x\"}\n{\"id\": \"a\", \"question\": \"Q2?\", \"answer\": \"y\"}\n"), "dup.jsonl")
		assert.ErrorContains(t, err, `dup.jsonl: line 2: id "a" is already the id of line 1`)
	})
	t.Run("an answer, title or section it cannot read skips the record, naming the field", func(t *testing.T) {
		for _, tc := range []struct{ name, record, reason string }{
			{"answer object without text", `{"question": "Q?", "answer": {"id": "x"}}`, `answer: an object without "text", "value" or "aliases" (fields: [id])`},
			{"answer list holding an object", `{"question": "Q?", "answers": ["x", {"span": "y"}]}`, `answers: item 1: an object without "text", "value" or "aliases"`},
			{"alias list holding a list", `{"question": "Q?", "answer": "x", "answer_aliases": [["y"]]}`, "answer_aliases: item 0 is a list, not a string"},
			{"hotpot answer object", `{"question": "Q?", "answer": {}, "context": [["T", ["s."]]], "supporting_facts": [["T", 0]]}`, `answer: an object without "text", "value" or "aliases"`},
			{"paragraph title object", `{"question": "Q?", "answer": "x", "paragraphs": [{"title": {"en": "T"}, "text": "t"}]}`, "paragraphs[0]: title is an object, not a string"},
			{"PubMedQA section object", `{"question": "Q?", "final_decision": "yes", "context": {"contexts": ["a", {"b": 1}]}}`, `context.contexts: item 1: an object without "text", "value" or "aliases"`},
			{"PubMedQA CONTEXTS list of lists", `{"QUESTION": "Q?", "final_decision": "no", "CONTEXTS": [["a"]]}`, "CONTEXTS: item 0 is a list, not a string"},
			{"SQuAD answers with a text list holding an object", `{"question": "Q?", "answers": {"text": ["x", {}]}}`, `answers: text: item 1: an object without "text", "value" or "aliases"`},
			{"SQuAD answers with a null text", `{"question": "Q?", "answers": {"text": null}}`, `answers: an object without "text", "value" or "aliases" (fields: [text])`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ds, err := ParseDataset([]byte("{\"question\": \"ok?\", \"answer\": \"x\"}\n"+tc.record+"\n"), "qs.jsonl")
				require.NoError(t, err)
				require.Len(t, ds.Examples, 1)
				require.Len(t, ds.Skipped, 1)
				assert.Equal(t, 2, ds.Skipped[0].Line)
				assert.Contains(t, ds.Skipped[0].Reason, tc.reason)
			})
		}
	})
	t.Run("null answers and null list items are absent, not errors; numbers are read", func(t *testing.T) {
		ds := parse(t, `{"question": "Q?", "answer": null, "answers": ["x", null, 1990], "answer_aliases": null}`)
		require.Len(t, ds.Examples, 1)
		assert.Equal(t, []string{"x", "1990"}, ds.Examples[0].Answers)
	})
	t.Run("SQuAD answer objects and TriviaQA value and aliases are read", func(t *testing.T) {
		ds := parse(t, `{"question": "Q1?", "answers": [{"text": "x", "answer_start": 3}, {"text": "y"}]}`+"\n"+
			`{"question": "Q2?", "answer": {"value": "Paris", "aliases": ["Paree", "City of Light"], "normalized_value": "paris"}}`)
		require.Len(t, ds.Examples, 2)
		assert.Equal(t, []string{"x", "y"}, ds.Examples[0].Answers)
		assert.Equal(t, []string{"Paris", "Paree", "City of Light"}, ds.Examples[1].Answers)
		// SQuAD 2.0's unanswerable question: no answers, read (its gold passage scores recall).
		ds = parse(t, `{"question": "Q3?", "answers": {"text": [], "answer_start": []}, "paragraphs": [{"title": "T", "text": "t"}]}`)
		require.Len(t, ds.Examples, 1)
		assert.Empty(t, ds.Examples[0].Answers)
	})
	t.Run("a yes/no record whose plain context is not strings is read, without sections", func(t *testing.T) {
		ds := parse(t, `{"question": "Q?", "label": "yes", "context": [["T", ["s."]]]}`)
		require.Len(t, ds.Examples, 1)
		assert.Equal(t, "yes", ds.Examples[0].Label)
		assert.Empty(t, ds.Examples[0].Spans)
	})
	t.Run("paragraphs without a title are read with a warning naming them", func(t *testing.T) {
		ds := parse(t, "{\"question\": \"Q1?\", \"answer\": \"x\", \"paragraphs\": [{\"title\": \"T\", \"text\": \"a\"}, {\"text\": \"b\"}, {\"title\": \" \", \"text\": \"c\"}]}\n"+
			"{\"question\": \"Q2?\", \"answer\": \"y\", \"paragraphs\": [{\"title\": \"U\", \"text\": \"d\"}]}\n")
		require.Len(t, ds.Examples, 2)
		require.Len(t, ds.Warnings, 1)
		assert.Equal(t, 1, ds.Warnings[0].Line)
		assert.Contains(t, ds.Warnings[0].Reason, "paragraphs[1], paragraphs[2]: no title")
		assert.Equal(t, GoldPassage{Text: "b"}, ds.Examples[0].Gold[1])
	})
	t.Run("a record without an id never takes another's", func(t *testing.T) {
		// The first record would be q1, which the second names itself.
		ds := parse(t, "{\"question\": \"Q1?\", \"answer\": \"x\"}\n{\"id\": \"q1\", \"question\": \"Q2?\", \"answer\": \"y\"}\n")
		require.Len(t, ds.Examples, 2)
		assert.Equal(t, []string{"q1-2", "q1"}, []string{ds.Examples[0].ID, ds.Examples[1].ID})
	})
}

func TestCorpusFromDataset(t *testing.T) {
	data := `[
{"_id": "1", "question": "Q1?", "answer": "a", "supporting_facts": [["A", 0]],
 "context": [["A", ["Alpha one.", " Alpha two."]], ["B", ["Beta."]]]},
{"_id": "2", "question": "Q2?", "answer": "b", "supporting_facts": [["B", 0]],
 "context": [["B", ["Beta."]], ["C", ["Gamma."]], ["A", ["Alpha, another rendering."]]]}
]`
	path := filepath.Join(t.TempDir(), "hotpot.json")
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
	ps, _, err := CorpusFromDataset(path)
	require.NoError(t, err)
	type tt struct{ Title, Text, Source string }
	var got []tt
	for _, p := range ps {
		got = append(got, tt{p.Title, p.Text, p.Source})
	}
	assert.Equal(t, []tt{
		{"A", "Alpha one. Alpha two.", path + ":2"},
		{"B", "Beta.", path + ":2"},
		{"C", "Gamma.", path + ":4"},
		{"A", "Alpha, another rendering.", path + ":4"}, // same title, other text: kept
	}, got)

	var buf bytes.Buffer
	require.NoError(t, WriteCorpus(&buf, ps))
	var back []map[string]string
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	assert.Equal(t, map[string]string{"title": "C", "text": "Gamma."}, back[2])

	lit := filepath.Join(t.TempDir(), "lit.json")
	require.NoError(t, os.WriteFile(lit, []byte(`[{"question": "Q?", "answer": "a", "paragraphs": []}]`), 0o644))
	_, _, err = CorpusFromDataset(lit)
	assert.ErrorContains(t, err, "ship no passages")
}

func TestMultiHopRAGFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mhrag.json")
	require.NoError(t, os.WriteFile(path, []byte(`[
 {"query": "Did the company that TechCrunch says raised funds also appear in The Verge?", "answer": "Yes",
  "question_type": "comparison_query",
  "evidence_list": [{"title": "A", "source": "TechCrunch", "fact": "Acme raised $10M."},
                    {"title": "B", "source": "The Verge", "fact": "Acme launched a phone."}]},
 {"query": "Who won?", "answer": "Insufficient information.", "question_type": "null_query", "evidence_list": []}
]`), 0o644))
	ds, err := ReadDataset(path)
	require.NoError(t, err)
	require.Len(t, ds.Examples, 2)
	ex := ds.Examples[0]
	assert.Equal(t, FormatMultiHopRAG, ex.Format)
	assert.Equal(t, []string{"Yes"}, ex.Answers)
	assert.Equal(t, []string{"Acme raised $10M.", "Acme launched a phone."}, ex.Spans)
	assert.Empty(t, ds.Examples[1].Spans)
}
