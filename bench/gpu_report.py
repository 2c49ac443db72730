#!/usr/bin/env python3
"""Renders the GPU job's results (OUT/results.jsonl, one record per step, written by
bench/gpu.sh --run as each step finishes) as OUT/table.md and OUT/results.json.

Usage: gpu_report.py OUT
"""
import json
import os
import sys

# The figure each step reports: (JSON key, unit, format).
FIGURES = [("ms_per_step", "ms/step", "{:.2f}"), ("ms_per_query", "ms/query", "{:.3f}"),
           ("passages_per_s", "passages/s", "{:.1f}"), ("max_abs_logit_diff", "max |Δlogit|", "{:.2e}"),
           ("glibc", "", "{}")]
CHECKS = [("max_abs_diff_vs_cpu", "vs CPU"), ("max_abs_diff_vs_graphloom", "vs graphloom"),
          ("min_cosine_vs_graphloom", "min cos vs graphloom"), ("greedy_match", "greedy tokens match")]


def figure(r):
    for key, unit, fmt in FIGURES:
        if key in r.get("result", {}):
            return (fmt.format(r["result"][key]) + " " + unit).strip()
    return "-"


def main():
    out = sys.argv[1]
    recs = []
    path = os.path.join(out, "results.jsonl")
    if os.path.exists(path):
        recs = [json.loads(line) for line in open(path) if line.strip()]
    lines = ["| step | implementation | status | figure | note |", "|---|---|---|---|---|"]
    for r in recs:
        res = r.get("result", {})
        notes = [f"{label} {res[k]:.3g}" if isinstance(res[k], float) else f"{label} {res[k]}"
                 for k, label in CHECKS if k in res]
        if r.get("reason"):
            notes.insert(0, r["reason"])
        lines.append(f"| {r['step']} | {r['impl']} | {r['status']} | {figure(r)} | {'; '.join(notes)} |")
    with open(os.path.join(out, "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(recs, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
