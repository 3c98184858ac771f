# The ShardDB hook service: `python -m hooks` (uvicorn) on port 8080, as an
# unprivileged user, with nothing in the image but Python, the pinned runtime
# dependencies and the hooks package.
#
#   docker build -t ghcr.io/example/sharddb-hooks:0.1.0 .
#
# Pin the base harder by digest: --build-arg PYTHON_IMAGE=docker.io/library/python:3.11.13-slim-bookworm@sha256:...
# `make image` builds and checks it; tools/python-standin.sh makes a local base from Debian
# packages where no registry can be reached.
ARG PYTHON_IMAGE=docker.io/library/python:3.11.13-slim-bookworm

FROM ${PYTHON_IMAGE} AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
RUN python -m venv /opt/venv
COPY requirements.txt /tmp/requirements.txt
# Wheels only: every runtime dependency ships them, so no compiler is needed. Behind a
# proxy that re-signs TLS, pip trusts the CA bundle passed as the build secret `pip-ca`
# (`make image` passes the one the machine's pip trusts); a secret is mounted for this
# step only and never stored in a layer.
RUN --mount=type=secret,id=pip-ca,required=false \
    if [ -s /run/secrets/pip-ca ]; then export PIP_CERT=/run/secrets/pip-ca; fi; \
    /opt/venv/bin/pip install --no-cache-dir --only-binary=:all: -r /tmp/requirements.txt

FROM ${PYTHON_IMAGE}
ENV PATH=/opt/venv/bin:${PATH} \
    PYTHONPATH=/app \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    SHARDDB_HOST=0.0.0.0 \
    SHARDDB_PORT=8080
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY hooks/ /app/hooks/
# Bytecode is written once here, as root: at run time the root filesystem is
# read-only and the files stay owned by root, so the service cannot alter its code.
RUN python -m compileall -q /app/hooks
USER 65532:65532
EXPOSE 8080
# For plain Docker; Kubernetes uses the Deployment's probes instead. Speaks
# HTTPS (to itself, unverified) when a serving certificate is configured.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, ssl, urllib.request as r; tls = bool(os.environ.get('SHARDDB_TLS_CERT_FILE')); r.urlopen(('https' if tls else 'http') + '://127.0.0.1:' + os.environ.get('SHARDDB_PORT', '8080') + '/healthz', timeout=3, context=ssl._create_unverified_context() if tls else None)"]
ENTRYPOINT ["python", "-m", "hooks"]
