"""Restore against a real broker with real local Spark: order, headers, mapping, resume."""

from __future__ import annotations

import pytest

from offsetkeeper.config import Connection
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.config import RestoreOptions
from offsetkeeper.restore.mapping import mapping_root_for, partition_mappings, read_mapping
from offsetkeeper.restore.resume import RESTORE_HEADERS
from offsetkeeper.restore.run import run_restore
from offsetkeeper.restore.translate import offsets_from_mapping
from tests.restore_support import consume_all, rec, write_backup

pytestmark = [pytest.mark.integration, pytest.mark.spark]

T0 = 1_700_000_000_000


def crashed(dest: str, bid: str, restore_id: str) -> None:
    """Make a finished restore look interrupted (as a crash leaves it: status running)."""
    from offsetkeeper.restore.state import load_state, save_state

    st = load_state(dest, bid, restore_id)
    st.status = "running"
    save_state(dest, bid, st)


def gappy(p: int, n: int) -> list[dict]:
    """Records with offset gaps (like a compacted / transactional source)."""
    out, off = [], 10
    for i in range(n):
        out.append(rec(off, T0 + i * 10, f"k{p}-{i}".encode(), f"v{p}-{i}".encode() * 3,
                       [("h", f"{i}".encode())] if i % 2 else None))
        off += 1 + (i % 3)
    return out


@pytest.fixture
def backup(tmp_path, unique):
    topic = unique("src")
    data = {topic: {0: gappy(0, 40), 1: gappy(1, 25)}}
    bid = unique("b")
    write_backup(str(tmp_path), bid, data, configs={topic: {"retention.ms": "-1"}},
                 groups={"g-mid": {(topic, 0): 30, (topic, 1): 10}, "g-end": {(topic, 0): 999}})
    return str(tmp_path), bid, topic, data


@pytest.mark.spark_oldest
def test_restore_writes_source_order_with_headers_and_exact_mapping(backup, dr_bootstrap, spark, unique):
    dest, bid, topic, data = backup
    target = unique("dst")
    res = run_restore(RestoreOptions(dest, bid, Connection(dr_bootstrap), restore_id="r1",
                                     rename={topic: target}, chunk_records=7), spark=spark)
    assert res.records == 65
    got = consume_all(dr_bootstrap, target, [0, 1])
    for p in (0, 1):
        src = data[topic][p]
        assert [m.value() for m in got[p]] == [r["value"] for r in src]
        for m, r in zip(got[p], src, strict=True):
            h = dict(m.headers())
            assert h["x-kafka-backup-offset"] == str(r["offset"]).encode()
            assert h["x-kafka-backup-partition"] == str(p).encode()
            assert h["x-kafka-backup-topic"] == topic.encode()
            assert h["x-kafka-backup-timestamp"] == str(r["timestamp"]).encode()
            assert m.timestamp()[1] == r["timestamp"]
            assert [x for x in m.headers() if x[0] not in RESTORE_HEADERS] == \
                [(x["key"], x["value"]) for x in r["headers"]]
    table = read_mapping(mapping_root_for(dest, bid, "r1"))
    maps = partition_mappings(table)
    for p in (0, 1):
        m = maps[TopicPartition(topic, p)]
        assert list(m.source_offsets) == [r["offset"] for r in data[topic][p]]
        assert list(m.target_offsets) == [x.offset() for x in got[p]]
    fo = offsets_from_mapping(dest, bid, "r1", None)
    # g-mid committed 30 on p0: the first restored source offset >= 30
    src0 = [r["offset"] for r in data[topic][0]]
    first = next(i for i, o in enumerate(src0) if o >= 30)
    assert fo.offsets["g-mid"][TopicPartition(target, 0)] == got[0][first].offset()
    assert fo.offsets["g-end"][TopicPartition(target, 0)] == got[0][-1].offset() + 1


def test_no_offset_headers_restores_byte_identical_records(backup, dr_bootstrap, spark, unique):
    dest, bid, topic, data = backup
    target = unique("dst")
    run_restore(RestoreOptions(dest, bid, Connection(dr_bootstrap), restore_id="plain",
                               rename={topic: target}, offset_headers=False), spark=spark)
    got = consume_all(dr_bootstrap, target, [0, 1])
    for p in (0, 1):
        assert [(m.key(), m.value(), m.headers() or []) for m in got[p]] == \
            [(r["key"], r["value"], [(h["key"], h["value"]) for h in r["headers"]]) for r in data[topic][p]]


def test_rerun_after_lost_mapping_chunk_neither_duplicates_nor_skips(backup, dr_bootstrap, spark, unique, tmp_path):
    """A crash after producing but before writing the mapping chunk: the rerun finds the
    records on the target (by their offset header), maps them, and continues after them."""
    import os

    dest, bid, topic, data = backup
    target = unique("dst")
    o = RestoreOptions(dest, bid, Connection(dr_bootstrap), restore_id="crash",
                       rename={topic: target}, chunk_records=10)
    run_restore(o, spark=spark)
    root = mapping_root_for(dest, bid, "crash")
    p0 = os.path.join(root, topic, "0")
    chunks = sorted(os.listdir(p0))
    for c in chunks[2:]:  # lose the mapping of everything after the second chunk
        os.remove(os.path.join(p0, c))
    crashed(dest, bid, "crash")
    res = run_restore(o, spark=spark)
    assert res.resumed
    got = consume_all(dr_bootstrap, target, [0, 1])
    assert [m.value() for m in got[0]] == [r["value"] for r in data[topic][0]]
    maps = partition_mappings(read_mapping(root))
    assert list(maps[TopicPartition(topic, 0)].target_offsets) == [m.offset() for m in got[0]]
    assert sum(r["recovered"] for r in res.partitions) == 40 - 20


def test_resume_refuses_when_a_foreign_record_follows_the_mapped_ones(backup, dr_bootstrap, spark, unique):
    """Resume must prove where to continue: a record on the target that this restore did not
    write (after the last mapped one) stops the restore with one clear sentence, exit 1."""
    import os

    from offsetkeeper.errors import KafkaOperationError
    from tests.kafkatools import produce

    dest, bid, topic, _data = backup
    target = unique("dst")
    o = RestoreOptions(dest, bid, Connection(dr_bootstrap), restore_id="foreign",
                       rename={topic: target}, chunk_records=10)
    run_restore(o, spark=spark)
    root = mapping_root_for(dest, bid, "foreign")
    p0 = os.path.join(root, topic, "0")
    for c in sorted(os.listdir(p0))[1:]:
        os.remove(os.path.join(p0, c))
    crashed(dest, bid, "foreign")
    # a record someone else wrote; then pretend our later records were never mapped
    produce(dr_bootstrap, target, [(0, b"intruder", b"x")])
    with pytest.raises(KafkaOperationError, match="did not write|more records than") as exc:
        run_restore(o, spark=spark)
    assert "\n" not in exc.value.message and "--restore-id foreign" in exc.value.message


def test_translate_from_live_source_and_from_snapshot(backup, bootstrap, dr_bootstrap, spark, unique, tmp_path):
    """Group offsets can come from the live source cluster or an offset snapshot of it."""
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.snapshots.capture import take_snapshot
    from offsetkeeper.snapshots.store import SnapshotStore
    from tests.kafkatools import commit, create_topic

    dest, bid, topic, data = backup
    target = unique("dst")
    run_restore(RestoreOptions(dest, bid, Connection(dr_bootstrap), restore_id="live",
                               rename={topic: target}), spark=spark)
    create_topic(bootstrap, topic, 2)
    group = unique("g-live")
    commit(bootstrap, group, {(topic, 0): 13, (topic, 1): 0})
    got = consume_all(dr_bootstrap, target, [0, 1])
    src0 = [r["offset"] for r in data[topic][0]]
    want = {TopicPartition(target, 0): got[0][next(i for i, o in enumerate(src0) if o >= 13)].offset(),
            TopicPartition(target, 1): got[1][0].offset()}

    fo = offsets_from_mapping(dest, bid, "live", [group], source="live", source_connection=Connection(bootstrap))
    assert fo.for_group(group) == want
    store = str(tmp_path / "snaps")
    with KafkaAdmin(Connection(bootstrap)) as admin:
        snap_id = SnapshotStore(store).save(take_snapshot(admin, [group], description="source"))
    snap_id = snap_id.rsplit("/", 1)[-1].removesuffix(".json")
    fo = offsets_from_mapping(dest, bid, "live", [group], source=f"snapshot:{snap_id}", snapshot_store=store)
    assert fo.for_group(group) == want


def test_rerun_of_a_completed_restore_changes_nothing(backup, dr_bootstrap, spark, unique):
    """Once completed, a rerun of the same restore id is a no-op, even if the target moved on."""
    from tests.kafkatools import produce

    dest, bid, topic, _data = backup
    target = unique("dst")
    o = RestoreOptions(dest, bid, Connection(dr_bootstrap), restore_id="done", rename={topic: target})
    run_restore(o, spark=spark)
    produce(dr_bootstrap, target, [(0, b"new", b"record after the restore")])
    before = {p: len(v) for p, v in consume_all(dr_bootstrap, target, [0, 1]).items()}
    res = run_restore(o, spark=spark)
    assert res.resumed and res.records == 0
    assert {p: len(v) for p, v in consume_all(dr_bootstrap, target, [0, 1]).items()} == before
