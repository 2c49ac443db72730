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

section "long technical document: the Go toolchain's docs (synthetic sentence recall; scripts/techset.py)"
if command -v python3 >/dev/null && [[ -d "$(go env GOROOT 2>/dev/null)/doc" ]]; then
	python3 scripts/techset.py "$(go env GOROOT)/doc" "$out/techset" | sed 's/^/  /'
	index techset "$out/techset/corpus.json"
	evaluate techset "$out/techset/questions.json"
else
	echo "  skipped: needs python3 and the Go toolchain's doc folder"
fi

if [[ ! -d "$corpora" ]]; then
	printf '\n(%s not found: only the example corpus was evaluated)\n' "$corpora"
	printf '\nmake eval: %ds; reports in %s\n' $((SECONDS - start)) "$out"
	exit 0
fi

section "MoreHopQA-150, corpus built from its own contexts"
"$bin" eval --dataset "$corpora/morehopqa_150.json" --corpus-out "$out/morehopqa_corpus.json" --force | sed 's/^/  /'
index morehopqa "$out/morehopqa_corpus.json"
evaluate morehopqa "$corpora/morehopqa_150.json"

section "PubMedQA dev-500, one passage per abstract (gold: the question's own abstract)"
"$bin" eval --dataset "$corpora/pubmedqa/pqal_dev500.json" --corpus-out "$out/pubmedqa_corpus.json" --force | sed 's/^/  /'
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

# Learned fusion (issue 47): each index calibrated on its own synthetic questions
# (graphloom calibrate), then ppr and hyperppr uncalibrated, calibrated and with each
# fitted part forced, beside bm25.
section "learned fusion: graphloom calibrate"
{
	sets=(harbour=examples/harbour/questions.json morehopqa="$corpora/morehopqa_150.json" pubmedqa="$corpora/pubmedqa/pqal_dev500.json")
	for cs in biomed books movies university; do
		sets+=("case_$cs=$corpora/case_study_$cs.json")
	done
	if [[ -e "$out/techset.glx" ]]; then
		sets+=("techset=$out/techset/questions.json")
	fi
	for book in "$corpora"/literaryqa/literaryqa_test_*_corpus.json; do
		[[ -e "$book" ]] || continue
		ds=${book%_corpus.json}.json
		sets+=("$(basename "${ds%.json}")=$ds")
	done
	scripts/calibration.sh "$bin" "$out" "${sets[@]}"
	# The 2Wiki corpus has no questions here: what calibrate keeps there, and how long
	# it takes on this machine (issue 47 asks ≤ 5 minutes on 2 cores).
	if [[ -e "$corpora/2wikimultihopqa_corpus.json" ]]; then
		echo
		index 2wiki "$corpora/2wikimultihopqa_corpus.json" >/dev/null
		t0=$SECONDS
		if ! "$bin" calibrate --quiet --index "$out/2wiki.glx" >"$out/2wiki-calibrate.txt" 2>"$out/2wiki-calibrate.log"; then
			cat "$out/2wiki-calibrate.log" >&2
			exit 1
		fi
		echo "2Wiki corpus (no questions): calibrate took $((SECONDS - t0)) s on $(nproc) cores:"
		grep -E '^(synthetic questions|ppr:|hyperppr:)' "$out/2wiki-calibrate.txt" | sed 's/^/  /' || true
	fi
} | tee "$out/calibration.md"
cat "$out/calibration.md" >>"$summary"

# CAGE reranking (issue 14): the passage-graph encoder trained beside the index (and the
# one-relation GCN ablation's), then each question's own passage pool and the
# retrievers' top 20 candidates reranked: none / dense (cosine) / cage and the GCN,
# β = 1 and α = 1 ablations.
cage() { # NAME DATASET [POOL FLAGS...]
	local name=$1 dataset=$2
	shift 2
	"$bin" train cage --index "$out/$name.glx" | sed 's/^/  /'
	"$bin" train cage --index "$out/$name.glx" --gcn | sed 's/^/  /'
	"$bin" eval --quiet --index "$out/$name.glx" --dataset "$dataset" --rerank cage --pool question --ablate --ks 2,5 "$@" \
		--out "$out/$name-cage-pool"
	"$bin" eval --quiet --index "$out/$name.glx" --dataset "$dataset" --rerank cage --retrievers bm25,dense,ppr --candidates 20 \
		--ablate --ks 2,5 "${answer[@]}" --out "$out/$name-cage"
	echo
}
section "CAGE reranking"
{
	echo "harbour (own pools: 3–6 passages with distractors)"
	cage harbour examples/harbour/questions.json
	# Its own pools hold only the 2 gold passages, which any ranking orders perfectly
	# (eval refuses them): 8 seeded distractors are added to each.
	echo "MoreHopQA-150 (own pools: the 2 gold passages and 8 seeded distractors)"
	cage morehopqa "$corpora/morehopqa_150.json" --pool-distractors 8
} | tee "$out/cage.md"
cat "$out/cage.md" >>"$summary"

# SelfGraphRAG (seed 001, issue 13): GraphLM — G-Retriever trained on the graph's own
# synthetic QA — against the same frozen LM given the same verbalised subgraph without
# the graph token, on a held-out fifth of the synthetic questions (token F1, EM). It
# needs a local Llama/Qwen2 model directory (config.json, *.safetensors,
# tokenizer.json) in GRAPHLOOM_LM_DIR; nothing is downloaded.
section "SelfGraphRAG: GraphLM vs the frozen LM alone (synthetic validation slice)"
if [[ -n "${GRAPHLOOM_LM_DIR:-}" ]]; then
	sg="$out/selfgraphrag"
	mkdir -p "$sg"
	"$bin" synth --quiet --index "$out/harbour.glx" --generator template --out "$sg/synth.jsonl"
	awk 'NR % 5 != 0' "$sg/synth.jsonl" >"$sg/train.jsonl"
	awk 'NR % 5 == 0' "$sg/synth.jsonl" >"$sg/val.jsonl"
	{
		"$bin" train selfgraphrag --quiet --index "$out/harbour.glx" --synth "$sg/train.jsonl" --val "$sg/val.jsonl" \
			--lm "$GRAPHLOOM_LM_DIR" --out "$sg/graphlm" --force
		for mode in graph-token no-graph-token; do
			flags=()
			[[ $mode == no-graph-token ]] && flags=(--no-graph-token)
			echo "### $mode"
			"$bin" eval --quiet --index "$out/harbour.glx" --dataset "$sg/val.jsonl" --retrievers gretriever \
				--model "$sg/graphlm" --lm "$GRAPHLOOM_LM_DIR" "${flags[@]}" --out "$sg/$mode" | sed -n '2,$p'
		done
	} | tee "$sg/summary.md"
	cat "$sg/summary.md" >>"$summary"
else
	echo "skipped: set GRAPHLOOM_LM_DIR to a local Llama/Qwen2 model directory to compare GraphLM with the frozen LM alone"
fi

# Ablations: the graph retrievers with each retrieval component switched off in turn
# and, where the corpus is at hand, each graph-build component (graphloom eval --ablate).
ablate() { # NAME DATASET [CORPUS]
	local name=$1 dataset=$2 corpus=${3:-}
	local extra=()
	[[ -n "$corpus" ]] && extra=(--ablate-corpus "$corpus")
	"$bin" eval --quiet --index "$out/$name.glx" --dataset "$dataset" --retrievers bm25,ppr,hyperppr "${answer[@]}" \
		--ablate "${extra[@]}" --out "$out/$name" | sed -n '2,$p'
	echo
}
section "ablations"
{
	ablate harbour examples/harbour/questions.json examples/harbour/corpus.json
	ablate morehopqa "$corpora/morehopqa_150.json" "$out/morehopqa_corpus.json"
	ablate pubmedqa "$corpora/pubmedqa/pqal_dev500.json"
	[[ -f "$out/techset.glx" ]] && ablate techset "$out/techset/questions.json" "$out/techset/corpus.json"
	for book in "$corpora"/literaryqa/literaryqa_test_*_corpus.json; do
		[[ -e "$book" ]] || continue
		ds=${book%_corpus.json}.json
		ablate "$(basename "${ds%.json}")" "$ds" "$book"
	done
} | tee "$out/ablations.md"
cat "$out/ablations.md" >>"$summary"

printf '\nmake eval: %ds; reports in %s (summary: %s)\n' $((SECONDS - start)) "$out" "$summary"
