# gbbot's image: the GitHub Docker action (action.yml) and `docker run` on a CI machine.
#
# Default: Python 3.11 with CPU torch==2.14.1, so `gbbot check` runs a repository's entrypoints in
# this container: the newest release gbbot's CI runs its real-torch tests and the warm server's
# start-up work under. gbbot reads torch 2.6 to 2.15 (--build-arg TORCH_SPEC=torch==2.13.0 for
# another). Build arguments:
#   BASE_IMAGE       the image to build on: any Debian or Ubuntu image (Python 3.10+, venv and
#                    git are installed with apt when missing), e.g. a CUDA image, with the torch
#                    build for its CUDA version:
#                      docker build --build-arg BASE_IMAGE=nvidia/cuda:12.8.1-runtime-ubuntu24.04 \
#                        --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 .
#                    then `docker run --gpus all -v "$PWD:/repo" -w /repo IMAGE check`.
#                    A GitHub Docker action cannot be given GPUs: on GPU runners keep this CPU
#                    image and set `runner: {backend: container, image: <your CUDA image>,
#                    gpus: all}` in .gbbot.yml; gbbot then starts each entrypoint in a sibling
#                    container with the GPUs, through the runner's Docker socket.
#   TORCH_SPEC       the torch requirement (empty: no torch, e.g. when only the container
#                    backend runs user code, or the base image brings its own; see below)
#   TORCH_INDEX_URL  where torch comes from (the CPU wheels by default: PyPI's are CUDA builds)
#   SYSTEM_PACKAGES  "1": gbbot's virtualenv also sees the base image's site-packages (a base
#                    image that already has torch and your dependencies; set TORCH_SPEC="")
#   PIP_NO_INDEX, PIP_FIND_LINKS  an offline build from a wheelhouse inside the build context,
#                    e.g. --build-arg PIP_NO_INDEX=1 --build-arg PIP_FIND_LINKS=/src/wheels
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}

ARG TORCH_SPEC=torch==2.14.1
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG SYSTEM_PACKAGES=0
ARG PIP_NO_INDEX
ARG PIP_FIND_LINKS

ENV PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    VIRTUAL_ENV=/opt/gbbot \
    PATH=/opt/gbbot/bin:$PATH

# git for the merge-base diff; Python with venv where the base image lacks them (CUDA images).
RUN set -eu; missing=""; \
    command -v git >/dev/null || missing="$missing git"; \
    python3 -c "import ensurepip, venv" 2>/dev/null || missing="$missing python3 python3-venv"; \
    if [ -n "$missing" ]; then \
      apt-get update; \
      DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends $missing ca-certificates; \
      rm -rf /var/lib/apt/lists/*; \
    fi

# A virtualenv: the base image's Python may be "externally managed" (PEP 668), and gbbot's
# dependencies must not change the image's. Entrypoints that `run: python ...` get this Python.
COPY . /src
RUN set -eu; \
    if [ "$SYSTEM_PACKAGES" = 1 ]; then python3 -m venv --system-site-packages "$VIRTUAL_ENV"; \
    else python3 -m venv "$VIRTUAL_ENV"; fi; \
    if [ -n "$TORCH_SPEC" ]; then pip install --index-url "$TORCH_INDEX_URL" "$TORCH_SPEC"; fi; \
    pip install /src; \
    gbbot --version

# The user the repository's code runs as (setup steps, entrypoints, the warm server; see
# docs/security.md): gbbot stays root, its installation and Python's stay root's and read-only to
# that user. The entrypoint picks the workspace's owner instead when that is not root (GitHub's
# hosted runners: uid 1001), so entrypoints can write the workspace; GBBOT_RUN_AS=root opts out.
RUN useradd --system --no-create-home --shell /usr/sbin/nologin gbbot-runner

COPY entrypoint /entrypoint
ENTRYPOINT ["/entrypoint"]
