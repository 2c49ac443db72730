#!/usr/bin/env bash
# The demo: index the bundled example corpus, augment it with CrossAug, query it, and
# measure retrieval before and after. Offline by default (rule extractor, built-in
# embedder, extractive completer); with GRAPHLOOM_LLM_BASE_URL and GRAPHLOOM_LLM_MODEL set,
# augmentation completes with that LLM instead.
# Usage: scripts/demo.sh BIN OUTDIR
set -euo pipefail
bin=${1:-bin/graphloom}
out=${2:-out/demo}
ex=examples/harbour
mkdir -p "$out"
idx="$out/harbour.gl"
before="$out/harbour-before.gl"
rm -f "$idx" "$idx".* "$before"

step() { printf '\n== %s\n' "$*"; }

step "1. index $ex/corpus.json (rule extractor, built-in hashed TF-IDF embedder)"
"$bin" index --corpus "$ex/corpus.json" --out "$idx" --extractor rule --quiet
cp "$idx" "$before"

step "2. what the index holds"
"$bin" stats --index "$idx"

step "3. CrossAug: train the missingness scorer, select subgraphs, complete, merge"
# The example corpus is small (45 chunks): like the paper's LiteraryQA profile, use an
# absolute root and completion budget instead of the multi-hop fractions; θ is the
# paper's 0.5. The scorer's test split shares no entity with its training views.
"$bin" augment --index "$idx" --roots 100 --budget 40 --gold-facts "$ex/facts.json" --quiet

step "4. a multi-hop question over the augmented graph (HippoRAG 2 PPR)"
"$bin" query --index "$idx" --retriever ppr --top-k 3 --no-recognition \
	"Who bought the ship that was wrecked on Gull Rock?"

step "5. retrieval before and after augmentation ($ex/questions.json)"
echo "before:"
"$bin" eval --index "$before" --dataset "$ex/questions.json" --retrievers bm25,ppr --ks 2,5 --quiet | sed 's/^/  /'
echo "after:"
"$bin" eval --index "$idx" --dataset "$ex/questions.json" --retrievers ppr --ks 2,5 --quiet | sed 's/^/  /'
echo
echo "index: $idx (undo the augmentation with: $bin augment --index $idx --rollback <run id above>)"
