#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the whole test suite against a real broker and real Spark.
# Tests start their own Apache Kafka clusters unless OFFSETKEEPER_TEST_BOOTSTRAP names a cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
# A native crash (a segfault in a C library) takes pytest's summary with it: pytest's
# faulthandler prints the stacks, and the tests that had failed before are written here.
failures="${TMPDIR:-/tmp}/offsetkeeper-test-failures-$$.log"
: > "$failures"
export OFFSETKEEPER_TEST_FAILURES_LOG="$failures"
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" -gt 128 ]; then
    echo "test.sh: pytest died of signal $((rc - 128)) (its stacks are above)" >&2
    if [ -s "$failures" ]; then
        echo "test.sh: the tests that failed before the crash:" >&2
        cat "$failures" >&2
    fi
fi
rm -f "$failures"
# The package as users install it: sdist + wheel built, the wheel in a fresh venv, a smoke set
# against a broker it starts: after the whole suite passed (a run of chosen tests, with
# arguments, skips it; it adds ~2.5 minutes).
if [ "$rc" -eq 0 ] && [ "$#" -eq 0 ]; then
    bash scripts/wheel_smoke.sh || rc=$?
fi
# The Spark subset (marker spark_oldest) again on the oldest supported pyspark, in its own cached
# venv (README: Spark versions): after a whole-suite run that passed.
if [ "$rc" -eq 0 ] && [ "$#" -eq 0 ]; then
    bash scripts/test-spark-oldest.sh || rc=$?
fi
exit "$rc"
