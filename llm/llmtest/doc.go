// Package llmtest is an in-process, scriptable OpenAI-compatible server for tests.
//
// Every graphloom package that talks to a language model is tested against this
// server instead of a real one: it listens on loopback (httptest), answers
// /v1/chat/completions and /v1/embeddings (also without the /v1 prefix), and records
// every request so a test can assert what was sent and how often.
//
// [NewServer] starts a server that stops when the test ends; [New] one the caller
// closes (for examples and helpers outside a test).
//
// # Scripting answers
//
// Rules are tried in the order they were added; the first one whose [Matcher] accepts
// a request (and whose [Rule.Times] budget is not spent) answers it. Requests no rule
// matches get the default answer, "{}" unless [Server.SetDefault] says otherwise.
//
//	srv := llmtest.NewServer(t)
//	srv.On(llmtest.UserContains("extract entities")).
//		Reply(`{"entities": [{"name": "Alice", "type": "PERSON"}]}`)
//	srv.On(llmtest.UserMatches(`(?i)summari[sz]e`)).
//		ReplyFunc(func(r llmtest.Request) llmtest.Reply {
//			return llmtest.Reply{Content: "summary of " + r.LastUser()}
//		})
//	cfg := llm.Config{BaseURL: srv.URL(), Model: "test-model", EmbedModel: "test-embed"}
//
// Token counts in the usage block come from [Reply.PromptTokens] and
// [Reply.CompletionTokens], or are estimated as whitespace-separated words.
//
// # Embeddings
//
// /v1/embeddings answers with deterministic hashed bag-of-words vectors ([Embed]),
// [DefaultEmbedDim] wide unless [Server.SetEmbedDim] or [Server.SetEmbedder] change
// it: equal texts get equal vectors and texts sharing words get a positive cosine
// similarity, which is enough to test retrieval end to end. Both "float" and "base64"
// encoding formats are served.
//
// # Faults
//
// A [Fault] makes the server misbehave: answer late ([Slow]; a client whose timeout
// is shorter gives up), refuse with 429 and a Retry-After header ([RateLimited]),
// fail with a 5xx ([ServerError]), send a body that is not JSON ([Malformed]),
// declare a Content-Length larger than the body it sends ([Truncated]), or cut the
// connection half-way through the body ([Hangup]). Attach one to a rule
// ([Rule.Fault], usually with [Rule.Times]) or to the next n requests whatever they
// are ([Server.FailNext]):
//
//	srv.FailNext(2, llmtest.RateLimited("1")) // two 429s, then normal answers
//	srv.On(llmtest.UserContains("slow")).Fault(llmtest.Slow(time.Second))
//
// # Assertions
//
// [Server.Requests] returns every request received, in arrival order, with its
// decoded messages, raw body and the status it was answered with. [Server.Count],
// [Server.CountMatching], [Server.Answered], [Server.Unmatched], [Server.Duplicates]
// and [Server.MaxInFlight] cover the common checks: "the second run made zero HTTP
// calls", "no prompt was sent twice", "never more than N requests in flight".
//
// The server is safe for concurrent use; rules may be added while requests are served.
package llmtest
