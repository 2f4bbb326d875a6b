"""commitToGroup of the offsetkeeper-kafka streaming source: a failing commit is retried at
later triggers and, after `commitToGroupMaxFailures` failures in a row, fails the query
instead of being retried forever unseen (no broker, no Spark session: the commit path and the
clock are replaced)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from offsetkeeper.errors import GroupActiveError, KafkaOperationError, UsageError
from offsetkeeper.spark.kafka import group as group_mod
from offsetkeeper.spark.kafka import stream as stream_mod
from offsetkeeper.spark.kafka.group import GroupCommitError
from offsetkeeper.spark.kafka.options import parse_options
from offsetkeeper.spark.kafka.stream import GROUP_RETRY_S, KafkaStreamReader

OPTS = {"kafka.bootstrap.servers": "x:9092", "subscribe": "orders", "commitToGroup": "etl"}


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def env(monkeypatch):
    """A reader whose commits raise what the test queues in `errors` (None: success)."""
    state = SimpleNamespace(errors=[], made=[], clock=Clock())

    def fake(admin, group, offsets):
        state.made.append(dict(offsets))
        err = state.errors.pop(0) if state.errors else None
        if err is not None:
            raise err

    monkeypatch.setattr(group_mod, "commit_positions", fake)
    monkeypatch.setattr(KafkaStreamReader, "_admin_client", lambda self: object())
    monkeypatch.setattr(stream_mod, "time", state.clock)
    return state


def reader(**extra: str) -> KafkaStreamReader:
    return KafkaStreamReader(parse_options({**OPTS, **extra}, streaming=True))


def commit(r: KafkaStreamReader, env, offset: int) -> None:
    env.clock.now += GROUP_RETRY_S + 1  # the next trigger after the retry wait
    r.commit({"orders": {"0": offset}})


DOWN = KafkaOperationError("commit offsets: the cluster is unreachable", code="_TRANSPORT",
                           retriable=True)


@pytest.mark.parametrize("max_failures, failures, fails_at", [
    (None, 3, 3),      # default: the third failure in a row fails the query
    ("1", 1, 1),
    ("5", 4, None),    # four failures, then a success: the query lives on
    ("0", 10, None),   # 0: never fail the query (log only)
])
def test_the_query_fails_after_max_failures_in_a_row(env, max_failures, failures, fails_at):
    """Invariant: failed commits are counted in a row; the query fails with GroupCommitError
    (naming the group and the last error, caused by it) on failure number
    commitToGroupMaxFailures, and never with 0."""
    r = reader(**({"commitToGroupMaxFailures": max_failures} if max_failures else {}))
    env.errors = [DOWN] * failures
    for n in range(1, failures + 2):
        if fails_at == n:
            with pytest.raises(GroupCommitError) as err:
                commit(r, env, n)
            assert "commitToGroup etl" in err.value.message
            assert "cluster is unreachable" in err.value.message
            assert err.value.__cause__ is DOWN and err.value.group == "etl"
            return
        commit(r, env, n)
    assert fails_at is None
    assert r._group_committed == {("orders", 0): failures + 1}


def test_a_success_resets_the_count(env):
    """Invariant: only failures in a row count: one success in between starts over."""
    r = reader()
    env.errors = [DOWN, DOWN, None, DOWN, DOWN, None]
    for n in range(6):
        commit(r, env, n)
    assert r._group_failures == 0 and r._group_committed == {("orders", 0): 5}


def test_no_retry_before_the_wait_and_an_active_group_counts_too(env):
    """Invariant: after a failure the reader does not ask again before GROUP_RETRY_S (an idle
    query calls latestOffset every few ms); a refused commit (the group has members) counts as
    a failure like an unreachable cluster."""
    r = reader(commitToGroupMaxFailures="2")
    env.errors = [GroupActiveError("group etl has 1 active member", group="etl")] * 2
    commit(r, env, 1)
    r.commit({"orders": {"0": 2}})          # same trigger window: not sent
    assert len(env.made) == 1
    with pytest.raises(GroupCommitError, match="active member"):
        commit(r, env, 2)


@pytest.mark.parametrize("value", ["-1", "x"])
def test_the_option_is_validated(value):
    with pytest.raises(UsageError, match="commitToGroupMaxFailures"):
        parse_options({**OPTS, "commitToGroupMaxFailures": value}, streaming=True)
