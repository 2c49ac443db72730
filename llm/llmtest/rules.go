package llmtest

import (
	"regexp"
	"strings"
	"time"
)

// A Matcher decides whether a rule applies to a request. Matchers run while the
// server holds its lock: they must not call the Server's methods.
type Matcher func(Request) bool

// Any matches every request.
func Any() Matcher { return func(Request) bool { return true } }

// UserContains matches a chat request whose last user message contains sub, or an
// embeddings request one of whose inputs contains sub.
func UserContains(sub string) Matcher {
	return func(r Request) bool {
		if r.Endpoint == Embeddings {
			return anyContains(r.Input, sub)
		}
		return strings.Contains(r.LastUser(), sub)
	}
}

// UserMatches is UserContains with a regular expression (RE2 syntax). It panics if
// pattern does not compile, like regexp.MustCompile: patterns are written in tests.
func UserMatches(pattern string) Matcher {
	re := regexp.MustCompile(pattern)
	return func(r Request) bool {
		if r.Endpoint == Embeddings {
			for _, in := range r.Input {
				if re.MatchString(in) {
					return true
				}
			}
			return false
		}
		return re.MatchString(r.LastUser())
	}
}

// MessageContains matches a chat request any of whose messages (system, user or
// assistant) contains sub, or an embeddings request one of whose inputs contains sub.
func MessageContains(sub string) Matcher {
	return func(r Request) bool {
		if r.Endpoint == Embeddings {
			return anyContains(r.Input, sub)
		}
		for _, m := range r.Messages {
			if strings.Contains(m.Content, sub) {
				return true
			}
		}
		return false
	}
}

// MessageMatches is MessageContains with a regular expression. It panics if pattern
// does not compile.
func MessageMatches(pattern string) Matcher {
	re := regexp.MustCompile(pattern)
	return func(r Request) bool {
		texts := r.Input
		if r.Endpoint == Chat {
			texts = make([]string, len(r.Messages))
			for i, m := range r.Messages {
				texts[i] = m.Content
			}
		}
		for _, s := range texts {
			if re.MatchString(s) {
				return true
			}
		}
		return false
	}
}

// SystemContains matches a chat request whose system (or developer) message contains sub.
func SystemContains(sub string) Matcher {
	return func(r Request) bool {
		for _, m := range r.Messages {
			if (m.Role == "system" || m.Role == "developer") && strings.Contains(m.Content, sub) {
				return true
			}
		}
		return false
	}
}

// ModelIs matches requests for the named model.
func ModelIs(name string) Matcher { return func(r Request) bool { return r.Model == name } }

// EndpointIs matches requests to one endpoint: [Chat] or [Embeddings].
func EndpointIs(e Endpoint) Matcher { return func(r Request) bool { return r.Endpoint == e } }

// All matches a request every one of ms matches.
func All(ms ...Matcher) Matcher {
	return func(r Request) bool {
		for _, m := range ms {
			if !m(r) {
				return false
			}
		}
		return true
	}
}

// Not matches a request m does not match.
func Not(m Matcher) Matcher { return func(r Request) bool { return !m(r) } }

func anyContains(texts []string, sub string) bool {
	for _, s := range texts {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// Reply is a scripted chat answer.
type Reply struct {
	Content string
	// PromptTokens and CompletionTokens are reported in the usage block; zero means
	// "estimate": the number of whitespace-separated words in the messages and in Content.
	PromptTokens     int
	CompletionTokens int
	// FinishReason defaults to "stop".
	FinishReason string
}

// A Responder computes the answer to a chat request.
type Responder func(Request) Reply

// A Rule scripts the server's behaviour for the requests its matcher accepts. Create
// one with [Server.On]; its methods return the rule so calls chain.
type Rule struct {
	s       *Server
	name    string
	match   Matcher
	respond Responder // nil: the server's default
	fault   *Fault
	times   int // 0: unlimited
	hits    int
}

// Reply makes the rule answer with content.
func (r *Rule) Reply(content string) *Rule {
	return r.ReplyWith(Reply{Content: content})
}

// ReplyWith makes the rule answer with reply (content, token counts, finish reason).
func (r *Rule) ReplyWith(reply Reply) *Rule {
	return r.ReplyFunc(func(Request) Reply { return reply })
}

// ReplyFunc makes the rule answer with f(request). f may be called concurrently.
func (r *Rule) ReplyFunc(f Responder) *Rule {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.respond = f
	return r
}

// Fault makes the rule misbehave as f says instead of (or, for a pure delay, before)
// answering.
func (r *Rule) Fault(f Fault) *Rule {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.fault = &f
	return r
}

// Delay makes the rule answer normally, but only after d (see [Slow]).
func (r *Rule) Delay(d time.Duration) *Rule { return r.Fault(Slow(d)) }

// Times limits the rule to its next n matching requests; after that it is skipped
// and later rules (or the default) answer. n <= 0 means unlimited.
func (r *Rule) Times(n int) *Rule {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.times = n
	return r
}

// Named labels the rule; the label is recorded in [Request.Rule] of the requests it answers.
func (r *Rule) Named(name string) *Rule {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	r.name = name
	return r
}

// Hits reports how many requests the rule has handled.
func (r *Rule) Hits() int {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return r.hits
}

// Fault describes how the server misbehaves for one request. Fields combine: Delay
// applies first, then the first set of Status, Malformed, Truncated, Hangup and Drop
// decides the answer; a Fault with only Delay answers normally after the delay. Build
// one with the constructors below or set the fields directly.
type Fault struct {
	// Delay holds the answer back. The server stops waiting as soon as the client
	// disconnects (a client timeout), and records the request with Status 0.
	Delay time.Duration
	// Status, when non-zero, is the HTTP status of an OpenAI-style error answer.
	Status int
	// RetryAfter is sent as the Retry-After header with Status: seconds ("2") or an
	// HTTP date.
	RetryAfter string
	// Message is the error message of the OpenAI-style error body sent with Status;
	// default "llmtest: injected <status> <text>".
	Message string
	// Body, when set with Status, replaces the OpenAI-style error body (say, an HTML
	// page from a proxy).
	Body string
	// Malformed answers 200 with a JSON content type and a body that is not JSON.
	Malformed bool
	// Truncated answers 200 declaring a Content-Length larger than the body it sends.
	Truncated bool
	// Hangup writes the status line, headers and half the body, then closes the connection.
	Hangup bool
	// Drop closes the connection without answering at all.
	Drop bool
}

// Slow answers normally after d.
func Slow(d time.Duration) Fault { return Fault{Delay: d} }

// RateLimited answers 429 with Retry-After: retryAfter (omitted when empty).
func RateLimited(retryAfter string) Fault {
	return Fault{Status: 429, RetryAfter: retryAfter}
}

// ServerError answers with status (500, 502, 503, …) and an OpenAI-style error body.
func ServerError(status int) Fault { return Fault{Status: status} }

// Status answers with any HTTP status (400, 401, 404, …) and an OpenAI-style error body.
func Status(status int) Fault { return Fault{Status: status} }

// Malformed answers 200 with a body that is not JSON.
func Malformed() Fault { return Fault{Malformed: true} }

// Truncated answers 200 with a body shorter than its declared Content-Length.
func Truncated() Fault { return Fault{Truncated: true} }

// Hangup cuts the connection half-way through a 200 answer's body.
func Hangup() Fault { return Fault{Hangup: true} }

// Drop closes the connection without answering.
func Drop() Fault { return Fault{Drop: true} }

func (f Fault) String() string {
	var parts []string
	if f.Delay > 0 {
		parts = append(parts, "delay "+f.Delay.String())
	}
	switch {
	case f.Status != 0:
		s := "status " + itoa(f.Status)
		if f.RetryAfter != "" {
			s += " retry-after " + f.RetryAfter
		}
		parts = append(parts, s)
	case f.Malformed:
		parts = append(parts, "malformed")
	case f.Truncated:
		parts = append(parts, "truncated")
	case f.Hangup:
		parts = append(parts, "hangup")
	case f.Drop:
		parts = append(parts, "drop")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
