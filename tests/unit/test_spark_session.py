"""Spark settings for offsetkeeper's local jobs (pure logic; no Spark started)."""

from __future__ import annotations

import os

import pytest

from offsetkeeper.spark.session import local_cores, small_local_conf


@pytest.mark.parametrize(("master", "cores"), [
    ("local", 1), ("local[3]", 3), ("local[2, 4]", 2), ("local[*]", os.cpu_count() or 1),
    ("spark://host:7077", None), ("yarn", None), ("local-cluster[2,1,1024]", None),
])
def test_local_cores(master, cores):
    assert local_cores(master) == cores


def test_small_local_conf_has_one_shuffle_partition_per_core_and_stays_on_loopback():
    conf = small_local_conf(2)
    assert conf["spark.sql.shuffle.partitions"] == "2"
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert small_local_conf(64)["spark.sql.shuffle.partitions"] == "8"


def test_importing_the_package_does_not_load_pydantic_for_spark_workers():
    """Spark's Python workers import offsetkeeper for every job: the package's public names are
    loaded on first use, so the restore and backup tasks do not pay for pydantic and YAML."""
    import subprocess
    import sys

    code = ("import sys, offsetkeeper.restore.produce, offsetkeeper.backup.checksum; "
            "print('pydantic' in sys.modules, 'yaml' in sys.modules); "
            "from offsetkeeper import Connection, TopicPartition; print(Connection.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ}).stdout.split()
    assert out == ["False", "False", "Connection"]


def test_local_session_java_options_put_the_users_last(monkeypatch, tmp_path):
    """The user's spark.driver.extraJavaOptions come after offsetkeeper's quick-start options
    (the JVM takes the last of repeated flags), and an archive the user names is theirs."""
    from offsetkeeper.spark.session import QUICK_START_JAVA_OPTIONS, java_options

    monkeypatch.setenv("OFFSETKEEPER_SPARK_CDS", "off")
    assert java_options(None) == QUICK_START_JAVA_OPTIONS
    assert java_options(" -XX:TieredStopAtLevel=4 ").endswith("-XX:TieredStopAtLevel=4")
    monkeypatch.setenv("OFFSETKEEPER_SPARK_CDS", str(tmp_path))
    assert "SharedArchiveFile=/x.jsa" in java_options("-XX:SharedArchiveFile=/x.jsa")
    assert "ArchiveClassesAtExit" not in java_options("-XX:SharedArchiveFile=/x.jsa")


def test_class_data_sharing_dumps_once_then_uses_only_a_complete_archive(monkeypatch, tmp_path):
    """One session dumps the archive (the `.dumping` marker keeps others from dumping too); a
    dump whose header is not written yet (a killed JVM: zeros at the start) is never used — a
    truncated archive would crash the JVM — and a complete one is renamed into place and used."""
    from offsetkeeper.spark import cds

    monkeypatch.setenv(cds.ENV, str(tmp_path))
    first = cds.java_options("-XX:TieredStopAtLevel=1", "")
    assert "-XX:ArchiveClassesAtExit=" in first and "-Xlog:cds=off" in first
    assert cds.java_options("-XX:TieredStopAtLevel=1", "") == ""  # another session: no 2nd dump
    tmp = first.split("-XX:ArchiveClassesAtExit=")[1].split()[0]
    with open(tmp, "wb") as f:  # header not written yet
        f.write(b"\0" * 64)
    assert cds.java_options("-XX:TieredStopAtLevel=1", "") == ""
    with open(tmp, "wb") as f:
        f.write(cds.MAGIC + b"\0" * 60)
    used = cds.java_options("-XX:TieredStopAtLevel=1", "")
    key = cds.archive_key("-XX:TieredStopAtLevel=1")
    assert used.startswith(f"-XX:SharedArchiveFile={tmp_path}/spark-{key}.jsa -Xshare:auto")
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"spark-{key}.jsa"]
    monkeypatch.setenv(cds.ENV, "off")
    assert cds.java_options("-XX:TieredStopAtLevel=1", "") == ""
