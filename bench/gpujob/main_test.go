package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGlibcLess(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"", "GLIBC_2.2.5", true},
		{"GLIBC_2.9", "GLIBC_2.34", true},
		{"GLIBC_2.34", "GLIBC_2.9", false},
		{"GLIBC_2.3.4", "GLIBC_2.3", false},
		{"GLIBC_2.17", "GLIBC_2.17", false},
	} {
		assert.Equal(t, tc.want, glibcLess(tc.a, tc.b), "%s < %s", tc.a, tc.b)
	}
}

// TestNewestGlibc compares the ELF reader with binutils' objdump -T on a system binary.
func TestNewestGlibc(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		t.Skip("objdump not installed")
	}
	bash, err := exec.LookPath("bash")
	require.NoError(t, err)
	out, err := exec.Command(objdump, "-T", bash).Output()
	require.NoError(t, err)
	want := ""
	for _, v := range regexp.MustCompile(`GLIBC_[0-9][0-9.]*[0-9]`).FindAllString(string(out), -1) {
		if glibcLess(want, v) {
			want = v
		}
	}
	got, libs, err := newestGlibc(bash)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Contains(t, libs, "libc.so.6")
}

// TestGPUJobDryRun builds the job folder with bench/gpu.sh --build and runs its node
// phase with --dry-run on a PATH that has only bash, python3 and a few coreutils, plus
// shims named go, pip, pip3, curl and wget that record being called and fail; python3
// is a wrapper that refuses `-m pip`, and a sitecustomize audit hook records every
// socket connection or name lookup and every subprocess Python starts; the proxy
// variables point at a loopback listener that counts connections. None may be used.
//
// The build is reduced for make test: without -tags xla (no cgo, so no gcc and no
// 2-minute cold cgo build); GPUJOB_TEST_TAGS=xla builds the real binary.
func TestGPUJobDryRun(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	// The interpreter itself, not a launcher such as a pyenv shim that needs more of PATH.
	exe, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skip("python3 not installed")
	}
	python := strings.TrimSpace(string(exe))
	script, err := filepath.Abs("../gpu.sh")
	require.NoError(t, err)
	tmp := t.TempDir()
	job, out := filepath.Join(tmp, "job"), filepath.Join(tmp, "out")

	build := exec.Command(bash, script, "--build", job, "--tags", os.Getenv("GPUJOB_TEST_TAGS"))
	build.Env = append(os.Environ(), "GOFLAGS=")
	b, err := build.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.Contains(t, string(b), "limit 48 MiB")
	var manifest struct {
		SHA256 string `json:"sha256"`
		Glibc  string `json:"glibc"`
	}
	require.NoError(t, readJSON(filepath.Join(job, "manifest.json"), &manifest))
	require.Len(t, manifest.SHA256, 64)

	// The node: a fake site-packages with the plugin and two nvidia wheels.
	site := filepath.Join(tmp, "site")
	plugin := filepath.Join(site, "jax_plugins", "xla_cuda13", "xla_cuda_plugin.so")
	for _, d := range []string{filepath.Dir(plugin), filepath.Join(site, "nvidia", "cublas", "lib"), filepath.Join(site, "nvidia", "cuda_nvrtc", "lib")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(plugin, []byte("not a real plugin"), 0o644))

	bin, calls := filepath.Join(tmp, "bin"), filepath.Join(tmp, "calls.log")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	for _, tool := range []string{"dirname", "mkdir", "cp", "chmod", "tail", "cut", "timeout", "cat"} {
		p, err := exec.LookPath(tool)
		require.NoError(t, err)
		require.NoError(t, os.Symlink(p, filepath.Join(bin, tool)))
	}
	require.NoError(t, os.Symlink(bash, filepath.Join(bin, "bash")))
	for _, shim := range []string{"go", "pip", "pip3", "curl", "wget", "gcc"} {
		require.NoError(t, os.WriteFile(filepath.Join(bin, shim),
			[]byte("#!"+bash+"\necho \""+shim+" $*\" >>"+calls+"\nexit 1\n"), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(bin, "python3"), []byte("#!"+bash+`
for a in "$@"; do case "$a" in pip|-mpip|ensurepip|-mensurepip) echo "python3 $*" >>`+calls+`; exit 1 ;; esac; done
exec `+python+` "$@"
`), 0o755))
	guard := filepath.Join(tmp, "guard")
	require.NoError(t, os.MkdirAll(guard, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(guard, "sitecustomize.py"), []byte(`import sys
def _hook(event, args, _log=`+"'"+calls+"'"+`):
    if event in ("socket.connect", "socket.getaddrinfo", "subprocess.Popen", "os.system", "os.exec", "os.posix_spawn"):
        with open(_log, "a") as f:
            f.write(f"python {event} {args!r}\n")
        raise RuntimeError(f"blocked in the GPU job's dry run: {event}")
sys.addaudithook(_hook)
`), 0o644))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var proxied atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			proxied.Add(1)
			_ = c.Close()
		}
	}()
	proxy := "http://" + ln.Addr().String()

	run := exec.Command(bash, script, "--run", job, out, "--dry-run", "--plugin", plugin)
	run.Env = []string{"PATH=" + bin, "HOME=" + tmp, "TMPDIR=" + tmp, "PYTHONPATH=" + guard, "PYTHONDONTWRITEBYTECODE=1",
		"http_proxy=" + proxy, "https_proxy=" + proxy, "HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "ALL_PROXY=" + proxy}
	b, err = run.CombinedOutput()
	require.NoError(t, err, "%s", b)
	log := string(b)

	if data, err := os.ReadFile(calls); err == nil {
		t.Errorf("the run phase called forbidden tools or the network:\n%s", data)
	}
	assert.Zero(t, proxied.Load(), "connections to the proxy")
	assert.Contains(t, log, filepath.Join(site, "nvidia", "cublas", "lib"))
	assert.Contains(t, log, filepath.Join(site, "nvidia", "cuda_nvrtc", "lib"))
	assert.Contains(t, log, "PJRT plugin: "+plugin)

	f, err := os.Open(filepath.Join(out, "results.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var steps []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct{ Step, Impl, Status, Reason string }
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r))
		if r.Step == "check" {
			assert.Equal(t, "ok", r.Status, r.Reason)
			continue
		}
		assert.Equal(t, "not run", r.Status, r.Step)
		assert.Equal(t, "dry run", r.Reason, r.Step)
		steps = append(steps, r.Step+"/"+r.Impl)
	}
	for _, want := range []string{"rgcn-tiled/graphloom-xla", "rgcn/pyg", "gt/graphloom-xla", "gt/pyg", "ppr/graphloom-xla",
		"ppr/torch.sparse", "gretriever-llama/graphloom-xla", "gretriever-llama/pytorch", "embed/graphloom-xla",
		"embed/sentence-transformers", "embed-modernbert/graphloom-xla", "embed-modernbert/sentence-transformers",
		"lm-qwen2/graphloom-xla", "hf-parity-qwen2/transformers"} {
		assert.True(t, slices.Contains(steps, want), "step %s missing from %v", want, steps)
	}
	table, err := os.ReadFile(filepath.Join(out, "table.md"))
	require.NoError(t, err)
	assert.Equal(t, len(steps)+3, strings.Count(string(table), "\n"), "table rows: header, rule, check and every step")
}
