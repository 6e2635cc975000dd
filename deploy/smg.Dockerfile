# The smg gateway's image for deploy/k8s/gateway.yaml: Debian's Python with the Shepherd Model
# Gateway from PyPI (`smg launch` needs only it, setproctitle and PyYAML; its gRPC dependencies
# serve `smg serve`, which this image does not run). Build from the repository root:
#   docker build -f deploy/smg.Dockerfile -t arbor-smg .
FROM debian:12
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      python3 python3-venv python3-yaml ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && python3 -m venv --system-site-packages /opt/smg \
 && /opt/smg/bin/pip install -q --no-cache-dir --no-deps smg setproctitle
ENV PATH=/opt/smg/bin:$PATH
EXPOSE 8080 29000
ENTRYPOINT ["smg"]
