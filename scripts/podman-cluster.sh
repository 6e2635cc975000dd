#!/usr/bin/env bash
# Runs deploy/compose.yaml's cluster with podman — a coordinator and two CPU workers over mutual
# TLS with bearer tokens, from the image `make image` built — as one pod, sends it one job, and
# takes it down again. The end-to-end check of the container image (`make image-check`).
#
#   scripts/podman-cluster.sh [--keep]
#
# The pod shares one network namespace, so the workers differ by port (50061, 50062) and reach
# the coordinator's cluster port as localhost:50052; everything else is deploy/*.flags
# unchanged. Certificates come from scripts/make-certs.sh and a fresh admin token; the model is
# $MODEL (a checkpoint directory or .gguf file) when set, else SmolLM2-135M-Instruct when the
# default model is in the local cache (a real answer), else a small random-weight checkpoint
# made by the image's own `arbor make-model`. The public port is published on 127.0.0.1:$PORT
# (default 50051). With --keep the pod and its folder stay up for poking at; remove them with
# `podman pod rm -f arbor-cluster`.
set -euo pipefail

readonly ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly IMAGE="${IMAGE:-localhost/arbor:latest}"
readonly POD="${POD:-arbor-cluster}"
readonly PORT="${PORT:-50051}"
readonly CACHED="${XDG_CACHE_HOME:-${HOME}/.cache}/arbor/models/SmolLM2-135M-Instruct.Q4_1.gguf"
keep=0
[[ "${1:-}" == --keep ]] && keep=1

command -v podman >/dev/null || { echo "podman-cluster: podman is not installed" >&2; exit 1; }
podman image inspect "${IMAGE}" >/dev/null 2>&1 ||
  { echo "podman-cluster: no image ${IMAGE}; run \`make image\` first" >&2; exit 1; }
# shellcheck source=container-engine.sh
source "${ROOT}/scripts/container-engine.sh"
ENGINE=podman  # Pods are podman's.
container_check "${IMAGE}"

work="$(mktemp -d)"
cleanup() {
  if ((keep)); then
    echo "podman-cluster: left pod ${POD} and ${work} running" >&2
  else
    podman pod rm -f "${POD}" >/dev/null 2>&1 || true
    rm -rf "${work}"
  fi
}
trap cleanup EXIT
podman pod rm -f "${POD}" >/dev/null 2>&1 || true

# Secrets: a CA with coordinator, worker and operator certificates; one admin token.
"${ROOT}/scripts/make-certs.sh" "${work}/certs" arbor-coordinator arbor-worker operator >/dev/null
chmod -R a+rX "${work}/certs"
mkdir -p "${work}/tokens" "${work}/models"
token="$(openssl rand -hex 24)"
echo "${token} operator admin" >"${work}/tokens/tokens.txt"
echo "${token}" >"${work}/tokens/client.txt"

# The model, mounted read-only at /models.
model_flag="--model=/models/current"
if [[ -n "${MODEL:-}" || -f "${CACHED}" ]]; then
  src="$(realpath "${MODEL:-${CACHED}}")"
  mounts_model=(-v "${src}:/models/$(basename "${src}"):ro")
  model_flag="--model=/models/$(basename "${src}")"
else
  podman run --rm -v "${work}/models:/out" "${IMAGE}" make-model --preset small \
    --out /out/current >/dev/null
  mounts_model=(-v "${work}/models:/models:ro")
fi
echo "podman-cluster: model ${model_flag#--model=}" >&2

common=(--pod "${POD}" "${mounts_model[@]}" -v "${work}/certs:/etc/arbor/tls:ro")
podman pod create --name "${POD}" -p "127.0.0.1:${PORT}:50051" >/dev/null
podman run -d "${common[@]}" -v "${work}/tokens:/etc/arbor/tokens:ro" \
  --name "${POD}-coordinator" --entrypoint arbor-coordinator "${IMAGE}" \
  --flagfile=/etc/arbor/coordinator.flags "${model_flag}" >/dev/null
for i in 1 2; do
  podman run -d "${common[@]}" --name "${POD}-worker-${i}" --entrypoint arbor-worker "${IMAGE}" \
    --flagfile=/etc/arbor/worker.flags "${model_flag}" --coordinator=localhost:50052 \
    --listen="0.0.0.0:5006${i}" --advertise="localhost:5006${i}" \
    --metrics_listen="0.0.0.0:909${i}" >/dev/null
done

# A client in the pod, as a user would run one: the CA to trust and the token (public API).
client() {
  podman run --rm --pod "${POD}" -v "${work}/certs:/etc/arbor/tls:ro" \
    -v "${work}/tokens:/etc/arbor/tokens:ro" "${IMAGE}" "$@" --coordinator=localhost:50051 \
    --tls_ca=/etc/arbor/tls/ca.pem --token_file=/etc/arbor/tokens/client.txt
}
# An operator on the cluster port, which takes only the cluster's certificates.
operator() {
  podman run --rm --pod "${POD}" -v "${work}/certs:/etc/arbor/tls:ro" "${IMAGE}" "$@" \
    --coordinator=localhost:50052 --tls_ca=/etc/arbor/tls/ca.pem \
    --tls_cert=/etc/arbor/tls/operator.pem --tls_key=/etc/arbor/tls/operator.key
}

start=${SECONDS}
until [[ "$(operator workers 2>&1 | tee "${work}/workers.txt" | grep -c READY || true)" == 2 ]]; do
  if ((SECONDS - start > 300)); then
    echo "podman-cluster: the workers did not become ready in 300 s ($(cat "${work}/workers.txt"));" \
         "logs:" >&2
    for c in coordinator worker-1 worker-2; do podman logs --tail 20 "${POD}-${c}" >&2; done
    exit 1
  fi
  sleep 2
done
echo "podman-cluster: 2 workers ready after $((SECONDS - start)) s" >&2
cat "${work}/workers.txt"

# One chat job, streamed (the chat template applies when the model has one). It must finish.
out="$(client generate --chat '[{"role":"user","content":"What is the capital of France?"}]' \
  --max_tokens 48 --seed 7)"
echo "${out}"
grep -q "^job .* finished: FINISH_REASON_\(STOP_TOKEN\|MAX_TOKENS\)" <<<"${out}" ||
  { echo "podman-cluster: the job did not finish" >&2; exit 1; }
echo "podman-cluster: OK" >&2
