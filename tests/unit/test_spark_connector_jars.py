"""Where Spark's Kafka connector's jars are (offsetkeeper.spark.connector): no Spark started."""

from __future__ import annotations

import pytest

from offsetkeeper.errors import ConfigError
from offsetkeeper.spark import connector


def test_missing_connector_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv(connector.JARS_ENV, str(tmp_path / "none"))
    assert not connector.available()
    with pytest.raises(ConfigError, match=r"scripts/setup\.sh"):
        connector.connector_jars("4.2.0")


def test_a_connector_of_another_spark_version_is_refused(tmp_path, monkeypatch):
    """Invariant: only the connector of the session's Spark version is used (another one fails
    at the first query with NoSuchMethodError)."""
    (tmp_path / "spark-sql-kafka-0-10_2.13-4.3.0.jar").write_bytes(b"")
    monkeypatch.setenv(connector.JARS_ENV, str(tmp_path))
    with pytest.raises(ConfigError, match="4.2.0 is not installed"):
        connector.connector_jars("4.2.0")


def test_jars_conf_appends_to_the_users_jars(tmp_path, monkeypatch):
    for name in ("spark-sql-kafka-0-10_2.13-4.2.0.jar", "kafka-clients-3.9.2.jar"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.setenv(connector.JARS_ENV, str(tmp_path))
    monkeypatch.setattr(connector, "spark_version", lambda: "4.2.0")
    jars = connector.jars_conf("/opt/mine.jar")["spark.jars"].split(",")
    assert jars == ["/opt/mine.jar", str(tmp_path / "kafka-clients-3.9.2.jar"),
                    str(tmp_path / "spark-sql-kafka-0-10_2.13-4.2.0.jar")]


@pytest.mark.parametrize(("value", "wanted"), [("1", True), ("true", True), ("", False), ("0", False)])
def test_environment_switch(monkeypatch, value, wanted):
    monkeypatch.setenv(connector.ENABLE_ENV, value)
    assert connector.wanted() is wanted


def test_cli_prints_the_jars_or_says_how_to_install_them(tmp_path, monkeypatch, capsys):
    from cli import run_cli

    monkeypatch.setenv(connector.JARS_ENV, str(tmp_path))
    monkeypatch.setattr(connector, "spark_version", lambda: "4.2.0")
    r = run_cli(capsys, "streaming", "connector-jars")
    assert r.code == 2 and "scripts/setup.sh" in r.err
    (tmp_path / "spark-sql-kafka-0-10_2.13-4.2.0.jar").write_bytes(b"")
    r = run_cli(capsys, "streaming", "connector-jars")
    assert r.code == 0 and r.out.strip() == str(tmp_path / "spark-sql-kafka-0-10_2.13-4.2.0.jar")
