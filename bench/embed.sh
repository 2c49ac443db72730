#!/usr/bin/env bash
# Benchmarks the sentence encoder (models/encoder, `--embedder local:DIR`) at
# bge-small-en-v1.5's shapes (12 layers, 384 wide, 12 heads, 512 tokens, random
# weights written by the bench) against a BERT-shaped PyTorch nn.TransformerEncoder
# on the same shapes and threads, and prints passages per second and the ratio.
#
# Usage: bench/embed.sh [--threads N] [--passages N] [--batch N] [--out DIR]
#   --threads N   CPU threads for both sides (GOMAXPROCS, torch.set_num_threads); default 2
#   --passages N  timed passages; default 32 (each batch timed alone: the median batch is the figure)
#   --batch N     passages per forward pass; default 8
#   --out DIR     where the JSON results go; default bench/out
#
# PyTorch is used when /usr/bin/python3 imports torch (bench/rgcn.sh installs Debian's
# python3-torch with an optimised BLAS); otherwise only graphloom's figure is printed
# and the reference is reported unavailable.
set -euo pipefail

threads=2
passages=32
batch=8
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/bench/out"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --threads) threads="$2"; shift 2 ;;
    --passages) passages="$2"; shift 2 ;;
    --batch) batch="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "embed.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
export GOEXPERIMENT=simd GOMLX_NO_AUTO_INSTALL=1 GOMAXPROCS="$threads" OMP_NUM_THREADS="$threads"
export GOMLX_BACKEND="${GOMLX_BACKEND:-go}"
py=/usr/bin/python3
[[ -x $py ]] || py=python3

rm -f "$out/embed_go.json" "$out/embed_torch.json"
echo "== graphloom encoder ($GOMLX_BACKEND) =="
(cd "$root" && go run ./bench/embed -passages "$passages" -batch "$batch" -json "$out/embed_go.json")
if "$py" -c 'import torch' 2>/dev/null; then
  blas="$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)"
  if [[ -n "$blas" && "$blas" != *openblas* && "$blas" != *mkl* && "$blas" != *blis* ]]; then
    # Debian's PyTorch calls libblas.so.3; the reference BLAS makes it ~7x slower here.
    echo "warning: PyTorch calls the unoptimised reference BLAS ($blas): the ratio below flatters graphloom (bench/rgcn.sh installs libopenblas0-openmp)"
  fi
  echo "== PyTorch nn.TransformerEncoder =="
  "$py" "$root/bench/embed_torch.py" --passages "$passages" --batch "$batch" --threads "$threads" | tee "$out/embed_torch.json"
else
  echo "PyTorch reference unavailable: $py cannot import torch (bench/rgcn.sh installs it)"
fi

"$py" - "$out" "$threads" <<'PY'
import json, os, sys
out, threads = sys.argv[1], sys.argv[2]
load = lambda n: json.load(open(os.path.join(out, n))) if os.path.exists(os.path.join(out, n)) else None
g, t = load("embed_go.json"), load("embed_torch.json")
print(f"\nthreads={threads}  bge-small shapes, {g['len']} tokens, batch {g['batch']}")
print(f"{'':<28} {'passages/s':>11} {'ms/passage':>11}")
print(f"{'graphloom':<28} {g['passages_per_s']:>11.2f} {g['ms_per_passage']:>11.0f}")
if t:
    print(f"{'PyTorch ' + t['torch']:<28} {t['passages_per_s']:>11.2f} {t['ms_per_passage']:>11.0f}")
    print(f"ratio (graphloom time / PyTorch time): {g['ms_per_passage'] / t['ms_per_passage']:.2f}x (goal ≤ 1.5x)")
else:
    print("PyTorch: unavailable, no ratio")
PY
