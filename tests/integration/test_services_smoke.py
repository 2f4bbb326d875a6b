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


@pytest.mark.integration
def test_postgres_survives_another_pytest_run_remoding_base_temp(postgres_url, postgres_dir,
                                                                  tmp_path_factory):
    """The suite's PostgreSQL owns a directory outside pytest's base temp: another pytest run
    on the machine re-modes /tmp/pytest-of-<user> to 0700, which must not kill the server (it
    runs as another user, so it could no longer reach a data directory under there)."""
    import getpass
    import tempfile
    from pathlib import Path

    import psycopg

    base = tmp_path_factory.getbasetemp().resolve()
    pytest_root = Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"
    for d in (base, pytest_root):
        assert not postgres_dir.resolve().is_relative_to(d.resolve())
    before = base.stat().st_mode
    base.chmod(0o700)  # what another pytest run does to the directory above its base temp
    try:
        with psycopg.connect(postgres_url) as conn:
            conn.execute("create table if not exists remode_probe (x int)")
            conn.execute("insert into remode_probe values (1)")
            assert conn.execute("select count(*) from remode_probe").fetchone()[0] >= 1
    finally:
        base.chmod(before)
