#!/usr/bin/env bash
# GPU job in two phases, for GPU nodes that have no Go, no C compiler, no pip and no
# network (see BUILD.md, "GPU (XLA / PJRT)").
#
#   bench/gpu.sh --build DIR [--tags xla]
#       On a build machine (Go, gcc): builds bench/gpujob with -tags xla, stripped
#       (-trimpath -ldflags '-s -w'), gzip-compresses it to DIR/gpujob.gz, writes the
#       inputs (DIR/inputs: tiny random model folders, batch structures, the PPR graph,
#       G-Retriever examples) and the Python reference scripts (DIR/scripts), prints
#       the newest GLIBC symbol version the binary needs, writes DIR/manifest.json and
#       fails if DIR is over 48 MiB. --tags '' builds without XLA (tests only).
#
#   bench/gpu.sh --run DIR OUT [--dry-run] [--plugin FILE] [--python PY] [--budget SECONDS]
#       On the GPU node: finds the PJRT plugin through python3's jax_plugins.xla_cuda13
#       (or --plugin), puts the nvidia-* wheels' lib directories on LD_LIBRARY_PATH,
#       decompresses the binary into OUT, checks it and the inputs, then runs every step
#       under its own timeout, all within --budget seconds (default 480), appending each
#       result to OUT/results.jsonl and re-rendering OUT/table.md as it finishes. A step
#       that cannot run says why. Never calls go or pip and opens no network connection.
#       --dry-run does all of it except the GPU steps (each recorded as not run) and exits 0.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
max_bytes=$((48 * 1024 * 1024))
scripts=(gpu_pyg.py gpu_ppr.py gpu_embed.py hf_parity.py gpu_report.py)

die() { echo "gpu.sh: $*" >&2; exit 1; }

build() {
	local dir="$1" tags="$2"
	command -v go >/dev/null || die "--build needs the Go toolchain"
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	rm -rf "$dir/inputs" "$dir/scripts" "$dir/gpujob.gz" "$dir/manifest.json"
	local tmp
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' RETURN
	local cgo=0
	[[ -n "$tags" ]] && cgo=1
	echo "== building bench/gpujob (tags '${tags}', CGO_ENABLED=$cgo, stripped) =="
	(cd "$root" && CGO_ENABLED=$cgo GOEXPERIMENT=simd go build -tags "$tags" -trimpath -ldflags '-s -w' \
		-o "$tmp/gpujob" ./bench/gpujob)
	echo "== writing inputs =="
	GOMLX_BACKEND=go GOMLX_NO_AUTO_INSTALL=1 "$tmp/gpujob" inputs "$dir/inputs" >"$tmp/inputs.json"
	cat "$tmp/inputs.json"
	"$tmp/gpujob" glibc "$tmp/gpujob" >"$tmp/glibc.json"
	mkdir -p "$dir/scripts"
	for s in "${scripts[@]}"; do cp "$here/$s" "$dir/scripts/$s"; done
	gzip -9 -n -c "$tmp/gpujob" >"$dir/gpujob.gz"
	python3 - "$dir" "$tmp/gpujob" "$tmp/glibc.json" "$tags" "$(cd "$root" && git describe --always --dirty 2>/dev/null || echo unknown)" "$(go env GOVERSION)" <<'EOF'
import hashlib, json, os, sys, time
d, binary, glibc, tags, rev, gover = sys.argv[1:]
g = json.load(open(glibc))
m = {"binary": "gpujob.gz", "sha256": hashlib.sha256(open(binary, "rb").read()).hexdigest(),
     "bytes": os.path.getsize(binary), "gzip_bytes": os.path.getsize(os.path.join(d, "gpujob.gz")),
     "tags": tags, "glibc": g["glibc"], "libraries": g["libraries"], "revision": rev, "go": gover,
     "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
json.dump(m, open(os.path.join(d, "manifest.json"), "w"), indent=1)
print(f"binary: {m['bytes'] / 2**20:.1f} MiB, gzip {m['gzip_bytes'] / 2**20:.1f} MiB; "
      f"needs {g['glibc'] or 'no glibc (static)'}; libraries {', '.join(g['libraries'] or []) or 'none'}")
EOF
	local total
	total="$(python3 -c 'import os,sys; print(sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(sys.argv[1]) for f in fs))' "$dir")"
	echo "folder $dir: $total bytes ($((total / 1024 / 1024)) MiB; limit 48 MiB)"
	((total <= max_bytes)) || die "$dir is $total bytes, over the 48 MiB limit"
}

# ---- run phase: python3, bash and coreutils only ----

run_phase() {
	local dir="$1" out="$2" dry="$3" plugin="$4" py="$5" budget="$6"
	local start=$SECONDS
	[[ -f "$dir/manifest.json" && -f "$dir/gpujob.gz" ]] || die "$dir: no manifest.json / gpujob.gz (run --build first)"
	mkdir -p "$out/bin" "$out/logs"
	: >"$out/results.jsonl"
	record() { # step impl status reason [result-json-file]
		"$py" - "$out/results.jsonl" "$@" <<'EOF'
import json, sys
path, step, impl, status, reason = sys.argv[1:6]
res = {}
if len(sys.argv) > 6:
    try:
        lines = [l for l in open(sys.argv[6]) if l.strip().startswith("{")]
        res = json.loads(lines[-1]) if lines else {}
    except (OSError, ValueError) as e:
        reason = (reason + "; " if reason else "") + f"unreadable output: {e}"
with open(path, "a") as f:
    f.write(json.dumps({"step": step, "impl": impl, "status": status, "reason": reason, "result": res}) + "\n")
EOF
		"$py" "$out/scripts/gpu_report.py" "$out"
	}
	cp -r "$dir/scripts" "$out/scripts"
	# Decompress and verify the binary (Python's gzip; no zstd or gunzip needed).
	"$py" - "$dir" "$out/bin/gpujob" <<'EOF' || die "cannot unpack $dir/gpujob.gz"
import gzip, hashlib, json, os, shutil, sys
d, dst = sys.argv[1:]
m = json.load(open(os.path.join(d, "manifest.json")))
with gzip.open(os.path.join(d, m["binary"])) as src, open(dst, "wb") as f:
    shutil.copyfileobj(src, f)
if hashlib.sha256(open(dst, "rb").read()).hexdigest() != m["sha256"]:
    sys.exit(f"{dst}: sha256 differs from the manifest")
print(f"binary: {dst} ({m['bytes']} bytes, tags '{m['tags']}', built {m['built']} at {m['revision']}, needs {m['glibc']})")
EOF
	chmod +x "$out/bin/gpujob"
	local bin="$out/bin/gpujob" in="$dir/inputs"
	# The PJRT plugin and the CUDA libraries of the nvidia-* wheels.
	if [[ -z "$plugin" ]]; then
		plugin="$("$py" -c 'import importlib.util, os
s = importlib.util.find_spec("jax_plugins.xla_cuda13")
print(os.path.join(list(s.submodule_search_locations)[0], "xla_cuda_plugin.so") if s and s.submodule_search_locations else "")' 2>/dev/null || true)"
	fi
	# Without a plugin the graphloom steps cannot run; the references still do.
	local noxla=""
	if [[ -z "$plugin" || ! -f "$plugin" ]]; then
		noxla="PJRT plugin not found (python3 has no jax_plugins.xla_cuda13; pass --plugin /abs/path/xla_cuda_plugin.so)"
		echo "warning: $noxla" >&2
		plugin=/nonexistent/xla_cuda_plugin.so
	fi
	plugin="$("$py" -c 'import os, sys; print(os.path.realpath(sys.argv[1]))' "$plugin")"
	local libs
	libs="$("$py" - "$plugin" <<'EOF'
import glob, importlib.util, os, site, sys
# The plugin's own site-packages first (go-xla looks for <plugin>/../../nvidia), then the interpreter's.
roots = [os.path.dirname(os.path.dirname(os.path.dirname(sys.argv[1])))]
roots += site.getsitepackages() + [site.getusersitepackages()]
spec = importlib.util.find_spec("nvidia")
if spec and spec.submodule_search_locations:
    roots += [os.path.dirname(p) for p in spec.submodule_search_locations]
seen = []
for r in roots:
    for lib in sorted(glob.glob(os.path.join(r, "nvidia", "*", "lib"))):
        lib = os.path.realpath(lib)
        if lib not in seen:
            seen.append(lib)
print(":".join(seen))
EOF
)"
	export LD_LIBRARY_PATH="${libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	export GOMLX_NO_AUTO_INSTALL=1 GOMLX_BACKEND="xla:$plugin"
	# XLA compiles GPU kernels with ptxas and libdevice from a CUDA data directory. go-xla
	# points it at <plugin dir>/../nvidia, which the JAX wheel layout does not have (its
	# nvidia/ is one level higher): name the nvidia wheel that holds nvvm/libdevice.
	local cudadir
	cudadir="$(IFS=:; for l in $libs; do for d in "$(dirname "$(dirname "$l")")"/*/; do
		if [[ -d "$d/nvvm/libdevice" ]]; then echo "${d%/}"; exit 0; fi; done; done; true)"
	if [[ -n "$cudadir" && "${XLA_FLAGS:-}" != *--xla_gpu_cuda_data_dir* ]]; then
		export XLA_FLAGS="${XLA_FLAGS:+$XLA_FLAGS }--xla_gpu_cuda_data_dir=$cudadir"
	fi
	echo "PJRT plugin: ${noxla:+none; }$plugin"
	echo "LD_LIBRARY_PATH: $LD_LIBRARY_PATH"
	echo "XLA_FLAGS: ${XLA_FLAGS:-} ${cudadir:+(CUDA data directory: $cudadir)}"
	[[ -n "$libs" ]] || echo "warning: no nvidia/*/lib directories found next to the plugin or in $py's site-packages"
	# Input checks on the CPU: the binary loads every input; the scripts compile.
	if GOMLX_BACKEND=go "$bin" check "$in" >"$out/logs/check.json" 2>"$out/logs/check.log"; then
		record check gpujob ok "inputs load on the CPU" "$out/logs/check.json"
	else
		record check gpujob failed "gpujob check: $(tail -n1 "$out/logs/check.log")"
		die "input check failed: $(cat "$out/logs/check.log")"
	fi
	for s in "${scripts[@]}"; do
		"$py" -c 'import py_compile, sys; py_compile.compile(sys.argv[1], cfile=sys.argv[2], doraise=True)' \
			"$out/scripts/$s" "$out/logs/$s.pyc" || die "$s does not compile"
	done
	if command -v nvidia-smi >/dev/null; then
		nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/gpu.txt" 2>&1 || true
		echo "GPU: $(cat "$out/gpu.txt")"
	fi

	# step NAME IMPL TIMEOUT CMD...: runs CMD under its own timeout (cut to the budget left).
	step() {
		local name="$1" impl="$2" limit="$3"
		shift 3
		local left=$((budget - (SECONDS - start)))
		if [[ "$dry" == 1 ]]; then
			record "$name" "$impl" "not run" "dry run"
			return 0
		fi
		if [[ "$impl" == graphloom-xla && -n "$noxla" ]]; then
			record "$name" "$impl" "not run" "$noxla"
			return 0
		fi
		if ((left < 15)); then
			record "$name" "$impl" "not run" "time budget of ${budget}s spent"
			return 0
		fi
		((limit > left)) && limit=$left
		echo "== $name ($impl, ≤ ${limit}s) =="
		local rc=0
		timeout --kill-after=5 "$limit" "$@" >"$out/logs/$name.$impl.json" 2>"$out/logs/$name.$impl.log" || rc=$?
		case $rc in
		0) record "$name" "$impl" ok "" "$out/logs/$name.$impl.json" ;;
		124 | 137) record "$name" "$impl" timeout "killed after ${limit}s" "$out/logs/$name.$impl.json" ;;
		*) record "$name" "$impl" failed "exit $rc: $(tail -n1 "$out/logs/$name.$impl.log" | cut -c1-200)" "$out/logs/$name.$impl.json" ;;
		esac
		tail -n1 "$out/logs/$name.$impl.json" 2>/dev/null || true
	}
	local sc="$out/scripts"
	step rgcn-tiled graphloom-xla 60 "$bin" rgcn -tile 64
	step rgcn-gather graphloom-xla 60 "$bin" rgcn -tile 0
	step rgcn pyg 90 "$py" "$sc/gpu_pyg.py" --rgcn "$in/rgcn_batches.json"
	step gt graphloom-xla 60 "$bin" gt
	step gt pyg 90 "$py" "$sc/gpu_pyg.py" --gt "$in/gt_batches.json"
	step ppr graphloom-xla 60 "$bin" ppr -graph "$in/ppr_graph.json.gz" -out "$out/ppr_go.f32"
	step ppr torch.sparse 60 "$py" "$sc/gpu_ppr.py" --graph "$in/ppr_graph.json.gz" --go "$out/ppr_go.f32"
	step gretriever-llama graphloom-xla 90 "$bin" gretriever -lm "$in/lm-llama"
	step gretriever-llama pytorch 90 "$py" "$sc/gpu_pyg.py" --gretriever "$in/gretriever.json" --lm "$in/lm-llama"
	step gretriever-qwen2 graphloom-xla 90 "$bin" gretriever -lm "$in/lm-qwen2"
	step embed graphloom-xla 60 "$bin" embed -dir "$in/encoder" -out "$out/embed_go.json"
	step embed sentence-transformers 90 "$py" "$sc/gpu_embed.py" --dir "$in/encoder" --go "$out/embed_go.json"
	for m in llama qwen2; do
		step "lm-$m" graphloom-xla 45 "$bin" lm -dir "$in/lm-$m" -out "$out/lm_go_$m.json"
		step "hf-parity-$m" transformers 60 "$py" "$sc/hf_parity.py" --dir "$in/lm-$m" --go "$out/lm_go_$m.json"
		step "lm-$m-bf16" graphloom-xla 45 "$bin" lm -dir "$in/lm-$m" -dtype bfloat16 -out "$out/lm_go_bf16_$m.json"
		step "hf-parity-$m-bf16" transformers 60 "$py" "$sc/hf_parity.py" --dir "$in/lm-$m" --go "$out/lm_go_bf16_$m.json"
	done
	# The other encoder architectures, after the rest (they take what budget is left):
	# sentence-transformers must agree with graphloom on the probe texts (cosine ≥ 0.999).
	for e in mpnet distilbert modernbert; do
		step "embed-$e" graphloom-xla 60 "$bin" embed -dir "$in/encoder-$e" -passages 16 -out "$out/embed_go_$e.json"
		step "embed-$e" sentence-transformers 90 "$py" "$sc/gpu_embed.py" --dir "$in/encoder-$e" --passages 16 --go "$out/embed_go_$e.json" --min-cos 0.999
	done
	echo
	cat "$out/table.md"
	echo "results: $out/table.md, $out/results.json (took $((SECONDS - start)) s)"
}

mode="" dir="" out="" dry=0 plugin="${PJRT_PLUGIN:-}" py="${PYTHON:-python3}" budget=480 tags=xla
while [[ $# -gt 0 ]]; do
	case "$1" in
	--build) mode=build dir="${2:?--build DIR}"; shift 2 ;;
	--run) mode=run dir="${2:?--run DIR OUT}" out="${3:?--run DIR OUT}"; shift 3 ;;
	--dry-run) dry=1; shift ;;
	--plugin) plugin="$2"; shift 2 ;;
	--python) py="$2"; shift 2 ;;
	--budget) budget="$2"; shift 2 ;;
	--tags) tags="$2"; shift 2 ;;
	-h | --help) sed -n '2,21p' "$0"; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
done
case "$mode" in
build) build "$dir" "$tags" ;;
run) run_phase "$(cd "$dir" && pwd)" "$(mkdir -p "$out" && cd "$out" && pwd)" "$dry" "$plugin" "$py" "$budget" ;;
*) die "need --build DIR or --run DIR OUT (see --help)" ;;
esac
