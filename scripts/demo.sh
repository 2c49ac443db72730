#!/usr/bin/env bash
# The demo: index the bundled example corpus, augment it with CrossAug at the paper's
# θ = 0.5, query it, find a cross-chunk question that PPR on the augmented index answers
# and BM25 does not (from the actual rankings), and measure retrieval before and after.
# Offline by default (rule extractor, built-in embedder, extractive completer); with
# GRAPHLOOM_LLM_BASE_URL and GRAPHLOOM_LLM_MODEL set, augmentation completes with that LLM.
# Usage: scripts/demo.sh BIN OUTDIR
set -euo pipefail
bin=${1:-bin/graphloom}
out=${2:-out/demo}
ex=examples/harbour
mkdir -p "$out"
idx="$out/harbour.gl"
before="$out/harbour-before.gl"
# Keep the scorer checkpoint ($idx.scorer): the index below is rebuilt identically, so a
# second demo reuses the trained scorer instead of training again.
rm -f "$idx" "$idx".aug-*.json "$idx".lock "$before"
start=$(date +%s)

step() { printf '\n== %s  (%ds)\n' "$*" "$(($(date +%s) - start))"; }

step "1. index $ex/corpus.json (rule extractor, built-in hashed TF-IDF embedder)"
"$bin" index --corpus "$ex/corpus.json" --out "$idx" --extractor rule --quiet
cp "$idx" "$before"

step "2. what the index holds"
"$bin" stats --index "$idx"

step "3. CrossAug at the paper's θ: train the missingness scorer, select subgraphs, complete, merge"
# The example corpus is small (45 chunks): like the paper's LiteraryQA profile, use an
# absolute root and completion budget instead of the multi-hop fractions; θ is the
# paper's 0.5. The scorer's test split shares no entity with its training views;
# if no subgraph reaches θ the command says so and records no run.
# One scorer (--ensemble 1), not the default ensemble of 3: the members train
# concurrently, but on 2 cores they still cost 2.5 trainings of one (76 s against 31 s
# on an AVX-512 machine, 142 s on the AVX2 path), which would take the demo past its
# 2-minute budget on an AVX2 machine. The scorer's split (test region, training and
# validation regions) comes from --split-seed, not --seed, and the inference roots and
# walks from no seed: this command with --plan over seeds 42, 1, 2, 3, 4 measured test
# ROC-AUC 0.649 ± 0.039 (shortcut baselines 0.500), 45 ± 2 of 68 subgraphs ≥ θ, a mean
# pairwise Jaccard of the selected sets of 0.85 and test calibration error 0.429 → 0.116
# (the default ensemble of 3: 0.696 ± 0.025, 46 ± 1, 0.95; make bench section 4).
"$bin" augment --index "$idx" --roots 100 --budget 40 --ensemble 1 --gold-facts "$ex/facts.json" --quiet
echo "bench spread of this command over seeds 42, 1, 2, 3, 4 (make bench section 4, AVX-512 machine; AVX2 trains other scorers from the same seeds): test ROC-AUC 0.649 ± 0.039, 45 ± 2 of 68 ≥ θ, selected sets' mean pairwise Jaccard 0.85, test calibration error 0.429 → 0.116"

step "4. a multi-hop question over the augmented graph (HippoRAG 2 PPR)"
"$bin" query --index "$idx" --retriever ppr --top-k 3 --no-recognition \
	"Who bought the Meridian in 1801?"

step "5. cross-chunk questions PPR on the augmented index answers and BM25 does not (top 5)"
"$bin" query --index "$idx" --retriever ppr --compare bm25 --dataset "$ex/questions.json" --top-k 5 --no-recognition

step "6. retrieval before and after augmentation ($ex/questions.json)"
echo "before:"
"$bin" eval --index "$before" --dataset "$ex/questions.json" --retrievers bm25,ppr --ks 2,5 --no-recognition --quiet | sed 's/^/  /'
echo "after:"
"$bin" eval --index "$idx" --dataset "$ex/questions.json" --retrievers ppr --ks 2,5 --no-recognition --quiet | sed 's/^/  /'
echo
"$bin" stats --index "$idx" | sed -n '/^runs/,/^extractor/p' | grep -v '^extractor' || true
echo "undo the augmentation with: $bin augment --index $idx --rollback <run id above>"
total=$(($(date +%s) - start))
printf 'demo total time: %dm%02ds\n' $((total / 60)) $((total % 60))
