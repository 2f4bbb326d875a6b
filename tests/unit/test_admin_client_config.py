"""The librdkafka settings the admin facade gives its client (no broker: the client is caught
as it is made)."""

from __future__ import annotations

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.kafka import admin as admin_mod


class _Made(Exception):
    pass


def _conf_of(monkeypatch, conn: Connection) -> dict:
    seen: dict = {}

    def catch(conf, *a, **kw):
        seen.update(conf)
        raise _Made

    monkeypatch.setattr(admin_mod.clients, "admin_client", catch)
    with pytest.raises(_Made):
        admin_mod.LibrdkafkaAdmin(conn).connect()
    return seen


def test_the_first_request_is_not_held_back_by_librdkafkas_reconnect_suppression(monkeypatch):
    """Invariant (issue 32): the admin client reconnects after 20 ms, not librdkafka's 100 ms
    default. librdkafka drops the bootstrap connection once the first metadata names the
    brokers and connects again only after half that backoff: with the default, ~50 ms of every
    command's first request (first metadata measured 56 ms -> 15 ms); the backoff still grows
    to 1 s for a broker that stays down."""
    conf = _conf_of(monkeypatch, Connection("127.0.0.1:9092"))
    assert conf["reconnect.backoff.ms"] == "20"
    assert conf["reconnect.backoff.max.ms"] == "1000"


def test_a_users_reconnect_backoff_wins(monkeypatch):
    """Invariant: a reconnect backoff the user configured is passed on unchanged."""
    conf = _conf_of(monkeypatch, Connection("127.0.0.1:9092",
                                            {"reconnect.backoff.ms": "250"}))
    assert conf["reconnect.backoff.ms"] == "250"
