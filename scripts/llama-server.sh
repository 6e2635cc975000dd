#!/usr/bin/env bash
# Builds llama.cpp's llama-server from the pinned llama-cpp-python sdist (the llama.cpp the
# golden data comes from) and prints the path of the binary: the peer that
# bench/serving/load_bench.py races `arbor up` against.
#
# Usage: scripts/llama-server.sh
#   Release, native CPU (-DGGML_NATIVE=ON), no web UI, 2 build jobs: several minutes the first
#   time, then idempotent (a stamp records what was built). Built under .venv-llamacpp/, which
#   scripts/llama-cpp-reference.sh shares for the sdist.
set -euo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly VENV="${ROOT}/.venv-llamacpp"
# shellcheck source=scripts/llama-cpp-sdist.sh
source "${ROOT}/scripts/llama-cpp-sdist.sh"
readonly OUT="${VENV}/llama-server"
readonly CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF
  -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DBUILD_SHARED_LIBS=OFF)
readonly STAMP_VALUE="llama-server ${LCP_VERSION} ${CMAKE_ARGS[*]}"

LOG="$(mktemp -t llama-server.XXXXXX.log)"
trap 'rm -f "${LOG}"' EXIT

if [[ -x "${OUT}/bin/llama-server" && "$(cat "${OUT}/.stamp" 2>/dev/null)" == "${STAMP_VALUE}" ]]; then
  echo "${OUT}/bin/llama-server"
  exit 0
fi
[[ -x "${VENV}/bin/pip" ]] || python3 -m venv "${VENV}" >>"${LOG}" 2>&1 ||
  fail "could not create ${VENV}"
sdist="$(llama_cpp_sdist "${VENV}" "${LOG}")" || fail "no llama-cpp-python sdist"
src="${OUT}/src"
rm -rf "${src}" "${OUT}/build"
mkdir -p "${src}"
tar xzf "${sdist}" -C "${src}" --strip-components=1 || fail "could not unpack ${sdist}"
cmake -S "${src}/vendor/llama.cpp" -B "${OUT}/build" "${CMAKE_ARGS[@]}" >>"${LOG}" 2>&1 ||
  fail "cmake configure failed"
cmake --build "${OUT}/build" --target llama-server -j 2 >>"${LOG}" 2>&1 ||
  fail "building llama-server failed"
mkdir -p "${OUT}/bin"
cp "${OUT}/build/bin/llama-server" "${OUT}/bin/llama-server"
rm -rf "${src}" "${OUT}/build"
echo "${STAMP_VALUE}" >"${OUT}/.stamp"
echo "${OUT}/bin/llama-server"
