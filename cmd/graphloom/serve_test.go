package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServeReloadsOnHUPAndStopsOnTERM(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "x.gl")
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 3), "--out", idx).code)
	cmd := cli(t, nil, "serve", "--index", idx, "--addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err)
	url := strings.Fields(line[strings.Index(line, "http://"):])[0]

	query := func(q string) string {
		resp, err := http.Post(url+"/v1/query", "application/json", strings.NewReader(`{"question": "`+q+`", "retriever": "bm25", "top_k": 1}`))
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, 200, resp.StatusCode)
		var v struct {
			Passages []struct{ Title string }
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
		return v.Passages[0].Title
	}
	assert.Equal(t, "Passage 2", query("Where was Mara Vell2 born?"))

	// Rewrite the index with more passages and send SIGHUP.
	require.Equal(t, 0, run(t, nil, "index", "--corpus", writeCorpus(t, 6), "--out", idx).code)
	require.NoError(t, cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), "reloaded") }, 20*time.Second, 50*time.Millisecond)
	assert.Equal(t, "Passage 5", query("Where was Mara Vell5 born?"))

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), stderr.String())
	_, err = os.Stat(idx)
	require.NoError(t, err)
}

// syncBuffer is a strings.Builder safe to read while a process writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
