"""Spark's own Kafka connector (``spark-sql-kafka-0-10``), optional: where its jars are.

offsetkeeper reads and writes Kafka with its own Python data source (``offsetkeeper-kafka``) and
never needs the JVM connector. Users who run queries on Spark's connector (``format("kafka")``)
add it to the session: ``get_spark(..., kafka_connector=True)``, the environment variable
``OFFSETKEEPER_SPARK_KAFKA_CONNECTOR=1`` (every session offsetkeeper starts), or by hand
``--conf spark.jars=$(python -c 'from offsetkeeper.spark.connector import jars_conf;
print(jars_conf()["spark.jars"])')``.

The jars come from ``scripts/setup.sh`` (``jvm/spark-kafka/pom.xml``): the connector of the
pinned pyspark's version and what pyspark's ``jars/`` lacks (kafka-clients, commons-pool2, Spark's
Kafka token provider), in ``~/.cache/offsetkeeper/spark-kafka-VERSION/jars``
(``OFFSETKEEPER_SPARK_KAFKA_JARS`` overrides). The connector must be of the same Spark version
as the session: another one fails at the first query with ``NoSuchMethodError``s.
"""

from __future__ import annotations

import os
from pathlib import Path

from offsetkeeper.errors import ConfigError

JARS_ENV = "OFFSETKEEPER_SPARK_KAFKA_JARS"
ENABLE_ENV = "OFFSETKEEPER_SPARK_KAFKA_CONNECTOR"
CONNECTOR = "spark-sql-kafka-0-10_2.13"


def spark_version() -> str:
    import pyspark

    return pyspark.__version__


def jars_dir(version: str | None = None) -> Path:
    """The directory setup.sh copies the connector of Spark `version` (the installed one) to."""
    if os.environ.get(JARS_ENV):
        return Path(os.environ[JARS_ENV])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "offsetkeeper" / f"spark-kafka-{version or spark_version()}" / "jars"


def connector_jars(version: str | None = None) -> list[Path]:
    """The jars to add to a session for Spark's Kafka connector; ConfigError when they are not
    installed, or are of another Spark version than the installed pyspark."""
    version = version or spark_version()
    d = jars_dir(version)
    jars = sorted(d.glob("*.jar")) if d.is_dir() else []
    if not any(j.name == f"{CONNECTOR}-{version}.jar" for j in jars):
        raise ConfigError(
            f"Spark's Kafka connector {version} is not installed in {d}: run scripts/setup.sh "
            f"(it fetches {CONNECTOR}:{version} with Maven), or set {JARS_ENV}")
    return jars


def available() -> bool:
    """Whether the connector of the installed Spark is installed."""
    try:
        connector_jars()
    except ConfigError:
        return False
    return True


def jars_conf(existing: str | None = None) -> dict[str, str]:
    """``{"spark.jars": ...}`` with the connector's jars after the `existing` value's."""
    paths = [str(j) for j in connector_jars()]
    before = [p for p in (existing or "").split(",") if p.strip()]
    return {"spark.jars": ",".join([*before, *(p for p in paths if p not in before)])}


def wanted() -> bool:
    """Whether ``OFFSETKEEPER_SPARK_KAFKA_CONNECTOR`` asks for the connector in every session."""
    return os.environ.get(ENABLE_ENV, "").strip().lower() in ("1", "true", "yes", "on")
