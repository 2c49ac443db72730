package llm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Counters account for a client's work, overall or for one stage.
type Counters struct {
	// Requests is the number of logical requests: Chat calls plus texts given to Embed.
	Requests int64
	// Calls is the number of HTTP requests sent, retries included.
	Calls int64
	// CacheHits is the number of requests answered from the on-disk cache.
	CacheHits int64
	// CacheCorrupt is the number of unreadable cache entries met (treated as misses
	// and rewritten once answered).
	CacheCorrupt int64
	// CacheWriteErrors is the number of answers that could not be stored.
	CacheWriteErrors int64
	// Deduplicated is the number of requests answered by an identical request in
	// flight at the same time, or by an equal text earlier in the same Embed call.
	Deduplicated int64
	// Retries is the number of attempts repeated after a retryable failure.
	Retries int64
	// Failures counts failed HTTP attempts by kind, retried ones included.
	Failures map[Kind]int64
	// Errors is the number of requests that returned an error after their retries
	// (cancellations excluded).
	Errors int64
	// Unparseable is the number of answers ChatJSON could not decode.
	Unparseable int64
	// Reasked is the number of cached unreadable answers asked again past the cache
	// (Config.ReaskUnparseable).
	Reasked int64
	// Cut is the number of answers cut at the token limit (FinishReason "length"):
	// their unfinished last value is dropped (ParseAnswer). Many mean MaxTokens is
	// too low for the prompt.
	Cut int64
	// PromptTokens and CompletionTokens are the tokens the server reported for the
	// answers it sent (cache hits cost none).
	PromptTokens     int64
	CompletionTokens int64
	// RequestTime is the wall time spent in HTTP attempts, summed over attempts
	// (concurrent attempts add up).
	RequestTime time.Duration
}

// Usage is a snapshot of a client's accounting: the totals, and the same counters
// per stage (ChatRequest.Stage; "chat" when unset, "embed" for embeddings).
type Usage struct {
	Counters
	Stages map[string]Counters
}

// String summarises the usage in one paragraph, for the end of a CLI command.
func (u Usage) String() string {
	if u.Requests == 0 && u.Calls == 0 {
		return "LLM: no requests."
	}
	var b strings.Builder
	b.WriteString("LLM: ")
	b.WriteString(u.Counters.summary())
	b.WriteString(".")
	if len(u.Stages) > 1 {
		b.WriteString(" By stage:")
		for i, name := range slices.Sorted(maps.Keys(u.Stages)) {
			if i > 0 {
				b.WriteString(";")
			}
			s := u.Stages[name]
			fmt.Fprintf(&b, " %s %s", name, s.summary())
		}
		b.WriteString(".")
	}
	return b.String()
}

func (c Counters) summary() string {
	parts := []string{fmt.Sprintf("%d requests, %d HTTP calls", c.Requests, c.Calls)}
	if c.CacheHits > 0 || c.CacheCorrupt > 0 {
		s := fmt.Sprintf("%d cache hits", c.CacheHits)
		if c.CacheCorrupt > 0 {
			s += fmt.Sprintf(" (%d corrupt entries ignored)", c.CacheCorrupt)
		}
		parts = append(parts, s)
	}
	if c.CacheWriteErrors > 0 {
		parts = append(parts, fmt.Sprintf("%d cache write errors", c.CacheWriteErrors))
	}
	if c.Deduplicated > 0 {
		parts = append(parts, fmt.Sprintf("%d deduplicated", c.Deduplicated))
	}
	if c.Retries > 0 {
		parts = append(parts, fmt.Sprintf("%d retries", c.Retries))
	}
	if len(c.Failures) > 0 {
		var fs []string
		for _, k := range slices.Sorted(maps.Keys(c.Failures)) {
			fs = append(fs, fmt.Sprintf("%s %d", k, c.Failures[k]))
		}
		parts = append(parts, "failed attempts: "+strings.Join(fs, ", "))
	}
	if c.Errors > 0 {
		parts = append(parts, fmt.Sprintf("%d failed requests", c.Errors))
	}
	if c.Unparseable > 0 {
		parts = append(parts, fmt.Sprintf("%d unparseable answers", c.Unparseable))
	}
	if c.Reasked > 0 {
		parts = append(parts, fmt.Sprintf("%d cached unreadable answers asked again", c.Reasked))
	}
	if c.Cut > 0 {
		parts = append(parts, fmt.Sprintf("%d answers cut at the token limit", c.Cut))
	}
	parts = append(parts, fmt.Sprintf("%s prompt + %s completion tokens",
		humanCount(c.PromptTokens), humanCount(c.CompletionTokens)))
	parts = append(parts, c.RequestTime.Round(time.Millisecond).String()+" in requests")
	return strings.Join(parts, ", ")
}

// humanCount prints small counts exactly and large ones as 12.3k or 4.56M.
func humanCount(n int64) string {
	switch {
	case n < 10_000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	}
}

// usageTracker accumulates Usage; safe for concurrent use.
type usageTracker struct {
	mu     sync.Mutex
	total  Counters
	stages map[string]*Counters
}

func newUsageTracker() *usageTracker {
	return &usageTracker{stages: make(map[string]*Counters)}
}

// add applies f to the totals and to the stage's counters.
func (t *usageTracker) add(stage string, f func(*Counters)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.stages[stage]
	if s == nil {
		s = &Counters{}
		t.stages[stage] = s
	}
	f(&t.total)
	f(s)
}

func (t *usageTracker) snapshot() Usage {
	t.mu.Lock()
	defer t.mu.Unlock()
	u := Usage{Counters: t.total.clone(), Stages: make(map[string]Counters, len(t.stages))}
	for k, s := range t.stages {
		u.Stages[k] = s.clone()
	}
	return u
}

func (c Counters) clone() Counters {
	c.Failures = maps.Clone(c.Failures)
	return c
}

func (c *Counters) failure(k Kind) {
	if c.Failures == nil {
		c.Failures = make(map[Kind]int64)
	}
	c.Failures[k]++
}
