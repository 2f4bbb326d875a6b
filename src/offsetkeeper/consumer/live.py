"""Live reset: move the offsets of a group whose consumers keep running.

Kafka refuses offset commits from outside for a group with members, so an ordinary reset
means stopping the application. Members built on `OffsetConsumer` instead watch a compacted
control topic. The executor (`reset.apply`, the one path that changes offsets) publishes the
plan there through `ControlTopicChannel`, signed with an operator's key (`live_auth`); every
member applies it at its next poll for the partitions it owns (commit — or write its offset
store — then seek), holds those partitions paused, and acknowledges on the same topic. The
executor then checks each acknowledgement against the group itself (the acknowledging member is
a current member, the committed offset read back equals the target), withdraws the request,
and the members resume. Nothing a record on the topic says is believed on its own.

Control topic ``__offsetkeeper_live_reset`` (1 partition, cleanup.policy=compact). Keys and
values are UTF-8 JSON, version 3 (older versions are ignored: version 1 was unsigned, version 2
did not sign the cluster):

- request — key ``["reset", GROUP]`` (one live request per group at a time; compaction keeps the
  latest), value ``{"v": 3, "type": "reset", "id": "lr-…", "group": GROUP, "cluster_id": CID,
  "created_at_ms": …, "expires_at_ms": …, "snapshot_id": "snap-…" | null,
  "offsets": [{"topic": T, "partition": P, "offset": O}, …], "key_id": KID, "sig": SIG}``;
  SIG is the Ed25519 signature of the value without ``sig`` (`live_auth.canonical`). CID is the
  Kafka cluster id the request is for: a request copied onto another cluster's control topic is
  ignored there.
- acknowledgement — key ``["ack", GROUP, ID, TOPIC, PARTITION]``, value ``{"v": 3, "type": "ack",
  "id": ID, "group": GROUP, "topic": T, "partition": P, "offset": O, "status": "applied" |
  "failed", "error": null | "…", "member": MEMBER_ID, "store": bool, "at_ms": …}``
- withdrawal — key ``["withdrawn", GROUP, ID]``, value ``{"v": 3, "type": "withdrawn", "id": ID,
  "group": GROUP, "expires_at_ms": …}``: request ID never applies again, even when its record is
  written to the topic again within its lifetime (a replay). Its own key, so compaction keeps
  it while the request record's key is tombstoned.
- done — a tombstone (null value) for ``["reset", GROUP]`` once the command finished, so members
  starting later never apply it; ``expires_at_ms`` covers a command that died before that.

A member reads the control topic in a thread of its own (never on the application's poll), and
applies a request only after it has read the topic up to where it stood when the member started
(so an old request is never applied before its withdrawal is seen), only when it is signed by a
key the member trusts (checked before anything else of the record is built), is for the member's
cluster, names the same group in key and value, has not expired, was not withdrawn, and lives at
most `MAX_LIFETIME_MS`; only for partitions it owns, only once per partition, and only at an
offset within the partition's log. Any other record is ignored and counted under one of a fixed
set of reasons (`LiveResetWatcher.ignored`; nothing a record says reaches a log line or a
counter name), whatever its size, nesting or numbers: the watcher never raises because of what
it read. Records keyed for other groups are skipped without parsing their values.

Size: over 500 lines because it holds both ends of one protocol, the members' watcher and the
operator's channel, with the record format they share (the specification above); those two
ends are where it splits.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from offsetkeeper.errors import KafkaOperationError, UnknownTopicError
from offsetkeeper.kafka.ports import AdminPort
from offsetkeeper.models import TopicPartition

log = logging.getLogger("offsetkeeper.consumer.live")

CONTROL_TOPIC = "__offsetkeeper_live_reset"
FORMAT_VERSION = 3
# A request is a short-lived order: it is valid while the command waits (--live-timeout, at
# most an hour) and replaying a captured one later does nothing.
MAX_LIFETIME_MS = 3_600_000 + 60_000
MAX_CLOCK_SKEW_MS = 300_000
MAX_KEY_BYTES = 4096
MAX_VALUE_BYTES = 4 * 1024 * 1024
MAX_PARTITIONS = 100_000
_OFFSET_LIMIT = 2**63
_ID = re.compile(r"lr-[0-9a-f]{12}\Z")
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
    # The Kafka cluster id the request is for (signed: a copy on another cluster is ignored).
    cluster_id: str = ""

    def payload(self) -> dict:
        """The signed part of the record value."""
        return {"v": FORMAT_VERSION, "type": "reset", "id": self.id, "group": self.group,
                "cluster_id": self.cluster_id, "created_at_ms": self.created_at_ms, "expires_at_ms": self.expires_at_ms,
                "snapshot_id": self.snapshot_id,
                "offsets": [{"topic": tp.topic, "partition": tp.partition, "offset": o}
                            for tp, o in sorted(self.offsets.items())]}


@dataclass(frozen=True)
class SignedRequest:
    """A request as read from the topic, with the signature still to be checked."""

    request: LiveResetRequest
    key_id: object
    sig: object


@dataclass(frozen=True)
class LiveAck:
    """A member's acknowledgement of one partition of a request (a claim the executor checks)."""

    id: str
    group: str
    tp: TopicPartition
    offset: int
    status: str  # "applied" | "failed"
    member: str = ""
    error: str | None = None
    at_ms: int = 0
    store: bool = False  # offsets kept in an external store (not readable by the command)


class Ignored(str):
    """Why a control record was ignored (decode_record's answer for anything invalid). Always
    one of a fixed set of sentences: nothing a record says is copied into it, so counters stay
    few and a log line cannot be forged by a record's contents."""


def request_key(group: str) -> bytes:
    return json.dumps(["reset", group]).encode()


def withdrawal_key(group: str, request_id: str) -> bytes:
    return json.dumps(["withdrawn", group, request_id]).encode()


def encode_request(req: LiveResetRequest, signer) -> tuple[bytes, bytes]:
    """(key, value) of a request record, signed by `signer` (live_auth.Signer)."""
    payload = req.payload()
    value = {**payload, "key_id": signer.id, "sig": signer.sign(payload)}
    return request_key(req.group), json.dumps(value).encode()


def encode_withdrawal(req: LiveResetRequest) -> tuple[bytes, bytes]:
    """(key, value) of the record that revokes request `req` for good. Unsigned: a withdrawal
    can only keep a request from applying, which anyone who can write the topic can do anyway
    (a tombstone), and it never moves an offset."""
    value = {"v": FORMAT_VERSION, "type": "withdrawn", "id": req.id, "group": req.group,
             "expires_at_ms": req.expires_at_ms}
    return withdrawal_key(req.group, req.id), json.dumps(value).encode()


def encode_ack(ack: LiveAck) -> tuple[bytes, bytes]:
    """(key, value) of an acknowledgement record."""
    key = json.dumps(["ack", ack.group, ack.id, ack.tp.topic, ack.tp.partition]).encode()
    value = {"v": FORMAT_VERSION, "type": "ack", "id": ack.id, "group": ack.group,
             "topic": ack.tp.topic, "partition": ack.tp.partition, "offset": ack.offset,
             "status": ack.status, "error": ack.error, "member": ack.member, "store": ack.store,
             "at_ms": ack.at_ms}
    return key, json.dumps(value).encode()


class _Bad(Exception):
    pass


def _int(v, lo: int, hi: int) -> int:
    # bool is an int in Python, floats (1e400 is inf) are not offsets
    if type(v) is not int or not lo <= v < hi:
        raise _Bad
    return v


def _str(v, limit: int, *, empty: bool = False) -> str:
    if not isinstance(v, str) or len(v) > limit or (not v and not empty):
        raise _Bad
    return v


def _tp(topic, partition) -> TopicPartition:
    return TopicPartition(_str(topic, 249), _int(partition, 0, 2**31))


# The reasons a record is ignored: fixed sentences (see Ignored).
WRONG_VERSION = Ignored("unknown format version")
MALFORMED = Ignored("malformed record")
UNPARSEABLE = Ignored("unparseable record")
GROUPS_DIFFER = Ignored("key and value name different groups")
KEY_VALUE_DIFFER = Ignored("key and value disagree")
LIFETIME = Ignored("lifetime out of bounds")
OTHER_CLUSTER = Ignored("request for another cluster")
OVERSIZED_KEY = Ignored("missing or oversized key")
OVERSIZED_VALUE = Ignored("oversized value")
STRAY_TOMBSTONE = Ignored("stray tombstone")


def _decode_reset(group: str, v: dict, trusted=None, cluster_id: str | None = None):
    if _str(v.get("group"), 100_000) != group:
        return GROUPS_DIFFER
    if trusted is not None:
        # The signature first, over the value as read: an unsigned or untrusted record costs a
        # dictionary lookup, never the building of its (up to 100,000) offsets.
        payload = {k: x for k, x in v.items() if k not in ("key_id", "sig")}
        why = trusted.verify(payload, v.get("key_id"), v.get("sig"))
        if why:
            return Ignored(f"request {why}")  # live_auth.TrustedKeys.verify: fixed reasons
    cluster = _str(v.get("cluster_id"), 200)
    if cluster_id is not None and cluster != cluster_id:
        return OTHER_CLUSTER
    offsets_raw = v.get("offsets")
    if not isinstance(offsets_raw, list) or not 0 < len(offsets_raw) <= MAX_PARTITIONS:
        raise _Bad
    created = _int(v.get("created_at_ms"), 0, 2**53)
    expires = _int(v.get("expires_at_ms"), 0, 2**53)
    if not created < expires <= created + MAX_LIFETIME_MS:
        return LIFETIME
    snap = v.get("snapshot_id")
    if snap is not None:
        _str(snap, 200)
    rid = _str(v.get("id"), 20)
    if not _ID.match(rid):
        raise _Bad
    offsets: dict[TopicPartition, int] = {}
    for o in offsets_raw:
        if not isinstance(o, dict):
            raise _Bad
        tp = _tp(o.get("topic"), o.get("partition"))
        if tp in offsets:
            raise _Bad  # one partition twice: which one was meant?
        offsets[tp] = _int(o.get("offset"), 0, _OFFSET_LIMIT)
    req = LiveResetRequest(rid, group, offsets, created, expires, snap, cluster)
    return "reset", SignedRequest(req, v.get("key_id"), v.get("sig"))


def _decode_ack(k: list, v: dict):
    if len(k) != 5:
        raise _Bad
    ack = LiveAck(_str(v.get("id"), 20), _str(v.get("group"), 100_000),
                  _tp(v.get("topic"), v.get("partition")), _int(v.get("offset"), 0, _OFFSET_LIMIT),
                  v.get("status") if v.get("status") in ("applied", "failed") else _bad(),
                  _str(v.get("member") or "", 1000, empty=True),
                  None if v.get("error") is None else _str(v["error"], 2000, empty=True),
                  _int(v.get("at_ms") or 0, 0, 2**53), v.get("store") is True)
    if k[1:] != [ack.group, ack.id, ack.tp.topic, ack.tp.partition]:
        return KEY_VALUE_DIFFER
    return "ack", ack


def _decode_withdrawal(k: list, v: dict):
    if len(k) != 3:
        raise _Bad
    rid = _str(v.get("id"), 20)
    if not _ID.match(rid) or k[2] != rid or _str(v.get("group"), 100_000) != k[1]:
        return KEY_VALUE_DIFFER
    return "withdrawn", (rid, _int(v.get("expires_at_ms"), 0, 2**53))


def _bad():
    raise _Bad


_KINDS = ("reset", "ack", "withdrawn")


def decode_record(key: bytes | None, value: bytes | None, *, group: str | None = None,
                  trusted=None, cluster_id: str | None = None):
    """A control record as ("reset", SignedRequest) | ("ack", LiveAck) | ("done", group) |
    ("withdrawn", (request id, expires_at_ms)), or an `Ignored` reason for anything else.

    With `group`, a record keyed for another group is ("other", None), its value never parsed.
    With `trusted` (live_auth.TrustedKeys), a request's signature is checked before its offsets
    are built, and with `cluster_id` a request for another cluster is ignored. Never raises:
    sizes are bounded before parsing, every field is checked for type and range (offsets
    0 <= n < 2^63), and parsing failures of any kind (deep nesting, huge numbers) are answers,
    not exceptions."""
    if key is None or len(key) > MAX_KEY_BYTES:
        return OVERSIZED_KEY
    try:
        k = json.loads(key)
        if not isinstance(k, list) or len(k) < 2 or k[0] not in _KINDS:
            raise _Bad
        kgroup = _str(k[1], 100_000)
        if group is not None and kgroup != group:
            return "other", None
        if value is not None and len(value) > MAX_VALUE_BYTES:
            return OVERSIZED_VALUE
        if value is None:
            return ("done", kgroup) if k[0] == "reset" and len(k) == 2 else STRAY_TOMBSTONE
        v = json.loads(value)
        if not isinstance(v, dict):
            raise _Bad
        if v.get("v") != FORMAT_VERSION:
            return WRONG_VERSION
        if k[0] == "reset" and len(k) == 2 and v.get("type") == "reset":
            return _decode_reset(kgroup, v, trusted, cluster_id)
        if k[0] == "ack" and v.get("type") == "ack":
            if kgroup != v.get("group"):
                return GROUPS_DIFFER
            return _decode_ack(k, v)
        if k[0] == "withdrawn" and v.get("type") == "withdrawn":
            return _decode_withdrawal(k, v)
        raise _Bad
    except _Bad:
        return MALFORMED
    except Exception:  # RecursionError, OverflowError, UnicodeError ...: never fatal
        return UNPARSEABLE


def _now_ms() -> int:
    return int(time.time() * 1000)


def _conn_props(conf: dict) -> dict:
    return {k: v for k, v in conf.items() if k.startswith(_CONN_PREFIXES)}


# -- member side ------------------------------------------------------------------------------

class LiveResetWatcher:
    """Reads the control topic for one group inside an OffsetConsumer (no group membership).

    The reading, parsing and signature checks run in a thread of their own: whatever volume
    of records someone writes to the topic, the application's `poll()` only looks at the
    requests already verified (`pending`), a few dictionary lookups."""

    def __init__(self, conf: dict, group: str, trusted, topic: str = CONTROL_TOPIC) -> None:
        from confluent_kafka import OFFSET_BEGINNING
        from confluent_kafka import TopicPartition as CkTP

        from offsetkeeper.kafka import clients

        self.group = group
        self.topic = topic
        self.trusted = trusted  # live_auth.TrustedKeys
        self._conn = _conn_props(conf)
        ensure_control_topic(self._conn, topic)
        self._c = clients.consumer(self._conn, {"group.id": f"offsetkeeper-live-watch-{uuid.uuid4().hex[:8]}",
                            "enable.auto.commit": False, "enable.auto.offset.store": False,
                            "auto.offset.reset": "earliest", "log_level": 3,
                            "topic.metadata.refresh.interval.ms": 5000,
                            # a flood of junk records is read in small steps, not buffered whole
                            "queued.max.messages.kbytes": 8192})
        self._c.assign([CkTP(topic, 0, OFFSET_BEGINNING)])
        self._producer = None
        self._lock = threading.Lock()
        self._requests: dict[str, LiveResetRequest] = {}
        self._done: set[tuple[str, TopicPartition]] = set()
        # request id -> its expiry: withdrawn requests never apply again (a replayed record
        # within its lifetime included); forgotten once expired, when nothing applies them.
        self._revoked: dict[str, int] = {}
        self.cluster_id: str | None = None
        self._catch_up_to: int | None = None
        self._read_to = -1
        # Records not acted on, by reason (hostile or foreign records are counted, never fatal).
        self.ignored: Counter[str] = Counter()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"offsetkeeper-live-{group[:40]}",
                                        daemon=True)
        self._thread.start()

    def _ignore(self, reason: str, offset: int) -> None:
        if not self.ignored[reason]:
            log.warning("ignored a record on %s at offset %d: %s (counted from now on)",
                        self.topic, offset, reason)
        self.ignored[reason] += 1

    # -- the watcher's thread ------------------------------------------------------------------
    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.cluster_id is None and not self._learn_cluster():
                    self._stop.wait(1.0)
                    continue
                self._drain()
            except Exception as exc:  # the watcher never dies of a record or a broker hiccup
                log.info("reading %s failed (retried): %s", self.topic, type(exc).__name__)
                self._stop.wait(1.0)

    def _learn_cluster(self) -> bool:
        from confluent_kafka import KafkaException

        try:
            cid = self._c.list_topics(self.topic, timeout=5).cluster_id
        except (KafkaException, RuntimeError):
            return False
        self.cluster_id = cid or None
        return self.cluster_id is not None

    def _drain(self) -> None:
        from confluent_kafka import KafkaException

        if self._catch_up_to is None:
            self._catch_up_to = self._log_end()
        try:
            batch = self._c.consume(500, 0.2)
        except (KafkaException, RuntimeError) as exc:
            log.info("reading %s failed (retried): %s", self.topic, exc)
            self._stop.wait(1.0)
            return
        for m in batch:
            if m.error():
                continue
            rec = decode_record(m.key(), m.value(), group=self.group, trusted=self.trusted,
                                cluster_id=self.cluster_id)
            with self._lock:
                self._read_to = m.offset()
                if isinstance(rec, Ignored):
                    self._ignore(rec, m.offset())
                    continue
                kind, body = rec
                if kind == "done":
                    self._requests.pop(body, None)
                elif kind == "withdrawn":
                    rid, expires = body
                    self._revoked[rid] = expires
                    req = self._requests.get(self.group)
                    if req is not None and req.id == rid:
                        del self._requests[self.group]
                elif kind == "ack":
                    self._done.add((body.id, body.tp))
                elif kind == "reset" and body.request.id not in self._revoked:
                    self._requests[self.group] = body.request
        if batch:
            now = _now_ms()
            with self._lock:
                for rid in [r for r, exp in self._revoked.items() if exp < now - MAX_CLOCK_SKEW_MS]:
                    del self._revoked[rid]

    def _log_end(self) -> int | None:
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as CkTP

        try:
            return self._c.get_watermark_offsets(CkTP(self.topic, 0), timeout=5, cached=False)[1]
        except KafkaException:
            return None

    # -- the application's side (its poll thread) ----------------------------------------------
    def _ready(self) -> bool:
        return self._catch_up_to is not None and self._read_to + 1 >= self._catch_up_to

    def _valid(self, req: LiveResetRequest, now: int) -> bool:
        return (req.created_at_ms - MAX_CLOCK_SKEW_MS <= now < req.expires_at_ms
                and req.id not in self._revoked)

    def pending(self, owned: set[TopicPartition]) -> list[tuple[LiveResetRequest, TopicPartition, int]]:
        """(request, partition, offset) this member must apply now."""
        with self._lock:
            if not self._requests or not self._ready():
                return []
            now = _now_ms()
            return [(req, tp, off)
                    for req in self._requests.values() if self._valid(req, now)
                    for tp, off in sorted(req.offsets.items())
                    if tp in owned and (req.id, tp) not in self._done]

    def is_open(self, request_id: str) -> bool:
        """True while request `request_id` is neither withdrawn nor expired (members hold the
        partitions they applied it to until then, so the command reads back a still position)."""
        with self._lock:
            req = self._requests.get(self.group)
            return req is not None and req.id == request_id and self._valid(req, _now_ms())

    def acknowledge(self, req: LiveResetRequest, tp: TopicPartition, offset: int, *,
                    member: str, error: str | None = None, store: bool = False) -> None:
        """Publish that this member applied (or failed to apply) one partition of a request."""
        from offsetkeeper.kafka import clients

        if self._producer is None:
            self._producer = clients.producer(self._conn, {"linger.ms": 0, "log_level": 3})
        with self._lock:
            self._done.add((req.id, tp))
        key, value = encode_ack(LiveAck(req.id, req.group, tp, offset,
                                        "failed" if error else "applied", member, error, _now_ms(),
                                        store))
        self._producer.produce(self.topic, key=key, value=value, partition=0)
        self._producer.flush(10)

    def ignored_total(self) -> int:
        """How many records were ignored so far (all reasons)."""
        with self._lock:
            return sum(self.ignored.values())

    def close(self) -> None:
        self._stop.set()
        self._thread.join(10)
        try:
            self._c.close()
        finally:
            if self._producer is not None:
                self._producer.flush(5)


def ensure_control_topic(conn: dict, topic: str) -> None:
    """Create the compacted control topic when it is missing (best effort: a member without
    the right to create topics still works once an operator or the command created it)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    from offsetkeeper.kafka import clients

    admin = clients.admin_client(conn, {"log_level": 3})
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

class ControlTopicChannel:
    """The executor's `LiveChannel` on the control topic: publishes signed requests, yields the
    acknowledgements of exactly those requests, withdraws them (tombstones)."""

    def __init__(self, conn_conf: dict, signer, *, cluster_id: str, timeout_s: float = 60.0,
                 topic: str = CONTROL_TOPIC) -> None:
        if not cluster_id:
            raise KafkaOperationError("cannot read the cluster id; a live reset names the cluster "
                                      "it is for, so it cannot be published")
        self._conn = _conn_props(conn_conf)
        self.cluster_id = cluster_id
        self.signer = signer
        # True once every request was withdrawn for good (delivered): none can apply any more.
        self.withdrawn = False
        self.timeout_s = timeout_s
        self.topic = topic
        self.requests: dict[str, LiveResetRequest] = {}  # id -> request
        self._producer = None
        self._first = -1

    def publish(self, offsets, snapshot_id: str | None) -> None:
        """Sign and publish one request per group (raises when it cannot be published)."""
        from offsetkeeper.kafka import clients

        ensure_control_topic(self._conn, self.topic)
        now = _now_ms()
        for group, offs in offsets.items():
            req = LiveResetRequest(f"lr-{uuid.uuid4().hex[:12]}", group, dict(offs), now,
                                   now + int(self.timeout_s * 1000) + 30_000, snapshot_id,
                                   self.cluster_id)
            self.requests[req.id] = req
        self._producer = clients.producer(self._conn, {"linger.ms": 0, "log_level": 3})
        firsts: list[int] = []
        for req in self.requests.values():
            key, value = encode_request(req, self.signer)
            self._producer.produce(self.topic, key=key, value=value, partition=0,
                                   on_delivery=lambda err, m: firsts.append(
                                       m.offset() if err is None else -1))
        if self._producer.flush(15) != 0 or len(firsts) != len(self.requests) or min(firsts) < 0:
            raise KafkaOperationError(f"could not publish the live reset request to {self.topic} "
                                      "(does this principal have WRITE on it?)")
        self._first = min(firsts)

    def acknowledgements(self, deadline: float) -> Iterator[LiveAck]:
        """Acknowledgements of this channel's requests, as they arrive, until `deadline`
        (monotonic). Claims only: the executor checks them against the group."""
        from confluent_kafka import TopicPartition as CkTP

        from offsetkeeper.kafka import clients

        reader = clients.consumer(self._conn, {"group.id": f"offsetkeeper-live-{uuid.uuid4().hex[:8]}",
                                               "enable.auto.commit": False, "log_level": 3})
        reader.assign([CkTP(self.topic, 0, self._first)])
        try:
            while time.monotonic() < deadline:
                for m in reader.consume(200, 0.2):
                    if m.error():
                        continue
                    rec = decode_record(m.key(), m.value())
                    if isinstance(rec, Ignored) or rec[0] != "ack":
                        continue
                    req = self.requests.get(rec[1].id)
                    if req is not None and req.group == rec[1].group and rec[1].tp in req.offsets:
                        yield rec[1]
        finally:
            reader.close()

    def withdraw(self) -> bool:
        """Revoke every request for good: a withdrawal record per request (members never apply
        that request id again, even if its record is replayed), then a tombstone of its key
        (members that start later never see it). True when every record was delivered: only
        then can no member apply the requests any more."""
        if self._producer is None:
            return False
        delivered: list[bool] = []

        def on_delivery(err, _m) -> None:
            delivered.append(err is None)

        for req in self.requests.values():
            key, value = encode_withdrawal(req)
            self._producer.produce(self.topic, key=key, value=value, partition=0,
                                   on_delivery=on_delivery)
            self._producer.produce(self.topic, key=request_key(req.group), value=None, partition=0,
                                   on_delivery=on_delivery)
        self._producer.flush(15)
        self.withdrawn = len(delivered) == 2 * len(self.requests) and all(delivered)
        return self.withdrawn


def live_reset(admin: AdminPort, plan, *, signer, timeout_s: float = 60.0, snapshot: bool = True,
               snapshot_store: str | None = None, topic: str = CONTROL_TOPIC, progress=None):
    """Apply `plan` through the group's running members (the executor's live strategy) and
    return its ApplyReport. `signer`: `live_auth.load_signer(path)`. The groups are
    snapshotted first, as for an ordinary reset; `plan` should come from `build_plan` with
    `ResetScope(live=True)`."""
    from offsetkeeper.progress import no_progress
    from offsetkeeper.reset.apply import ApplyOptions, apply_plan
    from offsetkeeper.snapshots.capture import snapshot_fn

    try:
        admin.topic_partitions([topic])
    except UnknownTopicError:
        ensure_control_topic(_conn_props(admin.conn.client_config()), topic)
        try:
            admin.topic_partitions([topic])
        except UnknownTopicError:
            raise KafkaOperationError(f"the live reset topic {topic} does not exist and could not "
                                      "be created; create it (1 partition, cleanup.policy=compact)") from None
    channel = ControlTopicChannel(admin.conn.client_config(), signer, cluster_id=admin.cluster_id(),
                                  timeout_s=timeout_s, topic=topic)
    opts = ApplyOptions(snapshot_fn=snapshot_fn(snapshot_store) if snapshot else None,
                        description=f"before live reset {plan.target}", live=channel,
                        progress=progress or no_progress)
    return apply_plan(admin, plan, opts)
