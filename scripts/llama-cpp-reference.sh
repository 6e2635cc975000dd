#!/usr/bin/env bash
# Regenerates (or checks) the llama.cpp reference data for the SmolLM2-135M-Instruct Q4_1 GGUF:
# tokenizer ids for tests/model/data/tokenizer_corpus.txt and greedy continuations of a few chat
# and raw prompts, written to tests/model/data/smollm2_llama_cpp.json by
# tests/model/llama_cpp_golden.py. llama.cpp is the independent ground truth Arbor's GGUF
# tokenizer and quantized forward are compared against.
#
# Usage: scripts/llama-cpp-reference.sh GGUF [golden-script args...]
#   With no further arguments it rewrites tests/model/data/smollm2_llama_cpp.json; pass e.g.
#   `--check tests/model/data/smollm2_llama_cpp.json` to compare instead (exit 1 on a difference).
# Usage: scripts/llama-cpp-reference.sh --random [golden-script args...]
#   The same for the small random-weight GGUF files tests/model/random_gguf.py writes (with the
#   project's .venv, which has llama.cpp's `gguf` package) into a temporary directory:
#   tests/model/llama_cpp_random_golden.py rewrites tests/model/data/random_llama_cpp.json, or
#   checks it with `--check FILE`.
#
# The first run creates the virtualenv .venv-llamacpp in the repository root and builds
# llama-cpp-python from its sdist with pip (native CPU without AMX, 2 build jobs; several
# minutes). The sdist comes from the package index through `pip download` and is checked against
# a pinned sha256; set LLAMA_CPP_PYTHON_SDIST=/path/to/llama_cpp_python-0.3.36.tar.gz to use a
# copy already on disk. Idempotent and quiet: later runs skip the install and print only what the golden script
# reports on failure.
set -euo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly VENV="${ROOT}/.venv-llamacpp"
# shellcheck source=scripts/llama-cpp-sdist.sh
source "${ROOT}/scripts/llama-cpp-sdist.sh"
# Native CPU build of the shared libraries only; the multimodal (mtmd) library is not needed.
# Without llama.cpp's AMX kernels, which -march=native compiles in on an AMX CPU: at this commit
# they fault on every quantized file (as in scripts/llama-cpp-tools.sh), and the golden data's
# CPU features (its system_info) are those of a build without them.
readonly LCP_NO_AMX="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
readonly LCP_CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAVA_BUILD=OFF -DCMAKE_BUILD_TYPE=Release \
'-DCMAKE_C_FLAGS=${LCP_NO_AMX}' '-DCMAKE_CXX_FLAGS=${LCP_NO_AMX}'"
readonly STAMP_VALUE="llama-cpp-python==${LCP_VERSION} numpy ${LCP_CMAKE_ARGS}"

if (($# < 1)); then
  echo "usage: $0 GGUF|--random [--out FILE | --check FILE]" >&2
  exit 2
fi
GGUF="$1"
shift
if [[ "${GGUF}" != "--random" && ! -f "${GGUF}" ]]; then
  echo "llama-cpp-reference: no such GGUF file: ${GGUF}" >&2
  exit 2
fi

LOG="$(mktemp -t llama-cpp-reference.XXXXXX.log)"
RANDOM_DIR=""
trap 'rm -f "${LOG}"; [[ -z "${RANDOM_DIR}" ]] || rm -rf "${RANDOM_DIR}"' EXIT

install_venv() {
  local stamp="${VENV}/.arbor-llamacpp"
  [[ -f "${stamp}" && "$(cat "${stamp}")" == "${STAMP_VALUE}" ]] && return 0

  local python=/usr/bin/python3
  [[ -x "${python}" ]] || python="$(command -v python3)"
  [[ -x "${VENV}/bin/python" ]] || "${python}" -m venv "${VENV}" >>"${LOG}" 2>&1 ||
    fail "could not create ${VENV}"

  local sdist
  sdist="$(llama_cpp_sdist "${VENV}" "${LOG}")" || fail "no llama-cpp-python sdist"

  # numpy and llama-cpp-python's other runtime dependencies, so that the build below can use
  # --no-deps and --force-reinstall touches nothing else.
  "${VENV}/bin/pip" install -q --disable-pip-version-check \
    numpy "typing-extensions>=4.5.0" "diskcache>=5.6.1" "jinja2>=2.11.3" >>"${LOG}" 2>&1 ||
    fail "pip install numpy failed"
  CMAKE_ARGS="${LCP_CMAKE_ARGS}" FORCE_CMAKE=1 CMAKE_BUILD_PARALLEL_LEVEL=2 \
    "${VENV}/bin/pip" install -q --disable-pip-version-check --no-cache-dir \
      --force-reinstall --no-deps --no-binary llama-cpp-python "${sdist}" >>"${LOG}" 2>&1 ||
    fail "building llama-cpp-python ${LCP_VERSION} failed"
  "${VENV}/bin/python" -c "import llama_cpp; assert llama_cpp.__version__ == '${LCP_VERSION}'" \
    >>"${LOG}" 2>&1 || fail "llama_cpp does not import after the install"
  echo "${STAMP_VALUE}" >"${stamp}"
}

install_venv

if [[ "${GGUF}" == "--random" ]]; then
  RANDOM_DIR="$(mktemp -d -t llama-cpp-random.XXXXXX)"
  "${ROOT}/.venv/bin/python" "${ROOT}/tests/model/random_gguf.py" "${RANDOM_DIR}" >>"${LOG}" 2>&1 ||
    fail "tests/model/random_gguf.py failed (the project's .venv needs numpy and gguf)"
  if (($# == 0)); then
    set -- --out "${ROOT}/tests/model/data/random_llama_cpp.json"
  fi
  "${VENV}/bin/python" "${ROOT}/tests/model/llama_cpp_random_golden.py" \
    --gguf-dir "${RANDOM_DIR}" "$@"
  exit $?
fi

if (($# == 0)); then
  set -- --out "${ROOT}/tests/model/data/smollm2_llama_cpp.json"
fi
exec "${VENV}/bin/python" "${ROOT}/tests/model/llama_cpp_golden.py" --gguf "${GGUF}" "$@"
