#!/usr/bin/env bash
# The offline demo: index the bundled example corpus and show what graphloom builds.
# Usage: scripts/demo.sh BIN OUTDIR
set -euo pipefail
bin=${1:-bin/graphloom}
out=${2:-out/demo}
corpus=examples/harbour/corpus.json
mkdir -p "$out"
idx="$out/harbour.gl"

echo "== 1. index $corpus (offline: rule extractor, built-in embedder)"
"$bin" index --corpus "$corpus" --out "$idx"
echo
echo "== 2. stats"
"$bin" stats --index "$idx"
