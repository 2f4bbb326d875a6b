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

# Apache Kafka, pinned in the pom: the broker of the demo and the tests, and its own tools
# (kafka-consumer-groups ...) as the oracle. Maven keeps its repository in ~/.m2; the jars are
# copied to the cache that offsetkeeper.devbroker.dist reads (OFFSETKEEPER_KAFKA_LIBS overrides).
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' jvm/kafka-dist/pom.xml)
kafka_libs="${OFFSETKEEPER_KAFKA_LIBS:-${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper/kafka-$kafka_version/libs}"
kafka_stamp="$kafka_libs/.complete"
if [ ! -f "$kafka_stamp" ] || [ jvm/kafka-dist/pom.xml -nt "$kafka_stamp" ]; then
    echo "setup: fetching Apache Kafka $kafka_version with Maven into $kafka_libs" >&2
    tmp="$kafka_libs.tmp.$$"
    rm -rf "$tmp"
    mvn -q -B -f jvm/kafka-dist/pom.xml dependency:copy-dependencies -DoutputDirectory="$tmp" >&2
    rm -rf "$kafka_libs"
    mkdir -p "$(dirname "$kafka_libs")"
    mv "$tmp" "$kafka_libs"
    touch "$kafka_stamp"
fi

# Spark's own Kafka connector (optional for users; the yardstick and the partner of offsetkeeper's
# Spark work): spark-sql-kafka-0-10 of the pinned pyspark's version with what pyspark's jars/
# lacks (kafka-clients, commons-pool2, the token provider), copied to the cache that
# offsetkeeper.spark.connector reads (OFFSETKEEPER_SPARK_KAFKA_JARS overrides).
spark_kafka_version=$(sed -n 's:.*<spark.version>\(.*\)</spark.version>.*:\1:p' jvm/spark-kafka/pom.xml)
spark_kafka_jars="${OFFSETKEEPER_SPARK_KAFKA_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper/spark-kafka-$spark_kafka_version/jars}"
spark_kafka_stamp="$spark_kafka_jars/.complete"
if [ ! -f "$spark_kafka_stamp" ] || [ jvm/spark-kafka/pom.xml -nt "$spark_kafka_stamp" ]; then
    echo "setup: fetching Spark's Kafka connector $spark_kafka_version with Maven into $spark_kafka_jars" >&2
    tmp="$spark_kafka_jars.tmp.$$"
    rm -rf "$tmp"
    mvn -q -B -f jvm/spark-kafka/pom.xml dependency:copy-dependencies -DoutputDirectory="$tmp" >&2
    rm -rf "$spark_kafka_jars"
    mkdir -p "$(dirname "$spark_kafka_jars")"
    mv "$tmp" "$spark_kafka_jars"
    touch "$spark_kafka_stamp"
fi
