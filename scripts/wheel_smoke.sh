#!/usr/bin/env bash
# The package as a user gets it: build the sdist and the wheel (`python -m build`, which runs
# Maven for the JVM admin helper), install the WHEEL (core only, no extras) into a fresh venv
# outside the clone, and run a smoke set there against a broker that venv starts itself
# (`dev-broker start`: the first-use fetch of Apache Kafka into an empty user cache):
#   --version; groups list; a reset with --execute, then rollback of its snapshot;
#   share-groups describe of a real share group (the helper shipped in the wheel);
#   a missing extra's message (`backup run` without pyspark: the pip line, exit 2).
# Any failed step fails the script (its name on stderr); the broker is always stopped.
# Usage: scripts/wheel_smoke.sh   (from a clone whose .venv has the dev extra)
set -euo pipefail
cd "$(dirname "$0")/.."
clone=$PWD
start=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/offsetkeeper-wheel-smoke.XXXXXX")
venv="$work/venv"
data="$work/broker"
step="set-up"
cleanup() {
    rc=$?
    if [ -x "$venv/bin/offsetkeeper" ] && [ -d "$data" ]; then
        "$venv/bin/offsetkeeper" dev-broker stop --data-dir "$data" >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
    if [ "$rc" -ne 0 ]; then
        echo "wheel_smoke: FAILED at step: $step (exit $rc)" >&2
    fi
}
trap cleanup EXIT
say() { echo "wheel_smoke: $* [$((SECONDS - start)) s]" >&2; }
fail() { echo "wheel_smoke: $*" >&2; exit 1; }

step="python -m build"
# no isolation: the dev venv has the build requirements (its dev extra), which saves two
# throw-away venvs; the wheel is still built from the sdist, as a user's pip would
.venv/bin/python -m build --no-isolation --outdir "$work/dist" "$clone" >"$work/build.log" 2>&1 \
    || { tail -30 "$work/build.log" >&2; fail "python -m build failed"; }
wheel=$(ls "$work"/dist/offsetkeeper-*.whl)
ls "$work"/dist/offsetkeeper-*.tar.gz >/dev/null
say "built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB) and the sdist"

step="install the wheel into a fresh venv"
# the dev venv's pip installs into it (no ensurepip: faster, and nothing else on its PATH)
python3 -m venv --without-pip "$venv"
.venv/bin/python -m pip --python "$venv/bin/python" install --quiet "$wheel"
# the tests' Java clients (a KafkaShareConsumer) come from the clone's build (scripts/setup.sh),
# never from the wheel: locate them before the user cache is redirected
OFFSETKEEPER_TEST_APPS=$(.venv/bin/python -c 'from tests.jvm_apps import apps_dir; print(apps_dir())')
export OFFSETKEEPER_TEST_APPS
cd "$work"  # nothing of the clone on sys.path from here on
export XDG_CACHE_HOME="$work/cache" XDG_DATA_HOME="$work/share"
export OFFSETKEEPER_CONFIG="$work/none.yaml" OFFSETKEEPER_SNAPSHOT_STORE="$work/snapshots"
echo "{}" > "$OFFSETKEEPER_CONFIG"
unset OFFSETKEEPER_ADMIN_HELPER OFFSETKEEPER_KAFKA_LIBS OFFSETKEEPER_BOOTSTRAP_SERVER
ok=$("$venv/bin/python" -c 'import offsetkeeper, sys
try:
    import pyspark
except ImportError:
    print(offsetkeeper.__file__)' )
case "$ok" in "$venv"/*) ;; *) fail "the venv imports offsetkeeper from '$ok', not from the wheel, or has pyspark";; esac
[ "$(ls "$venv/bin" | grep -c '^offsetkeeper')" = 1 ] || fail "expected one offsetkeeper script"
say "installed (core only): $(du -sm "$venv" | cut -f1) MB venv"

step="offsetkeeper --version"
version=$("$venv/bin/python" -c 'import offsetkeeper; print(offsetkeeper.__version__)')
[ "$("$venv/bin/offsetkeeper" --version)" = "offsetkeeper $version" ] || fail "--version"

step="a missing extra's message"
set +e
msg=$("$venv/bin/offsetkeeper" backup run -b 127.0.0.1:1 -t orders --dest "$work/b" 2>&1 >/dev/null)
code=$?
set -e
expected="error: offsetkeeper backup run needs the spark extra: pip install 'offsetkeeper[spark]'"
[ "$code" = 2 ] && [ "$msg" = "$expected" ] || fail "backup run without pyspark: exit $code, '$msg'"

step="dev-broker start (fetches Apache Kafka on first use)"
port=$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$venv/bin/offsetkeeper" dev-broker start --port "$port" --data-dir "$data" -o json > "$work/start.json"
b="127.0.0.1:$port"
say "broker at $b"

step="topic, records and a committed group"
"$venv/bin/python" - "$b" <<'EOF'
import sys
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
b = sys.argv[1]
a = AdminClient({"bootstrap.servers": b})
a.create_topics([NewTopic("smoke", 2, 1)])["smoke"].result(30)
p = Producer({"bootstrap.servers": b})
for i in range(40):
    p.produce("smoke", partition=i % 2, value=b"v%d" % i)
assert p.flush(30) == 0
c = Consumer({"bootstrap.servers": b, "group.id": "smoke-g", "enable.auto.commit": False})
c.commit(offsets=[TopicPartition("smoke", 0, 5), TopicPartition("smoke", 1, 7)], asynchronous=False)
c.close()
EOF
committed() {
    "$venv/bin/python" - "$b" <<'EOF'
import sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "smoke-g"})
got = c.committed([TopicPartition("smoke", 0), TopicPartition("smoke", 1)], timeout=30)
print(",".join(str(tp.offset) for tp in got))
c.close()
EOF
}

step="groups list"
"$venv/bin/offsetkeeper" groups list -b "$b" -o json | grep -q '"smoke-g"' || fail "groups list lacks smoke-g"

step="offsets reset --execute"
"$venv/bin/offsetkeeper" offsets reset -b "$b" -g smoke-g -t smoke --to-latest --execute >/dev/null
[ "$(committed)" = "20,20" ] || fail "after the reset: $(committed), expected 20,20"

step="snapshots rollback of the reset's snapshot"
"$venv/bin/offsetkeeper" snapshots rollback latest -b "$b" --execute >/dev/null
[ "$(committed)" = "5,7" ] || fail "after the rollback: $(committed), expected 5,7"

step="share-groups describe of a real share group (the wheel's JVM helper)"
"$venv/bin/offsetkeeper" dev-broker kafka-tool kafka-configs --bootstrap-server "$b" --alter \
    --entity-type groups --entity-name smoke-share --add-config share.auto.offset.reset=earliest >/dev/null
# a KafkaShareConsumer from the tests' own jar (tests/jvm_apps.py, loaded by path: it imports
# only offsetkeeper, which is the wheel's here); the describe runs the wheel's helper
"$venv/bin/python" - "$b" "$work/share.json" "$clone/tests/jvm_apps.py" <<'EOF'
import importlib.util, json, subprocess, sys
from offsetkeeper.kafka import jvm
b, out, apps = sys.argv[1], sys.argv[2], sys.argv[3]
assert str(jvm.helper_dir()).startswith(sys.prefix), jvm.helper_dir()  # the wheel's helper
spec = importlib.util.spec_from_file_location("jvm_apps", apps)
jvm_apps = importlib.util.module_from_spec(spec)
spec.loader.exec_module(jvm_apps)
app = jvm_apps.JvmApp({"bootstrap.servers": b}, "share-consume", {"group": "smoke-share", "topics": ["smoke"]})
try:
    app.wait_for("acknowledged", count=40)
    r = subprocess.run([sys.prefix + "/bin/offsetkeeper", "share-groups", "describe", "smoke-share",
                        "-b", b, "-o", "json"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    text = json.dumps(rows)
    assert "smoke" in text and rows, text
    open(out, "w").write(r.stdout)
finally:
    app.stop()
EOF

step="dev-broker stop"
"$venv/bin/offsetkeeper" dev-broker stop --data-dir "$data" >/dev/null
say "passed: --version, missing extra, dev-broker first use, groups list, reset + rollback, share-groups describe"
