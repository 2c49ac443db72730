package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCalibrateCommand: calibrate --out leaves its input as it was and writes a
// calibrated index that stats describes; query and eval accept --calibration; a
// forced variant on an uncalibrated index is refused; after a delete, query warns that
// the calibration is stale.
func TestCalibrateCommand(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "h.gl")
	require.Equal(t, 0, run(t, nil, "index", "--quiet", "--corpus", "../../examples/harbour/corpus.json", "--out", idx).code)
	before, err := os.ReadFile(idx)
	require.NoError(t, err)
	cal := filepath.Join(dir, "hc.gl")
	r := run(t, nil, "calibrate", "--index", idx, "--out", cal, "--steps", "60", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	after, err := os.ReadFile(idx)
	require.NoError(t, err)
	assert.Equal(t, before, after, "--out leaves the input alone")
	var out struct {
		Report struct {
			Questions int `json:"questions"`
			Fits      []struct {
				Retriever  string             `json:"retriever"`
				Use        string             `json:"use"`
				Validation map[string]float64 `json:"validation"`
			} `json:"retrievers"`
		} `json:"report"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out), r.stdout)
	assert.Positive(t, out.Report.Questions)
	require.Len(t, out.Report.Fits, 2)

	r = run(t, nil, "stats", "--index", cal)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "calibration\tfitted")
	assert.Contains(t, r.stdout, "ppr: uses ")
	r = run(t, nil, "stats", "--index", cal, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"calibration"`)
	r = run(t, nil, "stats", "--index", idx)
	assert.NotContains(t, r.stdout, "calibration")

	q := "Who bought the ship that was wrecked on Gull Rock?"
	for _, mode := range []string{"auto", "off", "fusion", "ranker", "ranker-nogate", "defaults"} {
		r = run(t, nil, "query", "--index", cal, "--retriever", "ppr", "--calibration", mode, "--json", q)
		require.Equal(t, 0, r.code, "%s: %s", mode, r.stderr)
		assert.NotContains(t, r.stderr, "warning")
	}
	r = run(t, nil, "query", "--index", idx, "--retriever", "ppr", "--calibration", "ranker", q)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "run `graphloom calibrate` first")
	r = run(t, nil, "query", "--index", idx, "--retriever", "ppr", "--calibration", "sometimes", q)
	assert.Equal(t, 2, r.code)

	require.Equal(t, 0, run(t, nil, "delete", "--index", cal, "--title", "Port Keswyn").code)
	r = run(t, nil, "query", "--index", cal, "--retriever", "ppr", q)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "warning: the stored calibration (`graphloom calibrate` fits it again) is stale")
	r = run(t, nil, "stats", "--index", cal)
	assert.Contains(t, r.stdout, "STALE")
}
