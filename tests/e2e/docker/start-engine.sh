#!/usr/bin/env bash
# Start a Docker engine for gbbot's docker tests (or find the one already running) and print its
# DOCKER_HOST as the last line. Installs docker.io and debootstrap with apt when they are missing.
#
# The engine has no bridge network (--bridge=none, no iptables): containers run with network "none"
# or "host", and no private address range is ever set up. Its state lives in one directory
# ($GBBOT_DOCKER_DIR, default $TMPDIR/gbbot-docker) that survives the engine, so images built by an
# earlier run are found again. Exit 1 with the reason on stderr when no engine can start.
set -euo pipefail

dir=${GBBOT_DOCKER_DIR:-${TMPDIR:-/tmp}/gbbot-docker}
host="unix://$dir/docker.sock"

# The docker SDK is a dependency of gbbot, so this works before (and without) the docker CLI.
answers() { python3 -c 'import sys, docker; docker.DockerClient(base_url=sys.argv[1], timeout=5).ping()' "$host" >/dev/null 2>&1; }

if answers; then
  echo "$host"
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "start-engine: dockerd or debootstrap is missing and cannot be installed (needs root and apt-get)" >&2
    exit 1
  fi
  echo "start-engine: installing docker.io and debootstrap" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends docker.io debootstrap >&2
fi
if [ "$(id -u)" != 0 ]; then
  echo "start-engine: dockerd needs root" >&2
  exit 1
fi

mkdir -p "$dir/data" "$dir/exec"
rm -f "$dir/docker.sock"
# setsid: the engine is not in the caller's process group, so a Ctrl-C there does not kill it
# half-way; whoever started it stops it by the pid in $dir/dockerd.pid.
setsid dockerd \
  --bridge=none --iptables=false --ip6tables=false \
  --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$dir/dockerd.pid" \
  -H "$host" >"$dir/dockerd.log" 2>&1 </dev/null &

for _ in $(seq 120); do
  if answers; then
    echo "$host"
    exit 0
  fi
  sleep 0.5
done
echo "start-engine: dockerd did not answer within 60 s; its log ($dir/dockerd.log) ends:" >&2
tail -n 20 "$dir/dockerd.log" >&2
exit 1
