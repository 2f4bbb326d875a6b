"""Faults on a three-node Apache Kafka cluster: a node (group coordinator or partition leader)
is SIGKILLed in the middle of work. Nothing is lost or duplicated, every group and partition is
reported as it really ended, a rerun converges, and long-running parts keep running.

All tests share the session's three-node cluster (`prod3`); each restarts what it killed.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from offsetkeeper import devbroker
from offsetkeeper.config import Connection
from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.models import TopicPartition
from tests.cli import run_cli
from tests.kafkatools import committed, create_topic, produce_n

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def _node_of(coordinator: str) -> int:
    """Node id from GroupInfo.coordinator ("host:port (id)")."""
    m = re.search(r"\((\d+)\)$", coordinator)
    assert m, coordinator
    return int(m.group(1))


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    from confluent_kafka.admin import AdminClient

    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
    return {p: m.leader for p, m in md.topics[topic].partitions.items()}


@pytest.fixture
def restore_nodes(prod3):
    """Restart every node a test killed, so the next test finds three nodes."""
    _, data = prod3
    yield
    for node in (1, 2, 3):
        devbroker.restart_node(data, node)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not devbroker.status(data).running:
        time.sleep(0.5)


def test_bulk_reset_with_the_coordinator_killed_reports_truly_and_a_rerun_converges(
        capsys, prod3, restore_nodes, unique, tmp_path):
    """Invariant: SIGKILL of a group coordinator in the middle of a 300-group bulk reset never
    reports a group as changed that is not at its target; groups that failed are named; a rerun
    after the node is back brings every group to its target (exit 0). A kill that lands while
    the run still reads the groups (plan, snapshot: before any change) ends it with exit 1 and
    an error naming the group whose read failed, and changes nothing."""
    bootstrap, data = prod3
    topic = unique("fault-bulk")
    create_topic(bootstrap, topic, 3)
    produce_n(bootstrap, topic, 3, 10)
    groups = [unique("fb") for _ in range(300)]
    with KafkaAdmin(Connection(bootstrap)) as admin:
        futs = [(g, admin.alter_offsets_async(g, {TopicPartition(topic, p): 2 for p in range(3)}))
                for g in groups]
        for g, f in futs:
            assert all(e is None for e in admin.alter_result(g, f).values())
        victim = _node_of(admin.describe_groups([groups[150]])[groups[150]].coordinator)
    args = ["offsets", "reset", "-b", bootstrap, *[a for g in groups for a in ("-g", g)],
            "-t", topic, "--to-latest", "--execute", "--max-concurrent", "8",
            "--snapshot-store", str(tmp_path), "-o", "json"]
    killer = threading.Timer(1.0, devbroker.kill_node, args=(data, victim))
    killer.start()
    # a process of its own, as an operator runs it: see the SIGSEGV branch below
    r = subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", *args],
                       capture_output=True, text=True, check=False, timeout=300)
    killer.join()
    crashed = r.returncode == -signal.SIGSEGV
    # the command starts fast enough that the kill often lands in its reads
    before_any_change = r.returncode == 1 and not r.stdout
    if before_any_change:
        assert "error: " in r.stderr and any(g in r.stderr for g in groups), r.stderr
    elif not crashed:
        assert r.returncode in (0, 1) and r.stdout, r.stderr
        report = json.loads(r.stdout)["report"]
        assert report["groups_total"] == 300
        statuses = {g["group"]: g["status"] for g in report["groups"]}
        assert set(statuses) == set(groups)
    devbroker.restart_node(data, victim)
    for g in groups:
        got = committed(bootstrap, g, topic, 3, isolated=True)
        if before_any_change:
            assert got == {0: 2, 1: 2, 2: 2}, (g, got)
        elif not crashed and statuses[g] == "success":
            assert got == {0: 10, 1: 10, 2: 10}, (g, got)
        else:
            assert set(got.values()) <= {2, 10}, (g, got)
    rerun = run_cli(capsys, *args)
    assert rerun.code == 0, rerun.err
    for g in groups:
        assert committed(bootstrap, g, topic, 3, isolated=True) == {0: 10, 1: 10, 2: 10}, g
    if crashed:
        # librdkafka #5040 (open): an admin client's OffsetFetch answered NOT_COORDINATOR
        # dereferences a consumer-group handle it does not have. offsetkeeper asks the
        # coordinator first (KafkaAdmin.committed_offsets_each), which leaves a window of
        # milliseconds during a coordinator failover; docs/kafka.md records it.
        pytest.xfail("the reset process hit librdkafka #5040 (SIGSEGV) during the failover; "
                     "the cluster was consistent and the rerun converged")


def test_log_offsets_are_read_while_a_partition_leader_is_down(prod3, restore_nodes, unique):
    """Invariant: with the leader of a partition SIGKILLed, log start/end are read from the new
    leader (no -1001 passed off as an offset, no error once leadership moved)."""
    bootstrap, data = prod3
    topic = unique("fault-wm")
    create_topic(bootstrap, topic, 3)
    produce_n(bootstrap, topic, 3, 7)
    leader = _leaders(bootstrap, topic)[0]
    devbroker.kill_node(data, leader)
    with KafkaAdmin(Connection(bootstrap)) as admin:
        wm = admin.watermarks([TopicPartition(topic, p) for p in range(3)])
    assert {tp.partition: (w.low, w.high) for tp, w in wm.items()} == {p: (0, 7) for p in range(3)}
    assert _leaders(bootstrap, topic)[0] != leader


def test_log_offsets_of_an_offline_partition_wait_for_its_leader(prod3, restore_nodes, unique):
    """Invariant: a partition with no leader at all (its only replica's broker is down) is not
    reported as an unknown topic (librdkafka says "No leaders found", _NOENT, for both): the
    read waits for a leader, and if none comes within the timeout says the partition is
    offline."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from offsetkeeper.errors import KafkaOperationError, UnknownTopicError

    bootstrap, data = prod3
    topic = unique("fault-offline")
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(topic, 1, replica_assignment=[[2]])])[topic].result(15)
    deadline = time.monotonic() + 15
    while _leaders(bootstrap, topic).get(0, -1) != 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    produce_n(bootstrap, topic, 1, 5)
    devbroker.kill_node(data, 2)
    tp = TopicPartition(topic, 0)
    with KafkaAdmin(Connection(bootstrap), timeout=2) as admin, \
            pytest.raises(KafkaOperationError) as info:
        admin.watermarks([tp])
    assert not isinstance(info.value, UnknownTopicError)
    assert f"{topic}:0: the partition has no leader (offline: its leader" in str(info.value)
    got: list = []

    def read() -> None:
        try:
            with KafkaAdmin(Connection(bootstrap)) as admin:
                got.append(admin.watermarks([tp]))
        except Exception as exc:  # asserted below
            got.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(2)
    # restarted from this thread: a tied node dies with the thread that started it
    devbroker.restart_node(data, 2)
    reader.join()
    assert [(w[tp].low, w[tp].high) if isinstance(w, dict) else w for w in got] == [(0, 5)]
    with KafkaAdmin(Connection(bootstrap), timeout=2) as admin, pytest.raises(UnknownTopicError):
        admin.watermarks([TopicPartition(unique("fault-none"), 0)])


def test_sampler_keeps_running_through_a_coordinator_crash(prod3, restore_nodes, unique, tmp_path):
    """Invariant: `history record`'s sampler survives SIGKILL of its group's coordinator (no
    crash: its group reads go to the Java client, see docs/kafka.md on librdkafka #5040), records what it missed as failed cycles or a gap, and
    samples the right offsets again once the coordinator moved."""
    from offsetkeeper.history.sample_cycle import SampleScope
    from offsetkeeper.history.sampler import Sampler, SamplerConfig
    from offsetkeeper.history.store import open_store

    bootstrap, data = prod3
    topic, group = unique("fault-h"), unique("fh")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    store = open_store(str(tmp_path / "h.db"))
    outcomes: list = []
    stop = threading.Event()
    # as `history record` builds it: a daemon facade (group reads through the Java client)
    with KafkaAdmin(Connection(bootstrap), timeout=3, daemon=True) as admin:
        admin.alter_result(group, admin.alter_offsets_async(
            group, {TopicPartition(topic, 0): 3, TopicPartition(topic, 1): 4}))
        victim = _node_of(admin.describe_groups([group])[group].coordinator)
        sampler = Sampler(admin, store, SamplerConfig(scope=SampleScope(groups=(group,)),
                                                      interval_ms=300))
        t = threading.Thread(target=sampler.run, args=(stop,), kwargs={"on_cycle": outcomes.append})
        t.start()
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and sum(o.ok for o in outcomes) < 2:
                time.sleep(0.1)
            devbroker.kill_node(data, victim)
            killed_at = len(outcomes)
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and sum(o.ok for o in outcomes[killed_at:]) < 3:
                time.sleep(0.2)
            assert t.is_alive()
        finally:
            stop.set()
            t.join(60)
    assert not t.is_alive()
    assert sum(o.ok for o in outcomes[killed_at:]) >= 3
    latest = {(s.topic, s.partition): s.committed for s in store.latest(group)}
    assert latest == {(topic, 0): 3, (topic, 1): 4}


def test_consumer_library_loses_nothing_when_its_coordinator_is_killed(prod3, restore_nodes, unique):
    """Invariant: an OffsetConsumer (BATCH policy) whose group coordinator is SIGKILLed
    mid-stream processes every record at least once and ends with the group committed at the
    log end: nothing lost."""
    from offsetkeeper.consumer import CommitPolicy, OffsetConsumer

    bootstrap, data = prod3
    topic, group = unique("fault-c"), unique("fc")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 300)
    seen: set[tuple[int, int]] = set()
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 10000}
    killed = False
    with OffsetConsumer(conf, [topic], policy=CommitPolicy.batch(),
                        auto_offset_reset="earliest") as consumer:
        deadline = time.monotonic() + 120
        while len(seen) < 600 and time.monotonic() < deadline:
            for msg in consumer.poll(1.0):
                seen.add((msg.partition(), msg.offset()))
            if not killed and len(seen) >= 100:
                with KafkaAdmin(Connection(bootstrap)) as admin:
                    victim = _node_of(admin.describe_groups([group])[group].coordinator)
                devbroker.kill_node(data, victim)
                killed = True
        consumer.poll(0.5)  # the last poll's records are processed: BATCH commits them
        consumer.commit()
    assert killed
    assert seen == {(p, o) for p in range(2) for o in range(300)}
    assert committed(bootstrap, group, topic, 2, isolated=True) == {0: 300, 1: 300}


# The backup of the test below runs in a process of its own (its driver's Kafka reads use
# librdkafka, which can abort the process when a node dies under a request: #4605, #5040; a CI
# run lost a pytest worker so). It starts its Spark session, says "ready", waits for "go".
_BACKUP_CHILD = """
import json, sys
from offsetkeeper.backup.config import BackupConfig
from offsetkeeper.backup.run import run_backup
from offsetkeeper.config import Connection
from offsetkeeper.errors import OffsetkeeperError
from offsetkeeper.spark.session import get_spark

bootstrap, topic, dest = sys.argv[1:4]
spark = get_spark("local[2]")
print("ready", flush=True)
sys.stdin.readline()
config = BackupConfig(connection=Connection(bootstrap), include=(topic,), destination=dest,
                      backup_id="b1")
try:
    run_backup(config, spark=spark)
except OffsetkeeperError as exc:
    print("error " + json.dumps(str(exc)), flush=True)
    sys.exit(3)
print("done", flush=True)
"""


def _line_of(proc: subprocess.Popen, timeout: float) -> str:
    """The child's next stdout line, or "" when it ended or said nothing within `timeout`."""
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return got[0].strip() if got else ""


@pytest.mark.spark
def test_backup_with_a_partition_leader_killed_is_exact(prod3, restore_nodes, spark, unique,
                                                        tmp_path):
    """Invariant: a backup whose partition leader is SIGKILLed while it reads holds exactly
    the records an independent consumer reads afterwards (nothing lost, nothing twice); a run
    that failed or died on the way is run again and then holds exactly those records."""
    from backup_support import independent_read, rows_of
    from offsetkeeper.backup.config import BackupConfig
    from offsetkeeper.backup.manifest import read_backup_records
    from offsetkeeper.backup.run import run_backup

    bootstrap, data = prod3
    topic = unique("fault-bk")
    create_topic(bootstrap, topic, 3)
    produce_n(bootstrap, topic, 3, 4000)
    victim = _leaders(bootstrap, topic)[0]
    dest = str(tmp_path / "bk")
    child = subprocess.Popen([sys.executable, "-c", _BACKUP_CHILD, bootstrap, topic, dest],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    killer = threading.Timer(0.5, devbroker.kill_node, args=(data, victim))
    try:
        # the timeouts only turn a hang into a failure: a Spark session starts in seconds
        assert _line_of(child, 300) == "ready", "the backup process did not start its session"
        killer.start()
        child.stdin.write("go\n")
        child.stdin.flush()
        out, _ = child.communicate(timeout=600)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(30)
    killer.join()
    crashed = child.returncode < 0
    if child.returncode == 3:
        # killed while planning (a request to the dying node timed out): the run says so in one
        # line, records nothing, and the rerun is the whole backup
        [said] = [line for line in out.splitlines() if line.startswith("error ")]
        assert "\n" not in json.loads(said[len("error "):])
    elif not crashed:
        assert child.returncode == 0 and "done" in out, (child.returncode, out)
    if child.returncode != 0:
        config = BackupConfig(connection=Connection(bootstrap), include=(topic,),
                              destination=dest, backup_id="b1")
        run_backup(config, spark=spark)
    backed_up = rows_of(read_backup_records(spark, dest, "b1").where(f"topic = '{topic}'"))
    assert backed_up == independent_read(bootstrap, topic, 3)
    assert len(backed_up) == 12000
    if crashed:
        pytest.xfail(f"the backup process died by signal {-child.returncode} while the leader "
                     "was killed (librdkafka #4605/#5040); the rerun backed up every record once")


@pytest.mark.spark
def test_restore_with_a_target_leader_killed_keeps_the_mapping_exact(prod3, restore_nodes, spark,
                                                                    unique, tmp_path):
    """Invariant: a restore into a cluster that loses a node mid-run writes every record once,
    in source order, and its offset mapping names exactly the target offsets written."""
    from offsetkeeper.errors import RestoreWriteError
    from offsetkeeper.restore.config import RestoreOptions
    from offsetkeeper.restore.mapping import mapping_root_for, partition_mappings, read_mapping
    from offsetkeeper.restore.run import run_restore
    from restore_support import consume_all, rec, write_backup

    bootstrap, data = prod3
    topic, target, bid = unique("fault-src"), unique("fault-dst"), unique("b")
    src = {p: [rec(2 * i, 1_700_000_000_000 + i, f"k{p}-{i}".encode(), f"v{p}-{i}".encode())
               for i in range(1500)] for p in range(3)}
    write_backup(str(tmp_path), bid, {topic: src}, configs={topic: {"retention.ms": "-1"}})
    killer = threading.Timer(3.0, devbroker.kill_node, args=(data, 2))
    killer.start()
    opts = RestoreOptions(str(tmp_path), bid, Connection(bootstrap), restore_id="r1",
                          rename={topic: target}, chunk_records=50)
    try:
        res = run_restore(opts, spark=spark)
        assert res.records == 4500
    except RestoreWriteError as exc:
        # a task may still fail in the failover: it says so per partition and how to continue;
        # the rerun resumes from the mapping written so far
        assert "rerun with --restore-id r1" in str(exc)
        run_restore(opts, spark=spark)
    killer.join()
    got = consume_all(bootstrap, target, [0, 1, 2])
    maps = partition_mappings(read_mapping(mapping_root_for(str(tmp_path), bid, "r1")))
    for p in range(3):
        assert [m.value() for m in got[p]] == [r["value"] for r in src[p]]
        m = maps[TopicPartition(topic, p)]
        assert list(m.source_offsets) == [r["offset"] for r in src[p]]
        assert list(m.target_offsets) == [x.offset() for x in got[p]]


def test_exporter_keeps_serving_through_a_coordinator_crash(prod3, restore_nodes, unique):
    """Invariant: the exporter's HTTP endpoint answers every scrape while its group's
    coordinator is SIGKILLed, says whether its latest cycle reached the cluster
    (offsetkeeper_sampler_up), and serves the group's true offsets again once the coordinator
    moved."""
    import urllib.request

    from offsetkeeper.history.sample_cycle import SampleScope
    from offsetkeeper.history.sampler import SamplerConfig
    from offsetkeeper.history.service import record

    bootstrap, data = prod3
    topic, group = unique("fault-x"), unique("fx")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    with KafkaAdmin(Connection(bootstrap)) as admin:
        admin.alter_result(group, admin.alter_offsets_async(
            group, {TopicPartition(topic, 0): 4, TopicPartition(topic, 1): 10}))
        victim = _node_of(admin.describe_groups([group])[group].coordinator)
    servers: list = []
    stop = threading.Event()
    cfg = SamplerConfig(scope=SampleScope(groups=(group,)), interval_ms=300, window=3)
    t = threading.Thread(target=record, args=(Connection(bootstrap, name="prod3"), "memory://", cfg),
                         kwargs={"listen": "127.0.0.1:0", "stop": stop, "on_ready": servers.append})
    t.start()

    def offset(text: str) -> float | None:
        return _metric(text, "kafka_consumergroup_group_offset", group=group, topic=topic,
                       partition="0")

    def up(text: str) -> float | None:
        return _metric(text, "offsetkeeper_sampler_up", cluster_name="prod3")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not servers:
            time.sleep(0.1)
        url = f"http://127.0.0.1:{servers[0].port}/metrics"

        def scrape() -> str:
            return urllib.request.urlopen(url, timeout=10).read().decode()

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and offset(scrape()) is None:
            time.sleep(0.2)
        assert offset(scrape()) == 4.0
        devbroker.kill_node(data, victim)
        answered = 0
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:  # every scrape during the failover is answered
            assert up(scrape()) is not None
            answered += 1
            time.sleep(0.5)
        deadline = time.monotonic() + 90
        text = scrape()
        while time.monotonic() < deadline and not (up(text) == 1.0 and offset(text) == 4.0):
            time.sleep(0.5)
            text = scrape()
        assert t.is_alive()
    finally:
        stop.set()
        t.join(60)
    assert answered >= 10
    assert up(text) == 1.0 and offset(text) == 4.0, text


def _metric(text: str, name: str, **labels: str) -> float | None:
    """The value of the sample `name` whose labels include `labels` (None when absent)."""
    from prometheus_client.parser import text_string_to_metric_families

    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return None


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_streaming_commit_to_group_rides_out_a_coordinator_crash(spark, prod3, restore_nodes,
                                                                 unique, tmp_path):
    """Invariant: with the group's coordinator SIGKILLed while a streaming query commits its
    progress to the group (commitToGroup), the query keeps running (its checkpoint is the truth),
    the group's committed offsets never pass what the query's committed batches read, and once
    the coordinator moved the group reaches the query's position: lag 0, nothing skipped."""
    from kafkatools import commit
    from offsetkeeper.spark.kafka import SOURCE_NAME, register
    from offsetkeeper.streaming.view import load_view

    bootstrap, data = prod3
    topic, group = unique("fault-stream"), unique("fault-sg")
    create_topic(bootstrap, topic, 3)
    produce_n(bootstrap, topic, 3, 1000)
    commit(bootstrap, group, {(topic, p): 0 for p in range(3)})  # so the group has a coordinator
    with KafkaAdmin(Connection(bootstrap)) as admin:
        victim = _node_of(admin.describe_groups([group])[group].coordinator)
    register(spark)
    ck, out = str(tmp_path / "ck"), str(tmp_path / "out")
    q = (spark.readStream.format(SOURCE_NAME).option("kafka.bootstrap.servers", bootstrap)
         .option("subscribe", topic).option("startingOffsets", "earliest")
         .option("maxOffsetsPerTrigger", "150").option("commitToGroup", group)
         .option("commitToGroupMaxFailures", "0").load()
         .select("partition", "offset", "value").writeStream.format("parquet").option("path", out)
         .option("checkpointLocation", ck).trigger(processingTime="500 milliseconds").start())

    def position() -> dict[int, int]:
        try:
            return {tp.partition: o for tp, o in load_view(ck).committed_offsets.items()}
        except OffsetkeeperError:
            return {}  # no committed batch yet

    def never_ahead() -> dict[int, int]:
        got = committed(bootstrap, group, topic, 3, isolated=True)  # the group first: the checkpoint only grows
        pos = position()
        assert all(o <= pos.get(p, 0) for p, o in got.items() if o >= 0), (got, pos)
        return got

    try:
        deadline = time.monotonic() + 180
        while sum(position().values()) < 450 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert sum(position().values()) >= 450, "the query made no progress before the fault"
        devbroker.kill_node(data, victim)
        deadline = time.monotonic() + 300
        while position() != {0: 1000, 1: 1000, 2: 1000} and time.monotonic() < deadline:
            never_ahead()
            assert q.exception() is None
            time.sleep(1)
        assert position() == {0: 1000, 1: 1000, 2: 1000} and q.isActive
        devbroker.restart_node(data, victim)
        deadline = time.monotonic() + 120
        while never_ahead() != {0: 1000, 1: 1000, 2: 1000} and time.monotonic() < deadline:
            time.sleep(1)
        assert never_ahead() == {0: 1000, 1: 1000, 2: 1000}
        assert q.isActive and q.exception() is None
    finally:
        q.stop()
    rows = spark.read.parquet(out).select("partition", "offset").collect()
    assert len(rows) == 3000 and len({(r[0], r[1]) for r in rows}) == 3000
