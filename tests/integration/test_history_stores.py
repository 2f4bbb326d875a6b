"""The HistoryStore contract on real PostgreSQL and Redis servers, and store outages."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

import pytest

from offsetkeeper.history.store import SCHEMA_VERSION, StoreUnavailable, open_store
from tests.unit.test_history_store import check_contract, check_prune, check_recent_many


def _pg_db(postgres_url: str, name: str) -> str:
    """A fresh database per test on the session's server."""
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{name}"')
        c.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(postgres_url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def test_postgres_contract(postgres_url, unique):
    with open_store(_pg_db(postgres_url, unique("h").replace("-", "_"))) as s:
        check_contract(s)
    with open_store(_pg_db(postgres_url, unique("p").replace("-", "_"))) as s:
        check_prune(s)


def test_postgres_keeps_connect_positions(postgres_url, unique):
    """Invariant: Kafka Connect source positions (schema 5) round-trip on PostgreSQL as on
    SQLite: exact maps, idempotent writes, time ranges, retention."""
    from tests.unit.test_connect_positions import check_positions

    with open_store(_pg_db(postgres_url, unique("cp").replace("-", "_"))) as s:
        check_positions(s)


def test_postgres_recent_many(postgres_url, unique):
    with open_store(_pg_db(postgres_url, unique("rm").replace("-", "_"))) as s:
        check_recent_many(s)


def test_redis_recent_many(redis_url, unique):
    with open_store(f"{redis_url}?prefix={unique('rm')}") as s:
        check_recent_many(s)


def test_postgres_two_openers_migrate_once(postgres_url, unique):
    """Invariant: several samplers starting together on one database end at one schema version."""
    url = _pg_db(postgres_url, unique("m").replace("-", "_"))
    a, b = open_store(url), open_store(url)
    assert a.schema_version() == b.schema_version() == SCHEMA_VERSION
    a.close()
    b.close()


def test_redis_contract(redis_url, unique):
    with open_store(f"{redis_url}?prefix={unique('ok')}") as s:
        check_contract(s)
    with open_store(f"{redis_url}?prefix={unique('ok')}") as s:
        check_prune(s)


def test_redis_prefix_isolates_stores(redis_url, unique):
    from tests.unit.test_history_store import cycle_samples

    a = open_store(f"{redis_url}?prefix={unique('a')}")
    b = open_store(f"{redis_url}?prefix={unique('b')}")
    a.write(cycle_samples(1000, "g", 1, 2))
    assert b.groups() == [] and [g.group for g in a.groups()] == ["g"]


@pytest.mark.parametrize("url", ["redis://127.0.0.1:1/0", "postgresql://ops:pw@127.0.0.1:1/h"])
def test_unreachable_store_is_named_without_its_password(url):
    with pytest.raises(StoreUnavailable) as exc:
        open_store(url)
    assert "127.0.0.1:1" in str(exc.value) and ":pw@" not in str(exc.value)


@pytest.mark.integration
@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_record_and_read_back_through_the_cli(backend, bootstrap, postgres_url, redis_url, unique,
                                              capsys):
    """The same commands work on the shared stores: record twice, show, at, status."""
    from tests.cli import run_cli
    from tests.kafkatools import commit, create_topic, produce_n

    url = (_pg_db(postgres_url, unique("c").replace("-", "_")) if backend == "postgres"
           else f"{redis_url}?prefix={unique('c')}")
    topic, group = unique("t"), unique("g")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    for offset in (3, 6):
        commit(bootstrap, group, {(topic, 0): offset, (topic, 1): offset})
        r = run_cli(capsys, "history", "record", "-g", group, "--once", "--store", url, "-b", bootstrap)
        assert r.code == 0, r.err
    r = run_cli(capsys, "history", "show", group, "--store", url, "-o", "json")
    assert [(x["partition"], x["committed"], x["lag"]) for x in r.json()] == \
        [(0, 3, 7), (1, 3, 7), (0, 6, 4), (1, 6, 4)]
    r = run_cli(capsys, "history", "at", group, "--time", "now", "--store", url, "-o", "json")
    assert {x["committed"] for x in r.json()} == {6}
    r = run_cli(capsys, "lag", "status", group, "--store", url, "--window", "2", "-o", "json")
    assert r.code == 0 and r.json()[0]["status"] == "OK"
