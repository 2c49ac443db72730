#!/usr/bin/env bash
# Personalized PageRank benchmark: graphloom (CPU kernel, batch, GoMLX on the pure-Go
# backend) against python-igraph's PRPACK on one identical random graph.
#
#   bench/ppr.sh OUTDIR [extra flags for bench/ppr, e.g. -n 20000 -m 60000 -reps 3]
#
# Writes OUTDIR/{graph.bin,graphloom.bin,go.json,igraph.json,ppr_table.md} and prints
# the table. PPR_PATHS="avx2 portable" (kernel paths, GRAPHLOOM_KERNELS) also times the
# Go kernels on each of those paths, into OUTDIR/PATH/go.json, and the table and its
# memory floors show every path's rows. python-igraph is used from /usr/bin/python3 (Debian python3-igraph); if it
# is missing, the script tries `apt-get install -y python3-igraph` and otherwise skips
# the igraph column with a message.
set -euo pipefail

if [ $# -lt 1 ]; then
	echo "usage: $0 OUTDIR [bench/ppr flags]" >&2
	exit 2
fi
out=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

export GOEXPERIMENT=simd GOMLX_BACKEND=go GOMLX_NO_AUTO_INSTALL=1
(cd "$root" && go build -o "$out/pprbench" ./bench/ppr)

echo "== graphloom (Go)" >&2
"$out/pprbench" -out "$out" "$@"
dirs=$out
for p in ${PPR_PATHS:-}; do
	echo "== graphloom (Go), GRAPHLOOM_KERNELS=$p" >&2
	mkdir -p "$out/$p"
	GRAPHLOOM_KERNELS=$p "$out/pprbench" -out "$out/$p" -gomlx=false "$@"
	dirs=$dirs,$out/$p
done

echo "== python-igraph" >&2
py=/usr/bin/python3
rm -f "$out/igraph.json"
if ! "$py" -c 'import igraph' 2>/dev/null; then
	echo "python-igraph not importable by $py; trying apt-get install -y python3-igraph" >&2
	if command -v apt-get >/dev/null && { [ "$(id -u)" = 0 ] || command -v sudo >/dev/null; }; then
		sudo_=""
		[ "$(id -u)" = 0 ] || sudo_=sudo
		DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y python3-igraph >"$out/apt.log" 2>&1 ||
			echo "apt-get install failed (see $out/apt.log)" >&2
	fi
fi
if [ -x "$py" ] && "$py" -c 'import igraph' 2>/dev/null; then
	"$py" "$root/bench/ppr_igraph.py" "$out"
else
	echo "skipping igraph: python-igraph unavailable for $py" >&2
	echo '{"skipped": "python-igraph unavailable for /usr/bin/python3"}' >"$out/igraph.json"
fi

"$out/pprbench" -table "$dirs" | tee "$out/ppr_table.md"
