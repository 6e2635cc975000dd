# Sourced by build-image.sh and podman-cluster.sh: picks the container engine and makes sure it
# can start a container here.
#
#   container_engine            # sets ENGINE to podman (preferred) or docker that answers, or fails
#   container_check IMAGE       # starts IMAGE once; with podman, falls back when needed
#
# Some hosts cannot run podman's defaults: crun refuses hybrid cgroup v1/v2 hierarchies, and
# inside another container the default file and process limits (RLIMIT_NOFILE 1048576) exceed
# what may be set. The fallback is a containers.conf in a temporary folder (CONTAINERS_CONF,
# read by every later podman call of the script): the runc runtime and limits within this
# process's own.

container_engine() {
  if command -v podman >/dev/null; then
    ENGINE=podman
  elif command -v docker >/dev/null; then
    ENGINE=docker
  else
    echo "$(basename "$0"): neither podman nor docker is installed (apt-get install podman)" >&2
    return 1
  fi
  # A docker without its daemon fails every later call; said here, not as a missing base image.
  local why
  if ! why="$("${ENGINE}" info 2>&1 >/dev/null)"; then
    echo "$(basename "$0"): ${ENGINE} is installed but cannot serve requests (is its daemon" \
         "running? systemctl start ${ENGINE}): ${why##*$'\n'}" >&2
    return 1
  fi
}

container_check() {
  local image="$1" why
  why="$("${ENGINE}" run --rm --entrypoint true "${image}" 2>&1)" && return 0
  if [[ "${ENGINE}" != podman ]] || ! command -v runc >/dev/null; then
    echo "$(basename "$0"): ${ENGINE} cannot start a container here: ${why}" >&2
    return 1
  fi
  local conf
  conf="$(mktemp -d)/containers.conf"
  cat >"${conf}" <<CONF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
[engine]
runtime = "runc"
CONF
  export CONTAINERS_CONF="${conf}"
  if ! "${ENGINE}" run --rm --entrypoint true "${image}" >/dev/null 2>&1; then
    echo "$(basename "$0"): podman cannot start a container here: ${why}" >&2
    return 1
  fi
  echo "$(basename "$0"): podman's defaults fail here (${why##*: }); using runc and this" \
       "process's limits (${conf})" >&2
}
