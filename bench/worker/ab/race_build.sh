# shellcheck shell=bash
# What the A/B race scripts (attention_ab.sh, repacked_ab.sh) share, sourced by them after they
# set `name` (the race: NAME_side.cc and NAME_ab_main.cc beside this file), `headers` (the files
# whose declarations cross between the two builds, which must equal revision `rev`'s),
# `sources` (the routine's .cc files) and `flags`. Builds revision `rev`'s sources and the working
# tree's into one program, the base's namespace renamed (-Darbor=arbor_base), and runs it with
# the arguments given to run_race.

# shellcheck disable=SC2154  # rev, name, headers, sources and flags are the caller's.
run_race() {
  local root here tmp source object
  root=$(git rev-parse --show-toplevel)
  here="$root/bench/worker/ab"
  if ! git -C "$root" diff --quiet "$rev" -- "${headers[@]}"; then
    echo "${headers[*]} differ from $rev: the race needs them equal" >&2
    exit 2
  fi
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064  # Expanded now: $tmp is local.
  trap "rm -rf '$tmp'" EXIT
  mkdir -p "$tmp/base"
  git -C "$root" archive "$rev" kernels base | tar -x -C "$tmp/base"
  for source in "${sources[@]}" "bench/worker/ab/${name}_side.cc"; do
    object=$(basename "$source" .cc).o
    local base_source="$tmp/base/$source"
    [[ $source == bench/* ]] && base_source="$root/$source"  # The side compiles against each tree.
    g++ "${flags[@]}" -Darbor=arbor_base -I"$tmp/base" -I"$root" -c "$base_source" \
      -o "$tmp/base_$object" &
    g++ "${flags[@]}" -I"$root" -c "$root/$source" -o "$tmp/work_$object" &
    wait
  done
  g++ "${flags[@]}" -I"$root" "$here/${name}_ab_main.cc" "$tmp"/*.o -lpthread -o "$tmp/race"
  echo "$(lscpu | sed -n 's/^Model name: *//p'); base $(git -C "$root" rev-parse --short "$rev")"
  "$tmp/race" "$@"
}
