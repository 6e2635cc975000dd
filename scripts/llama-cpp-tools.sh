#!/usr/bin/env bash
# Builds llama.cpp's command-line tools from the pinned llama-cpp-python sdist (the llama.cpp the
# golden data comes from) and prints the folder that holds them: llama-server, the peer that
# bench/serving/load_bench.py races `arbor up` against; llama-bench and llama-batched-bench, the
# peer of arbor-bench-worker in docs/PERFORMANCE.md's races; llama-quantize, which
# bench/files/llama1b-files.sh uses to make the Llama-3.2-1B-shape Q4_K_M and Q8_0 files; and
# llama.cpp's gguf-py package beside them.
#
# Usage: scripts/llama-cpp-tools.sh [--cuda]
#   Release, native CPU (-DGGML_NATIVE=ON, AMX off), no web UI, 2 build jobs: several minutes
#   the first time, then idempotent (a stamp records what was built). Built under
#   .venv-llamacpp/, which scripts/llama-cpp-reference.sh shares for the sdist.
#   --cuda: llama-bench, llama-batched-bench and llama-quantize with the CUDA backend for sm_90
#   (H100, H200) and portable CPU code, under .venv-llamacpp/tools-cuda, with the shared
#   libraries they load (one libggml-cuda for the three: statically linked, each tool was 75 MB):
#   the peer of arbor-bench-worker-cuda in the race on a lent GPU (scripts/gpu-bundle.sh packs
#   them when ARBOR_BUNDLE_LLAMA_CPP=1). Needs nvcc; about 22 minutes on 2 cores.
set -euo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly VENV="${ROOT}/.venv-llamacpp"
# shellcheck source=scripts/llama-cpp-sdist.sh
source "${ROOT}/scripts/llama-cpp-sdist.sh"
CMAKE_ARGS=(-DCMAKE_BUILD_TYPE=Release -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON
  -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF)
if [[ "${1:-}" == --cuda ]]; then
  readonly OUT="${VENV}/tools-cuda"
  readonly TOOLS=(llama-bench llama-batched-bench llama-quantize)
  # libcuda.so.1 is the driver's, absent where no GPU is: the tools link against ggml-cuda
  # without resolving it (the GPU machine's loader does).
  CMAKE_ARGS+=(-DGGML_NATIVE=OFF -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=ON
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined)
  export PATH="${PATH}:/usr/local/cuda/bin"
else
  readonly OUT="${VENV}/tools"
  readonly TOOLS=(llama-server llama-bench llama-batched-bench llama-quantize)
  # Without llama.cpp's AMX kernels, which -march=native compiles in on an AMX CPU: at this
  # commit they fault (llama-bench dies of a general-protection fault on a Sapphire Rapids VM).
  # An explicit -mno-* wins over -march=native wherever it stands; ggml-cpu then runs its AVX-512
  # kernels and its repacked GEMMs.
  readonly NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  CMAKE_ARGS+=(-DGGML_NATIVE=ON -DLLAMA_BUILD_SERVER=ON -DBUILD_SHARED_LIBS=OFF
    "-DCMAKE_C_FLAGS=${NO_AMX}" "-DCMAKE_CXX_FLAGS=${NO_AMX}")
fi
readonly CMAKE_ARGS
readonly STAMP_VALUE="${TOOLS[*]} ${LCP_VERSION} ${CMAKE_ARGS[*]}"

LOG="$(mktemp -t llama-cpp-tools.XXXXXX.log)"
trap 'rm -f "${LOG}"' EXIT

if [[ "$(cat "${OUT}/.stamp" 2>/dev/null)" == "${STAMP_VALUE}" ]]; then
  echo "${OUT}/bin"
  exit 0
fi
[[ -x "${VENV}/bin/pip" ]] || python3 -m venv "${VENV}" >>"${LOG}" 2>&1 ||
  fail "could not create ${VENV}"
sdist="$(llama_cpp_sdist "${VENV}" "${LOG}")" || fail "no llama-cpp-python sdist"
src="${OUT}/src"
rm -rf "${src}" "${OUT}/build" "${OUT}/bin"
mkdir -p "${src}" "${OUT}/bin"
tar xzf "${sdist}" -C "${src}" --strip-components=1 || fail "could not unpack ${sdist}"
cmake -S "${src}/vendor/llama.cpp" -B "${OUT}/build" "${CMAKE_ARGS[@]}" >>"${LOG}" 2>&1 ||
  fail "cmake configure failed"
for tool in "${TOOLS[@]}"; do
  cmake --build "${OUT}/build" --target "${tool}" -j 2 >>"${LOG}" 2>&1 ||
    fail "building ${tool} failed"
  cp "${OUT}/build/bin/${tool}" "${OUT}/bin/${tool}"
done
# The shared libraries of a --cuda build (none otherwise), beside the tools.
find "${OUT}/build/bin" -maxdepth 1 -name '*.so*' -exec cp -P {} "${OUT}/bin/" \;
# llama.cpp's gguf package beside the tools, for machines whose Python lacks it (the GPU's).
rm -rf "${OUT}/gguf-py"
cp -r "${src}/vendor/llama.cpp/gguf-py" "${OUT}/gguf-py"
rm -rf "${src}" "${OUT}/build"
echo "${STAMP_VALUE}" >"${OUT}/.stamp"
echo "${OUT}/bin"
