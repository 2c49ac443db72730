#!/usr/bin/env bash
# CrossAug seed stability: runs the whole `augment --plan --no-checkpoint` command
# once per seed and reports, over the seeds, the mean and standard deviation of the
# scorer's test ROC-AUC, of the number of subgraphs ≥ θ and of the test expected
# calibration error before and after calibration, and the mean pairwise Jaccard of
# the selected subgraph sets (a subgraph named by its root entity).
# STABILITY_FLAG=--split-seed varies the data sample instead of training (--seed then
# stays at augment's default unless given among the flags).
#   bench/augment_stability.sh BIN INDEX OUTDIR "SEEDS" [augment flags…]
set -euo pipefail
bin=$1
index=$2
out=$3
seeds=$4
shift 4
mkdir -p "$out"
files=()
for s in $seeds; do
	f="$out/seed$s.json"
	"$bin" augment --index "$index" --plan --no-checkpoint --json --quiet "${STABILITY_FLAG:---seed}" "$s" "$@" >"$f"
	files+=("$f")
done
/usr/bin/env python3 - "${files[@]}" <<'PY'
import itertools, json, statistics, sys
rows = []
for path in sys.argv[1:]:
    r = json.load(open(path))["report"]
    t = r["training"]
    rows.append(dict(auc=t["test_roc_auc"], se=t.get("test_roc_auc_se", float("nan")), base=t["best_shortcut_baseline"], above=r["subgraphs_above_threshold"],
                     sampled=r["sampled_subgraphs"], ece=t.get("test_ece", float("nan")), ecec=t.get("test_ece_calibrated", float("nan")),
                     sel={s["root"] for s in r.get("selected") or []}, secs=float(r["stage_seconds"].get("train", 0))))
def ms(k):
    xs = [r[k] for r in rows]
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.mean(xs):.3f} ± {sd:.3f}"
jac = [len(a["sel"] & b["sel"]) / max(1, len(a["sel"] | b["sel"])) for a, b in itertools.combinations(rows, 2)]
for r, p in zip(rows, sys.argv[1:]):
    print(f"  {p.rsplit('/', 1)[-1]}: test ROC-AUC {r['auc']:.3f} ± {r['se']:.3f} (best shortcut {r['base']:.3f}), {r['above']} of {r['sampled']} ≥ θ, {len(r['sel'])} selected, ECE {r['ece']:.3f} → {r['ecec']:.3f}, train {r['secs']:.0f}s")
print(f"  over {len(rows)} seeds: test ROC-AUC {ms('auc')} (a run's own standard error from its test roots: {ms('se')}); ≥ θ {ms('above')}; best shortcut {ms('base')}; ECE {ms('ece')} uncalibrated, {ms('ecec')} calibrated")
if jac:
    print(f"  mean pairwise Jaccard of the selected sets: {statistics.mean(jac):.3f} (min {min(jac):.3f})")
# Issue 50's acceptance rows, read off the figures above.
if len(rows) > 1:
    mark = lambda ok: "✓" if ok else "✗"
    auc = [r["auc"] for r in rows]
    above = [r["above"] for r in rows]
    m_above = statistics.mean(above)
    worst = max(abs(a - m_above) for a in above) / max(1e-9, m_above)
    m_base = statistics.mean(r["base"] for r in rows)
    ece, ecec = statistics.mean(r["ece"] for r in rows), statistics.mean(r["ecec"] for r in rows)
    rises = sum(r["ecec"] > r["ece"] for r in rows)
    print(f"  checks: ROC-AUC sd {statistics.stdev(auc):.3f} ≤ 0.03 {mark(statistics.stdev(auc) <= 0.03)}; "
          f"count ≥ θ within ±{100 * worst:.0f} % of its mean (≤ 20 %) {mark(worst <= 0.2)}; "
          f"Jaccard {statistics.mean(jac):.2f} ≥ 0.6 {mark(statistics.mean(jac) >= 0.6)}; "
          f"mean ROC-AUC {statistics.mean(auc):.3f} ≥ shortcut {m_base:.3f} + 0.10 {mark(statistics.mean(auc) >= m_base + 0.1)}; "
          f"mean ECE {ece:.3f} → {ecec:.3f} {mark(ecec < ece)} (higher after calibration on {rises} of {len(rows)} seeds)")
PY
