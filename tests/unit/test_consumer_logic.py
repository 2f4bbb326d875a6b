"""Pure parts of offsetkeeper.consumer: policies, the ack tracker, the live-reset record format,
the SQLite store's fencing, and parameter checks that must fail before anything connects."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetkeeper.consumer import CommitPolicy, OffsetConsumer, open_store
from offsetkeeper.consumer.acks import AckTracker
from offsetkeeper.consumer.lab import LabConfig, LabResult
from offsetkeeper.consumer.live import (
    LiveAck,
    LiveResetRequest,
    decode_record,
    encode_ack,
    encode_request,
    request_key,
)
from offsetkeeper.consumer.policy import AckMode, commit_due
from offsetkeeper.consumer.stores import redact_url
from offsetkeeper.errors import ConsumerConfigError, FencedError, StoreError, UsageError
from offsetkeeper.models import GroupInfo, MemberInfo, TopicPartition, Watermarks
from offsetkeeper.reset.plan import GroupFacts, ResetFacts, ResetScope, TopicSpec, plan_reset
from offsetkeeper.reset.targets import ToEarliest

TP = TopicPartition("orders", 0)


# -- policies ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, fragment", [
    ({"mode": AckMode.COUNT, "ack_count": 0}, "ack_count=0"),
    ({"mode": AckMode.COUNT, "ack_count": -3}, "ack_count=-3"),
    ({"mode": AckMode.COUNT}, "ack_count=None"),
    ({"mode": AckMode.COUNT, "ack_count": 2.5}, "ack_count=2.5"),
    ({"mode": AckMode.TIME, "ack_time_s": -1}, "ack_time_s=-1"),
    ({"mode": AckMode.TIME, "ack_time_s": 0}, "ack_time_s=0"),
    ({"mode": AckMode.TIME, "ack_time_s": math.nan}, "ack_time_s=nan"),
    ({"mode": AckMode.COUNT_TIME, "ack_count": 5}, "ack_time_s=None"),
    ({"mode": AckMode.RECORD, "ack_count": 5}, "applies to COUNT and COUNT_TIME only"),
    ({"mode": AckMode.BATCH, "ack_time_s": 5}, "applies to TIME and COUNT_TIME only"),
    ({"mode": "sometimes"}, "'sometimes'"),
    ({"mode": AckMode.AUTO, "auto_commit_interval_ms": 0}, "auto_commit_interval_ms=0"),
    ({"mode": AckMode.AUTO, "asynchronous": True}, "does not apply to AUTO"),
    ({"mode": AckMode.BATCH, "commit_retries": -1}, "commit_retries=-1"),
])
def test_invalid_policy_parameters_name_the_value(kwargs, fragment):
    with pytest.raises(ConsumerConfigError) as exc:
        CommitPolicy(**kwargs)
    assert fragment in str(exc.value)
    assert isinstance(exc.value, UsageError) and exc.value.exit_code == 2


def test_policy_constructors_and_labels():
    assert CommitPolicy().mode is AckMode.BATCH and not CommitPolicy().asynchronous  # Spring's defaults
    assert CommitPolicy.count_time(10, 2.5, asynchronous=True).label == "count_time(count=10, time=2.5s, async)"
    assert CommitPolicy("manual_immediate").mode is AckMode.MANUAL_IMMEDIATE
    assert CommitPolicy.manual(immediate=True).is_manual


@pytest.mark.parametrize("policy, moment, acked, secs, thread, due", [
    (CommitPolicy.record(), "ack", 1, 0, True, True),
    (CommitPolicy.batch(), "ack", 100, 100, True, False),
    (CommitPolicy.batch(), "poll", 1, 0, True, True),
    (CommitPolicy.time(5), "poll", 100, 4.9, True, False),
    (CommitPolicy.time(5), "poll", 0, 5.0, True, True),
    (CommitPolicy.count(10), "ack", 10, 0, True, False),  # Spring: evaluated when the poll is done
    (CommitPolicy.count(10), "poll", 9, 99, True, False),
    (CommitPolicy.count(10), "poll", 10, 0, True, True),
    (CommitPolicy.count_time(10, 5), "poll", 3, 6, True, True),
    (CommitPolicy.count_time(10, 5), "poll", 11, 0, True, True),
    (CommitPolicy.count_time(10, 5), "poll", 3, 1, True, False),
    (CommitPolicy.manual(), "ack", 1, 0, True, False),
    (CommitPolicy.manual(), "poll", 1, 0, True, True),
    (CommitPolicy.manual(immediate=True), "ack", 1, 0, True, True),
    (CommitPolicy.manual(immediate=True), "ack", 1, 0, False, False),  # queued off-thread
    (CommitPolicy.auto(), "poll", 1, 99, True, False),
    (CommitPolicy.before_processing(), "poll", 1, 99, True, False),
])
def test_commit_due_follows_spring_ack_modes(policy, moment, acked, secs, thread, due):
    assert commit_due(policy, moment, acked_since_commit=acked, seconds_since_commit=secs,
                      on_consumer_thread=thread) is due


# -- acknowledgements -------------------------------------------------------------------------

def test_contiguous_prefix_with_gaps_in_offsets():
    """Offsets with gaps (compaction, transaction markers) are taken from the records."""
    t = AckTracker()
    t.assign([TP])
    for off in (3, 4, 7, 9):
        t.delivered(TP, off)
    assert t.ack(TP, 4) and t.committable() == {}
    assert t.ack(TP, 3) and t.committable() == {TP: 5}
    assert t.ack(TP, 9) and t.committable() == {TP: 5}
    assert t.ack(TP, 7) and t.committable() == {TP: 10}
    t.mark_committed({TP: 10})
    assert t.committable() == {}
    assert not t.ack(TP, 7)  # duplicate ack


def test_rewind_and_revoke_drop_pending_acks():
    t = AckTracker()
    t.assign([TP])
    for off in range(5):
        t.delivered(TP, off)
    t.ack(TP, 0)
    t.ack(TP, 3)
    t.rewind(TP, 2)  # nack at 2: 2, 3, 4 come again
    assert not t.ack(TP, 3) and t.committable() == {TP: 1}
    t.ack(TP, 1)
    assert t.committable() == {TP: 2}
    t.revoke([TP])
    assert not t.ack(TP, 1) and t.committable() == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=40, unique=False),
       st.randoms(use_true_random=False))
def test_committed_offset_never_passes_an_unacknowledged_record(gaps, rnd):
    """Invariant: for any delivery with gaps and any ack order, the committable offset is
    exactly one past the last record of the acknowledged prefix — never beyond a record that
    is still unacknowledged."""
    offsets, o = [], 0
    for g in gaps:
        o += g + 1
        offsets.append(o)
    t = AckTracker()
    t.assign([TP])
    for off in offsets:
        t.delivered(TP, off)
    order = offsets[:]
    rnd.shuffle(order)
    acked: set[int] = set()
    for off in order[: rnd.randint(0, len(order))]:
        assert t.ack(TP, off)
        acked.add(off)
        prefix = 0
        while prefix < len(offsets) and offsets[prefix] in acked:
            prefix += 1
        want = {TP: offsets[prefix - 1] + 1} if prefix else {}
        assert t.committable() == want


# -- live reset record format -----------------------------------------------------------------

def test_live_records_round_trip_and_tolerate_garbage(tmp_path):
    from offsetkeeper.consumer.live import Ignored, SignedRequest
    from offsetkeeper.consumer.live_auth import generate_key, load_signer

    generate_key(tmp_path / "k")
    signer = load_signer(tmp_path / "k")
    req = LiveResetRequest("lr-0123456789ab", 'we"ird\n[group]', {TP: 5, TopicPartition("x", 2): 0},
                           1, 2, "snap-1", "cluster-1")
    kind, signed = decode_record(*encode_request(req, signer))
    assert kind == "reset" and isinstance(signed, SignedRequest) and signed.request == req
    assert signed.key_id == signer.id
    ack = LiveAck("lr-0123456789ab", req.group, TP, 5, "applied", "member-1", None, 3)
    assert decode_record(*encode_ack(ack)) == ("ack", ack)
    assert decode_record(request_key(req.group), None) == ("done", req.group)
    for key, value in [(b"not json", b"{}"), (b'["reset","g"]', b'{"v": 2, "type": "reset"}'),
                       (b'["reset","g"]', b'{"v": 1, "type": "reset"}'), (None, None), (b"[]", b"1")]:
        assert isinstance(decode_record(key, value), Ignored)


def _facts(members: int) -> ResetFacts:
    info = GroupInfo("g", "stable" if members else "empty",
                     members=tuple(MemberInfo(f"m{i}", "c", "h") for i in range(members)))
    return ResetFacts(groups={"g": GroupFacts(info)}, topic_partitions={"orders": (0,)},
                      watermarks={TP: Watermarks(0, 10)})


def test_live_scope_plans_active_groups_and_refuses_empty_ones():
    scope = ResetScope(groups=("g",), topics=(TopicSpec("orders"),))
    live = ResetScope(groups=("g",), topics=(TopicSpec("orders"),), live=True)
    assert "active member" in plan_reset(_facts(2), scope, ToEarliest()).groups[0].refused.message
    assert plan_reset(_facts(2), live, ToEarliest()).groups[0].refused is None
    assert "no active members" in plan_reset(_facts(0), live, ToEarliest()).groups[0].refused.message
    assert plan_reset(_facts(0), scope, ToEarliest()).groups[0].refused is None


# -- stores -----------------------------------------------------------------------------------

class _Msg:
    def __init__(self, offset: int) -> None:
        self._o = offset

    def topic(self):
        return TP.topic

    def partition(self):
        return TP.partition

    def offset(self):
        return self._o


def test_sqlite_store_fences_a_consumer_that_lost_its_partition(tmp_path):
    """Invariant: after another consumer claimed a partition, the old owner's transaction
    (a zombie's) is rolled back entirely — its results and its offsets."""
    url = f"sqlite:///{tmp_path / 'o.db'}"
    a, b = open_store(url), open_store(url)
    assert a.claim("g", [TP], "A") == {TP: None}
    with a.transaction("g", "A") as tx:
        tx.execute("CREATE TABLE results (n INTEGER)")
        tx.execute("INSERT INTO results VALUES (?)", (0,))
        tx.ack(_Msg(0))
    assert b.claim("g", [TP], "B") == {TP: 1}
    with pytest.raises(FencedError, match="orders:0 of group g"), a.transaction("g", "A") as tx:
        tx.execute("INSERT INTO results VALUES (?)", (1,))
        tx.ack(_Msg(1))
    assert a.load("g") == {TP: 1}
    assert b._conn.execute("SELECT n FROM results").fetchall() == [(0,)]
    a.close()
    b.close()


def test_store_urls_are_checked_and_passwords_never_shown(tmp_path):
    with pytest.raises(ConsumerConfigError, match="mysql://u:\\*\\*\\*\\*\\*\\*@h/db"):
        open_store("mysql://u:hunter2@h/db")
    with pytest.raises(StoreError) as exc:
        open_store("postgresql://u:hunter2@127.0.0.1:1/db")
    assert "hunter2" not in str(exc.value) and "127.0.0.1:1" in str(exc.value)
    (tmp_path / "a-file").write_text("")
    with pytest.raises(StoreError, match="cannot open the SQLite offset store .*a-file/x.db"):
        open_store(str(tmp_path / "a-file" / "x.db"))
    assert redact_url("postgresql://u:p@h:5432/db") == "postgresql://u:******@h:5432/db"


@pytest.mark.parametrize("kwargs, fragment", [
    ({"config": {"bootstrap.servers": "x"}}, "group.id=None"),
    ({"config": {"group.id": "g", "enable.auto.commit": True}}, "'enable.auto.commit'"),
    ({"config": {"group.id": "g"}, "topics": []}, "topics=[]"),
    ({"config": {"group.id": "g"}, "topics": "orders"}, "topics='orders'"),
    ({"config": {"group.id": "g"}, "auto_offset_reset": "smallest"}, "auto_offset_reset='smallest'"),
    ({"config": {"group.id": "g"}, "max_poll_records": 0}, "max_poll_records=0"),
    ({"config": {"group.id": "g"}, "policy": CommitPolicy.batch(), "store": ":memory:"}, "exclusive"),
    ({"config": {"group.id": "g"}, "mirror_to_kafka": True}, "needs an offset store"),
    ({"config": {"group.id": "g"}, "store": "redis://h"}, "unsupported offset store URL"),
    # KIP-848: the group owns these; librdkafka's sentence says so, without its KafkaError repr
    ({"config": {"group.id": "g", "group.protocol": "consumer", "session.timeout.ms": 6000}},
     "invalid consumer configuration: `session.timeout.ms` is not "
     "supported for `group.protocol=consumer`"),
    ({"config": {"group.id": "g", "group.protocol": "consumer",
                 "partition.assignment.strategy": "range"}}, "Use `group.remote.assignor` instead"),
])
def test_invalid_consumer_parameters_fail_before_connecting(kwargs, fragment):
    args = {"topics": ["orders"], **kwargs}
    with pytest.raises(ConsumerConfigError) as exc:
        OffsetConsumer(args.pop("config"), args.pop("topics"), live_reset=False, **args)
    assert fragment in str(exc.value)


def test_lab_config_and_verdicts():
    with pytest.raises(ConsumerConfigError, match="unknown lab policy 'sometimes'"):
        LabConfig("sometimes")
    with pytest.raises(ConsumerConfigError, match="crashes=-1"):
        LabConfig("batch", crashes=-1)
    assert LabConfig("count-time").policy == "count_time"
    assert LabConfig("batch", protocol="Consumer").protocol == "consumer"
    assert LabConfig("batch").protocol == "classic"
    with pytest.raises(ConsumerConfigError, match="unknown group protocol 'streams'"):
        LabConfig("batch", protocol="streams")
    base = {"records": 10, "crashes": 20, "processed": 10, "rebalance": False,
            "asynchronous": False, "elapsed_s": 1.0}
    assert not LabResult("batch", "at-least-once", lost=1, duplicated=0, **base).holds
    assert LabResult("batch", "at-least-once", lost=0, duplicated=5, **base).holds
    assert not LabResult("before_processing", "at-most-once", lost=0, duplicated=1, **base).holds
    assert not LabResult("store", "exactly-once", lost=0, duplicated=1, **base).holds


def test_prometheus_collector_exports_the_counters():
    from prometheus_client import CollectorRegistry, generate_latest

    from offsetkeeper.consumer import ConsumerMetrics, prometheus_collector

    class _Fake:
        group = 'pay"ments'

        def metrics(self):
            return ConsumerMetrics(processed=7, commits=2, commit_failures=1,
                                   commit_latency_sum_s=0.5, commit_latency_count=2)

    reg = CollectorRegistry()
    reg.register(prometheus_collector(_Fake()))
    text = generate_latest(reg).decode()
    assert 'offsetkeeper_consumer_processed_total{group="pay\\"ments"} 7.0' in text
    assert 'offsetkeeper_consumer_commit_failures_total{group="pay\\"ments"} 1.0' in text
    assert 'offsetkeeper_consumer_commit_latency_seconds_count{group="pay\\"ments"} 2.0' in text


class _FlakyBroker:
    """Stands in for the broker's answers to commit requests (the retry logic is under test)."""

    def __init__(self, errors: list) -> None:
        self.errors, self.calls = errors, 0

    def commit(self, offsets=None, asynchronous=True):
        self.calls += 1
        if self.errors:
            from confluent_kafka import KafkaError, KafkaException

            raise KafkaException(KafkaError(self.errors.pop(0)))
        return offsets

    def close(self):
        pass


@pytest.mark.parametrize("errors, ok, retries, calls", [
    (["REQUEST_TIMED_OUT", "COORDINATOR_LOAD_IN_PROGRESS"], True, 2, 3),  # retried, then done
    (["REQUEST_TIMED_OUT"] * 4, False, 3, 4),  # commit_retries=3 exhausted
    (["ILLEGAL_GENERATION"], False, 0, 1),  # not retriable: reported at once
])
def test_sync_commit_retries_retriable_errors_with_backoff(errors, ok, retries, calls):
    from confluent_kafka import KafkaError

    results = []
    c = OffsetConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}, ["orders"],
                       policy=CommitPolicy(AckMode.MANUAL, commit_backoff_s=0.001),
                       on_commit=results.append, live_reset=False)
    real = c._c
    try:
        c._c = _FlakyBroker([getattr(KafkaError, e) for e in errors])
        c._tracker.assign([TP])
        res = c.commit({TP: 5})  # never raises: the callback and counters report failures
        assert res.ok is ok and results == [res]
        m = c.metrics()
        assert (m.commit_retries, m.commit_failures, m.commits) == (retries, 0 if ok else 1, 1 if ok else 0)
        assert c._c.calls == calls
        if not ok:
            assert res.error is not None and res.error.message.startswith("commit offsets")
        if errors == ["ILLEGAL_GENERATION"]:
            # a member's own commit: not the admin advice "stop its consumers and run again"
            assert "not a current member of group g (ILLEGAL_GENERATION" in res.error.message
            assert "stop its consumers" not in res.error.message
    finally:
        c._c = real
        c.close()


class _SilentBroker:
    """Takes asynchronous commits and never answers (until the test serves an answer)."""

    def __init__(self) -> None:
        self.sent: list[int] = []

    def commit(self, offsets=None, asynchronous=True):
        assert asynchronous
        self.sent.append(offsets[0].offset)

    def close(self):
        pass


def test_async_commits_in_flight_are_bounded_and_coalesced():
    """Invariant: record(asynchronous=True) never has more than MAX_ASYNC_INFLIGHT commits
    awaiting answers; the commits it holds back are not lost: the first commit after an answer
    carries the latest acknowledged offset."""
    from offsetkeeper.consumer.commits import MAX_ASYNC_INFLIGHT

    c = OffsetConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}, ["orders"],
                       policy=CommitPolicy.record(asynchronous=True), live_reset=False)
    real = c._c
    try:
        c._c = broker = _SilentBroker()
        c._tracker.assign([TP])
        c._tracker.delivered_many({TP: list(range(100))})
        for off in range(60):
            c._do_ack(TP, off, on_consumer_thread=True)
        assert broker.sent == list(range(1, MAX_ASYNC_INFLIGHT + 1))
        assert c.metrics().commits_coalesced == 60 - MAX_ASYNC_INFLIGHT
        c._on_commit_cb(None, [])  # the first answer frees one slot
        c._do_ack(TP, 60, on_consumer_thread=True)
        assert broker.sent[-1] == 61 and len(broker.sent) == MAX_ASYNC_INFLIGHT + 1
    finally:
        c._tracker.revoke([TP])  # no final commit to the unreachable broker on close
        c._c = real
        c.close()


def test_a_static_member_refused_under_the_consumer_protocol_gets_one_sentence():
    """librdkafka reports UNRELEASED_INSTANCE_ID (a static member restarted under
    group.protocol=consumer while the killed one is still in the group) only as _FATAL with the
    broker's text: translated to the error's name and what to do."""
    from confluent_kafka import KafkaError, KafkaException

    from offsetkeeper.kafka.errors import translate

    err = KafkaError(KafkaError._FATAL, "Fatal error: Broker: The instance ID is still used by "
                     "another member in the consumer group: ConsumerGroupHeartbeat fatal error")
    exc = translate(KafkaException(err), action="consume", group="payments")
    assert exc.code == "UNRELEASED_INSTANCE_ID"
    assert exc.message.startswith("consume: group payments still has a member with this "
                                  "group.instance.id that did not leave")
    assert "consumer.session.timeout.ms" in exc.message
