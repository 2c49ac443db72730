package llm

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/graphloom/graphloom/llm/llmtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Environment of the helper process TestKilledRunResumesWithoutResending starts.
const (
	helperEnv      = "GRAPHLOOM_LLM_TEST_HELPER"
	helperURLEnv   = "GRAPHLOOM_LLM_TEST_URL"
	helperCacheEnv = "GRAPHLOOM_LLM_TEST_CACHE"
	helperNEnv     = "GRAPHLOOM_LLM_TEST_N"
)

func helperPrompt(i int) string { return fmt.Sprintf("prompt %d", i) }

// TestHelperProcess is not a test: it is the body of the helper process, which
// asks N prompts through a cached client and prints "done i" once prompt i's
// answer is back (and so, stored).
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("helper process for TestKilledRunResumesWithoutResending")
	}
	n, err := strconv.Atoi(os.Getenv(helperNEnv))
	require.NoError(t, err)
	c, err := New(Config{
		BaseURL:     os.Getenv(helperURLEnv),
		Model:       "test-model",
		CacheDir:    os.Getenv(helperCacheEnv),
		Concurrency: 3,
		Timeout:     10 * time.Second,
	})
	require.NoError(t, err)
	reqs := make([]ChatRequest, n)
	for i := range reqs {
		reqs[i] = ChatRequest{Messages: []Message{User(helperPrompt(i))}}
	}
	err = c.ChatAll(context.Background(), reqs, func(i int, _ ChatResponse, err error) {
		require.NoError(t, err)
		fmt.Fprintf(os.Stdout, "done %d\n", i)
	})
	require.NoError(t, err)
}

// TestKilledRunResumesWithoutResending kills a process half-way through a batch
// (SIGKILL: no cleanup runs) and checks that a rerun sends exactly the prompts whose
// answers were not stored, and none of those reported done.
func TestKilledRunResumesWithoutResending(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("needs SIGKILL")
	}
	const n, killAfter = 24, 6
	srv := llmtest.NewServer(t)
	srv.On(llmtest.Any()).ReplyFunc(func(r llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Content: "answer to " + r.LastUser()}
	}).Delay(100 * time.Millisecond)
	dir := t.TempDir()

	run := func(kill bool) map[int]bool {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			helperEnv+"=1", helperURLEnv+"="+srv.URL(), helperCacheEnv+"="+dir, helperNEnv+"="+strconv.Itoa(n))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		done := make(map[int]bool)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "done "); ok {
				i, err := strconv.Atoi(rest)
				require.NoError(t, err)
				done[i] = true
				if kill && len(done) == killAfter {
					require.NoError(t, cmd.Process.Kill()) // SIGKILL
					break
				}
			}
		}
		err = cmd.Wait()
		if kill {
			require.Error(t, err, "the helper was killed")
		} else {
			require.NoError(t, err, "helper failed: %s", stderr.String())
		}
		return done
	}

	doneBeforeKill := run(true)
	require.Len(t, doneBeforeKill, killAfter)
	// Let the server notice the dead connections.
	require.Eventually(t, func() bool { return srv.InFlight() == 0 }, 5*time.Second, 10*time.Millisecond)
	firstRun := srv.Count()
	require.Less(t, firstRun, n, "the helper was killed half-way")
	stored := jsonFiles(t, dir)
	require.GreaterOrEqual(t, stored, killAfter, "every answer reported done is on disk")

	doneAfter := run(false)
	require.Len(t, doneAfter, n, "the rerun completes every prompt")

	rerun := srv.Requests()[firstRun:]
	assert.Len(t, rerun, n-stored, "the rerun sends exactly the prompts without a stored answer")
	sent := make(map[string]int)
	for _, r := range rerun {
		sent[r.LastUser()]++
	}
	for i := range doneBeforeKill {
		assert.Zero(t, sent[helperPrompt(i)], "prompt %d was answered before the kill but sent again", i)
	}
	for p, count := range sent {
		assert.Equal(t, 1, count, "%s sent %d times in the rerun", p, count)
	}
	assert.Equal(t, n, jsonFiles(t, dir))
}

// jsonFiles counts the cache entries under dir (temporary files left by the kill
// are not entries).
func jsonFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(d.Name(), ".json") && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return err
	}))
	return n
}
