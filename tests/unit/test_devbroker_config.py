"""The development cluster's configuration: pinned release, node settings, cluster ids."""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetkeeper.devbroker import cluster, dist

ROOT = Path(__file__).resolve().parents[2]


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line)


def test_the_pom_pins_the_release_the_code_runs():
    """Invariant: set-up fetches the release `dist` looks for (one version, in two places)."""
    pom = (ROOT / "jvm" / "kafka-dist" / "pom.xml").read_text()
    assert re.search(r"<kafka.version>(.*)</kafka.version>", pom).group(1) == dist.KAFKA_VERSION


@pytest.mark.parametrize("nodes, rf, isr", [(1, "1", "1"), (3, "3", "2")])
def test_replication_follows_the_node_count(tmp_path, nodes, rf, isr):
    ports, cports = list(range(9100, 9100 + nodes)), list(range(9200, 9200 + nodes))
    for node in range(1, nodes + 1):
        p = _props(cluster._server_properties(node, tmp_path, ports, cports, None))
        assert p["node.id"] == str(node)
        assert p["controller.quorum.voters"] == ",".join(
            f"{k + 1}@127.0.0.1:{cports[k]}" for k in range(nodes))
        assert p["advertised.listeners"] == f"PLAINTEXT://127.0.0.1:{ports[node - 1]}"
        for key in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor",
                    "default.replication.factor"):
            assert p[key] == rf
        assert p["min.insync.replicas"] == isr
        assert p["group.initial.rebalance.delay.ms"] == "0"


@settings(max_examples=300)
@given(st.binary(min_size=16, max_size=16))
def test_cluster_ids_are_kafka_uuids_that_no_tool_reads_as_an_option(seed):
    """Invariant: a cluster id is 22 URL-safe base64 characters and never starts with '-'
    (kafka-storage format -t would take it for an option)."""
    import os

    real = os.urandom
    calls = iter([seed, b"\x00" * 16])
    os.urandom = lambda n: next(calls)
    try:
        cid = cluster._cluster_id()
    finally:
        os.urandom = real
    assert re.fullmatch(r"[A-Za-z0-9_-]{22}", cid) and not cid.startswith("-")


def test_tool_main_classes_are_in_the_release():
    """Invariant: every tool `kafka-tool` offers names a class of the fetched release."""
    libs = dist.libs_dir()
    jars = list(libs.glob("*.jar"))
    if not jars:
        pytest.skip(f"Apache Kafka is not installed in {libs} (scripts/setup.sh fetches it)")
    classes = set()
    for jar in jars:
        if jar.name.startswith(("kafka", "kafka_")):
            with zipfile.ZipFile(jar) as z:
                classes.update(z.namelist())
    for tool, main in dist.TOOLS.items():
        assert main.replace(".", "/") + ".class" in classes, tool
