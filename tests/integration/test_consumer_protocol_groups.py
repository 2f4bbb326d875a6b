"""Every capability on Kafka 4 consumer-type groups (KIP-848, `group.protocol=consumer`) and on a
group migrating between protocols (a classic member and a consumer-protocol member in one group:
Kafka 4 upgrades the group online to the consumer type and keeps serving the classic member).

Each test runs on two kinds of group, with real members of the session's Kafka 4.4.0 cluster:

- `consumer`: one consumer-protocol member;
- `migrating`: a classic member joins first, then a consumer-protocol member (the broker
  converts the group; `groups describe --members --epochs` shows UPGRADED false/true).

The cluster is checked with independent clients (tests/kafkatools).
"""

from __future__ import annotations

import json
import time
from contextlib import contextmanager

import pytest

from cli import run_cli
from kafkatools import LiveConsumer, commit, committed, create_topic, produce_n

pytestmark = pytest.mark.integration

KINDS = ["consumer", "migrating"]


def _wait(what: str, pred, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = pred()
        if got:
            return got
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _state(capsys, bootstrap: str, group: str) -> dict:
    r = run_cli(capsys, "groups", "describe", group, "--state", "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    return r.json()[0]


@contextmanager
def members(capsys, bootstrap: str, group: str, topic: str, kind: str):
    """The group's live members (one per partition of a 2-partition topic for `migrating`);
    leaves the group empty on exit."""
    started: list[LiveConsumer] = []
    try:
        if kind == "migrating":
            started.append(LiveConsumer(bootstrap, group, [topic]))  # classic: creates the group
            assert started[0].wait_assigned(20)
        started.append(LiveConsumer(bootstrap, group, [topic], protocol="consumer"))
        n = len(started)

        def settled():
            st = _state(capsys, bootstrap, group)
            return st if (st["state"], st["members"]) == ("stable", n) else None

        _wait("a stable group", settled)
        if kind == "migrating":
            _wait("one partition per member", lambda: all(len(m.call(lambda c: c.assignment())) == 1
                                                          for m in started))
        yield started
    finally:
        for m in reversed(started):
            m.stop()
    _wait("an empty group", lambda: _state(capsys, bootstrap, group)["state"] == "empty")


@pytest.fixture
def group_on(bootstrap, unique):
    """A 2-partition topic with 20 records a partition and a group that committed 5 and 12."""

    def make(kind: str) -> tuple[str, str]:
        topic, group = unique("kip848"), unique(f"g-{kind}")
        create_topic(bootstrap, topic, 2)
        produce_n(bootstrap, topic, 2, 20)
        commit(bootstrap, group, {(topic, 0): 5, (topic, 1): 12})
        return topic, group

    return make


@pytest.mark.parametrize("kind", KINDS)
def test_describe_shows_the_real_type_and_reset_waits_for_an_empty_group(
        capsys, bootstrap, group_on, kind):
    """Invariant: `groups describe` and `groups list` show a consumer-type group as such (a
    migrating group is of type consumer, with its classic member not upgraded); `offsets reset
    --execute` is refused (exit 1, naming the members) while any member — consumer or classic
    protocol — is active, and nothing changes; once the members left, the same reset is applied
    and reads back."""
    topic, group = group_on(kind)
    with members(capsys, bootstrap, group, topic, kind):
        st = _state(capsys, bootstrap, group)
        assert (st["group_type"], st["state"]) == ("consumer", "stable")
        r = run_cli(capsys, "groups", "list", "-b", bootstrap, "--type", "consumer", "-o", "json")
        assert {"group_id": group, "state": "stable", "group_type": "consumer",
                "protocol": "consumer"} in r.json(), r.out + r.err
        r = run_cli(capsys, "groups", "describe", group, "--members", "--epochs", "-b", bootstrap,
                    "-o", "json")
        assert r.code == 0, r.err
        upgraded = sorted(m["upgraded"] for m in r.json())
        assert upgraded == ([False, True] if kind == "migrating" else [True])
        r = run_cli(capsys, "offsets", "reset", "-g", group, "-t", topic, "--to-earliest",
                    "--execute", "--no-snapshot", "-b", bootstrap)
        assert r.code == 1 and "active member" in r.err, r.err
        assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 12}
    r = run_cli(capsys, "offsets", "reset", "-g", group, "-t", topic, "--to-earliest",
                "--execute", "--no-snapshot", "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["report"]["status"] == "SUCCESS"
    assert committed(bootstrap, group, topic, 2) == {0: 0, 1: 0}


@pytest.mark.parametrize("kind", KINDS)
def test_snapshot_and_rollback_of_a_consumer_type_group(capsys, bootstrap, group_on, kind, tmp_path):
    """Invariant: a snapshot of an active consumer-type group records its committed offsets;
    a rollback is refused while members are active, and once the group is empty puts the
    snapshot's offsets back (after a reset moved them), verified by `snapshots verify`."""
    topic, group = group_on(kind)
    store = ["--store", str(tmp_path / "snaps"), "-b", bootstrap]
    with members(capsys, bootstrap, group, topic, kind):
        r = run_cli(capsys, "snapshots", "create", "-g", group, *store, "-o", "json")
        assert r.code == 0, r.err
        sid = r.json()["id"]
        r = run_cli(capsys, "snapshots", "rollback", sid, "--execute", *store)
        assert r.code == 1 and "active member" in r.err, r.err
    r = run_cli(capsys, "offsets", "reset", "-g", group, "-t", topic, "--to-latest", "--execute",
                "--no-snapshot", "-b", bootstrap)
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 2) == {0: 20, 1: 20}
    r = run_cli(capsys, "snapshots", "rollback", sid, "--execute", *store, "-o", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["report"]["status"] == "SUCCESS"
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 12}
    assert run_cli(capsys, "snapshots", "verify", sid, *store).code == 0


@pytest.mark.parametrize("kind", KINDS)
def test_history_lag_status_and_exporter_read_a_consumer_type_group(
        capsys, bootstrap, group_on, kind, tmp_path):
    """Invariant: `history record` samples an active consumer-type group (committed offsets,
    log ends, lag), `lag status` judges it from those samples (a member that commits up to the
    log end is OK, exit 0), and the Prometheus exporter serves its lag."""
    from offsetkeeper.config import Connection
    from offsetkeeper.history.exporter import LagCollector
    from offsetkeeper.history.sample_cycle import SampleScope
    from offsetkeeper.history.sampler import Sampler, SamplerConfig
    from offsetkeeper.history.store import open_store
    from offsetkeeper.kafka.admin import KafkaAdmin

    topic, group = group_on(kind)
    db = str(tmp_path / "history.db")
    with members(capsys, bootstrap, group, topic, kind) as live:
        for m in live:  # each member commits the log end of what it owns, as the member
            m.call(lambda c: c.commit(offsets=[type(tp)(tp.topic, tp.partition, 20)
                                               for tp in c.assignment()], asynchronous=False))
        assert committed(bootstrap, group, topic, 2) == {0: 20, 1: 20}
        for _ in range(3):
            r = run_cli(capsys, "history", "record", "-g", group, "--once", "--store", db,
                        "-b", bootstrap)
            assert r.code == 0, r.err
        r = run_cli(capsys, "history", "show", group, "--store", db, "-o", "json")
        assert r.code == 0, r.err
        rows = [x for x in r.json() if x["topic"] == topic]
        assert rows and all(x["committed"] == 20 and x["lag"] == 0 for x in rows), rows
        r = run_cli(capsys, "lag", "status", group, "--store", db, "--window", "3", "-o", "json")
        assert r.code == 0, r.out + r.err
        assert r.json()[0]["status"] == "OK"
        with KafkaAdmin(Connection(bootstrap)) as admin, open_store("memory://") as mem:
            sampler = Sampler(admin, mem, SamplerConfig(scope=SampleScope(groups=(group,)),
                                                        interval_ms=200, window=3))
            col = LagCollector(sampler.recent, cluster_name="c")
            sampler.listeners.append(col.prepare)
            assert sampler.run_once().ok
            text = col.render().decode()
            sampler.finish()
    assert f'kafka_consumergroup_group_lag{{cluster_name="c",group="{group}"' in text


def test_commit_positions_to_a_consumer_type_group(capsys, bootstrap, group_on):
    """Invariant: commitToGroup's commit (spark.kafka.group.commit_positions, through the one
    executor) refuses a consumer-type group while its consumer-protocol member is active
    (GroupActiveError, nothing written) and commits to it once empty, read back exactly."""
    from offsetkeeper.config import Connection
    from offsetkeeper.errors import GroupActiveError
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.spark.kafka.group import commit_positions

    topic, group = group_on("consumer")
    with KafkaAdmin(Connection(bootstrap)) as admin:
        with members(capsys, bootstrap, group, topic, "consumer"):
            with pytest.raises(GroupActiveError):
                commit_positions(admin, group, {(topic, 0): 17, (topic, 1): 18})
            assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 12}
        assert _state(capsys, bootstrap, group)["group_type"] == "consumer"
        commit_positions(admin, group, {(topic, 0): 17, (topic, 1): 18})
    assert committed(bootstrap, group, topic, 2) == {0: 17, 1: 18}


def _available_now(spark, bootstrap: str, topic: str, ck: str, out: str, group: str) -> None:
    from offsetkeeper.spark.kafka import SOURCE_NAME, register

    register(spark)
    q = (spark.readStream.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest")
         .option("commitToGroup", group).load().select("partition", "offset", "value")
         .writeStream.format("parquet").option("path", out).option("checkpointLocation", ck)
         .trigger(availableNow=True).start())
    q.awaitTermination(300)
    assert not q.isActive and q.exception() is None


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_spark_commit_to_group_with_a_consumer_type_group(capsys, bootstrap, spark, unique, tmp_path,
                                                          kind):
    """Invariant: a streaming query with commitToGroup naming a consumer-type group (or one
    migrating from classic) is never broken by it: while the group has active members the query
    completes and the group's offsets are left alone; once the group is empty the query
    publishes its position."""
    topic, group = unique("sk848"), unique(f"g-spark-{kind}")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    ck, out = str(tmp_path / "ck"), str(tmp_path / "out")
    with members(capsys, bootstrap, group, topic, kind):
        _available_now(spark, bootstrap, topic, ck, out, group)
        assert committed(bootstrap, group, topic, 2) == {0: -1001, 1: -1001}
    produce_n(bootstrap, topic, 2, 5)
    _available_now(spark, bootstrap, topic, ck, out, group)
    assert committed(bootstrap, group, topic, 2) == {0: 15, 1: 15}
    assert spark.read.parquet(out).count() == 30


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_restore_mapping_resets_a_consumer_type_group(capsys, bootstrap, spark, unique, tmp_path,
                                                      kind):
    """Invariant: `offsets reset --from-mapping` (restore translation) is refused for a
    consumer-type group on the target (or one migrating from classic) while it has active
    members, and once the group is empty commits the translated offsets (source 22 and 7 -> the
    restored records)."""
    from offsetkeeper.config import Connection
    from offsetkeeper.restore.config import RestoreOptions
    from offsetkeeper.restore.run import run_restore
    from restore_support import rec, write_backup

    t0 = 1_700_000_000_000
    src, target, group = unique("src"), unique("dst"), unique(f"g-restore-{kind}")
    # the source had a gap: offsets 0..9 and 20..29 (compaction), so target offsets differ
    records = [rec(o, t0 + o, f"k{o}".encode(), f"v{o}".encode()) for o in (*range(10), *range(20, 30))]
    write_backup(str(tmp_path), "b", {src: {0: records, 1: records[:10]}},
                 configs={src: {"retention.ms": "-1"}},
                 groups={group: {(src, 0): 22, (src, 1): 7}})
    run_restore(RestoreOptions(str(tmp_path), "b", Connection(bootstrap), restore_id="m1",
                               rename={src: target}), spark=spark)
    reset = ["offsets", "reset", "-b", bootstrap, "--from-mapping", f"{tmp_path}/b:m1",
             "--group", group, "--execute", "--no-snapshot"]
    with members(capsys, bootstrap, group, target, kind):
        assert _state(capsys, bootstrap, group)["group_type"] == "consumer"
        r = run_cli(capsys, *reset)
        assert r.code == 1 and "active member" in r.err, r.out + r.err
        assert committed(bootstrap, group, target, 2) == {0: -1001, 1: -1001}
    r = run_cli(capsys, *reset)
    assert r.code == 0, r.out + r.err
    # source 22 is the 13th restored record of partition 0 (target offset 12); 7 stays 7
    assert committed(bootstrap, group, target, 2) == {0: 12, 1: 7}
