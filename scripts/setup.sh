#!/usr/bin/env bash
# Install everything offsetkeeper needs from the project's own files (idempotent):
# a virtualenv in .venv with the package and its dev extra (noida-db broker, pytest, ...),
# and the Debian packages listed below.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=.venv/.offsetkeeper-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e '.[dev]'
    touch "$stamp"
fi

# Debian packages: kcat (independent client, benchmark yardstick); redis-server and zookeeper
# (the history store / ZooKeeper-era offsets tests start real servers); chromium and
# chromium-driver (the dashboard's browser tests). Only missing ones are installed.
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
[ -x /usr/share/zookeeper/bin/zkServer.sh ] || need+=(zookeeper)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    echo "setup: apt-get install ${need[*]}" >&2
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! command -v java >/dev/null 2>&1; then
    echo "warning: java not found; Spark commands (backup, restore) need Java 17" >&2
fi
