#!/usr/bin/env bash
# CrossAug timing: the scorer's share (sampling + training + scoring) of a whole
# augment run, offline (extractive completer), on the example corpus and, with
# ../shared, a --plan run on the 2Wiki corpus (6,119 passages); then the seed
# stability of a single scorer against the ensemble (bench/augment_stability.sh) on
# the example corpus, over STABILITY_SEEDS (default 42 1 2 3 4) seeds of the whole
# command, with the ensemble size STABILITY_K (default: augment's --ensemble default),
# and the ensemble over STABILITY_SPLITS (default 0 1 2 3 4) data samples
# (--split-seed); with STABILITY_2WIKI=1 the same three on the 2Wiki index (--plan, its
# defaults; on 2 shared cores one scorer 3.5–9 minutes a seed, the ensemble of 3 11–27;
# on 2 quiet AMD EPYC cores the ensemble 2–2.5).
#   bench/augment.sh BIN CORPORA OUTDIR
set -euo pipefail
bin=$1
corpora=$2
out=$3
mkdir -p "$out"

stages() {
	/usr/bin/env python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["report"]
s = {k: float(v) for k, v in r["stage_seconds"].items()}
gnn = sum(s.get(k, 0) for k in ("graph", "sample", "train", "score"))
total = sum(s.values())
t = r["training"]
print(f"  stages (s): " + ", ".join(f"{k} {v:.2f}" for k, v in s.items()))
print(f"  sampling + training + scoring: {gnn:.1f}s of {total:.1f}s ({100*gnn/max(total,1e-9):.0f}%)")
b = t["shortcut_baselines_test_roc_auc"]
print(f"  scorer: {t['epochs']} epochs (best {t['best_epoch']}), {t['compilations']} compilations; test split (disjoint entities) ROC-AUC {t['test_roc_auc']:.3f}, ranking {t['test_ranking_accuracy']:.3f}")
print(f"  shortcut baselines (test ROC-AUC): " + ", ".join(f"{k} {v:.3f}" for k, v in sorted(b.items())))
print(f"  expected calibration error (test split, 10 bins): {t.get('test_ece', float('nan')):.3f} uncalibrated, {t.get('test_ece_calibrated', float('nan')):.3f} calibrated; {max(1, len(t.get('members') or []))} scorer(s)")
q = r.get("score_quantiles") or []
print(f"  missingness score quantiles (min, 25%, 50%, 75%, max): {q}; {r['subgraphs_above_threshold']} of {r['sampled_subgraphs']} ≥ θ")
print(f"  {r['completion_calls']} completion calls, {r.get('planned_prompt_tokens', 0)} planned prompt tokens, {r['added']['triples']} triples added")
PY
}

echo "example corpus (45 chunks), extractive completer:"
"$bin" index --corpus examples/harbour/corpus.json --out "$out/harbour.gl" --quiet >/dev/null
"$bin" augment --index "$out/harbour.gl" --roots 100 --budget 40 --no-checkpoint --json --quiet >"$out/harbour.json"
stages "$out/harbour.json"

if [[ -f "$corpora/2wikimultihopqa_corpus.json" ]]; then
	echo "2Wiki (6,119 passages), --plan:"
	"$bin" index --corpus "$corpora/2wikimultihopqa_corpus.json" --out "$out/2wiki.gl" --quiet >/dev/null
	"$bin" augment --index "$out/2wiki.gl" --plan --no-checkpoint --json --quiet >"$out/2wiki.json"
	stages "$out/2wiki.json"
fi

seeds=${STABILITY_SEEDS:-42 1 2 3 4}
k=${STABILITY_K:-}
kflag=()
[[ -n "$k" ]] && kflag=(--ensemble "$k")
dir=$(cd "$(dirname "$0")" && pwd)
# A fresh index: the timing run above augmented harbour.gl in place.
"$bin" index --corpus examples/harbour/corpus.json --out "$out/harbour-stability.gl" --quiet >/dev/null
echo "seed stability, example corpus, augment --plan --no-checkpoint --roots 100 --budget 40, seeds $seeds:"
echo " single scorer (--ensemble 1):"
"$dir/augment_stability.sh" "$bin" "$out/harbour-stability.gl" "$out/stability-single" "$seeds" --roots 100 --budget 40 --ensemble 1
echo " ensemble (${k:-default} members):"
"$dir/augment_stability.sh" "$bin" "$out/harbour-stability.gl" "$out/stability-ensemble" "$seeds" --roots 100 --budget 40 "${kflag[@]}"
splits=${STABILITY_SPLITS:-0 1 2 3 4}
echo " ensemble (${k:-default} members) over data samples, --split-seed $splits:"
STABILITY_FLAG=--split-seed "$dir/augment_stability.sh" "$bin" "$out/harbour-stability.gl" "$out/stability-ensemble-splits" "$splits" --roots 100 --budget 40 "${kflag[@]}"
if [[ -n "${STABILITY_2WIKI:-}" && -f "$out/2wiki.gl" ]]; then
	echo "seed stability, 2Wiki, augment --plan --no-checkpoint, seeds $seeds:"
	echo " single scorer (--ensemble 1):"
	"$dir/augment_stability.sh" "$bin" "$out/2wiki.gl" "$out/stability-2wiki-single" "$seeds" --ensemble 1
	echo " ensemble (${k:-default} members):"
	"$dir/augment_stability.sh" "$bin" "$out/2wiki.gl" "$out/stability-2wiki-ensemble" "$seeds" "${kflag[@]}"
	echo " ensemble (${k:-default} members) over data samples, --split-seed $splits:"
	STABILITY_FLAG=--split-seed "$dir/augment_stability.sh" "$bin" "$out/2wiki.gl" "$out/stability-2wiki-ensemble-splits" "$splits" "${kflag[@]}"
fi
