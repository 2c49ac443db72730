// Package llm is graphloom's client for OpenAI-compatible language-model servers:
// Ollama, vLLM, the llama.cpp server and OpenAI itself. It is built on the official
// openai-go SDK and adds what long indexing runs need: bounded concurrency, retries
// with backoff, an on-disk response cache, accounting, and tolerant parsing of the
// JSON that models write.
//
//	client, err := llm.New(llm.ConfigFromEnv(nil))
//	…
//	var out struct{ Entities []string `json:"entities"` }
//	_, err = client.ChatJSON(ctx, llm.ChatRequest{
//		Messages: []llm.Message{llm.System(prompt), llm.User(chunk)},
//		JSONMode: true,
//		Stage:    "extract",
//	}, &out)
//	…
//	fmt.Println(client.Usage()) // one paragraph for the end of a command
//
// # Concurrency
//
// A Client holds at most Config.Concurrency HTTP requests in flight; callers fan
// out as widely as they like (or use ChatAll) and wait for a slot. Identical chat
// requests in flight at the same time are sent once when the cache is on.
//
// # Retries
//
// Timeouts (Config.Timeout per attempt), network errors, 429, 5xx and malformed
// 200 answers are retried up to Config.MaxRetries times, waiting a uniformly random
// time below min(BackoffMax, BackoffBase·2ⁿ) ("full jitter"), or the server's
// Retry-After (seconds or HTTP date) capped at BackoffMax. Other 4xx answers fail at
// once. Failures come back as *APIError, whose Kind says what went wrong; Classify
// maps any error of this package to a Kind, so a pipeline can count and skip
// per-item failures (KindUnparseable, KindBadResponse, KindClientError) and stop on
// the others.
//
// # Cache
//
// With Config.CacheDir set, every answer is stored as it arrives, one file per
// answer (CacheDir/ab/abcdef….json), written atomically: a run killed half-way
// resumes without resending anything it was answered. The file name is the SHA-256
// of a canonical JSON description of the request: endpoint, base URL, model,
// messages and every parameter that changes the answer (temperature, token cap,
// JSON mode) — never the API key, and not the accounting stage. Embeddings are
// cached per text. An unreadable entry is a miss (counted in Usage.CacheCorrupt),
// never an error; a killed writer may leave a ".tmp-*" file, which readers ignore and
// a later client opening the cache removes once it is an hour old (each opening
// sweeps a few shard folders at random).
//
// # Secrets
//
// The API key is sent as a bearer token and nowhere else: Config's String,
// GoString and LogValue redact it, it is not part of cache keys or entries, and
// error messages have it removed should a server echo it.
//
// # Testing
//
// Package llmtest provides an in-process, scriptable OpenAI-compatible server for
// the tests of every package that uses this one.
package llm
