#!/usr/bin/env bash
# Learned fusion (graphloom calibrate, issue 47) in make eval: for each NAME=DATASET
# given, OUTDIR/NAME.glx is copied, calibrated on its own synthetic questions (the
# dataset is not read), and ppr and hyperppr are evaluated uncalibrated, calibrated
# (the variant calibration chose) and with each fitted part forced (the ablation),
# beside bm25, by Recall@5.
# Usage: scripts/calibration.sh BIN OUTDIR NAME=DATASET...
set -euo pipefail
bin=$1 out=$2
shift 2
r5() { # REPORT.md RETRIEVER → its R@5 (the first recall column: --ks 5)
	awk -F'|' -v r="$2" '$2 ~ "^ *"r" *$" {gsub(/ /, "", $3); print $3}' "$1"
}
# heldout CALIBRATE.txt NAME: rows of the held-out synthetic table from calibrate's
# printout, per retriever: the validated questions, each variant's cross-validated
# R@5, the best feature alone and the feature chosen on each fold's fitting questions,
# and whether each ranker beats them.
heldout() {
	awk -v set="$2" '
		function mark(a, b) { return b == "–" ? "–" : a + 0 > b + 0 ? "✓" : "✗" }
		function flush() { # the pending retriever'"'"'s row; "–" where calibrate printed no chosen feature
			if (bf == "") return
			printf "| %s | %s | %s | %s | %s | %s | %s | %s %s | %s | %s / %s | %s / %s |\n", set, r, n, d, fu, ng, rk, bf, bv, cv,
				mark(ng, bv), mark(rk, bv), mark(ng, cv), mark(rk, cv)
			bf = ""
		}
		$1 ~ /^(ppr|hyperppr):$/ {
			flush()
			r = substr($1, 1, length($1) - 1); n = "–"; cv = "–"
			if (match($0, /[0-9]+ (synthetic )?questions/)) { split(substr($0, RSTART, RLENGTH), w, " "); n = w[1] }
			if ($0 ~ /too small/) { printf "| %s | %s | too small (%s) |  |  |  |  |  |  |  |  |\n", set, r, $0 ~ /lie within one fold/ ? n " held out" : n " kept"; r = "" }
		}
		r != "" && $1 == "R@5" && $2 == "cross-validated:" { d = $4; fu = $6; ng = $8; rk = $10 }
		r != "" && $1 == "features" && $2 == "alone" { bf = $4; bv = $5 }
		r != "" && $1 == "the" && $2 == "feature" && $3 == "best" { cv = $10; flush(); r = "" }
		END { flush() }' "$1"
}
held=()
echo "| set | retriever | bm25 | uncalibrated | calibrated | uses | fusion | ranker-nogate | ranker |"
echo "|---|---|--:|--:|--:|---|--:|--:|--:|"
for spec in "$@"; do
	name=${spec%%=*} dataset=${spec#*=}
	cal="$out/$name-calibrated.glx"
	cp "$out/$name.glx" "$cal"
	t0=$(date +%s.%N)
	"$bin" calibrate --quiet --index "$cal" >"$out/$name-calibrate.txt" 2>/dev/null
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
	declare -A rep=()
	for mode in off auto fusion ranker-nogate ranker; do
		"$bin" eval --quiet --index "$cal" --dataset "$dataset" --retrievers bm25,ppr,hyperppr --no-recognition \
			--calibration "$mode" --ks 5 --out "$out/$name-cal-$mode" >/dev/null
		rep[$mode]="$out/$name-cal-$mode/report.md"
	done
	held+=("$(heldout "$out/$name-calibrate.txt" "$name")")
	for r in ppr hyperppr; do
		uses=$(awk -v r="$r" '$1 == r":" && $2 == "uses" {print $3}' "$out/$name-calibrate.txt")
		echo "| $name (calibrate ${secs}s) | $r | $(r5 "${rep[off]}" bm25) | $(r5 "${rep[off]}" $r) | $(r5 "${rep[auto]}" $r) | $uses | $(r5 "${rep[fusion]}" $r) | $(r5 "${rep[ranker-nogate]}" $r) | $(r5 "${rep[ranker]}" $r) |"
	done
done
echo
echo "R@5 (%) on the dataset's questions (LiteraryQA has no gold passages: its column is AnsIn@5, the answer among the five passages); calibration fitted on the index's own synthetic questions only. 'uses' is the variant
calibration kept (the best on held-out synthetic questions of those that beat the uncalibrated ranking there by 2.39 standard errors, the best of three,
and, if a ranker, every feature alone; defaults: none did); the last three columns force each fitted part (the ablation)."
echo
echo "| set | retriever | held-out synthetic questions | defaults | fusion | ranker-nogate | ranker | best feature alone | feature chosen on the fitting folds | rankers beat every feature alone (nogate / gated) | rankers beat the chosen feature |"
echo "|---|---|--:|--:|--:|--:|--:|---|--:|---|---|"
printf '%s\n' "${held[@]}" | grep -v '^$' || true
echo
echo "R@5 (%) on the index's own synthetic questions, cross-validated by evidence chunk (calibrate's selection data): each
question scored by the variant fitted without its fold; 'best feature alone' ranks by that one feature, the best of eleven picked
after seeing these questions; 'feature chosen on the fitting folds' ranks each fold's questions by the feature best on that fold's
fitting questions, as the rankers are fitted (a single feature picked without seeing them)."
