#!/usr/bin/env bash
# Runs every GPU check of a bundle made by scripts/gpu-bundle.sh, on the GPU machine, from the
# bundle's folder:
#
#   gpu-bundle/run-gpu-checks.sh LOG_DIR [--quick | --race]
#
# --race runs only the race against llama.cpp (race_llama_cpp below): the call that carries
# llama-cpp.tar.xz, after a call that unpacked bundle.tar.xz on the same machine (or with both).
#
# Writes into LOG_DIR: nvidia-smi.txt; one NAME.log per check (GoogleTest also NAME.xml); and
# summary.txt, one line per check: name, exit code, seconds. The checks, the ones a short lease
# most needs first, correctness before speed: every GPU test; compute-sanitizer's memcheck over
# the newest kernels' tests and the graph test (each cut off after 90 s; where it is installed);
# an end-to-end job (a coordinator and one worker with --device=cuda:0 on a random-weight `small`
# checkpoint, one `arbor generate`); what batch-invariant numerics cost (the projections, a
# prefill and decode steps at batch 1, 8 and 32 in both numerics); decode steps on Q4_K blocks
# kept on the device (--weights=q4_k, against the bf16 rows of the numerics run); then, unless
# --quick: paged attention alone (arbor-bench-attention-cuda: long contexts against the copy
# bandwidth, siblings with and without cascade); the decode benchmark with sibling rows on a
# shared 2,048-token context, with and without cascade attention; the race against llama.cpp's
# CUDA build on one Q4_K_M file when the bundle carries it (race_llama_cpp); the whole decode
# benchmark (arbor-bench-worker-cuda); and Nsight Compute's time of every kernel of a batch-1
# decode step (ncu.csv; cut off after 90 s; where ncu is installed). Exits 1 when any check
# failed. Needs the CUDA runtime and cuBLAS of CUDA 13 on the machine; it looks in the
# loader's path, /usr/local/cuda and Python's nvidia packages.
set -u

readonly HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
readonly LOGS="${1:?usage: run-gpu-checks.sh LOG_DIR [--quick | --race]}"
readonly MODE="${2:-}"
mkdir -p "${LOGS}"

# The programs and libraries travel packed (gpu-bundle.sh); Python's tarfile where xz is missing.
# unpack ARCHIVE DIR: unpacks ARCHIVE beside this script unless DIR is already there.
unpack() {
  [[ -d "${HERE}/$2" ]] && return 0
  tar -C "${HERE}" -xJf "${HERE}/$1" 2>/dev/null ||
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "${HERE}/$1" "${HERE}" ||
    { echo "run-gpu-checks: cannot unpack ${HERE}/$1" >&2; exit 1; }
}
unpack bundle.tar.xz bin
[[ -f "${HERE}/llama-cpp.tar.xz" ]] && unpack llama-cpp.tar.xz llama.cpp

# The bundle's libraries (and llama.cpp's, when carried), then wherever this machine keeps CUDA's.
lib_path="${HERE}/lib:${HERE}/llama.cpp/bin"
for dir in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib \
           $(python3 -c 'import glob, nvidia, os; [print(d) for p in nvidia.__path__
                          for d in glob.glob(os.path.join(p, "*", "lib"))]' 2>/dev/null); do
  [[ -d "${dir}" ]] && lib_path="${lib_path}:${dir}"
done
export LD_LIBRARY_PATH="${lib_path}${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}"

nvidia-smi >"${LOGS}/nvidia-smi.txt" 2>&1
: >"${LOGS}/summary.txt"
failed=0

# check NAME COMMAND...: runs COMMAND with its output in NAME.log and a summary line.
check() {
  local name="$1" start=${SECONDS} code
  shift
  "$@" >"${LOGS}/${name}.log" 2>&1
  code=$?
  printf '%-32s exit %3d  %5d s\n' "${name}" "${code}" "$((SECONDS - start))" |
    tee -a "${LOGS}/summary.txt"
  ((code == 0)) || failed=1
}

# Waits up to 60 s for FILE to be written by process PID; fails at once when PID exits.
await_file() {
  local file="$1" pid="$2"
  for _ in $(seq 600); do
    [[ -s "${file}" ]] && return 0
    kill -0 "${pid}" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

end_to_end() {
  local dir port code=1
  dir="$(mktemp -d)"
  "${HERE}/bin/arbor" make-model --preset small --out "${dir}/model" || return 1
  "${HERE}/bin/arbor-worker" --model="${dir}/model" --device=cuda:0 --listen=127.0.0.1:0 \
    --port_file="${dir}/worker.port" >"${dir}/worker.log" 2>&1 &
  local worker=$!
  if await_file "${dir}/worker.port" "${worker}"; then
    "${HERE}/bin/arbor-coordinator" --model="${dir}/model" --listen=127.0.0.1:0 \
      --workers="127.0.0.1:$(cat "${dir}/worker.port")" --port_file="${dir}/coordinator.port" \
      >"${dir}/coordinator.log" 2>&1 &
    local coordinator=$!
    if await_file "${dir}/coordinator.port" "${coordinator}"; then
      port="$(cat "${dir}/coordinator.port")"
      for _ in $(seq 300); do
        "${HERE}/bin/arbor" workers --coordinator="127.0.0.1:${port}" 2>/dev/null |
          grep -q READY && break
        sleep 0.2
      done
      "${HERE}/bin/arbor" generate --coordinator="127.0.0.1:${port}" --prompt "The tree of" \
        --max_tokens 64 --show_metrics
      code=$?
    fi
  fi
  kill $(jobs -p) 2>/dev/null
  wait
  tail -n 30 "${dir}"/*.log
  rm -rf "${dir}"
  return ${code}
}

# The race on one GGUF file against llama.cpp's CUDA build, when the bundle carries it
# (ARBOR_BUNDLE_LLAMA_CPP=1): a random-weight Llama-3.2-1B-shape F16 file written here
# (bench/files/llama1b_gguf.py with numpy and the carried gguf-py), quantized to Q4_K_M by
# llama.cpp's llama-quantize; then llama-bench (batch 1: tg128; prefill: pp512),
# llama-batched-bench (1, 8 and 32 sequences on a shared 512-token prompt) and
# arbor-bench-worker-cuda on the same file (8 and 32 rows apart, and as siblings). The 0.8 GB file
# stays in a temporary folder, not in LOG_DIR.
race_llama_cpp() {
  local lc="${HERE}/llama.cpp" writer="${HERE}/../bench/files/llama1b_gguf.py" files code=1
  [[ -f "${writer}" ]] ||
    { echo "no ${writer}: run the bundle from the repository's gpu-bundle/ folder"; return 1; }
  files="$(mktemp -d)"
  if PYTHONPATH="${lc}/gguf-py" python3 "${writer}" "${files}/f16.gguf" &&
     "${lc}/bin/llama-quantize" "${files}/f16.gguf" "${files}/q4km.gguf" Q4_K_M "$(nproc)" \
       >/dev/null && rm -f "${files}/f16.gguf" &&
     "${lc}/bin/llama-bench" -m "${files}/q4km.gguf" -ngl 99 -p 512 -n 128 -r 3 &&
     "${lc}/bin/llama-batched-bench" -m "${files}/q4km.gguf" -ngl 99 -c 20480 -b 2048 -ub 512 \
       -npp 512 -ntg 64 -npl 1,8,32 -pps &&
     "${HERE}/bin/arbor-bench-worker-cuda" --model="${files}/q4km.gguf" --projections=false \
       --contexts=512 --batches=1,8,32 --variants=invariant,gemv+graph --steps=16 &&
     "${HERE}/bin/arbor-bench-worker-cuda" --model="${files}/q4km.gguf" --projections=false \
       --siblings --contexts=512 --batches=8,32 --variants=invariant,cascade --steps=16; then
    code=0
  fi
  rm -rf "${files}"
  return ${code}
}

if [[ "${MODE}" == --race ]]; then
  check race_llama_cpp_q4_k_m race_llama_cpp
  exit ${failed}
fi
for test in kernels_gpu_test worker_cuda_backend_gpu_test; do
  check "${test}" "${HERE}/bin/${test}" --gtest_output="xml:${LOGS}/${test}.xml"
done
# The newest kernels first: each memcheck run is cut off after 90 s. `joined` makes one filter.
joined() {
  local IFS=:
  echo "$*"
}
readonly MEMCHECK_KERNELS=('OpsGpu.NormRope*' 'OpsGpu.InvariantGemm*' 'OpsGpu.FixedSplits*'
  'OpsGpu.Gemv*' 'OpsGpu.PagedKv*' 'OpsGpu.Cascade*' 'OpsGpu.Logit*')
readonly MEMCHECK_BACKEND=('*CudaBackendGraphs.*' 'CudaBackendCascade.*' 'CudaBatchInvariance.*'
  'CudaGgufBlocks.*')
if command -v compute-sanitizer >/dev/null; then
  check memcheck_kernels timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "${HERE}/bin/kernels_gpu_test" --gtest_filter="$(joined "${MEMCHECK_KERNELS[@]}")"
  check memcheck_graphs timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 \
    "${HERE}/bin/worker_cuda_backend_gpu_test" --gtest_filter="$(joined "${MEMCHECK_BACKEND[@]}")"
fi
check end_to_end_cuda_worker end_to_end
check bench_numerics_cost "${HERE}/bin/arbor-bench-worker-cuda" --contexts=512,4096 \
  --batches=1,8,32 --variants=gemv+graph,invariant --steps=16
check bench_q4k_blocks "${HERE}/bin/arbor-bench-worker-cuda" --weights=q4_k --projections=false \
  --contexts=512 --batches=1,8,32 --variants=invariant --steps=16
[[ "${MODE}" == --quick ]] && exit ${failed}
check bench_attention_cuda "${HERE}/bin/arbor-bench-attention-cuda"
check bench_worker_cuda_siblings "${HERE}/bin/arbor-bench-worker-cuda" --projections=false \
  --siblings --contexts=2048 --batches=16,64 --variants=gemv+graph,cascade --steps=16
[[ -x "${HERE}/llama.cpp/bin/llama-bench" ]] && check race_llama_cpp_q4_k_m race_llama_cpp
check bench_worker_cuda "${HERE}/bin/arbor-bench-worker-cuda"
if command -v ncu >/dev/null; then
  # Eager launches (the gemv variant), so each kernel of one reduced batch-1 step is timed alone.
  check ncu_batch1_step timeout 90 ncu --clock-control none --metrics gpu__time_duration.sum \
    --csv --log-file "${LOGS}/ncu.csv" "${HERE}/bin/arbor-bench-worker-cuda" --contexts=512 \
    --batches=1 --steps=2 --variants=gemv --projections=false
fi
exit ${failed}
