"""Where Spark jobs run: --master / --remote / SPARK_REMOTE / spark.remote in the YAML."""

from __future__ import annotations

import pytest

from offsetkeeper.backup.config import build_backup_config
from offsetkeeper.cli.common import spark_location
from offsetkeeper.config import SparkModel
from offsetkeeper.errors import UsageError
from offsetkeeper.spark.session import is_remote


@pytest.mark.parametrize(("master", "remote", "env", "want"), [
    (None, None, None, None),
    ("local[2]", None, None, "local[2]"),
    (None, "sc://h:15002", None, "sc://h:15002"),
    (None, None, "sc://env:1", "sc://env:1"),
    ("local[2]", None, "sc://env:1", "local[2]"),      # an explicit --master wins over the env
    (None, "sc://flag:2", "sc://env:1", "sc://flag:2"),
])
def test_spark_location(monkeypatch, master, remote, env, want):
    if env is None:
        monkeypatch.delenv("SPARK_REMOTE", raising=False)
    else:
        monkeypatch.setenv("SPARK_REMOTE", env)
    assert spark_location(master, remote) == want


@pytest.mark.parametrize(("master", "remote", "message"), [
    (None, "local[2]", "--remote 'local[2]' is not a Spark Connect URL; expected sc://HOST:PORT"),
    (None, "sc://", "--remote 'sc://' is not a Spark Connect URL"),
    ("local[1]", "sc://h:1", "--master 'local[1]' and --remote 'sc://h:1' both name where Spark runs"),
])
def test_bad_spark_location_is_a_usage_error(monkeypatch, master, remote, message):
    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")):
        spark_location(master, remote)


def test_yaml_remote_wins_over_master(tmp_path):
    f = tmp_path / "backup.yaml"
    f.write_text("source: {bootstrap_servers: 'k:9092'}\ntopics: {include: [t]}\n"
                 "destination: /b\nbackup_id: n\nspark: {master: 'local[2]', remote: 'sc://s:15002'}\n")
    assert build_backup_config(file=f).master == "sc://s:15002"
    assert SparkModel(remote="sc://s:1").location == "sc://s:1"
    assert SparkModel().location == "local[*]"
    with pytest.raises(ValueError, match="not a Spark Connect URL"):
        SparkModel(remote="yarn")
    assert is_remote(" sc://x:1") and not is_remote("local[*]") and not is_remote(None)


def test_restore_file_spark_remote():
    """The restore YAML's spark section takes remote too (it wins over master)."""
    from offsetkeeper.restore.config import SparkModel as RestoreSpark

    assert RestoreSpark(master="local[2]", remote="sc://s:15002").location == "sc://s:15002"
    assert RestoreSpark().location is None
    with pytest.raises(ValueError, match="not a Spark Connect URL"):
        RestoreSpark(remote="local[2]")
