"""Snapshot serialisation and ids (pure, no broker)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.models import CommittedOffset, TopicPartition, Watermarks
from offsetkeeper.snapshots.model import (
    SCHEMA_VERSION,
    GroupSnapshot,
    Snapshot,
    SnapshotFormatError,
    format_time,
    new_snapshot_id,
)

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)
tps = st.builds(TopicPartition, names, st.integers(0, 1000))
offsets = st.integers(0, 2**63 - 1)
groups = st.dictionaries(
    names,
    st.builds(GroupSnapshot, st.sampled_from(["empty", "stable", "dead", "unknown"]),
              st.dictionaries(tps, st.builds(CommittedOffset, offsets, st.text(max_size=20)),
                              max_size=5)),
    max_size=4,
)
snapshots = st.builds(
    Snapshot,
    id=st.just("snap-20261121T194501.123Z-1a2b"),
    created_at=st.just("2026-11-21T19:45:01.123Z"),
    cluster_id=st.text(max_size=22),
    bootstrap_servers=st.text(max_size=30),
    description=st.text(max_size=40),
    groups=groups,
    partitions=st.dictionaries(tps, st.builds(Watermarks, offsets, offsets), max_size=6),
)


def sample() -> Snapshot:
    tp = TopicPartition("orders", 0)
    return Snapshot("snap-20261121T194501.123Z-1a2b", "2026-11-21T19:45:01.123Z", "clu",
                    "localhost:9092", "before migration",
                    {"payments": GroupSnapshot("empty", {tp: CommittedOffset(42, "m")}),
                     "idle": GroupSnapshot("dead", {})},
                    {tp: Watermarks(3, 50)})


@given(snapshots)
def test_json_round_trip(snap):
    assert Snapshot.from_json(snap.to_json()) == snap


def test_document_shape_and_schema_version():
    doc = json.loads(sample().to_json())
    assert doc["schema_version"] == SCHEMA_VERSION
    assert doc["groups"]["payments"]["offsets"] == [
        {"topic": "orders", "partition": 0, "offset": 42, "metadata": "m"}]
    assert doc["partitions"] == [{"topic": "orders", "partition": 0, "log_start": 3, "log_end": 50}]


def test_rows_include_lag_and_groups_without_offsets():
    rows = sample().rows()
    assert rows[0]["group"] == "idle" and rows[0]["offset"] is None
    assert rows[1] == {"group": "payments", "state": "empty", "topic": "orders", "partition": 0,
                       "offset": 42, "metadata": "m", "log_start": 3, "log_end": 50, "lag": 8}


def test_offsets_and_summary():
    snap = sample()
    assert snap.offsets() == {"payments": {TopicPartition("orders", 0): 42}}
    s = snap.summary()
    assert (s.id, s.groups, s.partitions, s.description) == (snap.id, 2, 1, "before migration")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.pop("schema_version"), "schema_version"),
        (lambda d: d.update(schema_version=99), "newer"),
        (lambda d: d.pop("id"), "'id' is missing"),
        (lambda d: d["groups"]["payments"]["offsets"][0].update(offset="x"), "'offset' must be an integer"),
        (lambda d: d["groups"]["payments"]["offsets"][0].update(partition=True), "'partition'"),
        (lambda d: d.update(groups=[]), "'groups' must be an object"),
        (lambda d: d["partitions"][0].pop("log_end"), "'log_end' is missing"),
        (lambda d: d["groups"].update(payments=7), "expected an object"),
    ],
)
def test_malformed_documents_are_rejected_with_a_reason(mutate, message):
    doc = json.loads(sample().to_json())
    mutate(doc)
    with pytest.raises(SnapshotFormatError, match=message):
        Snapshot.from_dict(doc)


@pytest.mark.parametrize("text", ["", "{", "[]", "null", b"\xff\xfe"])
def test_non_json_is_rejected(text):
    with pytest.raises(SnapshotFormatError):
        Snapshot.from_json(text)


def test_id_format():
    when = datetime(2026, 11, 21, 19, 45, 1, 123456, tzinfo=UTC)
    sid = new_snapshot_id(when, suffix="00ff")
    assert sid == "snap-20261121T194501.123Z-00ff"
    assert re.fullmatch(r"snap-\d{8}T\d{6}\.\d{3}Z-[0-9a-f]{4}", new_snapshot_id())
    assert format_time(when) == "2026-11-21T19:45:01.123Z"


moments = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2999, 12, 31),
                       timezones=st.just(UTC))


def _ms(t: datetime) -> datetime:
    return t.replace(microsecond=t.microsecond // 1000 * 1000)


@given(moments, moments)
def test_ids_and_times_sort_by_time(a, b):
    """Text order of ids (and of created_at) is time order, to the millisecond."""
    if _ms(a) < _ms(b):
        assert new_snapshot_id(a) < new_snapshot_id(b)
        assert format_time(a) < format_time(b)


def test_ids_of_other_zones_are_utc():
    east = datetime(2026, 1, 1, 1, 0, tzinfo=UTC).astimezone(timezone(timedelta(hours=5)))
    assert new_snapshot_id(east, suffix="abcd") == "snap-20260101T010000.000Z-abcd"
