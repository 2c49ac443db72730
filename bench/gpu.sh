#!/usr/bin/env bash
# GPU benchmark: graphloom on XLA/PJRT CUDA vs PyTorch Geometric on the same GPU, for the
# two benchmarks of bench/rgcn.sh (CrossAug R-GCN training step; G-Retriever Graph
# Transformer forward + backward), on identical batches. Prints one table.
#
# Needs: an NVIDIA GPU with its driver, Go, gcc (cgo), and the Python package
# jax-cuda13-pjrt, whose jax_plugins/xla_cuda13/xla_cuda_plugin.so is the PJRT plugin
# graphloom loads (it is never downloaded by graphloom). PyTorch with CUDA and
# torch_geometric are pip-installed for the PyG side if missing.
#
# Usage: bench/gpu.sh [--steps N] [--plugin /abs/path/xla_cuda_plugin.so] [--python PY] [--out DIR] [--no-pyg]
#   --plugin  PJRT plugin (default: found through $PYTHON's jax_plugins.xla_cuda13)
#   --python  interpreter that has jax-cuda13-pjrt / gets PyG (default: python3 on PATH)
set -euo pipefail

steps=20
plugin="${PJRT_PLUGIN:-}"
py="${PYTHON:-python3}"
pyg=1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/bench/out/gpu"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --steps) steps="$2"; shift 2 ;;
    --plugin) plugin="$2"; shift 2 ;;
    --python) py="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-pyg) pyg=0; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "gpu.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"

command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
  || { echo "gpu.sh: nvidia-smi not found: no NVIDIA GPU/driver on this machine" >&2; exit 1; }

# Locate the PJRT CUDA plugin shipped by jax-cuda13-pjrt.
if [[ -z "$plugin" ]]; then
  plugin="$("$py" - <<'EOF'
import importlib.util, os
spec = importlib.util.find_spec("jax_plugins.xla_cuda13")
if spec and spec.submodule_search_locations:
    print(os.path.join(list(spec.submodule_search_locations)[0], "xla_cuda_plugin.so"))
EOF
)"
fi
if [[ -z "$plugin" || ! -f "$plugin" ]]; then
  echo "gpu.sh: PJRT plugin not found (pip install jax-cuda13-pjrt, or pass --plugin /abs/path/xla_cuda_plugin.so)" >&2
  exit 1
fi
plugin="$(readlink -f "$plugin")"
echo "PJRT plugin: $plugin"

# CUDA libraries pip installs next to the plugin (nvidia-*-cu13 wheels): go-xla points
# XLA at <plugin>/../../nvidia for ptxas/libdevice; the dynamic loader needs their lib dirs.
site="$(dirname "$(dirname "$(dirname "$plugin")")")"
for d in "$site"/nvidia/*/lib; do
  [[ -d "$d" ]] && LD_LIBRARY_PATH="$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
done
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
export GOMLX_NO_AUTO_INSTALL=1 GOEXPERIMENT=simd CGO_ENABLED=1
export GOMLX_BACKEND="xla:$plugin"

echo "== building with -tags xla =="
(cd "$root" && go build -tags xla -o "$out/rgcn-bench" ./bench/rgcn && go build -tags xla -o "$out/gt-bench" ./bench/gt)

echo "== graphloom on XLA CUDA =="
"$out/rgcn-bench" -steps "$steps" -tile 64 -slots 4 -dump "$out/rgcn_batches.json" -json "$out/rgcn_tiled.json"
"$out/rgcn-bench" -steps "$steps" -tile 0 -json "$out/rgcn_seq.json"
"$out/gt-bench" -steps "$steps" -dump "$out/gt_batches.json" -json "$out/gt_go.json"

if [[ $pyg -eq 1 ]]; then
  if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "== installing PyTorch (CUDA) =="
    "$py" -m pip install -q torch
  fi
  if ! "$py" -c 'import torch_geometric' 2>/dev/null; then
    echo "== installing torch_geometric =="
    "$py" -m pip install -q torch_geometric
  fi
  echo "== PyTorch Geometric on CUDA =="
  "$py" "$root/bench/gpu_pyg.py" --rgcn "$out/rgcn_batches.json" --gt "$out/gt_batches.json" --steps "$steps" \
    | tee "$out/pyg.jsonl"
fi

"$py" - "$out" <<'EOF'
import json, os, sys
out = sys.argv[1]
def load(name):
    p = os.path.join(out, name)
    return json.load(open(p)) if os.path.exists(p) else None
pyg = {}
p = os.path.join(out, "pyg.jsonl")
if os.path.exists(p):
    for line in open(p):
        if line.strip():
            r = json.loads(line)
            pyg[r["bench"]] = r["ms_per_step"]
rows = [("R-GCN train step, tiled layout", "rgcn_tiled.json", "rgcn"),
        ("R-GCN train step, gather/scatter layout", "rgcn_seq.json", "rgcn"),
        ("GT fwd+bwd", "gt_go.json", "gt")]
print()
print(f"{'benchmark (GPU)':<42} {'graphloom/XLA ms':>17} {'PyG ms':>9} {'ratio':>7}")
for label, f, key in rows:
    g = load(f)
    if g is None:
        continue
    t = pyg.get(key)
    ratio = f"{g['ms_per_step'] / t:.2f}x" if t else "-"
    ts = f"{t:.2f}" if t else "-"
    print(f"{label:<42} {g['ms_per_step']:>17.2f} {ts:>9} {ratio:>7}")
print("ratio = graphloom time / PyG time; medians over timed steps.")
EOF
