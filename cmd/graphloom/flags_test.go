package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/graphloom/graphloom/graphio/interop/interoptest"
)

// TestEveryNumericFlagHasARange checks that no numeric flag escapes validation.
func TestEveryNumericFlagHasARange(t *testing.T) {
	for _, cmd := range newRootCmd().Commands() {
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if numericFlagTypes[f.Value.Type()] {
				_, ok := decodeRange(f.Annotations[rangeAnnotation])
				assert.True(t, ok, "%s --%s has no range (limitFlag)", cmd.Name(), f.Name)
			}
		})
	}
}

func TestFlagRange(t *testing.T) {
	for _, tc := range []struct {
		r    flagRange
		x    float64
		want bool
	}{
		{unit, 0, true}, {unit, 1, true}, {unit, -0.01, false}, {unit, 1.5, false},
		{openUnit, 0, false}, {openUnit, 1, false}, {openUnit, 0.5, true},
		{atLeast1(10), 0, false}, {atLeast1(10), 10, true}, {atLeast1(10), 11, false},
		{anyInt64, -9.2e18, true}, {unit, nan(), false},
	} {
		assert.Equal(t, tc.want, tc.r.contains(tc.x), "%v in %s", tc.x, tc.r)
	}
	assert.Equal(t, "(0, 1]", flagRange{lo: 0, hi: 1, loOpen: true}.String())
}

// flagWalkBase gives each command the arguments it needs to run on a small index,
// so that each numeric flag can be tried on its own.
func flagWalkBase(t *testing.T, dir, idx, corpus string) map[string][]string {
	qs := filepath.Join(dir, "q.json")
	require.NoError(t, os.WriteFile(qs, []byte(`[{"id":"q1","question":"Where was Mara Vell1 born?","answer":["Ostrid1"],"paragraphs":[{"title":"Passage 1","text":"x","is_supporting":true}]}]`), 0o644))
	lightrag := filepath.Join(dir, "lightrag")
	require.NoError(t, interoptest.Sample().Write(lightrag))
	return map[string][]string{
		"import":    {"import", "--from", "lightrag", lightrag, "--out", filepath.Join(dir, "walk-import.gl")},
		"index":     {"index", "--corpus", corpus, "--out", filepath.Join(dir, "walk.gl")},
		"stats":     {"stats", "--index", idx},
		"query":     {"query", "--index", idx, "Where was Mara Vell1 born?"},
		"augment":   {"augment", "--index", idx, "--out", filepath.Join(dir, "walk-aug.gl"), "--selector", "random", "--no-checkpoint"},
		"eval":      {"eval", "--index", idx, "--dataset", qs, "--retrievers", "bm25,ppr"},
		"serve":     {"serve", "--index", idx, "--dry-run"},
		"synth":     {"synth", "--index", idx, "--out", filepath.Join(dir, "walk-qa.jsonl"), "--generator", "template"},
		"calibrate": {"calibrate", "--index", idx, "--out", filepath.Join(dir, "walk-cal.gl"), "--force"},
		"delete":    {"delete", "--index", idx, "--title", "Passage 1", "--plan"},
	}
}

// TestFlagWalk runs every numeric flag of every command with 0, -1 and a huge value:
// nothing panics, and the exit code is 0 (the value is fine), 1 or 2 (a usage error
// naming the flag).
func TestFlagWalk(t *testing.T) {
	dir := t.TempDir()
	corpus := writeCorpus(t, 4)
	idx := filepath.Join(dir, "x.gl")
	r := run(t, nil, "index", "--corpus", corpus, "--out", idx)
	require.Equal(t, 0, r.code, r.stderr)
	base := flagWalkBase(t, dir, idx, corpus)
	walked := 0
	for _, cmd := range newRootCmd().Commands() {
		args, ok := base[cmd.Name()]
		if !ok {
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				assert.False(t, numericFlagTypes[f.Value.Type()], "%s has numeric flag --%s but no flag-walk arguments", cmd.Name(), f.Name)
			})
			continue
		}
		r := run(t, nil, args...)
		require.Equal(t, 0, r.code, "the base arguments of %s run: %s", cmd.Name(), r.stderr)
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !numericFlagTypes[f.Value.Type()] {
				return
			}
			for _, v := range hugeAndSmall(f) {
				walked++
				name := cmd.Name() + "/" + f.Name + "=" + v
				t.Run(name, func(t *testing.T) {
					r := run(t, nil, append(append([]string{}, args...), "--"+f.Name+"="+v)...)
					assert.NotContains(t, r.stderr, "panic", name)
					assert.NotContains(t, r.stderr, "goroutine ", name)
					assert.Contains(t, []int{0, 1, 2}, r.code, "%s: %s", name, r.stderr)
					if r.code == 2 {
						assert.Contains(t, r.stderr, "--"+f.Name, "a usage error names the flag")
					}
				})
			}
		})
	}
	assert.Greater(t, walked, 60)
}

func hugeAndSmall(f *pflag.Flag) []string {
	huge := "9223372036854775807"
	switch f.Value.Type() {
	case "float32", "float64":
		huge = "1e300"
	case "duration":
		huge = "2562047h"
	}
	return []string{"0", "-1", huge}
}

func nan() float64 { var z float64; return z / z }

// TestNumericFlagErrors pins the reproductions of issue 17: each is a usage error
// (exit 2) naming the flag and its range, and writes nothing.
func TestNumericFlagErrors(t *testing.T) {
	dir := t.TempDir()
	corpus := writeCorpus(t, 3)
	idx := filepath.Join(dir, "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", corpus, "--out", idx).code)
	qs := filepath.Join(dir, "q.jsonl")
	require.NoError(t, os.WriteFile(qs, []byte(`{"id":"a","question":"Who founded Quillhaven1?"}`+"\n"), 0o644))
	base := flagWalkBase(t, dir, idx, corpus)
	out := filepath.Join(dir, "run.jsonl")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "--index", idx, "--top-k", "-1", "Who founded Quillhaven1?"}, "--top-k -1: out of range, want a value in [1, 100000]"},
		{[]string{"query", "--index", idx, "--questions", qs, "--out", out, "--top-k", "-1"}, "--top-k"},
		{[]string{"query", "--index", idx, "--linking-top-k", "-1", "Who founded Quillhaven1?"}, "--linking-top-k"},
		{[]string{"query", "--index", idx, "--damping", "1", "x"}, "--damping 1: out of range, want a value in (0, 1)"},
		{[]string{"stats", "--index", idx, "--top", "-1"}, "--top -1"},
		{append(base["eval"], "--top-k", "-1"), "--top-k -1"},
		{append(base["eval"], "--top-k", "0"), "--top-k 0"},
		{append(base["eval"], "--ks", "2,-5"), "--ks"},
		{[]string{"index", "--corpus", corpus, "--out", filepath.Join(dir, "s.gl"), "--synonym-threshold", "-1"}, "--synonym-threshold -1"},
		{[]string{"index", "--corpus", corpus, "--out", filepath.Join(dir, "s.gl"), "--synonym-threshold", "NaN"}, "--synonym-threshold NaN"},
		{[]string{"index", "--corpus", corpus, "--out", filepath.Join(dir, "s.gl"), "--overlap-tokens", "200", "--chunk-tokens", "100"}, "--overlap-tokens 200 must be below --chunk-tokens 100"},
		{[]string{"augment", "--index", idx, "--epochs", "0"}, "--epochs 0"},
		{[]string{"augment", "--index", idx, "--llm-timeout", "-1s"}, "--llm-timeout"},
		{[]string{"augment", "--index", idx, "--split-seed", "1", "--test-seed", "2"}, "--test-seed is the old name of --split-seed: give one of them"},
		{[]string{"augment", "--index", idx, "--stability-over", "split-seed"}, "--stability-over needs --stability SEEDS"},
		{[]string{"augment", "--index", idx, "--stability", "1,2", "--stability-over", "seeds"}, `--stability-over "seeds": want seed or split-seed`},
		{[]string{"augment", "--index", idx, "--stability", "1,2", "--selector", "random"}, "--stability reports on the gnn selector's scorer"},
		{[]string{"augment", "--index", idx, "--stability", "1,2", "--planted", "3"}, "--stability reports on planned runs"},
		{[]string{"augment", "--index", idx, "--stability", "1,2", "--seed", "3"}, "--seed is what --stability sets (--stability-over seed)"},
		{[]string{"augment", "--index", idx, "--stability", "1,2", "--stability-over", "split-seed", "--split-seed", "3"}, "--split-seed is what --stability sets (--stability-over split-seed)"},
		{[]string{"augment", "--index", idx, "--stability", "1,2", "--gold-facts", "f.json"}, "--gold-facts does not go with --stability"},
		{[]string{"augment", "--index", idx, "--stability", "1,1"}, "seed 1 given twice"},
		{append(base["serve"], "--max-passages", "0"), "--max-passages 0: out of range"},
		{append(base["serve"], "--top-k", "50", "--max-top-k", "10"), "--top-k 50 exceeds --max-top-k 10"},
		{append(base["serve"], "--max-passages", "3"), "--top-k 5 exceeds --max-passages 3"},
		{[]string{"augment", "--index", idx, "--rollback", "aug-x", "--budget", "3"}, "--rollback removes a run and takes no settings of a new one: drop --budget"},
	} {
		t.Run(strings.Join(tc.args[1:], " "), func(t *testing.T) {
			r := run(t, nil, tc.args...)
			assert.Equal(t, 2, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.NotContains(t, r.stderr, "panic")
		})
	}
	assert.NoFileExists(t, out, "no run file from a refused query")
	assert.NoFileExists(t, filepath.Join(dir, "s.gl"), "no index from a refused index run")
}

func TestPanicIsAnErrorNotAUsageError(t *testing.T) {
	root := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { var m map[string]int; m["a"] = 1; return nil }}
	err := execute(t.Context(), root)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "internal error")
	assert.NotErrorAs(t, err, new(usageError))
}

func TestChoiceFlagsAreUsageErrors(t *testing.T) {
	idx := filepath.Join(t.TempDir(), "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 2), "--out", idx).code)
	for _, flag := range []string{"--lexical", "--final-fusion", "--pcst-text"} {
		r := run(t, nil, "query", "--index", idx, flag, "bogus", "Where was Mara Vell1 born?")
		assert.Equal(t, 2, r.code, flag)
		assert.Contains(t, r.stderr, "want one of", flag)
	}
	assert.Equal(t, 0, run(t, nil, "query", "--index", idx, "--lexical", "dense", "--final-fusion", "linear", "Where was Mara Vell1 born?").code)
}
