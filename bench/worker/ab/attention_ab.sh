#!/usr/bin/env bash
# Races the working tree's CPU attention (kernels/paged_attention_ref.cc and what it includes)
# against revision REV's in one process, calls alternating (attention_ab_main.cc): the way to
# measure an attention change on a machine whose speed drifts between runs.
#
#   bench/worker/ab/attention_ab.sh [REV [SECONDS [CASE ...]]]
#
# REV defaults to HEAD, SECONDS (per case) to 4; a CASE is group,kv_heads,seqs,context,queries,
# threads (default: SmolLM2's and the 1B shape's prompts of 256 and 2,048 tokens, and 8 decode
# rows at 512 and 4,096 keys, one thread). Needs g++ and the tree's headers only.
set -euo pipefail
rev=${1:-HEAD}
shift || true
name=attention
# The parameters cross between the two builds as they are: both must declare them alike.
headers=(kernels/paged_attention.h kernels/paged_kv.h)
sources=(kernels/paged_attention_ref.cc kernels/paged_attention_plan.cc kernels/cpu/thread_pool.cc)
flags=(-O3 -march=native -std=c++20 -DNDEBUG -w)
# shellcheck source=bench/worker/ab/race_build.sh
source "$(dirname "$0")/race_build.sh"
run_race "$@"
