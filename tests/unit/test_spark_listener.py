"""The commitToGroup listener for Spark's JVM Kafka source: which progress it commits, and
what it does with a failure (no broker, no Spark session: the commit path is replaced)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.errors import GroupActiveError, UsageError
from offsetkeeper.models import TopicPartition as TP
from offsetkeeper.spark.kafka import group as group_mod
from offsetkeeper.spark.kafka.listener import (
    GroupCommitError,
    GroupCommitListener,
    kafka_end_offsets,
)


def src(description: str, end: str | None):
    return SimpleNamespace(description=description, endOffset=end)


@pytest.mark.parametrize(("sources", "expected"), [
    ([src("KafkaV2[Subscribe[o]]", '{"o":{"0":5,"1":7}}')], {TP("o", 0): 5, TP("o", 1): 7}),
    ([src("KafkaV2[Subscribe[a]]", '{"a":{"0":1}}'), src("KafkaV2[Subscribe[b]]", '{"b":{"2":3}}')],
     {TP("a", 0): 1, TP("b", 2): 3}),
    ([src("RateStreamV2[rowsPerSecond=1]", '{"x":{"0":1}}')], {}),  # not a Kafka source
    ([src("KafkaV2[Subscribe[o]]", None)], {}),  # no batch yet
    ([src("KafkaSourceV1[Subscribe[o]]", '{"o":{"0":2}}')], {TP("o", 0): 2}),
])
def test_kafka_end_offsets_of_a_progress_event(sources, expected):
    assert kafka_end_offsets(sources) == expected


def event(query_id: str, batch: int, end: str):
    return SimpleNamespace(progress=SimpleNamespace(
        id=query_id, batchId=batch, sources=[src("KafkaV2[Subscribe[o]]", end)]))


@pytest.fixture
def calls(monkeypatch):
    """Replaces the executor path; a call raises what the test puts in `fail`."""
    made: list = []
    state = {"fail": None}

    def fake(admin, group, offsets):
        made.append((group, dict(offsets)))
        if state["fail"] is not None:
            raise state["fail"]

    monkeypatch.setattr(group_mod, "commit_positions", fake)
    monkeypatch.setattr(GroupCommitListener, "_admin_client", lambda self: object())
    return SimpleNamespace(made=made, state=state)


def listener(**kw) -> GroupCommitListener:
    return GroupCommitListener("g", Connection("x:9092"), query_id="q1", **kw)


def test_commits_each_new_end_once_and_only_for_its_query(calls):
    """Invariant: a batch's end offsets are committed once; idle progress (the same ends) and
    other queries' events commit nothing."""
    lst = listener()
    lst.onQueryProgress(event("q1", 0, '{"o":{"0":5}}'))
    lst.onQueryProgress(event("q1", 0, '{"o":{"0":5}}'))  # an idle trigger repeats the ends
    lst.onQueryProgress(event("q2", 1, '{"o":{"0":9}}'))  # another query
    lst.onQueryProgress(event("q1", 1, '{"o":{"0":8}}'))
    assert calls.made == [("g", {("o", 0): 5}), ("g", {("o", 0): 8})]
    assert lst.committed == {TP("o", 0): 8} and lst.committed_batch == 1
    lst.check()


def test_a_failure_stops_committing_and_is_raised(calls):
    """Invariant: with on_failure=stop a failed commit is not retried at the next batch (no
    loop); check() raises it with the cause."""
    lst = listener()
    calls.state["fail"] = GroupActiveError("group g has 1 active member", group="g")
    lst.onQueryProgress(event("q1", 3, '{"o":{"0":5}}'))
    calls.state["fail"] = None
    lst.onQueryProgress(event("q1", 4, '{"o":{"0":9}}'))
    assert len(calls.made) == 1
    with pytest.raises(GroupCommitError, match="batch 3 was not committed") as exc:
        lst.check()
    assert isinstance(exc.value.__cause__, GroupActiveError)


def test_continue_tries_again_at_the_next_batch(calls):
    lst = listener(on_failure="continue")
    calls.state["fail"] = GroupActiveError("active", group="g")
    lst.onQueryProgress(event("q1", 3, '{"o":{"0":5}}'))
    calls.state["fail"] = None
    lst.onQueryProgress(event("q1", 4, '{"o":{"0":9}}'))
    assert lst.committed == {TP("o", 0): 9} and len(calls.made) == 2


def test_bad_arguments_are_usage_errors():
    with pytest.raises(UsageError, match="on_failure"):
        listener(on_failure="retry")
    with pytest.raises(UsageError, match="group"):
        GroupCommitListener("", Connection("x:9092"), query_id="q")
