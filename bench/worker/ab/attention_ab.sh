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
root=$(git rev-parse --show-toplevel)
here="$root/bench/worker/ab"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The parameters cross between the two builds as they are: both must declare them alike.
if ! git -C "$root" diff --quiet "$rev" -- kernels/paged_attention.h kernels/paged_kv.h; then
  echo "kernels/paged_attention.h or paged_kv.h differs from $rev: the race needs them equal" >&2
  exit 2
fi
mkdir -p "$tmp/base"
git -C "$root" archive "$rev" kernels base | tar -x -C "$tmp/base"
flags=(-O3 -march=native -std=c++20 -DNDEBUG -w)
sources=(kernels/paged_attention_ref.cc kernels/paged_attention_plan.cc kernels/cpu/thread_pool.cc)
for source in "${sources[@]}"; do
  name=$(basename "$source" .cc)
  g++ "${flags[@]}" -Darbor=arbor_base -I"$tmp/base" -I"$root" -c "$tmp/base/$source" \
    -o "$tmp/base_$name.o" &
  g++ "${flags[@]}" -I"$root" -c "$root/$source" -o "$tmp/work_$name.o" &
  wait
done
g++ "${flags[@]}" -Darbor=arbor_base -I"$tmp/base" -I"$root" -c "$here/attention_side.cc" \
  -o "$tmp/base_side.o"
g++ "${flags[@]}" -I"$root" -c "$here/attention_side.cc" -o "$tmp/work_side.o"
g++ "${flags[@]}" -I"$root" "$here/attention_ab_main.cc" "$tmp"/*.o -lpthread -o "$tmp/attention_ab"
echo "$(lscpu | sed -n 's/^Model name: *//p'); base $(git -C "$root" rev-parse --short "$rev")"
"$tmp/attention_ab" "$@"
