#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the whole test suite against a real broker and real Spark.
# Tests start their own Apache Kafka clusters unless OFFSETKEEPER_TEST_BOOTSTRAP names a cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
# Stacks of a native crash (a segfault in a C library) land here and are printed if one happens.
crash_log="${TMPDIR:-/tmp}/offsetkeeper-test-crash-$$.log"
: > "$crash_log"
export OFFSETKEEPER_TEST_CRASH_LOG="$crash_log"
set +e
.venv/bin/python -m pytest "$@"
rc=$?
set -e
if [ "$rc" -gt 128 ]; then
    echo "test.sh: pytest died of signal $((rc - 128))" >&2
    if [ -s "$crash_log" ]; then
        echo "test.sh: the stacks at the crash:" >&2
        cat "$crash_log" >&2
    fi
    if [ -s "$crash_log.failures" ]; then
        echo "test.sh: the tests that failed before the crash:" >&2
        cat "$crash_log.failures" >&2
    fi
fi
rm -f "$crash_log" "$crash_log.failures"
exit "$rc"
