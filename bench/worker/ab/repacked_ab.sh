#!/usr/bin/env bash
# Races the working tree's AVX-512 VNNI kernel of the per-32 repacked rows (RepackedDotRange in
# kernels/quant/quant_dot_avx512vnni.cc and what it includes) against revision REV's in one
# process, calls alternating (repacked_ab_main.cc, race.h), on one thread.
#
#   bench/worker/ab/repacked_ab.sh [REV [SECONDS [CASE ...]]]
#
# REV defaults to HEAD, SECONDS (per case) to 4; a CASE is bits,n,k,m: 4-, 5- or 8-bit weights
# (Q4_0/Q4_1, Q5_0/Q5_1, Q8_0), n × k, against m activation rows (default: SmolLM2's gate/up and
# down at 16, 64 and 256 rows and the 1B shape's Q8_0 q_proj at 256). Needs g++, a CPU with
# AVX-512 VNNI and the tree's headers only.
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
headers=(kernels/quant/quant_dot.h kernels/quant/q8_activations.h kernels/quant/repacked_rows.h)
if ! git -C "$root" diff --quiet "$rev" -- "${headers[@]}"; then
  echo "${headers[*]} differ from $rev: the race needs them equal" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/base"
git -C "$root" archive "$rev" kernels base | tar -x -C "$tmp/base"
flags=(-O3 -march=native -std=c++20 -DNDEBUG -w -mavx512f -mavx512bw -mavx512vl -mavx512vnni)
kernel=kernels/quant/quant_dot_avx512vnni.cc
g++ "${flags[@]}" -Darbor=arbor_base -I"$tmp/base" -I"$root" -c "$tmp/base/$kernel" \
  -o "$tmp/base_kernel.o" &
g++ "${flags[@]}" -I"$root" -c "$root/$kernel" -o "$tmp/work_kernel.o" &
wait
g++ "${flags[@]}" -Darbor=arbor_base -I"$tmp/base" -I"$root" -c "$here/repacked_side.cc" \
  -o "$tmp/base_side.o"
g++ "${flags[@]}" -I"$root" -c "$here/repacked_side.cc" -o "$tmp/work_side.o"
g++ "${flags[@]}" -I"$root" "$here/repacked_ab_main.cc" "$tmp"/*.o -o "$tmp/repacked_ab"
echo "$(lscpu | sed -n 's/^Model name: *//p'); base $(git -C "$root" rev-parse --short "$rev")"
"$tmp/repacked_ab" "$@"
