#!/usr/bin/env bash
# Races the working tree's AVX-512 VNNI kernels of the repacked rows (RepackedDotRange in
# kernels/quant/quant_dot_avx512vnni.cc, RepackedKQuantDotRange in repacked_kquant_avx512vnni.cc,
# and what they include) against revision REV's in one process, calls alternating
# (repacked_ab_main.cc, race.h), on one thread. With REPACKED_AB_ISA=avx2 in the environment, the
# 256-bit kernels of AVX2 CPUs instead (quant_dot_avx2.cc), built as for an AVX2-only CPU.
#
#   bench/worker/ab/repacked_ab.sh [REV [SECONDS [CASE ...]]]
#
# REV defaults to HEAD, SECONDS (per case) to 4; a CASE is type,n,k,m: n × k weights of type q4
# (Q4_0, Q4_1), q5 (Q5_0, Q5_1), q8 (Q8_0), q4k, q5k or q6k against m activation rows (default:
# SmolLM2's gate/up and down at 16, 64 and 256 rows, the 1B shape's Q8_0 q_proj at 256 and its
# Q4_K gate/up and Q6_K down at 1, 8 and 32); type,n,k,m,mem streams copies of the weights from
# memory on two threads (1 GiB or more: what a decode step meets). Needs g++, a CPU with AVX-512
# VNNI (AVX2 and FMA for avx2) and the tree's headers only.
set -euo pipefail
rev=${1:-HEAD}
shift || true
case ${REPACKED_AB_ISA:-avx512} in
  avx512)
    need=avx512_vnni
    sources=(kernels/quant/quant_dot_avx512vnni.cc kernels/quant/repacked_kquant_avx512vnni.cc)
    flags=(-O3 -march=native -std=c++20 -DNDEBUG -w -mavx512f -mavx512bw -mavx512vl -mavx512vnni)
    ;;
  avx2)
    need=avx2
    # The file also holds the activations' quantizers, which call the portable ones.
    sources=(kernels/quant/quant_dot_avx2.cc kernels/quant/q8k_activations.cc
      kernels/quant/q8_activations.cc)
    flags=(-O3 -march=native -std=c++20 -DNDEBUG -w -mavx2 -mfma -mf16c -mno-avx512f -mno-avxvnni
      -DREPACKED_AB_AVX2)
    ;;
  *)
    echo "REPACKED_AB_ISA is avx512 (the default) or avx2" >&2
    exit 2
    ;;
esac
if ! grep -q "$need" /proc/cpuinfo; then
  echo "this CPU has no ${need}: the kernels under race do not run here" >&2
  exit 2
fi
name=repacked
# The parameters and block layouts cross between the two builds as they are: both must declare
# them alike.
headers=(kernels/quant/quant_dot.h kernels/quant/q8_activations.h kernels/quant/q8k_activations.h
  kernels/quant/repacked_rows.h)
# shellcheck source=bench/worker/ab/race_build.sh
source "$(dirname "$0")/race_build.sh"
run_race "$@"
