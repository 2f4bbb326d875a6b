"""`commits scan` on Spark over a __consumer_offsets log built with the Kafka schema and produced
into an ordinary topic (every record kind and version, malformed ones too); then show/at/analytics
and the reset target, checked against the records we built and with an independent client. Then
the real `__consumer_offsets` of the Apache Kafka test cluster: classic, consumer-protocol and
transactional (exactly-once) commits, with the aborted ones left out."""

from __future__ import annotations

import json
import time
import uuid
from collections import defaultdict

import pyarrow.parquet as pq
import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as CkTP

from cli import run_cli
from kafkatools import commit, committed, create_topic, produce, produce_n
from offsetkeeper.offsetlog.records import OffsetCommitKey
from offsetkeeper.offsetlog.sample_log import MINUTE, sample_log
from offsetkeeper.times import iso_ms as iso

pytestmark = [pytest.mark.integration, pytest.mark.spark]

T0 = 1_795_165_200_000  # 2026-11-20T09:00:00Z
HOUR_0900 = T0  # the rebalances report buckets by hour, in epoch ms
ODD = 'odd "name"\n<script>[/]'


@pytest.fixture(scope="module")
def log(bootstrap, tmp_path_factory):
    import uuid

    u = uuid.uuid4().hex[:8]
    groups = (f"payments-{u}", f"{ODD}-{u}", f"gone-{u}")
    data, offsets_topic = f"orders-{u}", f"offsets-{u}"
    create_topic(bootstrap, data, 2, {"retention.ms": "-1"})
    produce_n(bootstrap, data, 2, 20)
    create_topic(bootstrap, offsets_topic, 3, {"retention.ms": "-1"})
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin

    with KafkaAdmin(Connection(bootstrap)) as admin:
        topic_id = next(i for i, name in admin.topic_ids().items() if name == data)
    records = sample_log(groups=groups, data_topic=data, t0=T0, topic_id=topic_id)
    produce(bootstrap, offsets_topic, [(r.partition, r.key, r.value, None, r.timestamp) for r in records])
    out = str(tmp_path_factory.mktemp("history"))
    return {"groups": groups, "data": data, "topic": offsets_topic, "records": records, "out": out}


def expected_commits(records, group=None):
    pos: dict[int, int] = defaultdict(int)
    rows = set()
    for r in records:
        src = pos[r.partition]
        pos[r.partition] += 1
        if not isinstance(r.meaning, tuple) or not isinstance(r.meaning[0], OffsetCommitKey):
            continue
        k, v = r.meaning
        if group and k.group != group:
            continue
        rows.add((k.group, k.topic, k.partition, None if v is None else v.offset,
                  None if v is None or v.leader_epoch == -1 else v.leader_epoch,
                  None if v is None else v.metadata, None if v is None else v.commit_timestamp,
                  v.expire_timestamp if v is not None and v.version == 1 else None,
                  v is None, r.partition, src))
    return rows


def table_rows(out):
    t = pq.read_table(f"{out}/commits")
    return {(r["group"], r["topic"], r["partition"], r["offset"], r["leader_epoch"], r["metadata"],
             r["commit_timestamp"], r["expire_timestamp"], r["tombstone"], r["source_partition"],
             r["source_offset"]) for r in t.to_pylist()}


@pytest.fixture(scope="module")
def scanned(log, bootstrap, spark):
    from offsetkeeper.config import Connection
    from offsetkeeper.offsetlog.scan import KafkaSource, ScanConfig, run_scan

    summary = run_scan(ScanConfig(KafkaSource(Connection(bootstrap), log["topic"]), log["out"]), spark=spark)
    return summary


@pytest.mark.spark_oldest
def test_scan_writes_the_expected_commit_table(log, scanned):
    assert table_rows(log["out"]) == expected_commits(log["records"])
    s = scanned
    assert (s.records, s.offset_commits, s.offset_tombstones, s.group_metadata, s.group_tombstones) == \
        (len(log["records"]), 8, 2, 3, 1)
    assert [(k.part, k.version, k.count) for k in s.skipped] == [("key", 99, 1), ("value", 9, 1)]
    assert s.errors == 1 and "offset" in s.error_samples[0]


def test_kip848_membership_history_of_the_built_log(log, scanned, capsys, spark):
    """Invariant: the consumer-protocol records of the built log are counted by kind, and
    `commits generations` / `--members` / `rebalances` replay its membership: two members join
    (epochs 1, 2), the first revokes a partition, leaves (epoch 3), the second takes all."""
    from offsetkeeper.offsetlog.analytics import Report, run_report

    g4, data, out = f"{log['groups'][0]}-kip848", log["data"], log["out"]
    assert scanned.coordinator_records == {
        "consumer_group_metadata": 3, "consumer_group_member_metadata": 3,
        "consumer_group_target_assignment_member": 4, "consumer_group_target_assignment_metadata": 3,
        "consumer_group_current_member_assignment": 5}
    r = run_cli(capsys, "commits", "generations", g4, "-H", out, "-o", "json")
    assert r.code == 0, r.err
    got = [(x["generation"], x["state"], x["member"], x["assigned"]) for x in r.json()
           if not x["state"].startswith("target")]
    assert got == [
        (None, "joined", "m-a", None),
        (1, "group epoch 1 (consumer group, 1 member)", None, None),
        (1, "member epoch 0 -> 1, stable", "m-a", f"{data}:0/1"),
        (1, "joined", "m-b", None),
        (2, "group epoch 2 (consumer group, 2 members)", None, None),
        (2, f"member epoch 1 -> 2, revoking, revoking {data}:1", "m-a", f"{data}:0"),
        (2, "member epoch 2 -> 2, stable", "m-a", f"{data}:0"),
        (2, "member epoch 0 -> 2, stable", "m-b", f"{data}:1"),
        (2, "left", "m-a", None),
        (3, "group epoch 3 (consumer group, 1 member)", None, None),
        (3, "member epoch 2 -> 3, stable", "m-b", f"{data}:0/1"),
    ]
    r = run_cli(capsys, "commits", "generations", g4, "-H", out, "--members", "-o", "json")
    assert [(x["member"], x["joined"], x["left"], x["first_epoch"], x["last_epoch"], x["assigned"])
            for x in r.json()] == [
        ("m-a", T0 + MINUTE, T0 + 6 * MINUTE, 1, 2, f"{data}:0"),
        ("m-b", T0 + 2 * MINUTE, None, 2, 3, f"{data}:0/1")]
    rb = run_report(Report.rebalances, out, group=g4, spark=spark)
    assert [(x["hour"], x["rebalances"], x["generations"], x["max_members"]) for x in rb] == [
        (HOUR_0900, 3, "1,2,3", 2)]


def test_group_table_has_members_and_assignments(log, scanned):
    g1 = log["groups"][0]
    rows = [r for r in pq.read_table(f"{log['out']}/groups").to_pylist() if r["group"] == g1]
    gen2 = next(r for r in rows if r["generation"] == 2)
    assert gen2["value_version"] == 4 and gen2["leader"] == "app-1-aaa"
    assert {m["member_id"]: (m["subscribed_topics"], m["assigned"]) for m in gen2["members"]} == {
        "app-1-aaa": ([log["data"]], [{"topic": log["data"], "partitions": [0]}]),
        "app-2-bbb": ([log["data"]], [{"topic": log["data"], "partitions": [1]}])}


def test_scan_one_group_reads_only_its_partition(log, bootstrap, tmp_path, capsys):
    from offsetkeeper.offsetlog.decode import partition_for_group

    g1 = log["groups"][0]
    r = run_cli(capsys, "commits", "scan", "-b", bootstrap, "-t", log["topic"], "--group", g1,
                "--out", tmp_path, "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["source_partitions"] == [partition_for_group(g1, 3)]
    assert {row[0] for row in table_rows(tmp_path)} == {g1}
    assert table_rows(tmp_path) == expected_commits(log["records"], g1)


def test_queries_read_the_cluster_when_given_one_like_scan(log, scanned, bootstrap, capsys):
    """Invariant: the `commits` queries take the cluster options `commits scan` takes
    (issue 31 item 11a: they refused -b): given -b instead of --history they read the log
    now (the group's partition only) and answer what a scanned history answers."""
    g1 = log["groups"][0]
    r = run_cli(capsys, "commits", "show", "--group", g1, "-b", bootstrap, "-t", log["topic"],
                "-o", "json")
    assert r.code == 0, r.err
    want = run_cli(capsys, "commits", "show", g1, "-H", log["out"], "-o", "json")
    assert r.json() == want.json() and len(r.json()) > 3


def test_commits_at_is_exact(log, scanned, capsys):
    g1, data = log["groups"][0], log["data"]
    r = run_cli(capsys, "commits", "at", g1, "--history", log["out"], "--time", iso(T0 + 4 * MINUTE + 30_000), "-o", "json")
    assert r.code == 0, r.err
    assert [(x["partition"], x["offset"], x["status"]) for x in r.json()] == [(0, 7, "committed"), (1, 12, "committed")]
    r = run_cli(capsys, "commits", "at", g1, "-H", log["out"], "-T", iso(T0 + 6 * MINUTE), "-o", "json")
    assert [(x["partition"], x["offset"], x["status"]) for x in r.json()] == [(0, None, "deleted"), (1, 25, "committed")]
    assert all(x["topic"] == data for x in r.json())
    r = run_cli(capsys, "commits", "at", g1, "-H", log["out"], "-T", iso(T0 - MINUTE))
    assert r.code == 1 and "committed nothing" in r.err


def test_commits_show_marks_the_rewind_and_escapes_names(log, scanned, capsys):
    g1, g2 = log["groups"][:2]
    r = run_cli(capsys, "commits", "show", g1, "-H", log["out"], "--since", iso(T0 + 2 * MINUTE),
                "--until", iso(T0 + 4 * MINUTE), "-o", "json")
    assert r.code == 0, r.err
    assert [(x["partition"], x["offset"], x["change"]) for x in r.json()] == [
        (0, 10, "+5"), (0, 7, "REWIND -3"), (1, 12, "+9")]
    r = run_cli(capsys, "commits", "show", g2, "-H", log["out"], "-o", "csv")
    assert r.code == 0 and "odd" in r.out
    r = run_cli(capsys, "commits", "show", "no-such-group", "-H", log["out"])
    assert r.code == 2 and "no-such-group" in r.err
    r = run_cli(capsys, "commits", "show", g1, "-H", log["out"], "--since", "yesterday")
    assert r.code == 2 and "--since 'yesterday'" in r.err


def test_analytics(log, scanned, spark):
    from offsetkeeper.offsetlog.analytics import Report, run_report

    g1, g2, g3 = log["groups"]
    out = log["out"]
    rw = run_report(Report.rewinds, out, spark=spark)
    assert [(x["group"], x["partition"], x["from_offset"], x["to_offset"]) for x in rw] == [(g1, 0, 10, 7)]
    ex = run_report(Report.expired, out, spark=spark)
    assert [(x["group"], x["reason"]) for x in ex] == [(g3, "offsets expired or deleted; group deleted")]
    topics = run_report(Report.topics, out, spark=spark)
    assert [(x["topic"], x["groups"], x["live_groups"]) for x in topics] == [(log["data"], 3, 2)]
    rb = run_report(Report.rebalances, out, group=g1, spark=spark)
    assert [(x["hour"], x["rebalances"], x["generations"], x["max_members"]) for x in rb] == [
        (HOUR_0900, 2, "1,2", 2)]
    rate = {x["group"]: x for x in run_report(Report.rate, out, spark=spark)}
    assert rate[g1]["commits"] == 6 and rate[g1]["partitions"] == 2
    assert rate[g2]["commits"] == 1 and rate[g2]["commits_per_minute"] is None


def test_reset_to_commit_time_applies_the_replayed_offsets(log, scanned, bootstrap, capsys):
    """The reset target replays the history (clamping 25 to the log end 20) and the one executor
    commits it; checked with an independent consumer."""
    g1, data = log["groups"][0], log["data"]
    t = iso(T0 + 5 * MINUTE + 30_000)
    args = ["offsets", "reset", "-g", g1, "--to-commit-time", t, "--commit-history", log["out"], "-b", bootstrap]
    r = run_cli(capsys, *args, "-o", "json")
    assert r.code == 0, r.err
    assert committed(bootstrap, g1, data, 2) == {0: -1001, 1: -1001}  # dry run changed nothing
    r = run_cli(capsys, *args, "--execute", "--no-snapshot", "-o", "csv")  # notes whole
    assert r.code == 0, r.err
    assert "clamped to log end (asked 25)" in r.out and "commit of" in r.out
    assert committed(bootstrap, g1, data, 2) == {0: 7, 1: 20}


def test_reset_to_commit_time_usage_errors(log, scanned, bootstrap, capsys):
    g1 = log["groups"][0]
    r = run_cli(capsys, "offsets", "reset", "-g", g1, "--to-commit-time", iso(T0), "-b", bootstrap)
    assert r.code == 2 and "--commit-history" in r.err
    r = run_cli(capsys, "offsets", "reset", "-g", g1, "--to-commit-time", iso(T0), "--to-latest",
                "--commit-history", log["out"], "-b", bootstrap)
    assert r.code == 2 and "conflicting" in r.err
    r = run_cli(capsys, "offsets", "reset", "-g", g1, "--to-commit-time", iso(T0 - MINUTE),
                "--commit-history", log["out"], "-b", bootstrap)
    assert r.code == 2 and "no committed offsets" in r.err


@pytest.mark.spark_oldest
def test_scan_of_a_backup_of_the_topic(log, bootstrap, spark, tmp_path, capsys):
    dest = tmp_path / "backups"
    r = run_cli(capsys, "backup", "run", "-b", bootstrap, "-t", log["topic"], "--dest", dest, "--id", "b1")
    assert r.code == 0, r.err
    out = tmp_path / "from-backup"
    r = run_cli(capsys, "commits", "scan", "--backup", f"{dest}/b1", "-t", log["topic"], "--out", out, "-o", "json")
    assert r.code == 0, r.err
    assert table_rows(out) == expected_commits(log["records"])


def test_scan_of_an_empty_topic_is_not_a_success(bootstrap, unique, tmp_path, capsys):
    topic = unique("empty")
    create_topic(bootstrap, topic, 1)
    r = run_cli(capsys, "commits", "scan", "-b", bootstrap, "-t", topic, "--out", tmp_path)
    assert r.code == 2 and "holds no records" in r.err
    assert list(tmp_path.iterdir()) == []  # nothing written, no work directory left behind


# -- the real __consumer_offsets of Apache Kafka ------------------------------------------------

def _consume_and_commit(bootstrap: str, group: str, topic: str, offset: int, protocol: str) -> None:
    """Join `group` (classic or consumer protocol; `topic` may be a `^regex`), read a few
    records, commit `offset` as a member (with its member id and generation/epoch), and leave."""
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest"}
    if protocol == "consumer":
        conf["group.protocol"] = "consumer"
    c = Consumer(conf)
    try:
        c.subscribe([topic])
        deadline, n, read_from = time.monotonic() + 30, 0, topic
        while n < 3:
            assert time.monotonic() < deadline, f"group {group} read nothing"
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                n, read_from = n + 1, m.topic()
        c.commit(offsets=[CkTP(read_from, 0, offset)], asynchronous=False)
    finally:
        c.close()


def _share_group(bootstrap: str, group: str, topic: str) -> None:
    """A share group (KIP-932): Kafka's own console share consumer joins, gets the partition,
    and leaves (it reads nothing: a share group starts at the log end)."""
    import subprocess

    from offsetkeeper.devbroker import dist

    subprocess.run([dist.java_executable(), "-Xmx256m", "-XX:+UseSerialGC",
                    "-XX:TieredStopAtLevel=1", "-cp", dist.classpath(),
                    "org.apache.kafka.tools.consumer.ConsoleShareConsumer", "--bootstrap-server",
                    bootstrap, "--topic", topic, "--group", group, "--max-messages", "1",
                    "--timeout-ms", "8000"], capture_output=True, timeout=120, check=False)


def _retry(fn, *args):
    """Call fn, retrying while a fresh cluster is still loading a group coordinator."""
    for _ in range(40):
        try:
            return fn(*args)
        except KafkaException as exc:
            if "COORDINATOR" not in str(exc):
                raise
            time.sleep(0.25)
    raise AssertionError("no group coordinator became available")


@pytest.fixture(scope="module")
def real_log(bootstrap, tmp_path_factory):
    """Groups of every kind committing to the real `__consumer_offsets` of the session cluster,
    then one `commits scan` of the whole log."""
    from confluent_kafka.admin import AdminClient

    u = uuid.uuid4().hex[:8]
    topic = f"real-{u}"
    g = {k: f"{k}-{u}" for k in ("classic", "consumer", "gone", "tx", "simple", "share", "regex")}
    create_topic(bootstrap, topic, 1)
    produce_n(bootstrap, topic, 1, 20)
    _retry(commit, bootstrap, g["simple"], {(topic, 0): 2})  # a commit from outside any group
    _consume_and_commit(bootstrap, g["classic"], topic, 5, "classic")
    _consume_and_commit(bootstrap, g["consumer"], topic, 7, "consumer")
    _consume_and_commit(bootstrap, g["gone"], topic, 4, "consumer")
    # a consumer-protocol group subscribed by a regular expression (the broker resolves it)
    _consume_and_commit(bootstrap, g["regex"], f"^real-{u}.*", 8, "consumer")
    _share_group(bootstrap, g["share"], topic)
    a = AdminClient({"bootstrap.servers": bootstrap})
    for _ in range(40):  # tombstones for its offsets and for every consumer-group record type
        try:
            a.delete_consumer_groups([g["gone"]], request_timeout=15)[g["gone"]].result(15)
            break
        except KafkaException as exc:  # the member's leave may not be through yet
            if "NON_EMPTY" not in str(exc) and "COORDINATOR" not in str(exc):
                raise
            time.sleep(0.25)
    # exactly-once: offsets sent to transactions; the aborted ones must never count
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": g["tx"], "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    deadline = time.monotonic() + 30
    while c.poll(0.2) is None or not c.assignment():
        assert time.monotonic() < deadline, "the transactional consumer got no assignment"
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{u}"})
    p.init_transactions(30)
    for offset, keep in ((3, True), (9, False), (6, True), (15, False)):
        p.begin_transaction()
        p.send_offsets_to_transaction([CkTP(topic, 0, offset)], c.consumer_group_metadata(), 15)
        p.commit_transaction(15) if keep else p.abort_transaction(15)
    c.close()
    done_ms = int(time.time() * 1000)
    out = tmp_path_factory.mktemp("real-history")
    return {"topic": topic, "groups": g, "out": out, "done_ms": done_ms}


@pytest.fixture(scope="module")
def real_scan(real_log, bootstrap, spark):
    from offsetkeeper.config import Connection
    from offsetkeeper.offsetlog.scan import KafkaSource, ScanConfig, run_scan

    return run_scan(ScanConfig(KafkaSource(Connection(bootstrap)), str(real_log["out"])), spark=spark)


def _real_rows(out, group):
    return [x for x in pq.read_table(f"{out}/commits").to_pylist() if x["group"] == group]


def test_scan_of_the_real_consumer_offsets(real_log, real_scan):
    """Invariant: `commits scan` of a real Kafka 4 `__consumer_offsets` decodes every offset
    commit (classic members, consumer-protocol members, a commit from outside any group,
    transactional commits) and its deletions, with no decoding error; the new record types
    of Kafka 4 (key versions 3-24: consumer, share, streams group records) are skipped and
    counted, never decoded as something else; each group's records are in its partition
    `abs(javaStringHashCode(group)) % 50`."""
    from offsetkeeper.offsetlog.decode import partition_for_group

    s, g, out = real_scan, real_log["groups"], real_log["out"]
    assert s.errors == 0, s.error_samples
    assert s.offset_commits >= 6 and s.offset_tombstones >= 1
    assert s.skipped == [], s.skipped
    kinds = s.coordinator_records
    assert {"consumer_group_metadata", "consumer_group_member_metadata",
            "consumer_group_target_assignment_metadata", "consumer_group_target_assignment_member",
            "consumer_group_current_member_assignment"} <= set(kinds), kinds
    assert "consumer_group_regular_expression" in kinds, kinds                 # the regex group
    assert {"share_group_metadata", "share_group_member_metadata",                 # the share group
            "share_group_current_member_assignment"} <= set(kinds), kinds
    assert real_log["topic"] in s.topic_names.values()
    coord = pq.read_table(f"{out}/coordinator").to_pylist()
    mine = [x for x in coord if x["group"] == g["consumer"]]
    assert {x["kind"] for x in mine} >= {"consumer_group_metadata", "consumer_group_member_metadata",
                                         "consumer_group_current_member_assignment"}
    assert {x["source_partition"] for x in mine} == {partition_for_group(g["consumer"], 50)}
    member = next(x for x in mine if x["kind"] == "consumer_group_member_metadata"
                  and not x["tombstone"])
    assert member["member_id"]
    assert json.loads(member["fields"])["subscribed_topic_names"] == [real_log["topic"]]
    # the deleted group: a tombstone for its group epoch record
    assert any(x["kind"] == "consumer_group_metadata" and x["tombstone"]
               for x in coord if x["group"] == g["gone"])
    got = {name: [(x["offset"], x["tombstone"]) for x in sorted(_real_rows(out, grp),
                                                                 key=lambda x: x["source_offset"])]
           for name, grp in g.items()}
    assert got == {"simple": [(2, False)], "classic": [(5, False)], "consumer": [(7, False)],
                   "gone": [(4, False), (None, True)], "tx": [(3, False), (6, False)],
                   "regex": [(8, False)], "share": []}
    for grp in (x for k, x in g.items() if k != "share"):
        assert {x["source_partition"] for x in _real_rows(out, grp)} == {partition_for_group(grp, 50)}
    # the classic group's metadata, decoded from the real bytes: its member and assignment
    rows = [r for r in pq.read_table(f"{out}/groups").to_pylist() if r["group"] == g["classic"]]
    members = [m for r in rows if not r["tombstone"] for m in r["members"] or []]
    assert members and all(m["subscribed_topics"] == [real_log["topic"]] for m in members)
    assert {p for m in members for a in m["assigned"] for p in a["partitions"]} == {0}


def test_generations_of_real_groups(real_log, real_scan, capsys, spark):
    """Invariant: `commits generations` shows a real classic group's rebalances with its member,
    and a consumer-protocol group's membership history: the member joined with its
    subscription, got its partition at a member epoch, and left; `--members` summarises it and
    `commits rebalances` counts its group epochs."""
    from offsetkeeper.offsetlog.analytics import Report, run_report

    g, out, topic = real_log["groups"], real_log["out"], real_log["topic"]
    r = run_cli(capsys, "commits", "generations", g["classic"], "-H", out, "-o", "json")
    assert r.code == 0, r.err
    assert any(x["subscribed"] == topic for x in r.json()), r.out
    r = run_cli(capsys, "commits", "generations", g["consumer"], "-H", out, "-o", "json")
    assert r.code == 0, r.err
    events = r.json()
    states = [x["state"] for x in events]
    # Kafka writes the member before the group epoch it bumps: joined, then the new epoch
    joined = events[0]
    assert joined["state"] == "joined"
    assert any(x.startswith("group epoch") and x.endswith("(consumer group, 1 member)")
               for x in states), states
    assert joined["subscribed"] == topic and joined["member"] and joined["client"]
    assert any(x["assigned"] == f"{topic}:0" and x["state"].startswith("member epoch")
               for x in events), states
    assert any(x["state"] == "left" and x["member"] == joined["member"] for x in events), states
    r = run_cli(capsys, "commits", "generations", g["consumer"], "-H", out, "--members", "-o", "json")
    assert r.code == 0, r.err
    [m] = r.json()
    assert m["member"] == joined["member"] and m["joined"] and m["left"]
    assert m["first_epoch"] >= 1 and m["subscribed"] == topic
    # a share group: the same membership history from its own record types
    r = run_cli(capsys, "commits", "generations", g["share"], "-H", out, "-o", "json")
    assert r.code == 0, r.err
    states = [x["state"] for x in r.json()]
    assert "joined" in states and "left" in states and \
        any(x.endswith("(share group, 1 member)") for x in states), states
    assert any(x["assigned"] == f"{topic}:0" for x in r.json()), r.out
    # a regex subscription shows as /regex/
    r = run_cli(capsys, "commits", "generations", g["regex"], "-H", out, "-o", "json")
    # (librdkafka sends the regex wrapped in parentheses)
    assert any(x["state"] == "joined" and x["subscribed"].startswith("/")
               and f"^{topic}" in x["subscribed"] for x in r.json()), r.out
    assert any(x["state"].startswith("regex /") and x["subscribed"] == topic
               for x in r.json()), r.out
    ex = run_report(Report.expired, str(out), group=g["gone"], spark=spark)
    assert [(x["group"], x["reason"]) for x in ex] == [
        (g["gone"], "offsets expired or deleted; group deleted")]     # its group-epoch tombstone
    rb = run_report(Report.rebalances, str(out), group=g["consumer"], spark=spark)
    assert sum(x["rebalances"] for x in rb) >= 2 and max(x["max_members"] for x in rb) == 1


def test_aborted_transactional_commits_never_show(real_log, real_scan, capsys):
    """Invariant: offsets sent to a transaction that was aborted are not commits: `commits
    show` lists only those of committed transactions and `commits at` replays to the last
    committed one (6, not the aborted 15)."""
    g, out = real_log["groups"]["tx"], real_log["out"]
    r = run_cli(capsys, "commits", "show", g, "-H", out, "-o", "json")
    assert r.code == 0, r.err
    assert [(x["offset"], x["change"]) for x in r.json()] == [(3, "first"), (6, "+3")]
    r = run_cli(capsys, "commits", "at", g, "-H", out, "-T", iso(real_log["done_ms"] + 1000), "-o", "json")
    assert r.code == 0, r.err
    assert [(x["partition"], x["offset"], x["status"]) for x in r.json()] == [(0, 6, "committed")]
    r = run_cli(capsys, "commits", "at", real_log["groups"]["gone"], "-H", out,
                "-T", iso(real_log["done_ms"] + 1000), "-o", "json")
    assert [(x["offset"], x["status"]) for x in r.json()] == [(None, "deleted")]


def test_scan_of_one_group_of_the_real_log_even_with_read_uncommitted_client_properties(
        real_log, bootstrap, tmp_path, capsys):
    """Invariant: `commits scan --group` reads only the group's partition of the real log, and
    reads it read_committed whatever the client properties say (a properties file shared with
    other tools may set isolation.level=read_uncommitted): aborted offset commits stay out."""
    from offsetkeeper.offsetlog.decode import partition_for_group

    g = real_log["groups"]["tx"]
    props = tmp_path / "client.properties"
    props.write_text("isolation.level=read_uncommitted\n")
    out = tmp_path / "h"
    r = run_cli(capsys, "commits", "scan", "-b", bootstrap, "--command-config", props, "--group", g,
                "--out", out, "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["source_partitions"] == [partition_for_group(g, 50)] and r.json()["errors"] == 0
    assert sorted(x["offset"] for x in _real_rows(out, g)) == [3, 6]
    assert {x["group"] for x in pq.read_table(f"{out}/commits").to_pylist()} == {g}


def test_a_commit_after_a_tombstone_is_not_a_rewind(spark, tmp_path):
    """Regression: `commits rewinds` compared a commit made after its partition's tombstone with
    the commit before the deletion and reported a rewind; a deletion starts afresh, as `commits
    show` labels that commit `first`."""
    import pyarrow as pa

    from offsetkeeper.offsetlog.analytics import Report, run_report
    from offsetkeeper.offsetlog.commit_history import group_commits, show_rows
    from offsetkeeper.offsetlog.scan import COMMIT_COLUMNS, ScanSummary

    def row(i, offset, tombstone=False, partition=0):
        return {"group": "g", "topic": "t", "partition": partition, "offset": offset,
                "leader_epoch": None, "metadata": None if tombstone else "",
                "commit_timestamp": None if tombstone else T0 + i, "expire_timestamp": None,
                "tombstone": tombstone, "key_version": 1, "value_version": None if tombstone else 3,
                "source_partition": 0, "source_offset": i, "record_timestamp": T0 + i}

    rows = [row(0, 50), row(1, None, tombstone=True), row(2, 10), row(3, 8),   # 8 < 10: a rewind
            row(4, 30, partition=1), row(5, 20, partition=1)]                  # a rewind
    (tmp_path / "commits").mkdir()
    schema = pa.schema([("group", pa.string()), ("topic", pa.string()), ("partition", pa.int32()),
                        ("offset", pa.int64()), ("leader_epoch", pa.int32()), ("metadata", pa.string()),
                        ("commit_timestamp", pa.int64()), ("expire_timestamp", pa.int64()),
                        ("tombstone", pa.bool_()), ("key_version", pa.int32()),
                        ("value_version", pa.int32()), ("source_partition", pa.int32()),
                        ("source_offset", pa.int64()), ("record_timestamp", pa.int64())])
    pq.write_table(pa.Table.from_pylist(rows, schema=schema).select(list(COMMIT_COLUMNS)),
                   tmp_path / "commits" / "part-0.parquet")
    (tmp_path / "scan.json").write_text(ScanSummary(
        source="test", scanned_at="", scanned_at_ms=0, group=None, source_partitions=None,
        records=len(rows), offset_commits=5, offset_tombstones=1, group_metadata=0,
        group_tombstones=0, skipped=[], errors=0, error_samples=[]).to_json())
    out = str(tmp_path)
    changes = [r["change"] for r in show_rows(group_commits(out, "g")) if r["partition"] == 0]
    assert changes == ["first", "deleted", "first", "REWIND -2"]
    rw = run_report(Report.rewinds, out, spark=spark)
    assert [(x["partition"], x["from_offset"], x["to_offset"]) for x in rw] == [(0, 10, 8), (1, 30, 20)]


def test_scan_reads_past_an_open_transaction_and_marks_its_commits_pending(
        bootstrap, unique, tmp_path, capsys, spark):
    """Invariant: an open transaction in a `__consumer_offsets` partition never hides the
    records after it. The scan read read_committed, which stops at the last stable offset, so
    a group that committed 10, then (after a transaction began) 11, showed only [10] with
    exit 0 — and a group whose only records were pending was "holds no records". Every record
    is shown; those past the open transaction's start are marked pending and are never a reset
    target (`commits at` replays to the last stable commit); after the abort a new scan shows
    the plain commits as plain and the aborted one not at all."""
    topic, g, only = unique("txscan"), unique("txg"), unique("txonly")
    create_topic(bootstrap, topic, 1)
    produce_n(bootstrap, topic, 1, 60)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": g, "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    deadline = time.monotonic() + 30
    while c.poll(0.2) is None or not c.assignment():
        assert time.monotonic() < deadline, "the consumer got no assignment"
    c.commit(offsets=[CkTP(topic, 0, 10)], asynchronous=False)
    # open for the whole test: Spark scans on a loaded machine take minutes (the default 60 s
    # transaction timeout aborted it under the test)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{g}",
                  "transaction.timeout.ms": 600_000})
    p.init_transactions(30)
    p.begin_transaction()
    p.send_offsets_to_transaction([CkTP(topic, 0, 50)], c.consumer_group_metadata(), 15)
    c.commit(offsets=[CkTP(topic, 0, 11)], asynchronous=False)
    # a group whose only record is a pending transactional commit
    c2 = Consumer({"bootstrap.servers": bootstrap, "group.id": only, "enable.auto.commit": False,
                   "auto.offset.reset": "earliest"})
    c2.subscribe([topic])
    while c2.poll(0.2) is None or not c2.assignment():
        assert time.monotonic() < deadline + 30, "the second consumer got no assignment"
    p2 = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"tx-{only}",
                   "transaction.timeout.ms": 600_000})
    p2.init_transactions(30)
    p2.begin_transaction()
    p2.send_offsets_to_transaction([CkTP(topic, 0, 7)], c2.consumer_group_metadata(), 15)
    try:
        out = tmp_path / "h"
        r = run_cli(capsys, "commits", "scan", "-b", bootstrap, "--group", g, "--out", out)
        assert r.code == 0, r.err
        assert "follow an open transaction" in r.err, r.err
        r = run_cli(capsys, "commits", "show", g, "-H", out, "-o", "json")
        assert r.code == 0, r.err
        assert [(x["offset"], x["change"], x["pending"]) for x in r.json()] == \
            [(10, "first", False), (50, "pending +40", True), (11, "pending +1", True)]
        r = run_cli(capsys, "commits", "at", g, "-H", out, "-T", iso(int(time.time() * 1000) + 60_000),
                    "-o", "json")
        assert [(x["offset"], x["status"].split()[0]) for x in r.json()] == \
            [(10, "committed"), (11, "pending")]

        out2 = tmp_path / "h2"
        r = run_cli(capsys, "commits", "scan", "-b", bootstrap, "--group", only, "--out", out2)
        assert r.code == 0 and "holds no records" not in r.err, r.err
        r = run_cli(capsys, "commits", "show", only, "-H", out2, "-o", "json")
        assert [(x["offset"], x["pending"]) for x in r.json()] == [(7, True)]
        # never a reset target: nothing stable to replay
        r = run_cli(capsys, "offsets", "reset", "-g", only, "--all-topics", "--to-commit-time",
                    iso(int(time.time() * 1000) + 60_000), "--commit-history", out2,
                    "-b", bootstrap)
        assert r.code != 0 and "had no committed offsets" in r.err, r.err
    finally:
        p.abort_transaction(30)
        p2.abort_transaction(30)
        c.close()
        c2.close()
    out3 = tmp_path / "h3"
    r = run_cli(capsys, "commits", "scan", "-b", bootstrap, "--group", g, "--out", out3)
    assert r.code == 0, r.err
    r = run_cli(capsys, "commits", "show", g, "-H", out3, "-o", "json")
    assert [(x["offset"], x["change"], x["pending"]) for x in r.json()] == \
        [(10, "first", False), (11, "+1", False)]
