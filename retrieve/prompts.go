package retrieve

// Prompts of the LLM steps of retrieval, written for graphloom after the contracts of
// HippoRAG 2: the recognition-memory filter's DSPy-style field markers and JSON fact
// lists, and the reader's "Wikipedia Title:" passages followed by the question.

const filterSystem = `You are the recognition-memory step of a retrieval system for multi-hop questions.
You are given a question and a list of candidate facts, each a [subject, predicate, object] triple, that were retrieved for it.
Select the facts that help answer the question, at most 4, copied exactly as given; select none if none helps.

Your input fields are:
1. question
2. fact_before_filter: {"fact": [[subject, predicate, object], ...]}
Your output fields are:
1. fact_after_filter: {"fact": [[subject, predicate, object], ...]}

Answer in this format:
[[ ## fact_after_filter ## ]]
{"fact": [...]}

[[ ## completed ## ]]`

const filterUserFormat = "[[ ## question ## ]]\n%s\n\n[[ ## fact_before_filter ## ]]\n%s\n\n" +
	"Respond with the field `[[ ## fact_after_filter ## ]]` (a JSON object with the key \"fact\"), then end with `[[ ## completed ## ]]`."

var filterDemos = [][2]string{
	{
		"[[ ## question ## ]]\nWhich river flows through the birthplace of the engraver Ilse Moravec?\n\n" +
			"[[ ## fact_before_filter ## ]]\n" + `{"fact": [["ilse moravec", "born in", "brno"], ["brno", "lies on", "svratka"], ["karel sova", "profession", "designer"], ["lindner workshop", "located in", "jablonec"]]}` +
			"\n\nRespond with the field `[[ ## fact_after_filter ## ]]` (a JSON object with the key \"fact\"), then end with `[[ ## completed ## ]]`.",
		"[[ ## fact_after_filter ## ]]\n" + `{"fact": [["ilse moravec", "born in", "brno"], ["brno", "lies on", "svratka"]]}` + "\n\n[[ ## completed ## ]]",
	},
	{
		"[[ ## question ## ]]\nWho painted the ceiling of the Aurel Theatre?\n\n" +
			"[[ ## fact_before_filter ## ]]\n" + `{"fact": [["aurel theatre", "opened in", "1902"], ["marta ilic", "sang at", "aurel theatre"]]}` +
			"\n\nRespond with the field `[[ ## fact_after_filter ## ]]` (a JSON object with the key \"fact\"), then end with `[[ ## completed ## ]]`.",
		"[[ ## fact_after_filter ## ]]\n" + `{"fact": []}` + "\n\n[[ ## completed ## ]]",
	},
}

const readerSystem = `You answer questions using the Wikipedia-style passages given before them.
First reason briefly, after "Thought: ", about which passages hold the facts you need and how they combine.
Then finish with "Answer: " and a concise answer: an entity, a date, a number or a short phrase, without explanation.`

const readerDemoUser = `Wikipedia Title: Ilse Moravec
Ilse Moravec (born 1931 in Brno) was a Czech glass engraver.

Wikipedia Title: Brno
Brno is a city in Moravia on the Svratka and Svitava rivers.

Question: On which rivers is the birthplace of Ilse Moravec?
Thought: `

const readerDemoAssistant = `Ilse Moravec was born in Brno. Brno lies on the Svratka and Svitava rivers.
Answer: Svratka and Svitava`
