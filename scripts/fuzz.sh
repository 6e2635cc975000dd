#!/usr/bin/env bash
# Runs every libFuzzer target of a build for a while and reports each one's executions per
# second, corpus size and findings.
#
#   scripts/fuzz.sh [BUILD_DIR] [SECONDS_PER_TARGET]     # defaults: build 60
#
# Targets are the executables in BUILD_DIR/fuzz (cmake/ArborFuzz.cmake builds them when clang++
# with libFuzzer is found). Each runs on a corpus under BUILD_DIR/fuzz-runs/NAME seeded from its
# ctest corpus; a crash, leak, timeout or out-of-memory leaves its input in that folder
# (crash-*, leak-*, timeout-*, oom-*) and its log next to it. Exits 1 when any target found one.
set -u
build=${1:-build}
seconds=${2:-60}
fuzz_dir="$build/fuzz"
if [[ ! -d "$fuzz_dir" ]]; then
  echo "no $fuzz_dir: build with clang++ and libFuzzer available (cmake/ArborFuzz.cmake)" >&2
  exit 2
fi
runs="$build/fuzz-runs"
mkdir -p "$runs"
found=0
printf '%-40s %10s %10s %8s  %s\n' target execs exec/s corpus result
for target in "$fuzz_dir"/*; do
  [[ -x "$target" && -f "$target" ]] || continue
  name=$(basename "$target")
  work="$runs/$name"
  mkdir -p "$work/corpus"
  # The ctest corpus (what `make test` has found so far) seeds this run.
  seeds=$(find "$build" -type d -name "$name.corpus" -not -path "$runs/*" | head -1)
  log="$work/log.txt"
  (cd "$work" && "$OLDPWD/$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 corpus ${seeds:+"$OLDPWD/$seeds"}) > "$log" 2>&1
  code=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  corpus=$(find "$work/corpus" -type f | wc -l)
  result=ok
  if [[ $code -ne 0 ]] || compgen -G "$work/crash-*" > /dev/null || \
     compgen -G "$work/leak-*" > /dev/null || compgen -G "$work/timeout-*" > /dev/null || \
     compgen -G "$work/oom-*" > /dev/null; then
    result="FOUND (exit $code; see $log)"
    found=1
  fi
  printf '%-40s %10s %10s %8s  %s\n' "$name" "${execs:-?}" \
      "$(( ${execs:-0} / (seconds > 0 ? seconds : 1) ))" "$corpus" "$result"
done
exit $found
