#!/usr/bin/env bash
# Packs everything a GPU session runs into one folder, built here on a CPU machine, so that the
# few minutes on a lent GPU go to running, not building (docs/PERFORMANCE.md, "On a GPU").
#
#   scripts/gpu-bundle.sh [OUT_DIR] [BUILD_DIR]      # defaults: gpu-bundle build-gpu-bundle
#
# Builds (Release, portable CPU code: the GPU machine's processor may lack this one's
# instructions; kernels still pick AVX2/AVX-512 at run time) every GPU test, the CUDA benchmark,
# arbor, arbor-coordinator and arbor-worker, and copies them to OUT_DIR/bin with their shared
# libraries in OUT_DIR/lib: abseil, gRPC, protobuf, PCRE2, GoogleTest and the rest, but not the
# CUDA libraries nor the C and C++ runtimes, which the GPU machine has in newer versions — all
# packed into OUT_DIR/bundle.tar.xz, which run-gpu-checks.sh unpacks beside itself on first use.
# With ARBOR_BUNDLE_LLAMA_CPP=1 it also packs llama.cpp's CUDA tools (scripts/llama-cpp-tools.sh
# --cuda) and gguf-py into OUT_DIR/llama-cpp.tar.xz, for `run-gpu-checks.sh LOG_DIR --race` (a
# second call: each archive fits the 64 MiB a call carries, the two together do not).
# Adds OUT_DIR/run-gpu-checks.sh (see its header). Fails when nvcc is missing or an archive would
# exceed 64 MiB. OUT_DIR is git-ignored when it is the default.
set -euo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly OUT="${1:-${ROOT}/gpu-bundle}"
readonly BUILD="${2:-${ROOT}/build-gpu-bundle}"
readonly LIMIT_MB=64
# Every GPU test (ctest label gpu), the CUDA benchmark, and the binaries of an end-to-end job.
readonly TESTS=(kernels_gpu_test worker_cuda_backend_gpu_test)
readonly BINARIES=(arbor-bench-worker-cuda arbor-bench-attention-cuda arbor arbor-coordinator arbor-worker)
# Left to the GPU machine: the C/C++ runtime and everything CUDA and the driver provide.
readonly SYSTEM_LIBS='^(linux-vdso|ld-linux|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnccl|libnvrtc|libnvJitLink|libnvidia)[.-]'

command -v nvcc >/dev/null || [[ -x /usr/local/cuda/bin/nvcc ]] ||
  { echo "gpu-bundle: nvcc not found; the CUDA toolkit is needed to build the GPU code" >&2; exit 1; }

cmake -S "${ROOT}" -B "${BUILD}" -DCMAKE_BUILD_TYPE=Release -DARBOR_NATIVE=OFF \
  -DARBOR_WITH_CUDA=ON >/dev/null
cmake --build "${BUILD}" -j "$(nproc)" --target "${TESTS[@]}" "${BINARIES[@]}"

rm -rf "${OUT}"
readonly STAGE="${OUT}/stage"
mkdir -p "${STAGE}/bin" "${STAGE}/lib"
for t in "${TESTS[@]}"; do cp "${BUILD}/tests/${t}" "${STAGE}/bin/"; done
for b in "${BINARIES[@]}"; do cp "${BUILD}/bin/${b}" "${STAGE}/bin/"; done
for f in "${STAGE}"/bin/*; do
  ldd "${f}" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "${name}" =~ ${SYSTEM_LIBS} ]] || cp -L "${path}" "${STAGE}/lib/${name}"
done
strip --strip-unneeded "${STAGE}"/bin/* "${STAGE}"/lib/* 2>/dev/null || true

# Compressed: the libraries alone are 54 MiB (ICU's data 30 of them), about 15 packed.
tar -C "${STAGE}" -cf - bin lib | xz -T "$(nproc)" -6 >"${OUT}/bundle.tar.xz"
rm -rf "${STAGE}"
if [[ "${ARBOR_BUNDLE_LLAMA_CPP:-0}" == 1 ]]; then
  # The race's peer, in an archive of its own (it travels in a call of its own: the two together
  # pass 64 MiB): llama.cpp's CUDA tools, their libraries and its gguf package.
  tools="$("${ROOT}/scripts/llama-cpp-tools.sh" --cuda)"
  mkdir -p "${STAGE}/llama.cpp"
  cp -r "${tools}" "${STAGE}/llama.cpp/bin"
  cp -r "${tools}/../gguf-py" "${STAGE}/llama.cpp/gguf-py"
  strip --strip-unneeded "${STAGE}"/llama.cpp/bin/* 2>/dev/null || true
  tar -C "${STAGE}" -cf - llama.cpp | xz -T "$(nproc)" -6 >"${OUT}/llama-cpp.tar.xz"
  rm -rf "${STAGE}"
fi
cp "${ROOT}/scripts/run-gpu-checks.sh" "${OUT}/"

for archive in "${OUT}"/*.tar.xz; do
  size_mb=$(du -sm "${archive}" | cut -f1)
  if ((size_mb > LIMIT_MB)); then
    echo "gpu-bundle: ${archive} is ${size_mb} MiB, over ${LIMIT_MB} MiB" >&2
    exit 1
  fi
done
size_mb=$(du -sm "${OUT}/bundle.tar.xz" | cut -f1)
echo "gpu-bundle: ${OUT}: $(tar -tJf "${OUT}/bundle.tar.xz" | grep -c '^bin/.') programs," \
     "$(tar -tJf "${OUT}/bundle.tar.xz" | grep -c '^lib/.') libraries, ${size_mb} MiB packed;" \
     "on the GPU machine: ${OUT##*/}/run-gpu-checks.sh LOG_DIR" >&2
