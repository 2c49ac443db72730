#!/usr/bin/env bash
# make bench: every benchmark. Sections 1, 2, 3, 4, 5, 7, 12 and 13 print their figures
# against a reference run in the same invocation; 8, 9 and 10 print absolute times, 10b
# against goals, 11 growth exponents. Long: budget 100–160 minutes on 2 cores (section 4's seed stability trains
# 35 scorers, ≈ 20–25 min; STABILITY_SEEDS="42 1 2" and STABILITY_SPLITS="0 1 2" shorten it; the planted-missingness runs on
# the 2Wiki corpus train 3 seeds × one scorer and 3 seeds × the default ensemble of 3 and
# complete thousands of subgraphs, ≈ 30–60 min; PLANTED_2WIKI_K=1 keeps one scorer); the
# scale section indexes 6K and 30K passages, ≈ 20 min; SCALE_SIZES=6000 shortens it).
#   bench/run.sh BIN CORPORA OUTDIR
#
#   1. ingestion and offline indexing throughput, peak memory, index size vs LightRAG JSON
#      (2Wiki corpus, 6,119 passages; skipped without ../shared)
#   2. Personalized PageRank vs python-igraph PRPACK (100K nodes / 300K edges)
#   3. R-GCN scorer training step vs PyTorch; Graph Transformer forward + backward
#   4. CrossAug: sampling + training + scoring time against the whole augment run;
#      the scorer's test-split ROC-AUC next to shortcut baselines, its calibration
#      error; seed stability (ROC-AUC, count ≥ θ, Jaccard of the selected sets) of a
#      single scorer against the ensemble over 5 seeds (issue 50)
#   5. CrossAug planted missingness: GNN vs random and facts selectors, deleted facts recovered
#   6. interop: import of a 2Wiki-sized LightRAG index (written from section 1's index)
#   7. serve: loopback load test of the HTTP API
#   8. CAGE: reranking latency of 20 candidates on one core
#   9. frozen decoder LM (models/lm): forward time per token and KV-cache generation
#      time per new token on a tiny random Llama-layout model
#  10. G-Retriever: one training step's time per example through the tiny LM (pure Go)
#  10b. the LM at Qwen2.5-0.5B shapes (4 of 24 layers; LMSCALE_LAYERS=24 for all): peak
#      load memory ÷ weights, a training step's memory at V = 151,936, T = 512, B = 4,
#      ms per new token and KV-cache bytes written per token
#  11. scale: the 2Wiki corpus replicated with renamed names to 6K and 30K passages
#      (SCALE_SIZES for more, e.g. 6000,30000,120000): indexing, memory, load, query
#      latency, augment --plan, growth exponents and a log–log PNG
#  12. sentence encoder at bge-small shapes (12 layers, 384 wide, 512 tokens, random
#      weights): passages per second against a BERT-shaped PyTorch encoder, and the ratio
#  13. index lifecycle (issue 45): `index --add` of 1 % more documents and `delete` of
#      1 % of them against a full build of the same scale corpus (SCALE_SIZES, as
#      section 11), wall time and peak RSS of each process, ≈ 10 min at 6K + 30K
set -uo pipefail
bin=${1:-bin/graphloom}
corpora=${2:-../shared/data/corpora}
out=${3:-out/bench}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
status=0
section() { printf '\n======== %s\n' "$*"; }
run() { "$@" || { echo "FAILED: $*"; status=1; }; }

section "1. ingestion, offline indexing, index size (issues 2, 3)"
if [[ -f "$corpora/2wikimultihopqa_corpus.json" ]]; then
	run go run ./bench/index -corpus "$corpora/2wikimultihopqa_corpus.json" -out "$out/index"
else
	echo "skipped: $corpora/2wikimultihopqa_corpus.json not found"
fi

section "2. Personalized PageRank vs igraph (issue 4)"
run "$root/bench/ppr.sh" "$out/ppr"

section "3. GNN training steps vs PyTorch (issue 6)"
run "$root/bench/rgcn.sh" --out "$out/rgcn"

section "4. CrossAug stage times (issue 7)"
run "$root/bench/augment.sh" "$bin" "$corpora" "$out/augment"

section "5. CrossAug planted missingness, GNN vs random and facts selectors (issue 11)"
run "$root/bench/planted.sh" "$bin" "$corpora" "$out/planted"

section "6. interop: LightRAG import of the 2Wiki index (issue 15)"
if [[ -f "$out/index/full.gl" ]]; then
	run "$root/bench/interop.sh" "$bin" "$out/index/full.gl" "$out/interop"
else
	echo "skipped: $out/index/full.gl not built (section 1 needs $corpora/2wikimultihopqa_corpus.json)"
fi

section "7. serve: loopback load test, 50 clients × 20 requests (issue 16)"
if [[ -f "$out/index/full.gl" ]]; then
	run go run ./bench/serve -index "$out/index/full.gl"
else
	run go run ./bench/serve -corpus examples/harbour/corpus.json
fi

section "8. CAGE reranking latency, 20 candidates on one core (issue 14)"
if [[ -f "$corpora/2wikimultihopqa_corpus.json" ]]; then
	run go run ./bench/cage -corpus "$corpora/2wikimultihopqa_corpus.json"
else
	run go run ./bench/cage -corpus examples/harbour/corpus.json
fi

section "9. frozen decoder LM, tiny random model, pure-Go backend (issue 12)"
run go run ./bench/lm

section "10. G-Retriever training step, tiny random LM, pure-Go backend (issue 12)"
GOMLX_BACKEND=go run go run ./bench/gretriever

section "10b. the LM at Qwen2.5-0.5B shapes: load memory, a training step at V = 151,936, generation (issue 43)"
run go run ./bench/lmscale -layers "${LMSCALE_LAYERS:-4}"

section "11. corpus scale (issue 16)"
if [[ -f "$corpora/2wikimultihopqa_corpus.json" ]]; then
	run go run ./bench/scale -corpus "$corpora/2wikimultihopqa_corpus.json" -bin "$bin" \
		-sizes "${SCALE_SIZES:-6000,30000}" -out "$out/scale"
else
	echo "skipped: needs $corpora/2wikimultihopqa_corpus.json"
fi

section "12. sentence encoder at bge-small shapes vs PyTorch (issue 44)"
run "$root/bench/embed.sh" --out "$out/embed"

section "13. index lifecycle: add and delete 1 % against a full build (issue 45)"
if [[ -f "$corpora/2wikimultihopqa_corpus.json" ]]; then
	run go run ./bench/lifecycle -corpus "$corpora/2wikimultihopqa_corpus.json" -bin "$bin" \
		-sizes "${SCALE_SIZES:-6000,30000}" -out "$out/lifecycle"
else
	echo "skipped: needs $corpora/2wikimultihopqa_corpus.json"
fi

exit $status
