"""One time format in every id offsetkeeper makes (snapshots, restores, streaming resets), and
the ids older releases wrote stay usable."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.restore.paths import RESTORE_ID_RE
from offsetkeeper.restore.run import new_restore_id
from offsetkeeper.snapshots.model import new_snapshot_id
from offsetkeeper.streaming.store import CheckpointStore, ResetRecord
from offsetkeeper.times import id_stamp

STAMP = r"\d{8}T\d{6}\.\d{3}Z"


def test_the_stamp_is_utc_to_the_millisecond():
    when = datetime(2026, 11, 21, 19, 45, 1, 123999, tzinfo=UTC)
    assert id_stamp(when) == "20261121T194501.123Z"
    assert id_stamp(when.replace(tzinfo=None)) == "20261121T194501.123Z"  # naive: UTC
    assert id_stamp(when.astimezone(timezone(timedelta(hours=-5)))) == "20261121T194501.123Z"
    assert re.fullmatch(STAMP, id_stamp())


@given(st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31),
                    timezones=st.just(UTC)),
       st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31),
                    timezones=st.just(UTC)))
def test_stamps_sort_by_time_as_text(a, b):
    """Invariant: text order of stamps is time order to the millisecond ('latest' is the last
    name in sorted order for every kind of id)."""
    def ms(t: datetime) -> datetime:
        return t.replace(microsecond=t.microsecond // 1000 * 1000)

    if ms(a) < ms(b):
        assert id_stamp(a) < id_stamp(b)
    elif ms(a) == ms(b):
        assert id_stamp(a) == id_stamp(b)


def test_every_kind_of_id_carries_the_one_stamp():
    when = datetime(2026, 11, 21, 19, 45, 1, 123000, tzinfo=UTC)
    assert new_snapshot_id(when, suffix="00ff") == "snap-20261121T194501.123Z-00ff"
    assert re.fullmatch(rf"restore-{STAMP}", new_restore_id())
    assert RESTORE_ID_RE.fullmatch(new_restore_id())
    assert re.fullmatch(rf"{STAMP}-[0-9a-f]{{6}}", ResetRecord.new("earliest", 3).reset_id)


def test_streaming_reset_records_with_old_ids_still_load(tmp_path):
    """Invariant: a checkpoint holding reset records of an older release (ids like
    20261121T194501Z-1a2b3c) still lists and rolls back by id, and 'latest' is the newest."""
    store = CheckpointStore(str(tmp_path / "ck"))
    old = ResetRecord("20261121T194501Z-1a2b3c", "2026-11-21T19:45:01.000Z", "earliest", 3)
    new = ResetRecord.new("latest", 4)
    store.save_record(old)
    store.save_record(new)
    assert store.records() == [old.reset_id, new.reset_id]
    assert store.load_record(old.reset_id) == old
    assert store.load_record("latest") == new
