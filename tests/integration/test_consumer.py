"""offsetkeeper.consumer against the real broker: policies, acks, rebalances, reset, stores.

Every commit is checked with an independent client (tests/kafkatools.committed)."""

from __future__ import annotations

import threading
import time

import pytest

from kafkatools import committed, create_topic, produce_n
from offsetkeeper.consumer import CommitPolicy, OffsetConsumer, open_store
from offsetkeeper.errors import NoCommittedOffset, PartitionNotAssignedError
from offsetkeeper.models import TopicPartition

pytestmark = pytest.mark.integration


def _conf(bootstrap, group, **extra):
    return {"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 500, **extra}


def _poll_until(c: OffsetConsumer, n: int, timeout: float = 20) -> list:
    got, deadline = [], time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got.extend(c.poll(0.2))
    return got


@pytest.fixture
def topic1(bootstrap, unique):
    t = unique("cons")
    create_topic(bootstrap, t, 1)
    produce_n(bootstrap, t, 1, 30)
    return t


def test_batch_commits_when_the_previous_poll_is_processed(bootstrap, unique, topic1):
    g = unique("g")
    with OffsetConsumer(_conf(bootstrap, g), [topic1], policy=CommitPolicy.batch(),
                        auto_offset_reset="earliest", max_poll_records=10, live_reset=False) as c:
        first = _poll_until(c, 1)
        assert committed(bootstrap, g, topic1, 1)[0] < 0  # nothing processed yet
        c.poll(0.5)
        assert committed(bootstrap, g, topic1, 1)[0] == first[-1].offset() + 1
        assert c.metrics().commits == 1


def test_record_commits_after_each_record(bootstrap, unique, topic1):
    g = unique("g")
    seen = []
    with OffsetConsumer(_conf(bootstrap, g), [topic1], policy=CommitPolicy.record(),
                        auto_offset_reset="earliest", live_reset=False) as c:
        for m in c.records(0.2):
            seen.append((m.offset(), committed(bootstrap, g, topic1, 1)[0]))
            if len(seen) == 4:
                break
    # while record N is processed, records 0..N-1 are committed
    assert seen == [(0, -1001), (1, 1), (2, 2), (3, 3)]


def test_manual_out_of_order_acks_commit_the_contiguous_prefix(bootstrap, unique, topic1):
    """Invariant: a record still in flight holds back every later offset."""
    g = unique("g")
    with OffsetConsumer(_conf(bootstrap, g), [topic1], policy=CommitPolicy.manual(),
                        auto_offset_reset="earliest", max_poll_records=10, live_reset=False) as c:
        batch = _poll_until(c, 10)[:10]
        done = threading.Event()

        def worker():  # acks from another thread, out of order
            for i in (4, 0, 1, 3):
                c.ack(batch[i])
            done.set()

        threading.Thread(target=worker).start()
        done.wait(5)
        c.poll(0.2)
        assert committed(bootstrap, g, topic1, 1)[0] == 2
        c.ack(batch[2])
        c.poll(0.2)
        assert committed(bootstrap, g, topic1, 1)[0] == 5


def test_nack_delivers_the_record_again(bootstrap, unique, topic1):
    g = unique("g")
    offsets = []
    with OffsetConsumer(_conf(bootstrap, g), [topic1], policy=CommitPolicy.manual(immediate=True),
                        auto_offset_reset="earliest", live_reset=False) as c:
        nacked = False
        for m in c.records(0.2):
            offsets.append(m.offset())
            if m.offset() == 3 and not nacked:
                nacked = True
                c.nack(m)
                continue
            c.ack(m)
            if len(offsets) == 6:
                break
        assert committed(bootstrap, g, topic1, 1)[0] == 5
    assert offsets == [0, 1, 2, 3, 3, 4]


def test_auto_offset_reset_none_raises_naming_group_and_partition(bootstrap, unique, topic1):
    g = unique("g")
    with OffsetConsumer(_conf(bootstrap, g), [topic1], auto_offset_reset="none",
                        live_reset=False) as c, pytest.raises(NoCommittedOffset) as exc:
        _poll_until(c, 1, timeout=10)
    assert exc.value.group == g and exc.value.partition == 0
    assert g in str(exc.value) and f"{topic1}:0" in str(exc.value)


def test_auto_offset_reset_none_resumes_from_a_commit(bootstrap, unique, topic1):
    from kafkatools import commit

    g = unique("g")
    commit(bootstrap, g, {(topic1, 0): 25})
    with OffsetConsumer(_conf(bootstrap, g), [topic1], auto_offset_reset="none",
                        live_reset=False) as c:
        assert _poll_until(c, 1)[0].offset() == 25


def test_commit_of_a_partition_not_owned_is_refused(bootstrap, unique, topic1):
    g = unique("g")
    with OffsetConsumer(_conf(bootstrap, g), [topic1], policy=CommitPolicy.manual(),
                        auto_offset_reset="earliest", live_reset=False) as c:
        _poll_until(c, 1)
        with pytest.raises(PartitionNotAssignedError, match=f"{topic1}:7"):
            c.commit({TopicPartition(topic1, 7): 3})
        c.commit({TopicPartition(topic1, 0): 3})
        assert committed(bootstrap, g, topic1, 1)[0] == 3


def test_async_commit_reports_to_the_callback(bootstrap, unique, topic1):
    g = unique("g")
    results = []
    with OffsetConsumer(_conf(bootstrap, g), [topic1], policy=CommitPolicy.batch(asynchronous=True),
                        auto_offset_reset="earliest", max_poll_records=10, on_commit=results.append,
                        live_reset=False) as c:
        _poll_until(c, 10)
        c.poll(0.2)
        deadline = time.monotonic() + 5
        while not results and time.monotonic() < deadline:
            c.poll(0.1)
    assert results and results[0].ok and results[0].asynchronous
    assert results[0].offsets == {TopicPartition(topic1, 0): 10}


def test_poll_returns_the_records_there_are_without_waiting_for_a_full_batch(bootstrap, unique):
    """Invariant (liveness): poll(timeout) hands out the records there are as soon as there are
    any, as Kafka's poll does, not after waiting for max_poll_records of them: with a one-hour
    timeout and 3 records on the topic, each poll returns (librdkafka's consume(n, timeout)
    alone would wait the hour for the 500th record)."""
    t, g = unique("cons-few"), unique("g")
    create_topic(bootstrap, t, 1)
    with OffsetConsumer(_conf(bootstrap, g), [t], policy=CommitPolicy.batch(),
                        auto_offset_reset="earliest", live_reset=False) as c:
        assert _poll_until(c, 0, timeout=0) == []
        produce_n(bootstrap, t, 1, 3)
        got: list = []
        th = threading.Thread(target=lambda: got.extend(c.poll(3600)), daemon=True)
        th.start()
        th.join(120)
        assert not th.is_alive(), "poll(3600) held 3 available records back"
        got.extend(_poll_until(c, 3 - len(got)))  # a fetch may bring them in two parts
        assert [m.offset() for m in got] == [0, 1, 2]


class _Polling:
    """Polls an OffsetConsumer in its own thread, as an application would."""

    def __init__(self, c: OffsetConsumer) -> None:
        self.c, self.stop = c, threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.c.poll(0.1)

    def close(self) -> None:
        if not self.stop.is_set():
            self.stop.set()
            self.t.join(20)
            self.c.close()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_revoke_commits_acknowledged_offsets(bootstrap, unique, strategy):
    """Invariant: on revoke, what was acknowledged is committed synchronously, even when the
    policy's own commit point (here TIME, 1 hour) has not come; the partitions move to the
    other member, which continues from there."""
    t, g = unique("reb"), unique("g")
    create_topic(bootstrap, t, 4)
    conf = _conf(bootstrap, g, **{"partition.assignment.strategy": strategy})
    commits: list = []
    revoked_b: list = []
    a = OffsetConsumer(conf, [t], policy=CommitPolicy.time(3600), auto_offset_reset="earliest",
                       live_reset=False)
    b = OffsetConsumer(conf, [t], policy=CommitPolicy.time(3600), auto_offset_reset="earliest",
                       on_revoke=revoked_b.extend, on_commit=commits.append, live_reset=False)
    pa, pb = _Polling(a), _Polling(b)
    try:
        # records only once both members hold partitions: B then has processed, uncommitted
        # records when it leaves (had it read everything before A joined, the join's revoke
        # would have committed them and B's own revoke would find nothing to commit)
        assert _wait_for(lambda: a.assignment() and b.assignment()
                         and len(a.assignment()) + len(b.assignment()) == 4)
        produce_n(bootstrap, t, 4, 20)
        assert _wait_for(lambda: a.metrics().processed + b.metrics().processed == 80)
        # TIME (1 hour) has not committed; a revoke when B joined may have (Kafka 3.9 revokes
        # A's partitions when B joins a moment after A's first assignment)
        assert all(r.reason == "revoke" for r in commits)
        revokes_before = len([r for r in commits if r.reason == "revoke"])
        owned_b = {tp.partition for tp in b.assignment()}
        pb.stop.set()
        pb.t.join(10)
        # B may have been revoked before, in the join rebalance (eager range revokes all)
        revoked_b.clear()
        b.kafka.unsubscribe()  # B gives its partitions up: a revoke
        assert _wait_for(lambda: (b.poll(0.1) or True) and not b.assignment())
        assert {tp.partition for tp in revoked_b} == owned_b
        assert _wait_for(lambda: len(a.assignment()) == 4)
        at_revoke = [r for r in commits if r.reason == "revoke"][revokes_before:]
        assert at_revoke and {tp.partition for tp in at_revoke[0].offsets} == owned_b
        after = committed(bootstrap, g, t, 4)
        # Apache Kafka accepts commits of the current generation while the group rebalances
        assert at_revoke[0].ok, at_revoke[0].error
        assert all(after[p] == 20 for p in owned_b), after
    finally:
        pa.close()
        pb.stop.set()
        b.close()


def _wait_for(pred, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_store_transaction_commits_results_and_offsets_together(bootstrap, unique, topic1, tmp_path,
                                                                kind, request):
    url = str(tmp_path / "offsets.db") if kind == "sqlite" else request.getfixturevalue("postgres_url")
    g = unique("g")
    table = f"results_{g.replace('-', '_')}"
    ph = "?" if kind == "sqlite" else "%s"
    with OffsetConsumer(_conf(bootstrap, g), [topic1], store=url, auto_offset_reset="earliest",
                        live_reset=False) as c:
        with c.transaction() as tx:
            tx.execute(f"CREATE TABLE {table} (n INTEGER)")
        for m in c.records(0.2):
            with c.transaction() as tx:
                tx.execute(f"INSERT INTO {table} (n) VALUES ({ph})", (m.offset(),))
                tx.ack(m)
            if m.offset() == 9:
                break
        with pytest.raises(RuntimeError), c.transaction() as tx:  # rolled back and rewound
            m = next(c.records(0.2))
            tx.execute(f"INSERT INTO {table} (n) VALUES ({ph})", (m.offset(),))
            tx.ack(m)
            raise RuntimeError("application failure")
        assert c.metrics().commits == 10  # one per record (CREATE TABLE had no offsets)
    # No Kafka commit without the mirror: the store is the truth.
    assert committed(bootstrap, g, topic1, 1)[0] < 0
    store = open_store(url)
    assert store.load(g) == {TopicPartition(topic1, 0): 10}
    store.close()
    # A new consumer seeks to the stored offset on assignment.
    with OffsetConsumer(_conf(bootstrap, g), [topic1], store=url, auto_offset_reset="earliest",
                        mirror_to_kafka=True, live_reset=False) as c:
        m = next(c.records(0.2))
        assert m.offset() == 10
        with c.transaction() as tx:
            tx.execute(f"INSERT INTO {table} (n) VALUES ({ph})", (m.offset(),))
            tx.ack(m)
        c.poll(0.5)  # serves the mirror commit
    assert committed(bootstrap, g, topic1, 1)[0] == 11


def _kip848(bootstrap, group, **extra):
    """A consumer-protocol (KIP-848) config: session and heartbeat times are the group's,
    librdkafka refuses them (and partition.assignment.strategy) client-side."""
    return {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer", **extra}


def test_consumer_protocol_rebalances_incrementally_and_commits_on_revoke(bootstrap, unique):
    """Invariant (group.protocol=consumer): members join and leave with incremental assignment —
    a joining member takes partitions from the first without revoking the rest, a leaving
    member commits what it acknowledged (policy TIME, 1 hour, never due) synchronously in its
    revoke callback, the broker accepts that commit, and its partitions move to the other
    member, which continues from there; on close everything processed is committed."""
    t, g = unique("kip848"), unique("g")
    create_topic(bootstrap, t, 4)
    events: list[tuple[str, frozenset[int]]] = []
    commits_b: list = []

    def on(name):
        return lambda tps: events.append((name, frozenset(tp.partition for tp in tps)))

    a = OffsetConsumer(_kip848(bootstrap, g), [t], policy=CommitPolicy.time(3600),
                       auto_offset_reset="earliest", live_reset=False,
                       on_assign=on("a+"), on_revoke=on("a-"))
    pa = _Polling(a)
    b = pb = None
    try:
        assert _wait_for(lambda: len(a.assignment()) == 4)
        b = OffsetConsumer(_kip848(bootstrap, g), [t], policy=CommitPolicy.time(3600),
                           auto_offset_reset="earliest", live_reset=False, on_commit=commits_b.append,
                           on_assign=on("b+"), on_revoke=on("b-"))
        pb = _Polling(b)
        assert _wait_for(lambda: len(a.assignment()) == 2 and len(b.assignment()) == 2)
        owned_a = {tp.partition for tp in a.assignment()}
        owned_b = {tp.partition for tp in b.assignment()}
        assert owned_a | owned_b == {0, 1, 2, 3}
        # incremental: A gave up exactly B's partitions and kept its own without a revoke
        assert [p for name, p in events if name == "a-"] == [frozenset(owned_b)]
        produce_n(bootstrap, t, 4, 20)
        assert _wait_for(lambda: a.metrics().processed + b.metrics().processed == 80)
        assert b.metrics().processed == 40
        assert all(o < 0 for o in committed(bootstrap, g, t, 4).values())  # TIME not due
        pb.stop.set()
        pb.t.join(10)
        b.kafka.unsubscribe()  # B leaves: a revoke
        assert _wait_for(lambda: (b.poll(0.1) or True) and not b.assignment())
        assert [p for name, p in events if name == "b-"] == [frozenset(owned_b)]
        at_revoke = [r for r in commits_b if r.reason == "revoke"]
        assert len(at_revoke) == 1 and at_revoke[0].ok, at_revoke
        assert {tp.partition: o for tp, o in at_revoke[0].offsets.items()} == dict.fromkeys(owned_b, 20)
        after = committed(bootstrap, g, t, 4)
        assert all(after[p] == 20 for p in owned_b) and all(after[p] < 0 for p in owned_a), after
        assert _wait_for(lambda: len(a.assignment()) == 4)
        assert [p for name, p in events if name == "a-"] == [frozenset(owned_b)]  # still one
        produce_n(bootstrap, t, 4, 5)
        # A continues B's partitions from B's commit: nothing B processed comes again
        assert _wait_for(lambda: a.metrics().processed == 40 + 20)
    finally:
        pa.close()
        if pb is not None:
            pb.stop.set()
            b.close()
    assert committed(bootstrap, g, t, 4) == dict.fromkeys(range(4), 25)


def test_consumer_protocol_store_consumer_seeks_to_stored_offsets(bootstrap, unique, topic1, tmp_path):
    """Invariant (group.protocol=consumer): with an offset store, the incremental assignment
    still seeks to the stored offsets (what was committed in the store transaction is not
    processed again by the next consumer)."""
    g, url = unique("g"), str(tmp_path / "offsets.db")
    with OffsetConsumer(_kip848(bootstrap, g), [topic1], store=url, auto_offset_reset="earliest",
                        live_reset=False) as c:
        for m in c.records(0.2):
            with c.transaction() as tx:
                tx.ack(m)
            if m.offset() == 11:
                break
    with OffsetConsumer(_kip848(bootstrap, g), [topic1], store=url, auto_offset_reset="earliest",
                        live_reset=False) as c:
        assert next(c.records(0.2)).offset() == 12


def test_consumer_protocol_static_member_still_in_the_group_is_one_sentence(bootstrap, unique, topic1):
    """Invariant (group.protocol=consumer): a static member whose group.instance.id is still
    held by a member that did not leave (here: alive; in production: killed, until its session
    expires) is refused by the broker (UNRELEASED_INSTANCE_ID, a librdkafka fatal error):
    poll raises it as one sentence naming the group, instead of polling a dead client forever."""
    from offsetkeeper.errors import KafkaOperationError

    g = unique("g")
    conf = _kip848(bootstrap, g, **{"group.instance.id": "i1", "log_level": 0})
    with OffsetConsumer(conf, [topic1], auto_offset_reset="earliest", live_reset=False) as a:
        assert _poll_until(a, 1)
        b = OffsetConsumer(conf, [topic1], auto_offset_reset="earliest", live_reset=False)
        try:
            with pytest.raises(KafkaOperationError) as exc:
                _poll_until(b, 1, timeout=15)
        finally:
            b.close()
    assert exc.value.code == "UNRELEASED_INSTANCE_ID"
    assert exc.value.message.startswith(f"consume: group {g} still has a member with this "
                                        "group.instance.id that did not leave")
