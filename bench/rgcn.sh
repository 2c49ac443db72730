#!/usr/bin/env bash
# Benchmarks graphloom's GNN training steps against PyTorch (CPU) on identical batches
# and prints one side-by-side table:
#   1. CrossAug-sized R-GCN scorer: full training step (forward, backward, Adam),
#      64 subgraphs of 20–40 nodes, input 384 → hidden 256, 2 layers, 3 relations.
#   2. G-Retriever-sized Graph Transformer: forward + backward, 8 subgraphs of ~15
#      nodes / ~20 edges, 4 layers, hidden 1024, 4 heads, 1024-d edge features.
#
# Usage: bench/rgcn.sh [--threads N] [--steps N] [--only rgcn|gt] [--no-torch] [--out DIR]
#   --threads N  CPU threads for both sides (GOMAXPROCS and torch.set_num_threads); default 2
#   --steps N    timed steps per benchmark; default 20 (R-GCN) and half of it (GT)
#   --only X     run one benchmark
#   --no-torch   skip the PyTorch side
#   --out DIR    where JSON results and dumped batches go; default bench/out
#
# PyTorch comes from Debian (apt-get install python3-torch, for /usr/bin/python3). That
# build calls BLAS through libblas.so.3, which defaults to the unoptimised reference
# BLAS (a 2048×1024×256 matmul takes ~180 ms instead of ~8 ms); the script therefore
# also installs libopenblas0-openmp so the comparison is against an optimised PyTorch.
set -euo pipefail

threads=2
steps=20
only=""
torch=1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/bench/out"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --no-torch) torch=0; shift ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "rgcn.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"

export GOEXPERIMENT=simd GOMLX_NO_AUTO_INSTALL=1 GOMAXPROCS="$threads" OMP_NUM_THREADS="$threads"
export GOMLX_BACKEND="${GOMLX_BACKEND:-go}"
py=/usr/bin/python3

as_root() { if [[ $(id -u) -eq 0 ]]; then "$@"; else sudo "$@"; fi; }

if [[ $torch -eq 1 ]]; then
  # Best effort, as BUILD.md says: without root, sudo or the mirror the PyTorch
  # columns are skipped, not the whole section.
  if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "== installing python3-torch (Debian) =="
    if ! { as_root apt-get update -qq && DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq python3-torch >/dev/null; }; then
      echo "== cannot install python3-torch: the PyTorch reference columns are skipped =="
      torch=0
    fi
  fi
fi
if [[ $torch -eq 1 ]]; then
  blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
  if [[ "$blas" != *openblas* && "$blas" != *mkl* && "$blas" != *blis* ]]; then
    echo "== installing libopenblas0-openmp (optimised BLAS for Debian's PyTorch) =="
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq libopenblas0-openmp >/dev/null ||
      echo "== cannot install libopenblas0-openmp: PyTorch runs on the reference BLAS (slower) =="
    blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
  fi
fi

echo "== building (GOEXPERIMENT=simd) =="
(cd "$root" && go build -o "$out/rgcn-bench" ./bench/rgcn && go build -o "$out/gt-bench" ./bench/gt)

if [[ -z "$only" || "$only" == rgcn ]]; then
  echo "== R-GCN scorer: graphloom ($GOMLX_BACKEND) =="
  "$out/rgcn-bench" -steps "$steps" -dump "$out/rgcn_batches.json" -json "$out/rgcn_go.json"
  "$out/rgcn-bench" -steps "$steps" -tile 0 -json "$out/rgcn_seq_go.json"
  if [[ $torch -eq 1 ]]; then
    echo "== R-GCN scorer: PyTorch =="
    "$py" "$root/bench/rgcn_torch.py" "$out/rgcn_batches.json" --threads "$threads" --steps "$steps" \
      2> >(grep -v -e 'scatter_reduce() is in beta' -e 'scatter_reduce(0' >&2) | tee "$out/rgcn_torch.json"
  fi
fi
if [[ -z "$only" || "$only" == gt ]]; then
  gsteps=$(( steps / 2 > 3 ? steps / 2 : 3 ))
  echo "== Graph Transformer: graphloom ($GOMLX_BACKEND) =="
  "$out/gt-bench" -steps "$gsteps" -dump "$out/gt_batches.json" -json "$out/gt_go.json"
  if [[ $torch -eq 1 ]]; then
    echo "== Graph Transformer: PyTorch =="
    "$py" "$root/bench/gt_torch.py" "$out/gt_batches.json" --threads "$threads" --steps "$gsteps" \
      2> >(grep -v -e 'scatter_reduce() is in beta' -e 'scatter_reduce(0' >&2) | tee "$out/gt_torch.json"
  fi
fi

"$py" - "$out" "$threads" "${blas:-n/a}" <<'EOF'
import json, os, sys
out, threads, blas = sys.argv[1], sys.argv[2], sys.argv[3]
def load(name):
    p = os.path.join(out, name)
    return json.load(open(p)) if os.path.exists(p) else None
rows = [("R-GCN train step (64×20–40 nodes, 384→256, 3 rel)", "rgcn", "rgcn"),
        ("  same, gather/scatter layout (-tile 0)", "rgcn_seq", "rgcn"),
        ("GT fwd+bwd (8×~15 nodes, 1024, 4 layers)", "gt", "gt")]
print()
print(f"threads={threads}  BLAS for PyTorch: {blas}")
print(f"{'benchmark':<52} {'graphloom ms':>13} {'PyTorch ms':>11} {'ratio':>7}")
for label, key, tkey in rows:
    g, t = load(key + "_go.json"), load(tkey + "_torch.json")
    if g is None:
        continue
    gm = g["ms_per_step"]
    tm = t["ms_per_step"] if t else None
    ratio = f"{gm / tm:.2f}x" if tm else "-"
    tms = f"{tm:.1f}" if tm else "-"
    print(f"{label:<52} {gm:>13.1f} {tms:>11} {ratio:>7}")
print("ratio = graphloom time / PyTorch time (≤ 1 means graphloom is faster); medians over timed steps.")
EOF
