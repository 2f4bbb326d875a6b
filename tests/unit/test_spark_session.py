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
