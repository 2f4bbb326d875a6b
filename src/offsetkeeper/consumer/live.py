"""Live reset: move the offsets of a group whose consumers keep running.

Kafka refuses offset commits from outside for a group with members, so an ordinary reset
means stopping the application. Members built on `OffsetConsumer` instead watch a compacted
control topic; `live_reset(admin, plan)` publishes the plan there, every member applies it at
its next poll for the partitions it owns (seek, then commit — or write its offset store),
acknowledges on the same topic, and the command waits for every partition of the plan or a
timeout, reporting per partition.

Control topic ``__offsetkeeper_live_reset`` (1 partition, cleanup.policy=compact). Keys and
values are UTF-8 JSON, version 1:

- request — key ``["reset", GROUP]`` (one live request per group at a time; compaction keeps the
  latest), value ``{"v": 1, "type": "reset", "id": "lr-…", "group": GROUP, "created_at_ms": …,
  "expires_at_ms": …, "snapshot_id": "snap-…" | null,
  "offsets": [{"topic": T, "partition": P, "offset": O}, …]}``
- acknowledgement — key ``["ack", GROUP, ID, TOPIC, PARTITION]``, value ``{"v": 1, "type": "ack",
  "id": ID, "group": GROUP, "topic": T, "partition": P, "offset": O, "status": "applied" |
  "failed", "error": null | "…", "member": MEMBER_ID, "at_ms": …}``
- done — a tombstone (null value) for ``["reset", GROUP]`` once the command finished, so members
  starting later never apply it; ``expires_at_ms`` covers a command that died before that.

A member applies a request only after it has read the control topic up to where it stood when the
member started (so an old request is never applied before its tombstone is seen), only for
partitions it owns, and only once per partition (acknowledgements of other members count).
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from offsetkeeper.errors import KafkaOperationError, UnknownTopicError
from offsetkeeper.models import TopicPartition

log = logging.getLogger("offsetkeeper.consumer.live")

CONTROL_TOPIC = "__offsetkeeper_live_reset"
FORMAT_VERSION = 1
_CONN_PREFIXES = ("bootstrap.servers", "security.protocol", "sasl.", "ssl.", "client.id",
                  "socket.", "broker.address.", "client.dns.lookup", "reconnect.backoff")


# -- record format (pure) ---------------------------------------------------------------------

@dataclass(frozen=True)
class LiveResetRequest:
    """A published live reset of one group."""

    id: str
    group: str
    offsets: dict[TopicPartition, int]
    created_at_ms: int
    expires_at_ms: int
    snapshot_id: str | None = None


@dataclass(frozen=True)
class LiveAck:
    """A member's acknowledgement of one partition of a request."""

    id: str
    group: str
    tp: TopicPartition
    offset: int
    status: str  # "applied" | "failed"
    member: str = ""
    error: str | None = None
    at_ms: int = 0


def request_key(group: str) -> bytes:
    return json.dumps(["reset", group]).encode()


def encode_request(req: LiveResetRequest) -> tuple[bytes, bytes]:
    """(key, value) of a request record."""
    value = {"v": FORMAT_VERSION, "type": "reset", "id": req.id, "group": req.group,
             "created_at_ms": req.created_at_ms, "expires_at_ms": req.expires_at_ms,
             "snapshot_id": req.snapshot_id,
             "offsets": [{"topic": tp.topic, "partition": tp.partition, "offset": o}
                         for tp, o in sorted(req.offsets.items())]}
    return request_key(req.group), json.dumps(value).encode()


def encode_ack(ack: LiveAck) -> tuple[bytes, bytes]:
    """(key, value) of an acknowledgement record."""
    key = json.dumps(["ack", ack.group, ack.id, ack.tp.topic, ack.tp.partition]).encode()
    value = {"v": FORMAT_VERSION, "type": "ack", "id": ack.id, "group": ack.group,
             "topic": ack.tp.topic, "partition": ack.tp.partition, "offset": ack.offset,
             "status": ack.status, "error": ack.error, "member": ack.member, "at_ms": ack.at_ms}
    return key, json.dumps(value).encode()


def decode_record(key: bytes | None, value: bytes | None):
    """A control record as ("reset", LiveResetRequest) | ("ack", LiveAck) | ("done", group),
    or None for anything unreadable or of a newer version (ignored, never fatal)."""
    try:
        k = json.loads(key) if key else None
        if not isinstance(k, list) or not k:
            return None
        if value is None:
            return ("done", k[1]) if k[0] == "reset" and len(k) == 2 and isinstance(k[1], str) else None
        v = json.loads(value)
        if not isinstance(v, dict) or v.get("v") != FORMAT_VERSION:
            return None
        if v.get("type") == "reset":
            offsets = {TopicPartition(str(o["topic"]), int(o["partition"])): int(o["offset"])
                       for o in v["offsets"]}
            return "reset", LiveResetRequest(str(v["id"]), str(v["group"]), offsets,
                                             int(v["created_at_ms"]), int(v["expires_at_ms"]),
                                             v.get("snapshot_id"))
        if v.get("type") == "ack":
            return "ack", LiveAck(str(v["id"]), str(v["group"]),
                                  TopicPartition(str(v["topic"]), int(v["partition"])),
                                  int(v["offset"]), str(v["status"]), str(v.get("member") or ""),
                                  v.get("error"), int(v.get("at_ms") or 0))
    except (ValueError, KeyError, TypeError, IndexError):
        return None
    return None


def _now_ms() -> int:
    return int(time.time() * 1000)


def _conn_props(conf: dict) -> dict:
    return {k: v for k, v in conf.items() if k.startswith(_CONN_PREFIXES)}


# -- member side ------------------------------------------------------------------------------

class LiveResetWatcher:
    """Reads the control topic for one group inside an OffsetConsumer (no group membership)."""

    def __init__(self, conf: dict, group: str, topic: str = CONTROL_TOPIC) -> None:
        from confluent_kafka import OFFSET_BEGINNING, Consumer
        from confluent_kafka import TopicPartition as CkTP

        self.group = group
        self.topic = topic
        self._conn = _conn_props(conf)
        _ensure_topic(self._conn, topic)
        self._c = Consumer({**self._conn, "group.id": f"offsetkeeper-live-watch-{uuid.uuid4().hex[:8]}",
                            "enable.auto.commit": False, "enable.auto.offset.store": False,
                            "auto.offset.reset": "earliest", "log_level": 3,
                            "topic.metadata.refresh.interval.ms": 5000})
        self._c.assign([CkTP(topic, 0, OFFSET_BEGINNING)])
        self._producer = None
        self._requests: dict[str, LiveResetRequest] = {}
        self._done: set[tuple[str, TopicPartition]] = set()
        self._catch_up_to: int | None = None
        self._read_to = -1

    def _drain(self) -> None:
        for m in self._c.consume(500, 0):
            if m.error():
                continue
            self._read_to = m.offset()
            rec = decode_record(m.key(), m.value())
            if rec is None:
                continue
            kind, body = rec
            if kind == "reset" and body.group == self.group:
                self._requests[body.group] = body
            elif kind == "done" and body == self.group:
                self._requests.pop(body, None)
            elif kind == "ack" and body.group == self.group:
                self._done.add((body.id, body.tp))

    def _ready(self) -> bool:
        if self._catch_up_to is None:
            from confluent_kafka import KafkaException
            from confluent_kafka import TopicPartition as CkTP

            try:
                _lo, hi = self._c.get_watermark_offsets(CkTP(self.topic, 0), timeout=5, cached=False)
            except KafkaException:
                return False
            self._catch_up_to = hi
        return self._read_to + 1 >= self._catch_up_to

    def pending(self, owned: set[TopicPartition]) -> list[tuple[LiveResetRequest, TopicPartition, int]]:
        """(request, partition, offset) this member must apply now."""
        self._drain()
        if not self._requests or not self._ready():
            return []
        now = _now_ms()
        return [(req, tp, off)
                for req in self._requests.values() if req.expires_at_ms > now
                for tp, off in sorted(req.offsets.items())
                if tp in owned and (req.id, tp) not in self._done]

    def acknowledge(self, req: LiveResetRequest, tp: TopicPartition, offset: int, *,
                    member: str, error: str | None = None) -> None:
        """Publish that this member applied (or failed to apply) one partition of a request."""
        from confluent_kafka import Producer

        if self._producer is None:
            self._producer = Producer({**self._conn, "linger.ms": 0, "log_level": 3})
        self._done.add((req.id, tp))
        key, value = encode_ack(LiveAck(req.id, req.group, tp, offset,
                                        "failed" if error else "applied", member, error, _now_ms()))
        self._producer.produce(self.topic, key=key, value=value, partition=0)
        self._producer.flush(10)

    def close(self) -> None:
        try:
            self._c.close()
        finally:
            if self._producer is not None:
                self._producer.flush(5)


def _ensure_topic(conn: dict, topic: str) -> None:
    """Create the compacted control topic when it is missing (best effort: a member without
    the right to create topics still works once an operator or the command created it)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({**conn, "log_level": 3})
    try:
        md = admin.list_topics(topic, timeout=10)
        t = md.topics.get(topic)
        if t is not None and t.error is None and t.partitions:
            return
        fut = admin.create_topics([NewTopic(topic, 1, -1, config={"cleanup.policy": "compact"})],
                                  request_timeout=10)[topic]
        fut.result(15)
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        if getattr(err, "name", lambda: "")() != "TOPIC_ALREADY_EXISTS":
            log.info("could not create the live reset topic %s: %s", topic, exc)
        return
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        t = admin.list_topics(topic, timeout=5).topics.get(topic)
        if t is not None and t.error is None and t.partitions:
            return
        time.sleep(0.1)


# -- command side -----------------------------------------------------------------------------

class LiveStatus(StrEnum):
    APPLIED = "applied"
    FAILED = "failed"
    NOT_ACKNOWLEDGED = "not-acknowledged"
    REFUSED = "refused"
    ERROR = "error"


@dataclass(frozen=True)
class LivePartitionResult:
    """What happened to one partition of a live reset."""

    group: str
    topic: str
    partition: int
    target: int | None
    status: LiveStatus
    member: str = ""
    elapsed_ms: float | None = None
    error: str | None = None


@dataclass(frozen=True)
class LiveResetReport:
    """The outcome of a live reset, per partition."""

    partitions: tuple[LivePartitionResult, ...]
    elapsed_s: float
    request_ids: dict[str, str] = field(default_factory=dict)  # group -> request id
    snapshot_id: str | None = None
    timeout_s: float = 0.0

    @property
    def status(self) -> str:
        ok = sum(p.status is LiveStatus.APPLIED for p in self.partitions)
        if self.partitions and ok == len(self.partitions):
            return "SUCCESS"
        return "PARTIAL_SUCCESS" if ok else "FAILED"

    def to_dict(self) -> dict:
        return {"status": self.status, "elapsed_s": round(self.elapsed_s, 3),
                "timeout_s": self.timeout_s, "snapshot_id": self.snapshot_id,
                "request_ids": self.request_ids,
                "partitions": [{**asdict(p), "status": p.status.value} for p in self.partitions]}


def live_reset(admin, plan, *, timeout_s: float = 60.0, snapshot: bool = True,
               snapshot_store: str | None = None, topic: str = CONTROL_TOPIC) -> LiveResetReport:
    """Publish `plan` as live reset requests, wait until every partition is acknowledged by the
    member that owns it (or `timeout_s`), withdraw the requests, report per partition.

    The plan should come from `build_plan` with `ResetScope(live=True)` (active groups are the
    point here). The groups are snapshotted first, as for an ordinary reset.
    """
    from confluent_kafka import Consumer, Producer
    from confluent_kafka import TopicPartition as CkTP

    from offsetkeeper.snapshots.capture import snapshot_and_save

    start = time.monotonic()
    results: dict[tuple[str, TopicPartition], LivePartitionResult] = {}
    wanted: dict[tuple[str, TopicPartition], int] = {}
    requests: list[LiveResetRequest] = []
    for g in plan.groups:
        if g.refused:
            for p in g.partitions:
                results[(g.group, p.tp)] = LivePartitionResult(g.group, p.topic, p.partition, p.target,
                                                               LiveStatus.REFUSED, error=str(g.refused))
            if not g.partitions:
                results[(g.group, TopicPartition("-", -1))] = LivePartitionResult(
                    g.group, "-", -1, None, LiveStatus.REFUSED, error=str(g.refused))
            continue
        offsets = {}
        for p in g.partitions:
            if p.error or p.target is None:
                results[(g.group, p.tp)] = LivePartitionResult(g.group, p.topic, p.partition, None,
                                                               LiveStatus.ERROR, error=p.error)
            else:
                offsets[p.tp] = p.target
                wanted[(g.group, p.tp)] = p.target
        if offsets:
            now = _now_ms()
            requests.append(LiveResetRequest(f"lr-{uuid.uuid4().hex[:12]}", g.group, offsets, now,
                                             now + int(timeout_s * 1000)))
    snapshot_id = None
    if requests:
        # Every requested group is snapshotted (a live reset moves positions even where the
        # committed offset already equals the target).
        if snapshot:
            from offsetkeeper.reset.apply import uncommitted_partitions

            snapshot_id = snapshot_and_save(admin, [r.group for r in requests], snapshot_store,
                                            description=f"before live reset {plan.target}",
                                            uncommitted=uncommitted_partitions(plan)).id
        requests = [LiveResetRequest(r.id, r.group, r.offsets, r.created_at_ms, r.expires_at_ms,
                                     snapshot_id) for r in requests]
        conn = admin.conn.client_config()
        _ensure_topic(_conn_props(conn), topic)
        try:
            admin.topic_partitions([topic])
        except UnknownTopicError:
            raise KafkaOperationError(f"the live reset topic {topic} does not exist and could not "
                                      "be created; create it (1 partition, cleanup.policy=compact)") from None
        producer = Producer({**_conn_props(conn), "linger.ms": 0, "log_level": 3})
        first_offset: list[int] = []
        for req in requests:
            key, value = encode_request(req)
            producer.produce(topic, key=key, value=value, partition=0,
                             on_delivery=lambda err, m: first_offset.append(m.offset() if err is None else -1))
        if producer.flush(15) != 0 or not first_offset or min(first_offset) < 0:
            raise KafkaOperationError(f"could not publish the live reset request to {topic}")
        by_id = {r.id: r for r in requests}
        reader = Consumer({**_conn_props(conn), "group.id": f"offsetkeeper-live-{uuid.uuid4().hex[:8]}",
                           "enable.auto.commit": False, "log_level": 3})
        reader.assign([CkTP(topic, 0, min(first_offset))])
        deadline = start + timeout_s
        try:
            while wanted.keys() - results.keys() and time.monotonic() < deadline:
                for m in reader.consume(200, 0.2):
                    if m.error():
                        continue
                    rec = decode_record(m.key(), m.value())
                    if rec is None or rec[0] != "ack" or rec[1].id not in by_id:
                        continue
                    ack: LiveAck = rec[1]
                    k = (ack.group, ack.tp)
                    if k in wanted and k not in results:
                        req = by_id[ack.id]
                        results[k] = LivePartitionResult(
                            ack.group, ack.tp.topic, ack.tp.partition, wanted[k],
                            LiveStatus.APPLIED if ack.status == "applied" else LiveStatus.FAILED,
                            member=ack.member, elapsed_ms=round(max(0, ack.at_ms - req.created_at_ms), 1),
                            error=ack.error)
        finally:
            reader.close()
            # Withdraw the requests: members that start later must not apply them.
            for req in requests:
                producer.produce(topic, key=request_key(req.group), value=None, partition=0)
            producer.flush(15)
        for k, target in wanted.items():
            if k not in results:
                results[k] = LivePartitionResult(
                    k[0], k[1].topic, k[1].partition, target, LiveStatus.NOT_ACKNOWLEDGED,
                    error=f"no member acknowledged within {timeout_s:g}s (is the partition owned "
                          "by a consumer built on offsetkeeper.consumer?)")
    ordered = tuple(results[k] for k in sorted(results, key=lambda k: (k[0], k[1])))
    return LiveResetReport(partitions=ordered, elapsed_s=time.monotonic() - start,
                           request_ids={r.group: r.id for r in requests}, snapshot_id=snapshot_id,
                           timeout_s=timeout_s)
