#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the demo: it starts its own local broker, creates data and
# consumer groups, and walks through inspect -> reset -> rollback -> backup -> restore.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
exec .venv/bin/offsetkeeper demo "$@"
