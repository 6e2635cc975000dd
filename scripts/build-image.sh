#!/usr/bin/env bash
# Builds Arbor's container image (deploy/Dockerfile) with podman, or docker when podman is
# missing: `make image`.
#
#   scripts/build-image.sh [TAG]        # default TAG: arbor:latest
#
# The Dockerfile starts from debian:12. When that image is neither present nor pullable (a host
# without access to a container registry), it is made here from the Debian archive with
# debootstrap (a minimal bookworm root file system, imported as docker.io/library/debian:12),
# so the only network the build needs is the Debian archive's. Set CMAKE_FLAGS to pass build
# options (default: no CUDA, portable code). The build context is the repository minus
# .dockerignore (a few MB).
set -euo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly TAG="${1:-arbor:latest}"
readonly BASE="docker.io/library/debian:12"
readonly MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# shellcheck source=container-engine.sh
source "${ROOT}/scripts/container-engine.sh"
container_engine

have_base() { "${ENGINE}" image inspect "${BASE}" >/dev/null 2>&1; }

make_base() {
  command -v debootstrap >/dev/null || {
    echo "build-image: cannot pull ${BASE} and debootstrap is missing (apt-get install" \
         "debootstrap) to make it from the Debian archive" >&2
    exit 1
  }
  local rootfs
  rootfs="$(mktemp -d)"
  trap 'rm -rf "${rootfs}"' RETURN
  echo "build-image: making ${BASE} from ${MIRROR} with debootstrap" >&2
  debootstrap --variant=minbase bookworm "${rootfs}" "${MIRROR}" >/dev/null
  rm -rf "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/lib/apt/lists/*
  tar -C "${rootfs}" -c . | "${ENGINE}" import - "${BASE}" >/dev/null
}

if ! have_base && ! "${ENGINE}" pull -q "${BASE}" >/dev/null 2>&1; then
  make_base
fi
container_check "${BASE}"

start=${SECONDS}
"${ENGINE}" build -f "${ROOT}/deploy/Dockerfile" -t "${TAG}" \
  ${CMAKE_FLAGS:+--build-arg "CMAKE_FLAGS=${CMAKE_FLAGS}"} "${ROOT}"
echo "build-image: ${TAG} built in $((SECONDS - start)) s" >&2
