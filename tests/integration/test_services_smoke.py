"""The real servers the history, consumer and ZooKeeper tests use can be started and answer."""

import pytest


@pytest.mark.integration
def test_postgres_answers(postgres_url):
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        assert conn.execute("select 1 + 1").fetchone() == (2,)


@pytest.mark.integration
def test_redis_answers(redis_url):
    import redis

    r = redis.Redis.from_url(redis_url)
    r.set("k", b"v")
    assert r.get("k") == b"v"


@pytest.mark.integration
def test_zookeeper_answers(zookeeper_hosts):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=zookeeper_hosts)
    zk.start(timeout=30)
    try:
        zk.ensure_path("/consumers/g/offsets/t")
        zk.create("/consumers/g/offsets/t/0", b"42")
        assert zk.get("/consumers/g/offsets/t/0")[0] == b"42"
    finally:
        zk.stop()
