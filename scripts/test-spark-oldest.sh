#!/usr/bin/env bash
# Run the Spark subset of the tests (backup, restore with its exact offset mapping, commits scan,
# the streaming source, Spark Connect) on the OLDEST supported pyspark (constraints/spark-oldest.txt),
# in a second venv kept in the cache outside the work tree and keyed by the digest of what it
# was built from (the constraints file and pyproject.toml). offsetkeeper itself is not installed
# there: this tree's src/ is put on PYTHONPATH (Spark's Python workers inherit it), so the venv
# serves every checkout. Usage: scripts/test-spark-oldest.sh [pytest args, default: the subset]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
cache="${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper"
sum=$(cat constraints/spark-oldest.txt pyproject.toml | sha256sum | cut -c1-16)
venv="$cache/venv-spark-oldest"
if [ ! -f "$venv/.complete" ] || [ "$(cat "$venv/.complete")" != "$sum" ]; then
    echo "test-spark-oldest: building $venv ($(grep -v '^#' constraints/spark-oldest.txt | xargs))" >&2
    tmp="$venv.tmp.$$"
    rm -rf "$tmp"
    "$PY" -m venv "$tmp"
    "$tmp/bin/python" -m pip install --quiet --upgrade pip
    # the project's dependencies at the oldest Spark, then the project itself out again
    "$tmp/bin/python" -m pip install --quiet -c constraints/spark-oldest.txt ".[dev]"
    "$tmp/bin/python" -m pip uninstall --quiet -y offsetkeeper
    echo "$sum" > "$tmp/.complete"
    rm -rf "$venv"
    mv "$tmp" "$venv"
fi
# a venv moved into place keeps working: pip's scripts are not used, only bin/python
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
export PYSPARK_PYTHON="$venv/bin/python" PYSPARK_DRIVER_PYTHON="$venv/bin/python"
"$venv/bin/python" -c 'import pyspark, sys; print(f"test-spark-oldest: pyspark {pyspark.__version__}", file=sys.stderr)'
if [ "$#" -eq 0 ]; then
    set -- -m spark_oldest
fi
exec "$venv/bin/python" -m pytest -p no:cacheprovider "$@"
