#!/usr/bin/env bash
# Install everything offsetkeeper needs from the project's own files (idempotent):
# a virtualenv in .venv with the package and its dev extra (noida-db broker, pytest, ...),
# and the Debian package kcat (independent client and benchmark yardstick).
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

if ! command -v kcat >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq kcat >/dev/null
fi

if ! command -v java >/dev/null 2>&1; then
    echo "warning: java not found; Spark commands (backup, restore) need Java 17" >&2
fi
