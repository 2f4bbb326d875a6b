"""Restore writes compressed batches (issue 32, goal 2), checked with Apache Kafka's own tools:
`kafka-log-dirs` for the bytes of the restored partition on the broker and `kafka-dump-log`
(DumpLogSegments) for the codec of its batches; the offset mapping stays exact."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.devbroker.dist import classpath, java_executable
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.config import RestoreOptions
from offsetkeeper.restore.mapping import mapping_root_for, partition_mappings, read_mapping
from offsetkeeper.restore.run import run_restore
from tests.restore_support import consume_all, rec, write_backup

pytestmark = [pytest.mark.integration, pytest.mark.spark]

T0 = 1_700_000_000_000
N = 3000


def kafka_class(main: str, *args: str) -> str:
    proc = subprocess.run([java_executable(), "-Xmx256m", "-cp", classpath(), main, *args],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def on_broker(bootstrap: str, topic: str) -> tuple[int, set[str]]:
    """(bytes of partition 0 on the broker, the codecs of its batches)."""
    out = kafka_class("org.apache.kafka.tools.LogDirsCommand", "--describe", "--bootstrap-server",
                      bootstrap, "--topic-list", topic)
    doc = json.loads(next(ln for ln in out.splitlines() if ln.startswith("{")))
    for broker in doc["brokers"]:
        for d in broker["logDirs"]:
            for p in d["partitions"]:
                if p["partition"] == f"{topic}-0":
                    seg = Path(d["logDir"]) / f"{topic}-0" / "00000000000000000000.log"
                    dump = kafka_class("org.apache.kafka.tools.DumpLogSegments", "--files", str(seg))
                    codecs = {ln.split("compresscodec:")[1].split()[0].lower()
                              for ln in dump.splitlines() if "compresscodec:" in ln}
                    return p["size"], codecs
    raise AssertionError(f"{topic}-0 not found: {out[-500:]}")


@pytest.fixture
def compressible(tmp_path, unique):
    """A backup of one partition of compressible records (JSON-like text), offsets with gaps;
    and one whose topic config says lz4."""
    records = [rec(5 + 2 * i, T0 + i, f"key-{i}".encode(),
                   json.dumps({"order": i, "status": "shipped", "note": "x" * 200}).encode())
               for i in range(N)]
    plain, lz4 = unique("src"), unique("srclz4")
    bid = unique("b")
    write_backup(str(tmp_path), bid, {plain: {0: records}, lz4: {0: records}},
                 configs={plain: {"retention.ms": "-1"}, lz4: {"compression.type": "lz4", "retention.ms": "-1"}})
    return str(tmp_path), bid, plain, lz4, records


def restore(dest, bid, bootstrap, spark, topic, target, restore_id, **kw):
    res = run_restore(RestoreOptions(dest, bid, Connection(bootstrap), restore_id=restore_id,
                                     topics=(topic,), rename={topic: target}, **kw), spark=spark)
    assert res.records == N
    table = read_mapping(mapping_root_for(dest, bid, restore_id))
    m = partition_mappings(table)[TopicPartition(topic, 0)]
    got = consume_all(bootstrap, target, [0])[0]
    return m, got


def test_restore_compresses_by_default_and_keeps_the_mapping_exact(compressible, dr_bootstrap,
                                                                   spark, unique):
    dest, bid, plain, lz4, records = compressible
    zstd_t, none_t, lz4_t = unique("dz"), unique("dn"), unique("dl")
    m, got = restore(dest, bid, dr_bootstrap, spark, plain, zstd_t, "rz")
    assert list(m.source_offsets) == [r["offset"] for r in records]
    assert list(m.target_offsets) == [x.offset() for x in got]
    assert [x.value() for x in got] == [r["value"] for r in records]
    restore(dest, bid, dr_bootstrap, spark, plain, none_t, "rn", compression="none")
    restore(dest, bid, dr_bootstrap, spark, lz4, lz4_t, "rl")
    zstd_bytes, zstd_codecs = on_broker(dr_bootstrap, zstd_t)
    none_bytes, none_codecs = on_broker(dr_bootstrap, none_t)
    _, lz4_codecs = on_broker(dr_bootstrap, lz4_t)
    assert zstd_codecs == {"zstd"} and none_codecs == {"none"} and lz4_codecs == {"lz4"}
    assert zstd_bytes * 3 < none_bytes, (zstd_bytes, none_bytes)
