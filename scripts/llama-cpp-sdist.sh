# The pinned llama-cpp-python sdist, which vendors the llama.cpp that Arbor's golden data and
# benchmarks compare against. Sourced by scripts/llama-cpp-reference.sh and
# scripts/llama-cpp-tools.sh; not run on its own.
#
#   llama_cpp_sdist VENV LOG   prints the path of the checked sdist (downloading it into
#                              VENV/sdist with VENV's pip the first time), or returns 1 with
#                              the reason in LOG. LLAMA_CPP_PYTHON_SDIST=/path/to/sdist uses a
#                              copy already on disk.
#   fail MESSAGE               says MESSAGE as the sourcing script, with the end of its ${LOG},
#                              and exits 1.
readonly LCP_VERSION="0.3.36"
readonly LCP_SDIST_NAME="llama_cpp_python-${LCP_VERSION}.tar.gz"
readonly LCP_SDIST_SHA256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"

llama_cpp_sdist() {
  local venv="$1" log="$2"
  local sdist="${LLAMA_CPP_PYTHON_SDIST:-${venv}/sdist/${LCP_SDIST_NAME}}"
  if [[ ! -f "${sdist}" && -z "${LLAMA_CPP_PYTHON_SDIST:-}" ]]; then
    "${venv}/bin/pip" download -q --disable-pip-version-check --no-deps \
      --no-binary llama-cpp-python -d "${venv}/sdist" "llama-cpp-python==${LCP_VERSION}" \
      >>"${log}" 2>&1 || { echo "pip download llama-cpp-python==${LCP_VERSION} failed" >>"${log}"; return 1; }
  fi
  [[ -f "${sdist}" ]] || { echo "no sdist at ${sdist}" >>"${log}"; return 1; }
  echo "${LCP_SDIST_SHA256}  ${sdist}" | sha256sum -c --status ||
    { echo "${sdist} does not have sha256 ${LCP_SDIST_SHA256}" >>"${log}"; return 1; }
  echo "${sdist}"
}

fail() {
  echo "$(basename "$0" .sh): $1 (log follows)" >&2
  tail -n 60 "${LOG}" >&2
  exit 1
}
