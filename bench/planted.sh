#!/usr/bin/env bash
# Planted missingness (issue 11): delete known cross-chunk and within-chunk facts, run
# augment with the GNN selector, the random selector and the facts shortcut (most facts
# first) at the same number of completion calls (extractive completer), 3 seeds, with one
# scorer and with an ensemble of 3 (augment's default) beside it; count
# deleted facts recovered and deleted-fact regions selected. Example corpus and, with
# ../shared, the 2Wiki corpus.
#   bench/planted.sh BIN CORPORA OUTDIR
set -euo pipefail
bin=$1
corpora=$2
out=$3
mkdir -p "$out"

echo "example corpus (45 chunks): 10 + 10 facts deleted, 100 roots, budget 40"
"$bin" index --corpus examples/harbour/corpus.json --out "$out/harbour.gl" --quiet >/dev/null
for k in 1 3; do
	echo " ensemble of $k (--ensemble $k):"
	"$bin" augment --index "$out/harbour.gl" --planted 10 --roots 100 --budget 40 --ensemble "$k" --quiet | tee "$out/harbour-k$k.txt"
done

if [[ -f "$corpora/2wikimultihopqa_corpus.json" ]]; then
	echo
	echo "2Wiki (6,119 passages): 100 + 100 facts deleted, paper budget (0.1 × 2 × chunks)"
	[[ -f "$out/2wiki.gl" ]] || "$bin" index --corpus "$corpora/2wikimultihopqa_corpus.json" --out "$out/2wiki.gl" --quiet >/dev/null
	# One scorer, then the default ensemble of 3 (three trainings a seed); PLANTED_2WIKI_K
	# replaces the list ("1" alone for the short run).
	for k in ${PLANTED_2WIKI_K:-1 3}; do
		echo " ensemble of $k (--ensemble $k):"
		"$bin" augment --index "$out/2wiki.gl" --planted 100 --ensemble "$k" --quiet | tee "$out/2wiki-k$k.txt"
	done
fi
