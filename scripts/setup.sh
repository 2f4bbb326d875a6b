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
# copied to the cache that offsetkeeper.devbroker.dist reads.
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' jvm/kafka-dist/pom.xml)
# (always the pinned release: OFFSETKEEPER_KAFKA_LIBS only points a run at other jars)
kafka_libs="${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper/kafka-$kafka_version/libs"
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

# --- JVM admin helper (share groups, streams groups, KIP-848 states, KIP-1099 epochs) ----------
# Self-contained: builds jvm/admin-helper (Kafka's own Java Admin client behind a JSON seam, run
# by src/offsetkeeper/kafka/jvm.py) into a cache outside the work tree:
#   ~/.cache/offsetkeeper/admin-helper-<pom version>/{admin-helper.jar,lib/*.jar}
# Rebuilt when any file under jvm/admin-helper is newer than the cache's stamp. Without it (or
# without Java) only the share-groups / streams-groups commands and the TYPE/PROTOCOL columns
# are unavailable; everything else works.
if command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then
    helper_pom=jvm/admin-helper/pom.xml
    helper_version=$(sed -n 's:^  <version>\(.*\)</version>.*:\1:p' "$helper_pom" | head -1)
    # always the cache: OFFSETKEEPER_ADMIN_HELPER only points a run at another build
    helper_dir="${XDG_CACHE_HOME:-$HOME/.cache}/offsetkeeper/admin-helper-$helper_version"
    helper_stamp="$helper_dir/.complete"
    if [ ! -f "$helper_stamp" ] || [ -n "$(find jvm/admin-helper -type f -newer "$helper_stamp" -print -quit)" ]; then
        echo "setup: building the JVM admin helper with Maven into $helper_dir" >&2
        helper_tmp="$helper_dir.tmp.$$"
        rm -rf "$helper_tmp"
        mkdir -p "$helper_tmp"
        mvn -q -B -f "$helper_pom" package dependency:copy-dependencies -DskipTests \
            -Dhelper.build.dir="$helper_tmp/build" -DoutputDirectory="$helper_tmp/lib" >&2
        mv "$helper_tmp/build/admin-helper.jar" "$helper_tmp/admin-helper.jar"
        rm -rf "$helper_tmp/build" "$helper_dir"
        mv "$helper_tmp" "$helper_dir"
        touch "$helper_stamp"
    fi
fi
