"""What was assumed on the stand-in broker (noida-db), re-checked on Apache Kafka 4.

Each test states the invariant it holds in its docstring. Where Apache Kafka behaves differently
from the stand-in, Apache Kafka is right (docs/offsetlog.md, /work/shared/PRODUCT.md "Facts about
noida-db"). Cluster state is always checked with an independent client (plain confluent-kafka).
"""

from __future__ import annotations

import functools
import subprocess
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import AdminClient, NewPartitions

from backup_support import delete_records
from cli import run_cli
from kafkatools import commit, committed, create_topic, produce, produce_n
from waiting import wait_for

pytestmark = pytest.mark.integration

DAY_MS = 86_400_000


# -- helpers ----------------------------------------------------------------------------------

def _describe(bootstrap: str, group: str):
    """(state, type, members) of a group as confluent-kafka describes it; retries while the
    coordinator is loading (a fresh cluster answers NOT_COORDINATOR for a moment)."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    for _ in range(40):
        try:
            d = a.describe_consumer_groups([group])[group].result(10)
            return d.state.name, d.type.name, len(d.members)
        except KafkaException:
            time.sleep(0.25)
    raise AssertionError(f"cannot describe group {group}")


def _commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """kafkatools.commit, retried while a fresh cluster is still loading the group's
    coordinator (NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, which librdkafka's synchronous
    commit does not retry)."""
    for _ in range(40):
        try:
            return commit(bootstrap, group, offsets)
        except KafkaException as exc:
            if "COORDINATOR" not in str(exc):
                raise
            time.sleep(0.25)
    raise AssertionError(f"the coordinator of group {group} never became available")


_wait_for = functools.partial(wait_for, timeout=30.0, every=0.2)


class Member:
    """A group member (classic or consumer protocol) that polls in a thread until paused or
    stopped. A paused member keeps its session (librdkafka heartbeats in the background) but
    serves no rebalance, so a rebalance it takes part in stays unfinished."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str) -> None:
        conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                "auto.offset.reset": "earliest"}
        if protocol == "consumer":
            conf["group.protocol"] = "consumer"
        else:
            conf |= {"session.timeout.ms": 10000, "max.poll.interval.ms": 60000}
        self.c = Consumer(conf)
        self.c.subscribe([topic])
        self._run = threading.Event()
        self._run.set()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._assigned = threading.Event()
        self.t = threading.Thread(target=self._loop, daemon=True)
        self.t.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            if self._run.is_set():
                self._idle.clear()
                self.c.poll(0.2)
                # asked from this thread only: assignment() from another thread can block
                if not self._assigned.is_set() and self.c.assignment():
                    self._assigned.set()
            else:
                self._idle.set()
                time.sleep(0.05)

    def wait_assigned(self) -> None:
        assert self._assigned.wait(30), "no assignment within 30 s"

    def pause(self) -> None:
        self._run.clear()
        self._idle.wait(5)

    def stop(self) -> None:
        self._run.set()
        self._stop.set()
        self.t.join(15)
        self.c.close()


def _oracle_state(bootstrap: str, group: str) -> str:
    """The group state as Kafka's own kafka-consumer-groups.sh --describe --state prints it."""
    from offsetkeeper.devbroker.dist import tool_command

    r = subprocess.run(tool_command("kafka-consumer-groups", "--bootstrap-server", bootstrap,
                                    "--describe", "--state", "--group", group),
                       capture_output=True, text=True, timeout=60)
    lines = [ln.split() for ln in r.stdout.splitlines() if ln.strip()]
    header = next(ln for ln in lines if "STATE" in ln)
    row = lines[lines.index(header) + 1]
    # GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS: the coordinator is two words
    return row[-2]


# -- 1. groups with members -------------------------------------------------------------------

@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_broker_refuses_commits_for_a_group_with_members_and_offsetkeeper_refuses_first(
        capsys, bootstrap, unique, protocol):
    """Invariant: Apache Kafka refuses an offset commit from outside the group (no member id,
    generation/epoch -1) while the group has members, for classic and consumer-protocol groups
    alike (UNKNOWN_MEMBER_ID; the admin API's alter reports it per partition). offsetkeeper
    does not rely on that: `offsets reset --execute` and `offsets delete --execute` refuse the
    active group themselves (exit 1, a message naming the group), and nothing changes."""
    topic, group = unique("active"), unique(f"g-{protocol}")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    _commit(bootstrap, group, {(topic, 0): 4, (topic, 1): 6})  # accepted: the group is empty
    m = Member(bootstrap, group, topic, protocol)
    try:
        m.wait_assigned()
        assert _describe(bootstrap, group)[1:] == (protocol.upper(), 1)
        with pytest.raises(KafkaException, match="UNKNOWN_MEMBER_ID"):
            commit(bootstrap, group, {(topic, 0): 9})
        a = AdminClient({"bootstrap.servers": bootstrap})
        res = a.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [CkTP(topic, 0, 9)])])[group].result(15)
        assert [tp.error.name() for tp in res.topic_partitions] == ["UNKNOWN_MEMBER_ID"]

        r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", group, "-t", topic,
                    "--to-earliest", "--execute", "--no-snapshot")
        assert r.code == 1, r.out + r.err
        assert f"group {group} has 1 active member" in r.err and "refused" in r.err
        r = run_cli(capsys, "offsets", "delete", "-b", bootstrap, "-g", group, "-t", topic,
                    "--execute", "--no-snapshot", "--allow-unknown-state")
        assert r.code == 1, r.out + r.err
        assert f"group {group} has 1 active member" in r.err
    finally:
        m.stop()
    assert committed(bootstrap, group, topic, 2) == {0: 4, 1: 6}


@pytest.mark.parametrize("protocol", ["classic", "consumer"])
def test_a_rebalancing_group_is_never_inactive(capsys, bootstrap, unique, tmp_path, protocol):
    """Invariant: a group in the middle of a rebalance — classic PreparingRebalance (a second
    member joined, the first has not rejoined yet) or consumer-protocol Reconciling/Assigning
    (a member has not acknowledged its new assignment) — is active: reset, delete and snapshot
    rollback refuse it, even with --allow-unknown-state. confluent-kafka has no state for
    Assigning/Reconciling and reports UNKNOWN (Kafka's own tool names the real state); a group
    in UNKNOWN with members is refused whatever the flags. `groups delete` refuses it too."""
    topic, group = unique("rebal"), unique(f"g-{protocol}")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    _commit(bootstrap, group, {(topic, 0): 4, (topic, 1): 6})
    store = tmp_path / "snaps"
    r = run_cli(capsys, "snapshots", "create", "-b", bootstrap, "-g", group, "--store", store, "-o", "json")
    assert r.code == 0, r.err
    sid = r.json()["id"]
    first = Member(bootstrap, group, topic, protocol)
    second = None
    try:
        first.wait_assigned()
        first.pause()
        second = Member(bootstrap, group, topic, protocol)
        expected = "PREPARING_REBALANCING" if protocol == "classic" else "UNKNOWN"
        _wait_for(f"state {expected}", lambda: _describe(bootstrap, group) == (expected, protocol.upper(), 2))
        if protocol == "consumer":
            assert _oracle_state(bootstrap, group) in ("Reconciling", "Assigning")
        else:  # offsetkeeper names the state as Kafka does, and filters by that name
            r = run_cli(capsys, "groups", "list", "-b", bootstrap, "--state", "preparingrebalance", "-o", "json")
            assert r.code == 0 and {"group_id": group, "state": "preparingrebalance",
                                    "group_type": "classic", "protocol": "consumer"} in r.json(), r.out + r.err
        for args in (("offsets", "reset", "-g", group, "-t", topic, "--to-earliest"),
                     ("offsets", "delete", "-g", group, "-t", topic),
                     ("groups", "delete", group),
                     ("snapshots", "rollback", sid, "--store", store)):
            extra = () if args[0] == "snapshots" else ("--allow-unknown-state",)
            r = run_cli(capsys, *args, "-b", bootstrap, "--execute", "--no-snapshot", *extra)
            assert r.code == 1, (args, r.out, r.err)
            assert f"group {group} has 2 active members" in r.err, (args, r.err)
            # consumer protocol: the real state, from Kafka's Java admin client (kafka/jvm.py)
            states = ("preparingrebalance",) if protocol == "classic" else ("reconciling", "assigning")
            assert any(f"(state {s})" in r.err for s in states), (args, r.err)
        # still rebalancing when we are done (the refusals above were not about a settled group)
        assert _describe(bootstrap, group)[0] == expected
    finally:
        first.stop()
        if second is not None:
            second.stop()
    assert committed(bootstrap, group, topic, 2) == {0: 4, 1: 6}


def test_a_member_less_unknown_state_is_inactive_only_when_asked():
    """Invariant: UNKNOWN (what confluent-kafka reports for states it does not know) is never
    inactive for reset, delete or rollback — all three plan through `refusal_of` — unless
    --allow-unknown-state is given, and then only without members; every state but Empty and
    Dead, as confluent-kafka names them, is refused."""
    from confluent_kafka import ConsumerGroupState

    from offsetkeeper.kafka.admin import _state_name
    from offsetkeeper.models import GroupInfo, MemberInfo
    from offsetkeeper.reset.plan import refusal_of

    for s in ConsumerGroupState:
        info = GroupInfo("g", _state_name(s))
        inactive = s in (ConsumerGroupState.EMPTY, ConsumerGroupState.DEAD)
        assert (refusal_of(info) is None) is inactive, s
    assert {_state_name(s) for s in ConsumerGroupState} == {  # Kafka's names, lower-cased
        "unknown", "preparingrebalance", "completingrebalance", "stable", "dead", "empty"}
    unknown = GroupInfo("g", _state_name(ConsumerGroupState.UNKNOWN))
    assert refusal_of(unknown) is not None
    assert refusal_of(unknown, allow_unknown_state=True) is None
    with_member = GroupInfo("g", "unknown", members=(MemberInfo("m", "c", "h"),))
    assert refusal_of(with_member, allow_unknown_state=True) is not None


# -- 2. log semantics -------------------------------------------------------------------------

def test_read_committed_fetch_right_after_an_aborted_transaction_returns_the_next_committed_record(
        bootstrap, unique):
    """Invariant: a read_committed fetch that starts right after an aborted transaction of the
    same producer (at its abort marker, or at the first record of the next committed
    transaction) returns the next committed records — from Kafka and from offsetkeeper's range
    reader (`records.read.read_batches`, behind the Kafka data source and `backup run`).
    The stand-in returned nothing there."""
    from offsetkeeper.records.ranges import OffsetRange
    from offsetkeeper.records.read import RangeStats, read_batches
    from offsetkeeper.spark.kafka.options import parse_options

    topic = unique("txread")
    create_topic(bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("tx")})
    p.init_transactions(15)
    for commit_it, n in ((True, 2), (False, 3), (True, 2)):
        p.begin_transaction()
        for i in range(n):
            p.produce(topic, key=b"k", value=f"{commit_it}-{i}".encode(), partition=0)
        p.flush(15)
        p.commit_transaction(15) if commit_it else p.abort_transaction(15)
    # layout: 0-1 committed, 2 marker, 3-5 aborted, 6 abort marker, 7-8 committed, 9 marker
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("r"), "enable.auto.commit": False,
                  "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        for start in (6, 7):
            c.assign([CkTP(topic, 0, start)])
            got = []
            while True:
                m = c.poll(10)
                assert m is not None
                if m.error():
                    break
                got.append((m.offset(), m.value()))
            assert got == [(7, b"True-0"), (8, b"True-1")], start
        _, high = c.get_watermark_offsets(CkTP(topic, 0), timeout=10, cached=False)
    finally:
        c.close()
    assert high == 10
    opts = parse_options({"kafka.bootstrap.servers": bootstrap, "subscribe": topic})
    assert opts.read_committed
    for start in (3, 6, 7):
        stats = RangeStats()
        batches = list(read_batches(opts, OffsetRange(topic, 0, start, high), stats))
        rows = [(o, bytes(v)) for b in batches
                for o, v in zip(b.column("offset").to_pylist(), b.column("value").to_pylist(), strict=True)]
        assert rows == [(7, b"True-0"), (8, b"True-1")], start
        assert stats.gaps == [], start


def test_records_older_than_retention_move_the_log_start_and_offsetkeeper_clamps(
        capsys, bootstrap, unique):
    """Invariant: Kafka deletes records older than retention.ms a closed segment at a time (the
    active segment stays, whatever its records' timestamps), moving the log start; offsetkeeper
    shows the new log start (`offsets show`, `groups describe`) and clamps a reset below it to
    the log start with a note. (The stand-in dropped single old records within seconds.)"""
    topic, group = unique("retention"), unique("g")
    create_topic(bootstrap, topic, 1, {"retention.ms": "60000", "segment.ms": "100"})
    old = int(time.time() * 1000) - DAY_MS
    produce(bootstrap, topic, [(0, b"k", b"old-%d" % i, None, old + i) for i in range(10)])
    time.sleep(0.3)  # the next append rolls the segment (its first record is a day old anyway)
    produce(bootstrap, topic, [(0, b"k", b"new-%d" % i) for i in range(3)])
    _commit(bootstrap, group, {(topic, 0): 2})
    def low():
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "wm"})
        try:
            return c.get_watermark_offsets(CkTP(topic, 0), timeout=10, cached=False)
        finally:
            c.close()

    assert _wait_for("retention to delete the old segment", lambda: low()[0] > 0 and low(), timeout=60) == (10, 13)
    r = run_cli(capsys, "offsets", "show", "-b", bootstrap, "-t", topic, "-o", "json")
    assert r.code == 0, r.err
    assert [(x["log_start_offset"], x["log_end_offset"]) for x in r.json()] == [(10, 13)]
    r = run_cli(capsys, "groups", "describe", group, "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    assert [(x["current_offset"], x["log_start_offset"], x["log_end_offset"]) for x in r.json()] == [(2, 10, 13)]
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", group, "-t", topic, "--to-offset", "4",
                "--execute", "--no-snapshot")
    assert r.code == 0, r.err
    assert "clamped to log start (asked 4)" in r.out
    assert committed(bootstrap, group, topic, 1) == {0: 10}


def test_offset_delete_removes_only_the_named_partitions(capsys, bootstrap, unique):
    """Invariant: `offsets delete` (OffsetDelete, KIP-496) removes the committed offsets of the
    named partitions of an inactive group on Kafka and leaves its other partitions; Kafka itself
    refuses OffsetDelete for a topic an active member subscribes to (GROUP_SUBSCRIBED_TO_TOPIC),
    and offsetkeeper refuses such a group before asking."""
    from offsetkeeper.errors import OffsetkeeperError
    from offsetkeeper.kafka.offset_delete import delete_group_offsets
    from offsetkeeper.models import TopicPartition

    topic, group = unique("odel"), unique("g")
    create_topic(bootstrap, topic, 3)
    _commit(bootstrap, group, {(topic, 0): 0, (topic, 1): 0, (topic, 2): 0})
    r = run_cli(capsys, "offsets", "delete", "-b", bootstrap, "-g", group, "-t", f"{topic}:0,2",
                "--execute", "--no-snapshot")
    assert r.code == 0, r.out + r.err
    assert committed(bootstrap, group, topic, 3) == {0: -1001, 1: 0, 2: -1001}

    m = Member(bootstrap, group, topic, "classic")
    try:
        m.wait_assigned()
        try:  # the broker's refusal comes for the whole group or per partition
            answer = str(delete_group_offsets({"bootstrap.servers": bootstrap}, group,
                                              [TopicPartition(topic, 1)]))
        except OffsetkeeperError as exc:
            answer = f"{exc} {getattr(exc, 'code', '')}"
        assert "SUBSCRIBED" in answer.upper(), answer
        r = run_cli(capsys, "offsets", "delete", "-b", bootstrap, "-g", group, "-t", topic,
                    "--execute", "--no-snapshot")
        assert r.code == 1 and "active member" in r.err, r.out + r.err
    finally:
        m.stop()
    assert committed(bootstrap, group, topic, 3) == {0: -1001, 1: 0, 2: -1001}


def test_delete_records_moves_the_log_start_for_describe_and_reset(capsys, bootstrap, unique):
    """Invariant: delete_records moves the log start at once on Kafka; `offsets show` and
    `groups describe` report it, a committed offset below it is shown as it is (Kafka does not
    move it), and `--to-earliest` / `--to-current` / `--shift-by` resolve against the new log
    start (clamped with a note)."""
    topic, group = unique("delrec"), unique("g")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    _commit(bootstrap, group, {(topic, 0): 2, (topic, 1): 8})
    delete_records(bootstrap, topic, 0, 6)
    r = run_cli(capsys, "offsets", "show", "-b", bootstrap, "-t", topic, "-o", "json")
    assert [(x["partition"], x["log_start_offset"], x["log_end_offset"]) for x in r.json()] == [
        (0, 6, 10), (1, 0, 10)]
    r = run_cli(capsys, "groups", "describe", group, "-b", bootstrap, "-o", "json")
    assert [(x["partition"], x["current_offset"], x["log_start_offset"]) for x in r.json()] == [
        (0, 2, 6), (1, 8, 0)]
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", group, "-t", topic, "--to-earliest",
                "-o", "json")
    assert r.code == 0, r.err
    plan = {p["partition"]: p["target"] for g in r.json()["groups"] for p in g["partitions"]}
    assert plan == {0: 6, 1: 0}
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", group, "-t", f"{topic}:0", "--to-current",
                "--execute", "--no-snapshot")
    assert r.code == 0, r.err
    assert "clamped to log start (asked 2)" in r.out
    assert committed(bootstrap, group, topic, 2) == {0: 6, 1: 8}


# -- 2b. partitions added while a restore writes ----------------------------------------------

@pytest.fixture(scope="module")
def restored(tmp_path_factory, dr_bootstrap, spark):
    """A restore into `dr_bootstrap` during which the target topic gains two partitions."""
    from offsetkeeper.config import Connection
    from offsetkeeper.restore.config import RestoreOptions
    from offsetkeeper.restore.run import run_restore
    from restore_support import rec, write_backup

    u = uuid.uuid4().hex[:8]
    topic, target, group = f"grow-src-{u}", f"grow-dst-{u}", f"grow-g-{u}"
    dest = str(tmp_path_factory.mktemp("grow"))
    data = [rec(10 + 2 * i, 1_700_000_000_000 + i, f"k{i}".encode(), f"v{i}".encode()) for i in range(120)]
    write_backup(dest, "b", {topic: {0: data}}, configs={topic: {"retention.ms": "-1"}},
                 groups={group: {(topic, 0): 10 + 2 * 70}})
    added: list[float] = []
    stop = threading.Event()

    def grow() -> None:
        c = Consumer({"bootstrap.servers": dr_bootstrap, "group.id": "grow-watch"})
        try:
            while not stop.is_set():
                try:
                    if c.get_watermark_offsets(CkTP(target, 0), timeout=0.5, cached=False)[1] > 0:
                        break
                except Exception:  # the restore has not created the topic yet
                    pass
                time.sleep(0.02)
            if not stop.is_set():
                a = AdminClient({"bootstrap.servers": dr_bootstrap})
                for f in a.create_partitions([NewPartitions(target, 3)]).values():
                    f.result(15)
                added.append(time.monotonic())
        finally:
            c.close()

    t = threading.Thread(target=grow, daemon=True)
    t.start()
    try:
        res = run_restore(RestoreOptions(dest, "b", Connection(dr_bootstrap), restore_id="grow",
                                         rename={topic: target}, chunk_records=20,
                                         records_per_second=40), spark=spark)
        finished = time.monotonic()
    finally:
        stop.set()
        t.join(20)
    return {"dest": dest, "topic": topic, "target": target, "group": group, "data": data,
            "result": res, "added": added, "finished": finished}


@pytest.mark.spark
def test_partitions_added_during_a_restore_change_nothing_it_wrote(restored, dr_bootstrap):
    """Invariant: when the target topic gains partitions while a restore writes to it (Kafka
    create_partitions), every record still goes to its routed partition in source order, the
    new partitions stay empty, and the offset mapping points at exactly the restored records."""
    from offsetkeeper.models import TopicPartition
    from offsetkeeper.restore.mapping import mapping_root_for, partition_mappings, read_mapping
    from restore_support import consume_all

    r = restored
    assert r["added"] and r["added"][0] < r["finished"], "partitions were not added during the restore"
    got = consume_all(dr_bootstrap, r["target"], [0, 1, 2])
    assert [m.value() for m in got[0]] == [x["value"] for x in r["data"]]
    assert got[1] == [] and got[2] == []
    m = partition_mappings(read_mapping(mapping_root_for(r["dest"], "b", "grow")))[TopicPartition(r["topic"], 0)]
    assert list(m.target_offsets) == [x.offset() for x in got[0]]
    assert list(m.source_offsets) == [x["offset"] for x in r["data"]]


# -- 3. every cluster has its own id ----------------------------------------------------------

def test_two_real_clusters_have_different_ids_and_a_snapshot_does_not_cross(
        capsys, bootstrap, dr_bootstrap, unique, tmp_path):
    """Invariant: two Kafka clusters have different cluster ids, so a snapshot taken on one is
    refused on the other (`snapshots rollback`, `offsets reset --from-snapshot`: exit 2 naming
    both ids, nothing changed) unless --allow-cluster-mismatch; the same cluster reached through
    another address (localhost instead of 127.0.0.1) is the same cluster id: applied with a
    warning, and its `latest` snapshot is found. (Every stand-in instance reported the same id.)"""
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin

    with KafkaAdmin(Connection(bootstrap)) as a, KafkaAdmin(Connection(dr_bootstrap)) as b:
        prod_id, dr_id = a.cluster_id(), b.cluster_id()
    assert prod_id and dr_id and prod_id != dr_id
    topic, group = unique("xc"), unique("g")
    for bs in (bootstrap, dr_bootstrap):
        create_topic(bs, topic, 1)
        produce_n(bs, topic, 1, 10)
        _commit(bs, group, {(topic, 0): 3})
    store = tmp_path / "snaps"
    r = run_cli(capsys, "snapshots", "create", "-b", bootstrap, "-g", group, "--store", store, "-o", "json")
    assert r.code == 0, r.err
    sid = r.json()["id"]
    _commit(dr_bootstrap, group, {(topic, 0): 7})
    _commit(bootstrap, group, {(topic, 0): 8})
    r = run_cli(capsys, "snapshots", "rollback", sid, "--execute", "-b", dr_bootstrap, "--store", store)
    assert r.code == 2, r.out + r.err
    assert f"taken on cluster {prod_id} but this is cluster {dr_id}" in r.err
    r = run_cli(capsys, "offsets", "reset", "--from-snapshot", sid, "--snapshot-store", store,
                "--execute", "-b", dr_bootstrap)
    assert r.code == 2 and "--allow-cluster-mismatch" in r.err, r.out + r.err
    assert committed(dr_bootstrap, group, topic, 1) == {0: 7}
    # the same cluster through another address: the id proves it, a warning names the addresses
    alias = bootstrap.replace("127.0.0.1", "localhost")
    assert alias != bootstrap
    r = run_cli(capsys, "snapshots", "rollback", sid, "--execute", "--no-snapshot", "-b", alias, "--store", store)
    assert r.code == 0, r.out + r.err
    assert "warning" in r.err and f"same cluster id {prod_id}" in r.err
    assert committed(bootstrap, group, topic, 1) == {0: 3}
    # `latest` is the newest snapshot of this cluster (by id), whatever address took it
    r = run_cli(capsys, "snapshots", "rollback", "latest", "-b", alias, "--store", store, "-o", "json")
    assert r.code == 0, r.out + r.err
    assert sid in r.out + r.err
    r = run_cli(capsys, "snapshots", "rollback", "latest", "-b", dr_bootstrap, "--store", store)
    assert r.code != 0 and "holds no snapshot of the cluster" in r.err, r.out + r.err
    r = run_cli(capsys, "snapshots", "rollback", sid, "--execute", "--no-snapshot", "-b", dr_bootstrap,
                "--store", store, "--allow-cluster-mismatch")
    assert r.code == 0, r.out + r.err
    assert committed(dr_bootstrap, group, topic, 1) == {0: 3}


@pytest.mark.spark
def test_restore_validate_knows_its_target_cluster_by_id(capsys, restored, bootstrap, dr_bootstrap):
    """Invariant: `restore validate` runs only against the cluster the restore wrote to: the
    other real cluster is refused (exit 2, one line naming the restore's target), while the
    target reached through another address is accepted because its cluster id is the one the
    restore recorded."""
    ref = f"{restored['dest']}/b"
    r = run_cli(capsys, "restore", "validate", ref, "--restore", "grow", "-b", bootstrap)
    assert r.code == 2, r.out + r.err
    assert "restore 'grow' wrote to" in r.err and len(r.err.strip().splitlines()) == 1
    alias = dr_bootstrap.replace("127.0.0.1", "localhost")
    r = run_cli(capsys, "restore", "validate", ref, "--restore", "grow", "-b", alias, "-o", "json")
    assert r.code == 0 and r.json()["ok"], r.out + r.err


# -- a new cluster ----------------------------------------------------------------------------

def test_a_new_cluster_takes_group_commands_at_once(capsys, tmp_path, unique):
    """Invariant: on a cluster that has just started (a fresh DR cluster), the first group
    commands succeed: Kafka creates `__consumer_offsets` on the first coordinator lookup and
    answers NOT_COORDINATOR while the coordinator loads it, which offsetkeeper waits out
    instead of failing (the stand-in had no such window)."""
    from offsetkeeper import devbroker

    data = tmp_path / "fresh"
    st = devbroker.start(devbroker.free_port(), data, tied=True)
    try:
        topic, group = unique("fresh"), unique("g")
        create_topic(st.bootstrap, topic, 1)
        produce_n(st.bootstrap, topic, 1, 5)
        r = run_cli(capsys, "offsets", "reset", "-b", st.bootstrap, "-g", group, "-t", topic, "--to-latest",
                    "--create-groups", "--execute", "--no-snapshot")
        assert r.code == 0, r.out + r.err
        assert committed(st.bootstrap, group, topic, 1) == {0: 5}
        r = run_cli(capsys, "groups", "describe", unique("other"), "-b", st.bootstrap)
        assert r.code == 2 and "does not exist" in r.err, r.out + r.err
    finally:
        devbroker.stop(data)
