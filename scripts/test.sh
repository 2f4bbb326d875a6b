#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the whole test suite against a real broker and real Spark.
# Tests start their own Apache Kafka clusters unless OFFSETKEEPER_TEST_BOOTSTRAP names a cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
exec .venv/bin/python -m pytest "$@"
