#!/usr/bin/env bash
# Races the working tree's AVX-512 VNNI kernels of the repacked rows (RepackedDotRange in
# kernels/quant/quant_dot_avx512vnni.cc, RepackedKQuantDotRange in repacked_kquant_avx512vnni.cc,
# and what they include) against revision REV's in one process, calls alternating
# (repacked_ab_main.cc, race.h), on one thread.
#
#   bench/worker/ab/repacked_ab.sh [REV [SECONDS [CASE ...]]]
#
# REV defaults to HEAD, SECONDS (per case) to 4; a CASE is type,n,k,m: n × k weights of type q4
# (Q4_0, Q4_1), q5 (Q5_0, Q5_1), q8 (Q8_0), q4k, q5k or q6k against m activation rows (default:
# SmolLM2's gate/up and down at 16, 64 and 256 rows, the 1B shape's Q8_0 q_proj at 256 and its
# Q4_K gate/up and Q6_K down at 1, 8 and 32). Needs g++, a CPU with AVX-512 VNNI and the tree's
# headers only.
set -euo pipefail
rev=${1:-HEAD}
shift || true
root=$(git rev-parse --show-toplevel)
here="$root/bench/worker/ab"
if ! grep -q avx512_vnni /proc/cpuinfo; then
  echo "this CPU has no AVX-512 VNNI: the kernel under race does not run here" >&2
  exit 2
fi
# The parameters and block layouts cross between the two builds as they are: both must declare
# them alike.
headers=(kernels/quant/quant_dot.h kernels/quant/q8_activations.h kernels/quant/q8k_activations.h
  kernels/quant/repacked_rows.h)
if ! git -C "$root" diff --quiet "$rev" -- "${headers[@]}"; then
  echo "${headers[*]} differ from $rev: the race needs them equal" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/base"
git -C "$root" archive "$rev" kernels base | tar -x -C "$tmp/base"
flags=(-O3 -march=native -std=c++20 -DNDEBUG -w -mavx512f -mavx512bw -mavx512vl -mavx512vnni)
for kernel in quant_dot_avx512vnni repacked_kquant_avx512vnni; do
  g++ "${flags[@]}" -Darbor=arbor_base -I"$tmp/base" -I"$root" \
    -c "$tmp/base/kernels/quant/$kernel.cc" -o "$tmp/base_$kernel.o" &
  g++ "${flags[@]}" -I"$root" -c "$root/kernels/quant/$kernel.cc" -o "$tmp/work_$kernel.o" &
  wait
done
g++ "${flags[@]}" -Darbor=arbor_base -I"$tmp/base" -I"$root" -c "$here/repacked_side.cc" \
  -o "$tmp/base_side.o"
g++ "${flags[@]}" -I"$root" -c "$here/repacked_side.cc" -o "$tmp/work_side.o"
g++ "${flags[@]}" -I"$root" "$here/repacked_ab_main.cc" "$tmp"/*.o -o "$tmp/repacked_ab"
echo "$(lscpu | sed -n 's/^Model name: *//p'); base $(git -C "$root" rev-parse --short "$rev")"
"$tmp/repacked_ab" "$@"
