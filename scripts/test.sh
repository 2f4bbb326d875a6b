#!/usr/bin/env bash
# Set up (scripts/setup.sh), then run the whole test suite against a real broker and real Spark.
# Tests start their own Apache Kafka clusters unless OFFSETKEEPER_TEST_BOOTSTRAP names a cluster.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python"
# Compiled modules are kept (__pycache__ is git-ignored and left out of the sdist): a machine that
# sets PYTHONDONTWRITEBYTECODE would compile offsetkeeper's sources again in every command,
# Spark worker and helper process the tests start.
unset PYTHONDONTWRITEBYTECODE
# A native crash (a segfault in a C library) takes pytest's summary with it: pytest's
# faulthandler prints the stacks, and the tests that had failed before are written here.
failures="${TMPDIR:-/tmp}/offsetkeeper-test-failures-$$.log"
: > "$failures"
export OFFSETKEEPER_TEST_FAILURES_LOG="$failures"
# Two workers (pytest-xdist), each with its own clusters and services (session fixtures are per
# worker, in its own base temp): most of a test's time is spent waiting on brokers, JVMs and
# Spark, so two workers share this 2-core machine well. A file's tests stay on one worker (its
# module fixtures are set up once). OFFSETKEEPER_TEST_WORKERS=N sets the number, 0 runs the
# tests in this process; a cluster named by OFFSETKEEPER_TEST_BOOTSTRAP is one cluster for all,
# so it gets one process unless workers are asked for.
workers="${OFFSETKEEPER_TEST_WORKERS:-}"
if [ -z "$workers" ]; then
    if [ -n "${OFFSETKEEPER_TEST_BOOTSTRAP:-}" ]; then workers=0; else workers=2; fi
fi
case "$workers" in
    ''|*[!0-9]*) echo "test.sh: OFFSETKEEPER_TEST_WORKERS='$workers' is not a number of workers (0, 1, 2, ...)" >&2; exit 2;;
esac
xdist=()
if [ "$workers" -gt 0 ]; then xdist=(-n "$workers" --dist loadfile); fi
set +e
.venv/bin/python -m pytest "${xdist[@]}" "$@"
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
# The Spark subset (marker spark_oldest) again on the oldest supported pyspark, in its own cached
# venv (README: Spark versions): after a whole-suite run that passed. The two are independent
# (own venvs, brokers, temp directories) and run side by side; each line says which one wrote it.
if [ "$rc" -eq 0 ] && [ "$#" -eq 0 ]; then
    bash scripts/wheel_smoke.sh > >(sed -u 's/^/[wheel-smoke] /') 2>&1 &
    smoke=$!
    bash scripts/test-spark-oldest.sh > >(sed -u 's/^/[spark-oldest] /') 2>&1 &
    oldest=$!
    wait "$smoke" || rc=$?
    wait "$oldest" || rc=$?
fi
exit "$rc"
