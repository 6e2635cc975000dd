#!/usr/bin/env bash
# Makes the Llama-3.2-1B-shape files of docs/PERFORMANCE.md's races: a random-weight F16 GGUF
# (bench/files/llama1b_gguf.py), quantized by llama.cpp's own llama-quantize (built by
# scripts/llama-cpp-tools.sh) to Q4_K_M, Q5_K_M and Q8_0, as a user quantizes a real checkpoint.
#
# Usage: bench/files/llama1b-files.sh OUT_DIR
#   Writes OUT_DIR/llama1b-Q4_K_M.gguf (~0.8 GB), llama1b-Q5_K_M.gguf (~0.9 GB) and
#   llama1b-Q8_0.gguf (~1.3 GB); the 2.5 GB F16 file is removed afterwards. Skips a file that is
#   already there. Needs the project's .venv (numpy and llama.cpp's gguf package: `make test` or
#   `make demo` makes it).
#   (llama-quantize reads an output name that begins with a digit, such as 1b-Q8_0.gguf, as the
#   quantization type: the names here begin with a letter.)
set -euo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if (($# != 1)); then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
readonly OUT="$1"
mkdir -p "${OUT}"
tools="$("${ROOT}/scripts/llama-cpp-tools.sh")"
f16="${OUT}/llama1b-F16.gguf"
for type in Q4_K_M Q5_K_M Q8_0; do
  file="${OUT}/llama1b-${type}.gguf"
  [[ -s "${file}" ]] && continue
  if [[ ! -s "${f16}" ]]; then
    echo "writing ${f16}" >&2
    "${ROOT}/.venv/bin/python" "${ROOT}/bench/files/llama1b_gguf.py" "${f16}.tmp"
    mv "${f16}.tmp" "${f16}"
  fi
  echo "quantizing ${file}" >&2
  "${tools}/llama-quantize" "${f16}" "${file}.tmp" "${type}" "$(nproc)" >"${file}.log" 2>&1 ||
    { tail -n 20 "${file}.log" >&2; exit 1; }
  mv "${file}.tmp" "${file}"
  rm -f "${file}.log"
done
rm -f "${f16}"
ls -l "${OUT}"/llama1b-*.gguf
