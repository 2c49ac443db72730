package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"time"
)

// Script is a server's behaviour written down as JSON, for `graphloom fake-llm
// --script FILE`: rules tried in order (the first match answers), then the default.
//
//	{
//	  "default": "{}",
//	  "rules": [
//	    {"system_contains": "extract named entities", "user_contains": "Port Keswyn",
//	     "reply": "{\"named_entities\": [\"Port Keswyn\", \"Tomas Brell\"]}"},
//	    {"user_matches": "(?i)gull rock", "status": 503, "times": 2},
//	    {"any": true, "delay": "2s", "reply": "{}"}
//	  ]
//	}
//
// A rule needs at least one matcher (system_contains, user_contains, user_matches, or
// any). Besides its reply, a rule may fail with an HTTP status (with retry_after),
// answer late (delay, a Go duration) or only serve its next `times` requests.
// Embeddings are always answered with the deterministic hashed vectors of [Embed].
type Script struct {
	Default string       `json:"default"`
	Rules   []ScriptRule `json:"rules"`
}

// ScriptRule is one rule of a Script.
type ScriptRule struct {
	Any            bool   `json:"any,omitempty"`
	SystemContains string `json:"system_contains,omitempty"`
	UserContains   string `json:"user_contains,omitempty"`
	UserMatches    string `json:"user_matches,omitempty"`
	Reply          string `json:"reply,omitempty"`
	Status         int    `json:"status,omitempty"`
	RetryAfter     string `json:"retry_after,omitempty"`
	Delay          string `json:"delay,omitempty"`
	Times          int    `json:"times,omitempty"`
}

// ReadScript reads a Script from a JSON file, rejecting unknown fields and rules
// without a matcher.
func ReadScript(path string) (*Script, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("llmtest: script: %w", err)
	}
	defer f.Close()
	return DecodeScript(f, path)
}

// DecodeScript decodes and checks a Script; name labels errors.
func DecodeScript(r io.Reader, name string) (*Script, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var sc Script
	if err := dec.Decode(&sc); err != nil {
		return nil, fmt.Errorf("llmtest: script %s: %w", name, err)
	}
	for i, r := range sc.Rules {
		if !r.Any && r.SystemContains == "" && r.UserContains == "" && r.UserMatches == "" {
			return nil, fmt.Errorf("llmtest: script %s: rule %d has no matcher (any, system_contains, user_contains, user_matches)", name, i)
		}
		if r.UserMatches != "" {
			if _, err := regexp.Compile(r.UserMatches); err != nil {
				return nil, fmt.Errorf("llmtest: script %s: rule %d: user_matches: %w", name, i, err)
			}
		}
		if r.Delay != "" {
			if d, err := time.ParseDuration(r.Delay); err != nil || d < 0 {
				return nil, fmt.Errorf("llmtest: script %s: rule %d: delay %q: want a duration such as 2s", name, i, r.Delay)
			}
		}
		if r.Status != 0 && (r.Status < 400 || r.Status > 599) {
			return nil, fmt.Errorf("llmtest: script %s: rule %d: status %d: want 400-599", name, i, r.Status)
		}
		if r.Times < 0 {
			return nil, fmt.Errorf("llmtest: script %s: rule %d: times %d is negative", name, i, r.Times)
		}
	}
	return &sc, nil
}

// Apply adds the script's rules and default answer to s.
func (sc *Script) Apply(s *Server) {
	if sc.Default != "" {
		def := sc.Default
		s.SetDefault(func(Request) Reply { return Reply{Content: def} })
	}
	for _, r := range sc.Rules {
		var ms []Matcher
		if r.SystemContains != "" {
			ms = append(ms, SystemContains(r.SystemContains))
		}
		if r.UserContains != "" {
			ms = append(ms, UserContains(r.UserContains))
		}
		if r.UserMatches != "" {
			ms = append(ms, UserMatches(r.UserMatches))
		}
		rule := s.On(All(ms...))
		if r.Reply != "" {
			rule.Reply(r.Reply)
		}
		var f Fault
		if r.Delay != "" {
			f.Delay, _ = time.ParseDuration(r.Delay)
		}
		f.Status, f.RetryAfter = r.Status, r.RetryAfter
		if f != (Fault{}) {
			rule.Fault(f)
		}
		if r.Times > 0 {
			rule.Times(r.Times)
		}
	}
}
