#!/usr/bin/env bash
# Retrieval evaluation (make eval): the example corpus always, the shared corpora when present.
# Usage: scripts/eval.sh BIN CORPORA_DIR OUTDIR
#
# Offline by default: every index is built with the rule extractor and the built-in
# embedder, and only retrieval is scored (Recall@k, answer-in-passages). With EVAL_LLM=1
# and an LLM configured (GRAPHLOOM_LLM_BASE_URL, GRAPHLOOM_LLM_MODEL) the questions are
# also answered and judged (EM/F1, correctness/completeness) — that costs LLM calls.
# Each dataset gets OUTDIR/<name>/{report.md,report.json,recall.png,recall.svg};
# OUTDIR/summary.md concatenates the reports.
set -euo pipefail
bin=${1:-bin/graphloom}
corpora=${2:-../shared/data/corpora}
out=${3:-out/eval}
mkdir -p "$out"
summary="$out/summary.md"
: >"$summary"
start=$SECONDS

# Offline unless asked: no reader, no judge, and no recognition-memory LLM filter in ppr
# even when an LLM happens to be configured in the environment.
answer=(--no-recognition)
if [[ "${EVAL_LLM:-0}" == 1 ]]; then
	answer=(--answer --judge)
fi

# index NAME CORPUS: build OUTDIR/NAME.glx offline, quietly.
index() {
	"$bin" index --quiet --extractor rule --embedder hash --corpus "$2" --out "$out/$1.glx" | sed -n '1p;2p' | sed 's/^/  /'
}

# evaluate NAME DATASET [FLAGS...]: evaluate every retriever on OUTDIR/NAME.glx.
evaluate() {
	local name=$1 dataset=$2
	shift 2
	"$bin" eval --quiet --index "$out/$name.glx" --dataset "$dataset" --out "$out/$name" "${answer[@]}" "$@"
	cat "$out/$name/report.md" >>"$summary"
	echo >>"$summary"
}

section() { printf '\n== %s  [%ds]\n' "$1" $((SECONDS - start)); }

section "harbour: examples/harbour (45 passages, 26 multi-hop questions)"
index harbour examples/harbour/corpus.json
evaluate harbour examples/harbour/questions.json
echo
echo "rule extractor vs examples/harbour/gold_triples.json:"
"$bin" eval --index "$out/harbour.glx" --extraction examples/harbour/gold_triples.json

if [[ ! -d "$corpora" ]]; then
	printf '\n(%s not found: only the example corpus was evaluated)\n' "$corpora"
	printf '\nmake eval: %ds; reports in %s\n' $((SECONDS - start)) "$out"
	exit 0
fi

section "MoreHopQA-150, corpus built from its own contexts"
"$bin" eval --dataset "$corpora/morehopqa_150.json" --corpus-out "$out/morehopqa_corpus.json" | sed 's/^/  /'
index morehopqa "$out/morehopqa_corpus.json"
evaluate morehopqa "$corpora/morehopqa_150.json"

section "PubMedQA dev-500, one passage per abstract (gold: the question's own abstract)"
"$bin" eval --dataset "$corpora/pubmedqa/pqal_dev500.json" --corpus-out "$out/pubmedqa_corpus.json" | sed 's/^/  /'
index pubmedqa "$out/pubmedqa_corpus.json"
evaluate pubmedqa "$corpora/pubmedqa/pqal_dev500.json"

for cs in biomed books movies university; do
	section "HippoRAG case study: $cs"
	index "case_$cs" "$corpora/case_study_${cs}_corpus.json"
	evaluate "case_$cs" "$corpora/case_study_$cs.json"
done

for book in "$corpora"/literaryqa/literaryqa_test_*_corpus.json; do
	[[ -e "$book" ]] || continue
	ds=${book%_corpus.json}.json
	name=$(basename "${ds%.json}")
	section "LiteraryQA: $name (no gold passages: retrieval is scored by answer-in-passages; EM/F1 need EVAL_LLM=1)"
	index "$name" "$book"
	evaluate "$name" "$ds"
done

# Ablations (issue: the graph must beat BM25): each retrieval component switched off
# in turn, and each graph-build component on the two multi-hop sets.
ablate_row() { # NAME DATASET LABEL FLAGS...
	local name=$1 dataset=$2 label=$3
	shift 3
	"$bin" eval --quiet --index "$out/$name.glx" --dataset "$dataset" --retrievers bm25,ppr,hyperppr "${answer[@]}" --json "$@" |
		python3 -c '
import json, sys
r = json.load(sys.stdin)
label = sys.argv[1]
for s in r["retrievers"]:
    if s["retriever"] == "bm25" and label != "default":
        continue
    rec = s.get("recall_at") or {}
    ms = 1000 * s.get("retrieval_seconds", 0) / max(1, s.get("questions", 1))
    cells = [("%5.1f" % (100 * rec[k])) if k in rec else "    -" for k in ("2", "5", "10")]
    ans = (s.get("answer_in_passages_at") or {}).get("5")
    print("| %-32s | %-8s | %s | %s | %6.2f |" % (label, s["retriever"], " | ".join(cells), ("%5.1f" % (100 * ans)) if ans is not None else "    -", ms))
' "$label"
}
ablate() { # NAME DATASET
	local name=$1 dataset=$2
	echo
	echo "ablation: $name (R@2, R@5, R@10; answer-in-top-5 where no gold passages)"
	echo "| setting                          | retriever|  R@2 |  R@5 | R@10 | Ans@5 |  ms/q |"
	echo "|---|---|---|---|---|---|---|"
	ablate_row "$name" "$dataset" default
	ablate_row "$name" "$dataset" "no BM25 fusion (--lexical dense)" --lexical dense
	ablate_row "$name" "$dataset" "no final fusion (μ=0)" --final-bm25-weight 0
	ablate_row "$name" "$dataset" "no query-entity seeds" --query-entities=false
	ablate_row "$name" "$dataset" "no stemming" --stem=false
	ablate_row "$name" "$dataset" "+ hub weights" --hub-weights
}
ablate_index() { # NAME CORPUS DATASET
	local name=$1 corpus=$2 dataset=$3
	for v in "no generic filter:--max-entity-share 0" "keep mention-only:--mention-only" "no entity rules:--entity-rules=false"; do
		"$bin" index --quiet --extractor rule --embedder hash --corpus "$corpus" --out "$out/$name-abl.glx" ${v#*:} >/dev/null
		ablate_row "$name-abl" "$dataset" "index: ${v%%:*}"
	done
	rm -f "$out/$name-abl.glx"
}
section "ablations"
{
	ablate harbour examples/harbour/questions.json
	ablate_index harbour examples/harbour/corpus.json examples/harbour/questions.json
	ablate morehopqa "$corpora/morehopqa_150.json"
	ablate_index morehopqa "$out/morehopqa_corpus.json" "$corpora/morehopqa_150.json"
	ablate pubmedqa "$corpora/pubmedqa/pqal_dev500.json"
	for book in "$corpora"/literaryqa/literaryqa_test_*_corpus.json; do
		[[ -e "$book" ]] || continue
		ds=${book%_corpus.json}.json
		ablate "$(basename "${ds%.json}")" "$ds"
	done
} | tee "$out/ablations.md"
cat "$out/ablations.md" >>"$summary"

printf '\nmake eval: %ds; reports in %s (summary: %s)\n' $((SECONDS - start)) "$out" "$summary"
