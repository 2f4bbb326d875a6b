"""When a data command attaches to the warm Spark server, and the settings that choose it
(offsetkeeper.spark.warm; the server's life: tests/integration/test_spark_warm.py)."""

from __future__ import annotations

import os

import pytest

from offsetkeeper.backup.config import build_backup_config
from offsetkeeper.config.file import ConfigFile
from offsetkeeper.errors import ConfigError
from offsetkeeper.spark import warm
from offsetkeeper.storage import absolute


@pytest.mark.parametrize(("value", "on"), [(None, True), ("1", True), ("yes", True),
                                           ("0", False), ("false", False), (" OFF ", False)])
def test_enabled_by_the_variable(monkeypatch, value, on):
    if value is None:
        monkeypatch.delenv(warm.WARM_ENV, raising=False)
    else:
        monkeypatch.setenv(warm.WARM_ENV, value)
    assert warm.enabled() is on


def test_idle_timeout(monkeypatch):
    monkeypatch.delenv(warm.IDLE_ENV, raising=False)
    assert warm.idle_timeout() == 1800
    monkeypatch.setenv(warm.IDLE_ENV, "2.5")
    assert warm.idle_timeout() == 2.5
    for bad in ("soon", "-1"):
        monkeypatch.setenv(warm.IDLE_ENV, bad)
        with pytest.raises(ConfigError, match=f"{warm.IDLE_ENV}='{bad}' is not a number"):
            warm.idle_timeout()


def test_settings_of_its_own_keep_spark_in_process():
    """A command with Spark settings (or the Kafka connector) cannot use the warm server,
    which was started with its own; with none it can."""
    assert warm.why_not({}, False) is None
    assert "Spark settings" in warm.why_not({"spark.driver.memory": "4g"}, False)
    assert "Kafka connector" in warm.why_not({}, True)


def test_config_master_only_when_named_and_the_warm_switch():
    """The main config's default master (local[*]) does not count as a choice (the warm server
    and SPARK_REMOTE stay possible); a master it names does; spark.warm reaches the run."""
    args = {"bootstrap_server": "k:9092", "include": ("t",), "destination": "/b", "backup_id": "x"}
    assert build_backup_config(config=ConfigFile(), **args).master is None
    assert build_backup_config(config=ConfigFile(), **args).spark_warm is True
    named = ConfigFile.model_validate({"spark": {"master": "local[*]", "warm": False}})
    cfg = build_backup_config(config=named, **args)
    assert cfg.master == "local[*]" and cfg.spark_warm is False


def test_local_paths_made_absolute(tmp_path, monkeypatch):
    """Spark tasks on the warm server run in its directory: a relative path must not follow."""
    monkeypatch.chdir(tmp_path)
    assert absolute("backups") == os.path.join(str(tmp_path), "backups")
    assert absolute("s3://bucket/backups") == "s3://bucket/backups"
    assert absolute("/abs/path") == "/abs/path"
