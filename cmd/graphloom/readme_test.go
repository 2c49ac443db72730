package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readmeTour returns the shell block under "## A tour of the CLI" in README.md.
func readmeTour(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	s := string(data)
	at := strings.Index(s, "## A tour of the CLI")
	require.GreaterOrEqual(t, at, 0)
	s = s[at:]
	start := strings.Index(s, "```sh\n")
	require.GreaterOrEqual(t, start, 0)
	s = s[start+len("```sh\n"):]
	return s[:strings.Index(s, "```")]
}

// TestReadmeTourRuns runs the README's tour with bash, line by line as written, in a
// fresh directory holding the examples. bin/graphloom is this test binary acting as the
// command. The one change: augment trains its scorer for 2 epochs (the wrapper appends
// --epochs 2, but to a rollback, which trains nothing) to keep the test short; everything else — files, flags, run ids — is as a
// user would type it.
func TestReadmeTourRuns(t *testing.T) {
	tour := readmeTour(t)
	assert.NotContains(t, tour, "../shared")
	dir := t.TempDir()
	exe, err := os.Executable()
	require.NoError(t, err)
	examples, err := filepath.Abs(filepath.Join("..", "..", "examples"))
	require.NoError(t, err)
	require.NoError(t, os.Symlink(examples, filepath.Join(dir, "examples")))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	wrapper := `#!/bin/sh
case "$1 $*" in augment*--rollback*) ;; augment*) set -- "$@" --epochs 2 ;; esac
GRAPHLOOM_TEST_CLI=1 exec ` + exe + ` "$@"
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "graphloom"), []byte(wrapper), 0o755))
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", tour)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GRAPHLOOM_LLM_BASE_URL=", "GRAPHLOOM_LLM_MODEL=", "GRAPHLOOM_EMBED_BASE_URL=",
		"GRAPHLOOM_EMBED_MODEL=", "GRAPHLOOM_LLM_CACHE=off")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "removed run aug-")
	assert.FileExists(t, filepath.Join(dir, "run.jsonl"))
	assert.FileExists(t, filepath.Join(dir, "report", "report.md"))
}

func TestReadmeForPublicUsers(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	s := string(data)
	assert.NotContains(t, s, "../shared", "the public README points at nothing outside the repository")
	assert.Contains(t, s, "Go 1.26.8")
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	require.NoError(t, err)
	assert.Contains(t, string(mod), "\ngo 1.26.8\n", "the README names go.mod's Go version")
}

// TestGitignoreCoversSideFiles: temporary files of interrupted writes, writer locks,
// run reports and scorer checkpoints are never committed by accident.
func TestGitignoreCoversSideFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	for _, p := range []string{"x.gl", ".x.gl.tmp-123456", "data/.idx.tmp-9", "x.gl.lock", "x.gl.aug-20250101T000000-ab12.json", "x.gl.scorer"} {
		out, err := exec.Command("git", "-C", filepath.Join("..", ".."), "check-ignore", "--no-index", "-q", p).CombinedOutput()
		assert.NoError(t, err, "%s is not ignored %s", p, out)
	}
}

// TestHelpHidesURLPasswords: --help shows the LLM URLs from the environment as the
// flags' defaults, without their passwords.
func TestHelpHidesURLPasswords(t *testing.T) {
	r := run(t, []string{"GRAPHLOOM_LLM_BASE_URL=https://user:hunter2@gw.example/v1", "GRAPHLOOM_EMBED_BASE_URL=https://k:hunter3@emb.example/v1"}, "index", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout+r.stderr, "hunter2")
	assert.NotContains(t, r.stdout+r.stderr, "hunter3")
	assert.Contains(t, r.stdout, "gw.example/v1")
}

func TestHyperedgesHelpIsHonest(t *testing.T) {
	r := run(t, nil, "index", "--help")
	require.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, `(default "auto")`)
	assert.Contains(t, r.stdout, "llm extractor: none")
}
