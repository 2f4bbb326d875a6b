#!/usr/bin/env bash
# Install everything offsetkeeper needs from the project's own files (idempotent):
# a virtualenv in .venv with the package and its dev extra (pytest, hypothesis, ...), the Debian
# packages listed below, and Apache Kafka (broker + tools) fetched with Maven from
# jvm/kafka-dist/pom.xml into a cache outside the work tree.
set -euo pipefail
cd "$(dirname "$0")/.."

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
stamp=.venv/.offsetkeeper-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ constraints/test.txt -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    # the exact versions the tests run on (pyproject.toml gives users ranges)
    .venv/bin/python -m pip install --quiet -c constraints/test.txt -e '.[dev]'
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
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
if [ "${#need[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    echo "setup: apt-get install ${need[*]}" >&2
    $SUDO apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if ! command -v java >/dev/null 2>&1; then
    echo "setup: java not found; Apache Kafka and Spark need Java 17 (apt-get install openjdk-17-jre-headless)" >&2
    exit 1
fi

# JVM parts, each from a pom in the project, into a cache outside the work tree (Maven keeps its
# own repository in ~/.m2). A cache entry is complete when its stamp holds the sha256 of what it
# was built from, so a fresh clone (new file times) reuses it and a changed pom or source
# rebuilds it; it is replaced by rename, never left half-written.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper"
digest() { find "$@" -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1; }
build_into() {  # build_into DEST DIGEST COMMAND...: run COMMAND with $out = a temp dir, then publish
    local dest=$1 sum=$2
    shift 2
    if [ -f "$dest/.complete" ] && [ "$(cat "$dest/.complete")" = "$sum" ]; then
        return 0
    fi
    out="$dest.tmp.$$"
    rm -rf "$out"
    mkdir -p "$out"
    "$@"
    echo "$sum" > "$out/.complete"
    rm -rf "$dest"
    mv "$out" "$dest"
}

# Apache Kafka, pinned in the pom: the broker of the demo and the tests, and its own tools
# (kafka-consumer-groups ...) as the oracle; read by offsetkeeper.devbroker.dist
# (OFFSETKEEPER_KAFKA_LIBS points a run at other jars, and is never written here).
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' jvm/kafka-dist/pom.xml)
fetch_kafka() {
    echo "setup: fetching Apache Kafka $kafka_version with Maven into $cache/kafka-$kafka_version/libs" >&2
    mvn -q -B -f jvm/kafka-dist/pom.xml dependency:copy-dependencies -DoutputDirectory="$out" >&2
}
build_into "$cache/kafka-$kafka_version/libs" "$(digest jvm/kafka-dist)" fetch_kafka

# Spark's own Kafka connector (optional for users; the yardstick and the partner of offsetkeeper's
# Spark work): spark-sql-kafka-0-10 of the pinned pyspark's version with what pyspark's jars/
# lacks (kafka-clients, commons-pool2, the token provider); read by offsetkeeper.spark.connector
# (OFFSETKEEPER_SPARK_KAFKA_JARS points a run at other jars).
spark_kafka_version=$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' jvm/spark-kafka/pom.xml)
fetch_spark_kafka() {
    echo "setup: fetching Spark's Kafka connector $spark_kafka_version with Maven" >&2
    mvn -q -B -f jvm/spark-kafka/pom.xml dependency:copy-dependencies -DoutputDirectory="$out" >&2
}
build_into "$cache/spark-kafka-$spark_kafka_version/jars" "$(digest jvm/spark-kafka)" fetch_spark_kafka

# The JVM admin helper (share groups, streams groups, KIP-848 states, KIP-1099 epochs): Kafka's
# own Java Admin client behind a JSON seam, run by src/offsetkeeper/kafka/jvm.py; in
# $cache/admin-helper-<version>/{admin-helper.jar,lib/*.jar} (OFFSETKEEPER_ADMIN_HELPER points a
# run at another build). Without it only share-groups / streams-groups and the TYPE/PROTOCOL
# columns are unavailable.
helper_version=$(sed -n 's:^  <version>\(.*\)</version>.*:\1:p' jvm/admin-helper/pom.xml | head -1)
build_helper() {
    echo "setup: building the JVM admin helper with Maven" >&2
    mvn -q -B -f jvm/admin-helper/pom.xml package dependency:copy-dependencies -DskipTests \
        -Dhelper.build.dir="$out/build" -DoutputDirectory="$out/lib" >&2
    mv "$out/build/admin-helper.jar" "$out/admin-helper.jar"
    rm -rf "$out/build"
}
build_into "$cache/admin-helper-$helper_version" "$(digest jvm/admin-helper)" build_helper

# The tests' own Java clients (never shipped): a KafkaShareConsumer, a Kafka Streams application
# and MirrorMaker 2's RemoteClusterUtils, run by tests/jvm_apps.py from
# $cache/test-apps-<version>/{test-apps.jar,lib/*.jar} (OFFSETKEEPER_TEST_APPS points elsewhere).
apps_version=$(sed -n 's:^  <version>\(.*\)</version>.*:\1:p' tests/jvm/test-apps/pom.xml | head -1)
build_test_apps() {
    echo "setup: building the tests' Java clients with Maven" >&2
    mvn -q -B -f tests/jvm/test-apps/pom.xml package dependency:copy-dependencies -DskipTests \
        -Dapps.build.dir="$out/build" -DoutputDirectory="$out/lib" >&2
    mv "$out/build/test-apps.jar" "$out/test-apps.jar"
    rm -rf "$out/build"
}
build_into "$cache/test-apps-$apps_version" "$(digest tests/jvm/test-apps)" build_test_apps

# Kafka Connect (distributed worker, FileStream connectors) and MirrorMaker 2, pinned in the pom:
# the real components behind the tests and the demo of `connect` and `mm2`; read by
# offsetkeeper.devbroker.connect (OFFSETKEEPER_CONNECT_LIBS points a run at other jars).
connect_version=$(sed -n 's:.*<connect.version>\(.*\)</connect.version>.*:\1:p' jvm/connect-dist/pom.xml)
fetch_connect() {
    echo "setup: fetching Kafka Connect and MirrorMaker 2 $connect_version with Maven" >&2
    mvn -q -B -f jvm/connect-dist/pom.xml dependency:copy-dependencies -DoutputDirectory="$out" >&2
}
build_into "$cache/connect-$connect_version/libs" "$(digest jvm/connect-dist)" fetch_connect
