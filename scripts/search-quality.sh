#!/usr/bin/env bash
# Does search help on the served model? The whole protocol of docs/SEARCH_QUALITY.md against a
# running coordinator (`arbor up`):
#   1. difficulty: per task family, the level where greedy accuracy is in [20 %, 80 %]
#      (task seed 1000);
#   2. thresholds and sampling laws: `arbor calibrate --fit_temperature` on other prompts at
#      those levels (task seed 2000);
#   3. evaluation: ITEMS fresh items per family at those levels (task seed 1), every strategy
#      with sampler seeds 1, 2, 3, with the published and with the calibrated thresholds.
# The three task seeds give disjoint item streams: nothing is tuned on the evaluated items.
# Resumable: run it again with the same OUT to continue an interrupted run.
#
#   scripts/search-quality.sh [OUT_DIR]     (env: ARBOR, COORDINATOR, ITEMS, CONCURRENCY)
set -euo pipefail
OUT=${1:-search-quality}
ARBOR=${ARBOR:-build/bin/arbor}
COORDINATOR=${COORDINATOR:-127.0.0.1:50051}
ITEMS=${ITEMS:-500}
CONCURRENCY=${CONCURRENCY:-4}
common=(--coordinator="$COORDINATOR" --concurrency="$CONCURRENCY")
mkdir -p "$OUT"

"$ARBOR" eval "${common[@]}" --calibrate_difficulty --count=40 --seed=1000 \
  --results="$OUT/difficulty.jsonl" | tee "$OUT/difficulty.txt"
mapfile -t chosen < <(awk '/chosen level/ {print $1 " " $4}' "$OUT/difficulty.txt")

calibration=() evaluation=()
for entry in "${chosen[@]}"; do
  read -r family level <<<"$entry"
  "$ARBOR" tasks --family="$family" --level="$level" --count=40 --seed=2000 \
    --out="$OUT/calibrate-$family.jsonl"
  "$ARBOR" tasks --family="$family" --level="$level" --count="$ITEMS" --seed=1 \
    --out="$OUT/eval-$family.jsonl"
  calibration+=("$OUT/calibrate-$family.jsonl")
  evaluation+=("$OUT/eval-$family.jsonl")
done

"$ARBOR" calibrate "${common[@]}" --tasks="$(IFS=,; echo "${calibration[*]}")" \
  --fit_temperature --policy_out="$OUT/policy.json" | tee "$OUT/calibrate.txt"

# The strategies that matter first (TRACE, deterministic: one answer per item), then the
# compute-matched samplers, then the entropix ones; the results file resumes across lines.
strategies="greedy,cot_decoding,cot_decoding:k=5:label=cot_decoding-k5"
strategies+=",best_of_n:n=3,self_consistency:n=3,eager"
strategies+=",eager:policy_file=$OUT/policy.json:label=eager-calibrated"
strategies+=",sample,canonical,search"
strategies+=",canonical:policy_file=$OUT/policy.json:label=canonical-calibrated"
strategies+=",search:policy_file=$OUT/policy.json:label=search-calibrated"
"$ARBOR" eval "${common[@]}" --tasks="$(IFS=,; echo "${evaluation[*]}")" \
  --strategies="$strategies" --seeds=1,2,3 --results="$OUT/results.jsonl" \
  --report="$OUT/report.json" --plot="$OUT/accuracy-vs-tokens.svg" | tee "$OUT/report.txt"
