#!/usr/bin/env bash
# Interop benchmark (issue 15): export an offline graphloom index of the 2Wiki corpus as a
# LightRAG v1.4 working directory, then time importing it back (parse graphml, kv and
# vector stores, re-embed with the built-in embedder, synonym edges, write the index),
# and the GraphML export.
#   bench/interop.sh BIN INDEX.gl OUTDIR
set -euo pipefail
bin=${1:?bin}
gl=${2:?index}
out=${3:?outdir}
mkdir -p "$out"
rm -rf "$out/lightrag" "$out/imported.gl" "$out/graph.graphml"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
peak() { # peak RSS of a command in MiB, when GNU time is there
	if [[ -x /usr/bin/time ]]; then
		/usr/bin/time -f '%M' -o "$out/.rss" "$@" >"$out/.stdout" && awk '{ printf "%.0f MiB", $1 / 1024 }' "$out/.rss"
	else
		"$@" >"$out/.stdout" && echo "n/a"
	fi
}
t0=$(now); m_exp=$(peak "$bin" export --to lightrag "$gl" "$out/lightrag"); t1=$(now)
m_imp=$(peak "$bin" import --from lightrag "$out/lightrag" --out "$out/imported.gl" --quiet); t2=$(now)
imp_stages=$(grep '^time:' "$out/.stdout" || true)
m_gml=$(peak "$bin" export --to graphml "$gl" "$out/graph.graphml"); t3=$(now)
"$bin" stats --index "$out/imported.gl" | head -3
size() { du -sh "$1" | cut -f1; }
printf '%-34s %8s %10s %8s\n' step seconds "peak RSS" size
printf '%-34s %8s %10s %8s\n' "export --to lightrag" "$(secs "$t0" "$t1")" "$m_exp" "$(size "$out/lightrag")"
printf '%-34s %8s %10s %8s\n' "import --from lightrag (+ embed)" "$(secs "$t1" "$t2")" "$m_imp" "$(size "$out/imported.gl")"
echo "import stages: ${imp_stages#time: }"
printf '%-34s %8s %10s %8s\n' "export --to graphml" "$(secs "$t2" "$t3")" "$m_gml" "$(size "$out/graph.graphml")"
