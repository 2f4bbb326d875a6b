"""The DR scenario: prod (bootstrap) -> backup -> three-phase restore into dr (dr_bootstrap).

Topics: a plain one, a compacted one and a transactional one (aborted transactions and commit
markers leave offset gaps); three groups: one at the log end, one in the middle (on the
transactional topic at an offset that holds a marker / an aborted record), one that never
committed on one partition. After the three-phase restore a consumer of each group on DR
reads first exactly the record the group would have read next on prod, then the rest in
order: no gaps, no repeats.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CkTP

from offsetkeeper.backup.config import BackupConfig
from offsetkeeper.config import Connection
from offsetkeeper.kafka.errors import PARTITION_EOF
from offsetkeeper.reset.options import ExecuteOptions
from offsetkeeper.restore.config import RestoreOptions
from offsetkeeper.restore.resume import RESTORE_HEADERS
from offsetkeeper.restore.three_phase import ThreePhaseOptions, run_three_phase
from tests.kafkatools import commit, create_topic, produce
from tests.restore_support import consume_all

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _transactional(bootstrap: str, topic: str, unique) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("tx"), "linger.ms": 5})
    p.init_transactions(15)
    for n, abort in enumerate([False, True, False, False, True, False]):
        p.begin_transaction()
        for part in (0, 1):
            for i in range(4):
                p.produce(topic, key=f"t{n}-{i}".encode(), value=f"tx{n}-{part}-{i}".encode(), partition=part)
        if abort:
            p.abort_transaction(15)
        else:
            p.commit_transaction(15)


def _stripped(m) -> tuple:
    return (m.key(), m.value(), [h for h in (m.headers() or []) if h[0] not in RESTORE_HEADERS])


def _read_as_group(bootstrap: str, group: str, topic: str, partition: int) -> list:
    """What a consumer of `group` reads on `partition` from its committed position to the end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": "read_committed",
                  "enable.partition.eof": True})
    try:
        c.assign([CkTP(topic, partition)])
        out = []
        while True:
            m = c.poll(10)
            assert m is not None, f"timed out reading {topic}:{partition} as {group}"
            if m.error():
                if m.error().code() == PARTITION_EOF:
                    return out
                raise AssertionError(m.error().str())
            out.append(m)
    finally:
        c.close()


def _commit_as_member(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit as a member of a consumer-type group (KIP-848, group.protocol=consumer), then
    leave: the group stays on the cluster, empty, of type consumer."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(c.assignment()) < len(offsets):
            assert time.monotonic() < deadline, f"{group} got no assignment of {topic}"
            c.poll(0.2)
        c.commit(offsets=[CkTP(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    finally:
        c.close()


def _first_as_member(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, tuple]:
    """The first record a consumer-protocol member of `group` reads on each partition; it starts
    where the group committed (auto.offset.reset=error: a missing commit fails the read)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "enable.auto.commit": False, "auto.offset.reset": "error",
                  "isolation.level": "read_committed"})
    first: dict[int, tuple] = {}
    try:
        c.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(first) < partitions:
            assert time.monotonic() < deadline, f"{group} read only {sorted(first)} of {topic}"
            m = c.poll(0.5)
            if m is None:
                continue
            assert not m.error(), m.error().str()
            first.setdefault(m.partition(), _stripped(m))
    finally:
        c.close()
    return first


def test_dr_three_phase_groups_resume_at_the_same_record(bootstrap, dr_bootstrap, spark, unique, tmp_path):
    plain, compacted, tx = unique("orders"), unique("compacted"), unique("tx")
    create_topic(bootstrap, plain, 3, {"retention.ms": "-1"})
    create_topic(bootstrap, compacted, 2, {"cleanup.policy": "compact"})
    create_topic(bootstrap, tx, 2, {"retention.ms": "-1"})
    produce(bootstrap, plain, ((p, f"k{i}".encode(), f"v{p}-{i}".encode(),
                                [("trace", f"{i}".encode())] if i % 3 == 0 else None)
                               for p in range(3) for i in range(30)))
    produce(bootstrap, compacted, ((p, f"key{i % 7}".encode(), f"c{p}-{i}".encode()) for p in range(2)
                                   for i in range(25)))
    produce(bootstrap, compacted, ((0, b"key3", None),))  # a tombstone
    _transactional(bootstrap, tx, unique)

    prod = {t: consume_all(bootstrap, t, range(n)) for t, n in ((plain, 3), (compacted, 2), (tx, 2))}
    tx0 = [m.offset() for m in prod[tx][0]]
    gaps = sorted(set(range(tx0[0], tx0[-1])) - set(tx0))
    assert gaps, "the transactional topic must have offset gaps (markers, aborted records)"
    g_end, g_mid, g_part = unique("g-end"), unique("g-mid"), unique("g-part")
    ends = {(t, p): (ms[-1].offset() + 1 if ms else 0) for t, parts in prod.items() for p, ms in parts.items()}
    commit(bootstrap, g_end, {tp: ends[tp] for tp in ends})
    commit(bootstrap, g_mid, {(plain, 0): 10, (plain, 1): 0, (plain, 2): 29,
                              (compacted, 0): prod[compacted][0][len(prod[compacted][0]) // 2].offset(),
                              (tx, 0): gaps[0],              # a marker / aborted offset
                              (tx, 1): gaps[-1]})
    commit(bootstrap, g_part, {(plain, 0): 5, (plain, 1): 17, (tx, 1): 3})   # never on plain:2
    # a consumer-type group (KIP-848): on DR the restore creates it by committing, and a
    # consumer-protocol member then takes it over at the translated offsets
    g_848 = unique("g-848")
    _commit_as_member(bootstrap, g_848, plain, {0: 3, 1: 29, 2: 12})

    dest = str(tmp_path / "backups")
    bcfg = BackupConfig(connection=Connection(bootstrap), include=(plain, compacted, tx),
                        destination=dest, backup_id="dr-drill")
    opts = ThreePhaseOptions(
        restore=RestoreOptions(dest, "dr-drill", Connection(dr_bootstrap), restore_id="drill-1",
                               chunk_records=16),
        backup_config=bcfg, groups=(g_end, g_mid, g_part, g_848),
        execute=ExecuteOptions(snapshot_store=str(tmp_path / "snaps")))
    rep = run_three_phase(opts, spark=spark)
    summary = {k: v for k, v in rep.to_dict().items() if k in ("phases", "commit")}
    assert rep.ok, summary
    assert [p["phase"] for p in rep.phases] == ["backup", "restore", "groups", "validate"]
    assert rep.validation["groups"] and all(g["ok"] for g in rep.validation["groups"])

    for group in (g_end, g_mid, g_part, g_848):
        for t, parts in prod.items():
            for p in parts:
                src = _read_as_group(bootstrap, group, t, p)
                dr = _read_as_group(dr_bootstrap, group, t, p)
                assert [_stripped(m) for m in dr] == [_stripped(m) for m in src], (group, t, p)
    assert _first_as_member(dr_bootstrap, g_848, plain, 3) == \
        {p: _stripped(_read_as_group(bootstrap, g_848, plain, p)[0]) for p in range(3)}
