// Package scalecorpus synthesises the large corpora the scale and lifecycle benchmarks
// index: a base corpus replicated with every name renamed per replica, so the graph
// grows instead of merging; and it runs a command measuring its wall time and peak RSS.
package scalecorpus

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode"
)

// Passage is one corpus record.
type Passage struct {
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Load reads a JSON array of {title, text}.
func Load(path string) ([]Passage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var base []Passage
	if err := json.Unmarshal(data, &base); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(base) == 0 {
		return nil, fmt.Errorf("%s: no passages", path)
	}
	return base, nil
}

// Synthesise returns n passages: base repeated, replica r ≥ 1 with every capitalised
// word (and so every name and title the rule extractor can see) renamed by a suffix
// that is unique to the replica, so replicas share no entity.
func Synthesise(base []Passage, n int) []Passage {
	out := make([]Passage, 0, n)
	for i := range n {
		p, r := base[i%len(base)], i/len(base)
		if r > 0 {
			p = Passage{Title: rename(p.Title, r), Text: rename(p.Text, r)}
		}
		out = append(out, p)
	}
	return out
}

// rename appends the replica's suffix to every word that starts with an upper-case
// letter: "Paris" → "Parisqab" for replica 1 ("qa" + letters of r in base 26).
func rename(s string, r int) string {
	suffix := "q" + ReplicaLetters(r)
	var b strings.Builder
	b.Grow(len(s) + len(s)/4)
	inWord, capital := false, false
	for _, c := range s {
		letter := unicode.IsLetter(c)
		if inWord && !letter && capital {
			b.WriteString(suffix)
		}
		if letter && !inWord {
			capital = unicode.IsUpper(c)
		}
		inWord = letter
		b.WriteRune(c)
	}
	if inWord && capital {
		b.WriteString(suffix)
	}
	return b.String()
}

// ReplicaLetters is replica r's suffix after the "q": r in base 26, letters a–z.
func ReplicaLetters(r int) string {
	var out []byte
	for {
		out = append(out, byte('a'+r%26))
		r /= 26
		if r == 0 {
			break
		}
	}
	slices.Reverse(out)
	return string(out)
}

// Measure runs bin with args and returns its wall time and peak RSS (MiB).
func Measure(bin string, args ...string) (float64, float64, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = nil, os.Stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, err
	}
	sec := time.Since(t0).Seconds()
	rss := math.NaN()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = float64(ru.Maxrss) / 1024
	}
	return sec, rss, nil
}

// WriteJSON writes v as indented JSON to path.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
