"""The admin facade `KafkaAdmin`: plain calls, typed results, timeouts, composed of a
librdkafka client (`LibrdkafkaAdmin`, here) and a Java-helper client (`kafka.jvm.JavaAdmin`).

Everything that talks to a cluster about groups and offsets goes through `KafkaAdmin`, so the
rest of the library deals in `offsetkeeper.models` and `offsetkeeper.errors` only; it takes
the facade typed by the roles it uses (kafka/ports.py).

Size: over 500 lines because every librdkafka admin request offsetkeeper makes is here, each
with its timeout, batching and error translation (the facade itself is a table of which client
answers which call).
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Concatenate, ParamSpec, TypeVar

from confluent_kafka import ConsumerGroupTopicPartitions, IsolationLevel, KafkaException
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    ConfigResource,
    ConfigSource,
    OffsetSpec,
    ResourceType,
)

from offsetkeeper.config import Connection
from offsetkeeper.errors import (
    KafkaOperationError,
    OffsetkeeperError,
    UnknownGroupError,
    UnknownTopicError,
)
from offsetkeeper.kafka import clients, jvm
from offsetkeeper.kafka.errors import connection_failure, error_name, translate
from offsetkeeper.kafka.jvm import JavaAdmin
from offsetkeeper.kafka.ports import OFFSET_DELETE_API, AdminPort, unwrap_each
from offsetkeeper.models import (
    CommittedOffset,
    GroupInfo,
    GroupListing,
    MemberInfo,
    TopicPartition,
    Watermarks,
    shared_tp,
)

DEFAULT_TIMEOUT = 15.0
PROBE_TIMEOUT = 10.0
# librdkafka's first backoff after a lost connection (its default: 100 ms); see `admin`.
RECONNECT_BACKOFF_MS = 20
# Describing member-less classic groups all at once (`LibrdkafkaAdmin._describe_member_less`):
# from this many groups on, while the cluster has at most SPREAD times as many; the listing
# may take this long before the groups are described one by one instead.
BATCH_DESCRIBE_MIN = 32
BATCH_DESCRIBE_SPREAD = 8
BATCH_DESCRIBE_TIMEOUT = 3.0
LIBRDKAFKA_LOG = logging.getLogger("offsetkeeper.librdkafka")


OFFSET_INVALID = -1001

# A group's coordinator that cannot answer an OffsetFetch safely yet (see committed_offsets_each).
COORDINATOR_NOT_READY = frozenset({
    "NOT_COORDINATOR", "NOT_COORDINATOR_FOR_GROUP", "COORDINATOR_NOT_AVAILABLE",
    "GROUP_COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS",
    "GROUP_LOAD_IN_PROGRESS", "_WAIT_COORD", "_TRANSPORT", "_TIMED_OUT", "_ALL_BROKERS_DOWN",
    "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION"})

# A partition whose leader is not known yet (new topic) or just moved (failover): resend.
LEADER_MOVED = frozenset({"NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_FOR_PARTITION",
                          "LEADER_NOT_AVAILABLE", "_LEADER_NOT_AVAILABLE",
                          "UNKNOWN_LEADER_EPOCH", "FENCED_LEADER_EPOCH"})

# confluent-kafka's enum names are not Kafka's state names (PREPARING_REBALANCING for Kafka's
# PreparingRebalance): offsetkeeper shows and filters by Kafka's names, lower-cased.
_KAFKA_STATE_NAMES = {"preparingrebalancing": "preparingrebalance",
                      "completingrebalancing": "completingrebalance"}


def _state_name(state: Any) -> str:
    name = getattr(state, "name", None) or str(state or "unknown")
    name = name.split(".")[-1].lower().replace("_", "")
    return _KAFKA_STATE_NAMES.get(name, name)


def _tp(ck: CkTopicPartition) -> TopicPartition:
    return shared_tp(ck.topic, ck.partition)


def commit_metadata(ck: Any) -> str | None:
    """The commit metadata of a partition confluent-kafka returned, or None when it cannot be
    read: the binding copies librdkafka's length-counted metadata as a C string, so it may carry
    bytes past its end (seen with the 12 characters Kafka Streams commits) and reading it raises
    UnicodeDecodeError at random. Those bytes are not the metadata, so none is claimed."""
    try:
        return ck.metadata or ""
    except UnicodeDecodeError:
        return None


class LibrdkafkaAdmin:
    """The librdkafka half of the admin facade: every admin request confluent-kafka can make,
    on one cluster. Thread-safe. `correct_states` fixes group states librdkafka cannot name
    (the facade passes its Java client's `with_other_group_types`); `exact` is the Java client
    that reads and commits commit metadata exactly where confluent-kafka cannot (None: never)."""

    def __init__(self, conn: Connection, *, timeout: float = DEFAULT_TIMEOUT,
                 correct_states: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
                 exact: JavaAdmin | None = None) -> None:
        self.conn = conn
        self.timeout = timeout
        self._correct_states = correct_states
        self._exact = exact
        self.last_list_errors: list[str] = []
        # groups the cluster had at the latest list_groups (None: not listed yet), and whether
        # describing every group at once still answers (see `_describe_member_less`)
        self._groups_listed: int | None = None
        self._batch_describe = True
        self._admin: AdminClient | None = None
        self._retired: list[AdminClient] = []
        self._api_versions: dict[str, dict[int, tuple[int, int]]] | None = None
        self._probed = False
        self._login_failure: OffsetkeeperError | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def admin(self) -> AdminClient:
        if self._admin is None:
            conf = self.conn.client_config()
            conf.setdefault("socket.timeout.ms", str(int(self.timeout * 1000)))
            # librdkafka logs informational noise (e.g. BGQUEUE purges) to stderr at level 6.
            conf.setdefault("log_level", "3")
            # Come back quickly after a broker restart (librdkafka's default backs off to 10 s).
            conf.setdefault("reconnect.backoff.max.ms", "1000")
            # librdkafka drops its bootstrap connection once the first metadata names the
            # brokers, failing the request in flight on it, and connects again only after
            # max(11, reconnect.backoff.ms / 2) ms: with the default 100 ms that is ~50 ms of
            # every command's first request (measured: first metadata 56 ms -> 15 ms).
            conf.setdefault("reconnect.backoff.ms", str(RECONNECT_BACKOFF_MS))
            # librdkafka's own log lines go to Python logging (shown only with --verbose).
            conf.setdefault("logger", LIBRDKAFKA_LOG)
            # A failed SASL login or TLS handshake never fails a request (it times out); it is
            # reported to the error callback, which the probe turns into one line at once.
            conf.setdefault("error_cb", self._on_error)
            self._admin = clients.admin_client(conf)
            if not self._probed:
                self._probed = True
                self._probe(self._admin)
        return self._admin

    def connect(self) -> None:
        """Connect (and probe the cluster) now, e.g. before several threads share the client."""
        self.admin  # noqa: B018 -- the property connects and probes once

    def _on_error(self, err: Any) -> None:
        failure = connection_failure(err.name(), err.str(), bootstrap=self.conn.bootstrap_servers)
        if failure is not None:
            self._login_failure = failure

    def _probe(self, client: AdminClient) -> None:
        """Fail fast, in one line naming the address, when no broker answers at all, or the
        cluster refuses the login or the TLS handshake; at once when every bootstrap server
        refuses the connection or does not resolve (kafka/reach.py)."""
        import time

        from offsetkeeper.kafka.reach import certainly_unreachable

        if (why := certainly_unreachable(self.conn.bootstrap_servers)) is not None:
            raise KafkaOperationError(f"cannot reach the cluster at {self.conn.bootstrap_servers}: "
                                      f"{why}; check --bootstrap-server", code="_TRANSPORT",
                                      retriable=True)
        wait = min(self.timeout, PROBE_TIMEOUT)
        deadline = time.monotonic() + wait
        step = 0.5  # short first tries (a refused login shows at once), doubled for slow brokers
        while True:
            try:
                client.list_topics(timeout=min(step, max(0.05, deadline - time.monotonic())))
                return
            except KafkaException as exc:
                client.poll(0)  # serves the error callback
                failure = self._login_failure
                if failure is not None:
                    raise failure from None
                if error_name(exc) not in ("_TIMED_OUT", "_TRANSPORT", "_ALL_BROKERS_DOWN", "_RESOLVE", ""):
                    raise translate(exc, action=f"connect to {self.conn.bootstrap_servers}") from exc
                if time.monotonic() < deadline:
                    step *= 2
                    continue
                raise KafkaOperationError(
                    f"cannot reach the cluster at {self.conn.bootstrap_servers}: no broker answered "
                    f"within {wait:g} s; check --bootstrap-server, the network and the security "
                    "settings", code=error_name(exc) or "_TRANSPORT", retriable=True) from exc

    def close(self) -> None:
        self._admin = None  # AdminClient has no close(); dropping it frees librdkafka's handle
        self._retired.clear()

    def reconnect(self) -> None:
        """Use a fresh client from now on (after the cluster was unreachable).

        After a broker restart, group requests on the old client can hang until they time out,
        again and again; new connections do not. The old client is kept alive until close():
        destroying it with requests still pending can abort the process (librdkafka #4605).
        """
        if self._admin is not None:
            self._retired.append(self._admin)
            self._admin = None

    def _wait(self, future: cf.Future, *, action: str, **ctx: Any) -> Any:
        try:
            return future.result(timeout=self.timeout)
        except (KafkaException, cf.TimeoutError, TimeoutError) as exc:
            if self._admin is not None:
                self._admin.poll(0)  # hand librdkafka's queued log lines to Python logging
            raise translate(exc if not isinstance(exc, cf.TimeoutError) else TimeoutError(),
                            action=action, **ctx) from exc

    # -- cluster and topics ------------------------------------------------------------------
    def ping(self) -> None:
        """Raise a (retriable) error unless the cluster answers a metadata request.

        Group requests sent while no broker is reachable can abort the process when they time
        out during coordinator lookup (librdkafka issue #4605), so callers that retry check
        reachability with this cheap, safe call first.
        """
        try:
            self.admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise translate(exc, action="reach the cluster") from exc

    def cluster_id(self) -> str:
        """The cluster id (used to tell clusters apart in snapshots)."""
        result = self._wait(self.admin.describe_cluster(request_timeout=self.timeout),
                            action="describe cluster")
        return result.cluster_id or ""

    def topic_partitions(self, topics: Iterable[str] | None = None) -> dict[str, list[int]]:
        """Partition ids per topic; all non-internal topics when `topics` is None."""
        try:
            md = self.admin.list_topics(timeout=self.timeout)
        except KafkaException as exc:
            raise translate(exc, action="list topics") from exc
        if topics is None:
            return {t: sorted(m.partitions) for t, m in md.topics.items()
                    if not t.startswith("__") and m.error is None}
        out: dict[str, list[int]] = {}
        for t in topics:
            m = md.topics.get(t)
            if m is None or m.error is not None:
                # Kafka leaves out the topics a principal may not Describe: say so when it has one
                hidden = " (or this principal may not Describe it: Kafka hides such topics)" \
                    if "SASL" in str(self.conn.properties.get("security.protocol", "")).upper() \
                    else ""
                raise UnknownTopicError(f"unknown topic '{t}'{hidden}", topic=t)
            out[t] = sorted(m.partitions)
        return out

    def topics_without_read(self, topics: Iterable[str]) -> set[str]:
        """The topics among `topics` this principal may not Read (a commit or an offset delete
        needs Read on the topic), from the topics' authorized operations (KIP-430). Empty when
        it cannot be told (an old broker, the call failed): the commit's own answer remains."""
        from confluent_kafka import TopicCollection
        from confluent_kafka.admin import AclOperation

        names = sorted(set(topics))
        if not names:
            return set()
        try:
            futs = self.admin.describe_topics(TopicCollection(names),
                                              include_authorized_operations=True,
                                              request_timeout=self.timeout)
        except (KafkaException, TypeError, ValueError):
            return set()
        denied: set[str] = set()
        for name, fut in futs.items():
            try:
                desc = fut.result(self.timeout + 5)
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if getattr(err, "name", lambda: "")() == "TOPIC_AUTHORIZATION_FAILED":
                    denied.add(name)
                continue
            except Exception:  # an advisory check: the commit still answers
                continue
            ops = getattr(desc, "authorized_operations", None)
            if ops is not None and AclOperation.READ not in ops and AclOperation.ALL not in ops:
                denied.add(name)
        return denied

    def resolve_partitions(self, specs: Iterable[Any]) -> tuple[dict[str, list[int]], list[TopicPartition]]:
        """Check `topic` / `topic:P,...` specs against the cluster: the topics' partition ids and
        the partitions the specs select. Specs are `TopicSpec`s or (topic, partitions|None)
        tuples. The one place an unknown topic or partition becomes an UnknownTopicError."""
        pairs = [(s.topic, s.partitions) if hasattr(s, "topic") else tuple(s) for s in specs]
        parts = self.topic_partitions(list(dict.fromkeys(t for t, _ in pairs)))
        selected: set[TopicPartition] = set()
        for topic, ps in pairs:
            for p in ps or parts[topic]:
                if p not in parts[topic]:
                    raise UnknownTopicError(f"topic '{topic}' has no partition {p} "
                                            f"(partitions 0-{len(parts[topic]) - 1})",
                                            topic=topic, partition=p)
                selected.add(TopicPartition(topic, p))
        return parts, sorted(selected)

    # -- groups ------------------------------------------------------------------------------
    def list_groups(self) -> list[GroupListing]:
        """Every consumer group the cluster knows, sorted by id."""
        result = self._wait(self.admin.list_consumer_groups(request_timeout=self.timeout),
                            action="list groups")
        # Brokers that did not answer (a node down): their groups are missing from `valid`.
        self.last_list_errors = [str(e) for e in (getattr(result, "errors", None) or [])]
        if self.last_list_errors and not result.valid:
            raise KafkaOperationError(f"list groups: no broker answered ({self.last_list_errors[0]})",
                                      code="_TRANSPORT", retriable=True)
        self._groups_listed = None if self.last_list_errors else len(result.valid)
        return sorted(
            (GroupListing(g.group_id, _state_name(g.state),
                          _state_name(getattr(g, "type", "")) if getattr(g, "type", None) else "",
                          "" if g.is_simple_consumer_group else "consumer")
             for g in result.valid),
            key=lambda g: g.group_id,
        )

    def all_group_ids(self) -> set[str]:
        """Ids of the groups of every type and protocol (share, streams and Connect's groups
        too), without their types.

        librdkafka's typed listing (`list_groups`) leaves out every group whose protocol type is
        not `consumer` (or empty): share, streams and Connect groups never reach it. Its older
        listing (ListGroups, then one DescribeGroups per broker) keeps them, which tells
        whether any such group exists without starting Kafka's Java client.
        """
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                found = self.admin.list_groups(timeout=self.timeout)
        except KafkaException as exc:
            raise translate(exc, action="list groups") from exc
        return {g.id for g in found}

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupInfo]:
        """State, coordinator, assignor and members (with assignments) of each group."""
        return unwrap_each(self.describe_groups_each(group_ids))

    def describe_groups_each(self, group_ids: Iterable[str], *, real_states: bool = True,
                             ) -> dict[str, GroupInfo | OffsetkeeperError]:
        """Like describe_groups, but one failing group does not hide the others' answers.

        `real_states=False` skips the correction of states librdkafka cannot name
        (`with_other_group_types`, a JVM call): for callers that only need the coordinator to
        answer, never for a safety check.
        """
        ids = list(dict.fromkeys(group_ids))
        if not ids:
            return {}
        out: dict[str, GroupInfo | OffsetkeeperError] = {}
        # A coordinator that is still loading its __consumer_offsets partition (the first
        # seconds of a new cluster, or after a coordinator moved) answers NOT_COORDINATOR, a
        # coordinator that just died breaks the connection, and librdkafka does not retry
        # ConsumerGroupDescribe: ask again until the timeout.
        deadline = time.monotonic() + self.timeout
        out.update(self._describe_member_less(ids))
        pending = [g for g in ids if g not in out]
        while pending:
            futures = self.admin.describe_consumer_groups(pending, request_timeout=self.timeout)
            pending = []
            for gid, fut in futures.items():
                try:
                    out[gid] = self._describe_result(gid, fut)
                except OffsetkeeperError as exc:
                    if getattr(exc, "code", None) in COORDINATOR_NOT_READY and time.monotonic() < deadline:
                        pending.append(gid)
                    else:
                        out[gid] = exc
            if pending:
                time.sleep(0.25)
        answers = {g: out[g] for g in ids}
        if real_states and self._correct_states is not None:
            return self._correct_states(answers)
        return answers

    def _describe_member_less(self, ids: list[str]) -> dict[str, GroupInfo]:
        """The member-less classic groups among `ids`, described all at once: one ListGroups
        and one DescribeGroups per broker (librdkafka's older listing, as `all_group_ids`),
        where `describe_consumer_groups` sends four requests per group (a FindCoordinator and
        a ConsumerGroupDescribe that a classic group answers GROUP_ID_NOT_FOUND, then a
        FindCoordinator and a DescribeGroups): 2 ms instead of 66 ms for 200 groups, measured
        (a bulk reset describes every group two or three times, issue 32).

        Only answers that mean the same as `describe_consumer_groups`' are taken: one broker's
        (not two: a coordinator moving), no error, a `consumer` (or empty) protocol type, a
        live state other than Dead, and no member. Every other group is left to the per-group
        describe: a group with members (its refusal names them as before), a consumer-protocol
        group (KIP-848: DescribeGroups calls it Dead, member-less, while it runs), a share,
        streams or Connect group, one that does not exist. The group's coordinator answered the DescribeGroups, which is the check an
        offset read needs (librdkafka #5040, `committed_offsets_each`). Used for at least
        BATCH_DESCRIBE_MIN groups, when the latest listing showed the cluster has at most
        BATCH_DESCRIBE_SPREAD times as many (every group of every broker is described); a
        failed or slow listing (a broker down) turns it off for this client."""
        import warnings
        from collections import Counter

        if len(ids) < BATCH_DESCRIBE_MIN or not self._batch_describe:
            return {}
        if self._groups_listed is None:  # named groups: how many the cluster has, once
            try:
                res = self.admin.list_consumer_groups(request_timeout=self.timeout).result(
                    timeout=self.timeout + 5)
            except (KafkaException, cf.TimeoutError, TimeoutError):
                res = None
            if res is None or getattr(res, "errors", None):
                self._batch_describe = False
                return {}
            self._groups_listed = len(res.valid)
        if self._groups_listed > BATCH_DESCRIBE_SPREAD * len(ids):
            return {}
        wanted = set(ids)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                listed = self.admin.list_groups(timeout=min(self.timeout, BATCH_DESCRIBE_TIMEOUT))
        except (KafkaException, TypeError, ValueError, RuntimeError):
            self._batch_describe = False  # e.g. a broker that does not answer: per group
            return {}
        seen = Counter(g.id for g in listed)
        out: dict[str, GroupInfo] = {}
        for g in listed:
            # listed by two brokers: a coordinator moving, one answer may be stale
            if g.id not in wanted or seen[g.id] > 1 or g.error is not None or g.members \
                    or (g.protocol_type or "") not in ("consumer", "") \
                    or _state_name(g.state) in ("dead", "unknown", ""):
                continue
            b = g.broker
            out[g.id] = GroupInfo(group_id=g.id, state=_state_name(g.state),
                                  coordinator=f"{b.host}:{b.port} ({b.id})" if b else "",
                                  assignor=g.protocol or "", group_type="classic", members=())
        return out

    def _describe_result(self, gid: str, fut: cf.Future) -> GroupInfo:
        d = self._wait(fut, action="describe group", group=gid)
        members = tuple(
            MemberInfo(
                member_id=m.member_id,
                client_id=m.client_id or "",
                host=(m.host or "").lstrip("/"),
                group_instance_id=m.group_instance_id,
                assignment=tuple(sorted(_tp(tp) for tp in (m.assignment.topic_partitions
                                                           if m.assignment else []))),
            )
            for m in d.members
        )
        coord = d.coordinator
        return GroupInfo(
            group_id=gid,
            state=_state_name(d.state),
            coordinator=f"{coord.host}:{coord.port} ({coord.id})" if coord else "",
            assignor=d.partition_assignor or "",
            group_type=_state_name(getattr(d, "type", "")) if getattr(d, "type", None) else "",
            members=members,
        )

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        """One group's committed offsets (partitions without a commit are absent); raises."""
        return unwrap_each(self.committed_offsets_each([group_id]))[group_id]

    def committed_offsets_each(
        self, group_ids: Iterable[str], *,
        described: Mapping[str, GroupInfo | OffsetkeeperError] | None = None,
    ) -> dict[str, dict[TopicPartition, CommittedOffset] | OffsetkeeperError]:
        """Committed offsets of many groups, every request in flight at once (the admin API takes
        one group per request); a group that fails maps to its translated error instead of
        hiding the others' answers. The one reader of committed offsets (`committed_offsets`
        is its one-group form; `kafka.ports.unwrap_each` raises the first failure).

        Each group's coordinator is asked first (DescribeGroups; pass `described` when the
        caller just did): librdkafka's admin client crashes the process when an OffsetFetch is
        answered NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE (librdkafka #5040: it re-queries
        the coordinator through a consumer-group handle an admin client does not have), which
        Apache Kafka answers while a coordinator moves or loads, e.g. after a broker restart.
        A group whose coordinator is not ready gets that (retriable) error, and no OffsetFetch.
        """
        ids = list(dict.fromkeys(group_ids))
        if described is None:
            described = self.describe_groups_each(ids, real_states=False) if ids else {}
        out: dict[str, dict[TopicPartition, CommittedOffset] | OffsetkeeperError] = {}
        futures: dict[str, cf.Future] = {}
        for g in ids:
            info = described.get(g)
            if isinstance(info, KafkaOperationError) and info.code in COORDINATOR_NOT_READY:
                out[g] = info
            else:
                futures[g] = self.admin.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(g)], request_timeout=self.timeout)[g]
        for g, fut in futures.items():
            try:
                res = self._wait(fut, action="read committed offsets", group=g)
                out[g] = {_tp(tp): CommittedOffset(tp.offset, commit_metadata(tp))
                          for tp in res.topic_partitions if tp.offset >= 0 and tp.error is None}
            except OffsetkeeperError as exc:
                out[g] = exc
        self._exact_metadata(out)
        return {g: out[g] for g in ids}

    def _exact_metadata(self, out: dict[str, Any]) -> None:
        """Re-read, through the Java client, the groups whose commits carry metadata, in place.

        confluent-kafka reads metadata up to a NUL byte rather than by its length, so a
        non-empty value may hold bytes past its end (or be unreadable: None); an empty one is
        exact. Most groups commit none, so the fast path costs nothing; without the helper, or
        when its read fails, what confluent-kafka read stays (unreadable stays None)."""
        from offsetkeeper.kafka import jvm

        groups = [g for g, offs in out.items() if isinstance(offs, dict)
                  and any(c.metadata != "" for c in offs.values())]
        if not groups or self._exact is None or not jvm.available():
            return
        try:
            exact = self._exact.exact_committed_offsets(groups)
        except OffsetkeeperError:
            return
        for g in groups:
            got = exact.get(g)
            if isinstance(got, dict):
                # the Java read is the later one: a commit made in between wins as a whole
                out[g] = {tp: got.get(tp, c) for tp, c in out[g].items()}

    def alter_offsets_async(
        self, group_id: str, offsets: Mapping[TopicPartition, int | CommittedOffset]
    ) -> cf.Future:
        """Start committing offsets for a group (no active-member check here: see reset.apply).

        Offsets with commit metadata are committed through the Java client, which keeps it
        exactly (`alter_offsets_exact`: confluent-kafka appends a NUL byte); bare offsets, the
        usual case, through confluent-kafka (and so is everything without the helper)."""
        from offsetkeeper.kafka import jvm

        if any(isinstance(o, CommittedOffset) and o.metadata for o in offsets.values()) \
                and self._exact is not None and jvm.available():
            try:
                result = self._exact.alter_offsets_exact(group_id, {
                    tp: o if isinstance(o, CommittedOffset) else CommittedOffset(int(o))
                    for tp, o in offsets.items()})
            except OffsetkeeperError:
                # a helper built before this operation, or one that died: the same commit
                # through confluent-kafka (idempotent), whose answer says what happened
                logging.getLogger(__name__).debug("exact metadata commit through the helper "
                                                  "failed", exc_info=True)
            else:
                done: cf.Future = cf.Future()
                done.set_result(result)
                return done
        tps = []
        for tp, o in sorted(offsets.items()):
            if isinstance(o, CommittedOffset) and o.metadata:
                tps.append(CkTopicPartition(tp.topic, tp.partition, o.offset, metadata=o.metadata))
            else:
                tps.append(CkTopicPartition(tp.topic, tp.partition, int(getattr(o, "offset", o))))
        return self.admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group_id, tps)], request_timeout=self.timeout
        )[group_id]

    def alter_result(self, group_id: str, pending: cf.Future) -> dict[TopicPartition, str | None]:
        """Per-partition error name (None on success) of an alter started with alter_offsets_async."""
        res = self._wait(pending, action="commit offsets", group=group_id)
        if isinstance(res, dict):  # committed through the Java client (with metadata)
            return res
        return {_tp(tp): (tp.error.name() if tp.error else None) for tp in res.topic_partitions}

    def delete_offsets(self, group_id: str, tps: Iterable[TopicPartition]) -> dict[TopicPartition, str | None]:
        """Delete a group's committed offsets for the given partitions (KIP-496 OffsetDelete)."""
        # The Python binding lacks OffsetDelete; librdkafka has it (see offset_delete.py).
        from offsetkeeper.kafka.offset_delete import delete_group_offsets

        self.require_api(OFFSET_DELETE_API, "OffsetDelete (KIP-496, Kafka 2.4+)")
        return delete_group_offsets(self.conn.client_config(), group_id, sorted(tps),
                                    timeout_s=self.timeout)

    def api_versions(self) -> dict[str, dict[int, tuple[int, int]]]:
        """Per broker, the API keys it supports with their version ranges (cached).

        librdkafka logs the ApiVersions answer of every broker it connects to under the
        "feature" debug context; a short-lived client collects those lines, so no request is
        hand-written here.
        """
        if self._api_versions is None:
            import logging

            from offsetkeeper.kafka.apiversions import parse_api_versions

            lines: list[str] = []

            class _Collect(logging.Handler):
                def emit(self, record: logging.LogRecord) -> None:
                    lines.append(record.getMessage())

            log = logging.getLogger(f"offsetkeeper.apiversions.{id(self)}")
            log.propagate = False
            log.setLevel(logging.DEBUG)
            log.addHandler(_Collect())
            conf = {**self.conn.client_config(), "debug": "feature", "logger": log}
            p = clients.producer(conf)
            try:
                p.list_topics(timeout=self.timeout)
                p.poll(0.2)
            except KafkaException as exc:
                raise translate(exc, action="read the broker's API versions") from exc
            self._api_versions = parse_api_versions(lines)
        return self._api_versions

    def require_api(self, key: int, name: str) -> None:
        """Fail with one line (instead of a crash inside librdkafka) when a broker lacks an API."""
        versions = self.api_versions()
        lacking = sorted(b for b, apis in versions.items() if key not in apis)
        if lacking or not versions:
            from offsetkeeper.kafka.errors import translate_code

            raise translate_code("UNSUPPORTED_VERSION", action=f"use {name}",
                                 detail=f"broker {lacking[0] if lacking else '?'} lacks it")

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, Exception | None]:
        """Delete groups; per group None on success or the translated error."""
        ids = list(dict.fromkeys(group_ids))
        futures = self.admin.delete_consumer_groups(ids, request_timeout=self.timeout)
        out: dict[str, Exception | None] = {}
        for gid, fut in futures.items():
            try:
                self._wait(fut, action="delete group", group=gid)
                out[gid] = None
            except Exception as exc:
                out[gid] = exc
        return out

    # -- offsets of the log ------------------------------------------------------------------
    def _list_offsets(self, specs: dict[CkTopicPartition, OffsetSpec], action: str,
                      **kw: Any) -> dict[TopicPartition, Any]:
        return self._list_offsets_many([(specs, action)], **kw)[0]

    def _list_offsets_many(self, requests: list[tuple[dict[CkTopicPartition, OffsetSpec], str]],
                           **kw: Any) -> list[dict[TopicPartition, Any]]:
        """Send every request at once; resend partitions whose leader moved or is not known yet.

        Apache Kafka answers NOT_LEADER_OR_FOLLOWER / LEADER_NOT_AVAILABLE for a partition right
        after the topic was created, or while its leader fails over; Kafka's Java admin client
        retries those itself, librdkafka's list_offsets does not.
        """
        import time

        results: list[dict[TopicPartition, Any]] = [{} for _ in requests]
        pending = [(i, dict(specs), action) for i, (specs, action) in enumerate(requests) if specs]
        # a request may take the whole timeout before librdkafka gives up on a dead leader: leave
        # room for one more round once the controller has moved leadership (seconds)
        deadline = time.monotonic() + self.timeout + 10
        fresh_gap = 1.0
        fresh_at = time.monotonic() + 2 * fresh_gap
        # each topic's partitions per the latest metadata read (None: no such topic)
        known: dict[str, frozenset[int] | None] = {}
        while pending:
            leaderless = False
            sent = []
            for i, specs, action in pending:
                try:
                    sent.append((i, specs, action,
                                 self.admin.list_offsets(specs, request_timeout=self.timeout, **kw)))
                except KafkaException as exc:
                    raise translate(exc, action=action) from exc
            pending = []
            for i, specs, action, futures in sent:
                again = {}
                for ck, fut in futures.items():
                    try:
                        res = self._wait(fut, action=action, topic=ck.topic,
                                         partition=ck.partition)
                        if res.offset == OFFSET_INVALID:
                            # librdkafka's answer when the leader it knew is gone (no error)
                            raise KafkaOperationError(
                                f"{action}: {ck.topic}:{ck.partition}: the partition has no "
                                f"reachable leader", code="LEADER_NOT_AVAILABLE", retriable=True,
                                topic=ck.topic, partition=ck.partition)
                        results[i][_tp(ck)] = res
                    except (KafkaOperationError, UnknownTopicError) as exc:
                        # a request to a leader that just died times out: ask again, the
                        # controller moves leadership within seconds
                        down = self._leaderless(exc, ck, known)
                        if not down and getattr(exc, "code", None) not in \
                                LEADER_MOVED | {"_TIMED_OUT", "_TRANSPORT"}:
                            raise
                        leaderless |= down
                        if time.monotonic() > deadline:
                            if down:
                                raise KafkaOperationError(
                                    f"{action}: {ck.topic}:{ck.partition}: the partition has no "
                                    "leader (offline: its leader's broker is down and no other "
                                    "in-sync replica took over)", code="LEADER_NOT_AVAILABLE",
                                    retriable=True, topic=ck.topic, partition=ck.partition) from exc
                            raise
                        again[ck] = specs[ck]
                if again:
                    pending.append((i, again, action))
            if pending:
                time.sleep(0.5 if leaderless else 0.2)
                if leaderless and time.monotonic() >= fresh_at and len(self._retired) < 8:
                    # librdkafka does not reconnect to a leader it saw die: it fails each
                    # list_offsets for its partitions without sending one, so only a fresh
                    # client notices the broker is back. Retired clients live until close():
                    # every 2, 4, 8 ... s, and never more than 8 of them (a sampler running
                    # for days beside an offline partition).
                    self.reconnect()
                    fresh_gap *= 2
                    fresh_at = time.monotonic() + fresh_gap
                # librdkafka keeps sending to the leader in its metadata cache (refreshed every
                # 5 min): a metadata request for the topics learns the new leaders now
                for topic in {ck.topic for _, specs, _ in pending for ck in specs}:
                    self._read_partitions(topic, known)
        return results

    def _read_partitions(self, topic: str, known: dict[str, frozenset[int] | None]) -> None:
        """Refresh librdkafka's metadata of `topic` and note its partitions in `known`."""
        try:
            m = self.admin.list_topics(topic, timeout=min(self.timeout, 5)).topics.get(topic)
        except KafkaException:
            known.pop(topic, None)  # in failover: asked again next round
            return
        known[topic] = frozenset(m.partitions) if m is not None and m.error is None else None

    def _leaderless(self, exc: Exception, ck: CkTopicPartition,
                    known: dict[str, frozenset[int] | None]) -> bool:
        """True when librdkafka's "No leaders found" (_NOENT) is about a partition that exists.

        librdkafka gives _NOENT both for an unknown topic and for a partition whose leader's
        broker it saw go down (until the controller moves leadership, or for good while no
        other in-sync replica is up): the topic's metadata tells the two apart. It is the
        metadata each round refreshes anyway (`known`); read here only on the first _NOENT.
        """
        if exc.__cause__ is None or error_name(exc.__cause__) != "_NOENT":
            return False
        if ck.topic not in known:
            self._read_partitions(ck.topic, known)
        if ck.topic not in known:
            return True  # no metadata either (failover): a later round tells them apart
        parts = known[ck.topic]
        return parts is not None and ck.partition in parts

    def watermarks(self, tps: Iterable[TopicPartition], *,
                   ordered: bool = True) -> dict[TopicPartition, Watermarks]:
        """Log start and log end offsets of each partition: two batched requests, both in flight
        at once. Sorted by partition unless `ordered=False` (the history sampler reads thousands
        of partitions every cycle and needs no order)."""
        specs_low, specs_high = {}, {}
        for t in set(tps):
            ck = CkTopicPartition(t.topic, t.partition)
            specs_low[ck] = OffsetSpec.earliest()
            specs_high[ck] = OffsetSpec.latest()
        if not specs_low:
            return {}
        low, high = self._list_offsets_many([(specs_low, "read log start offsets"),
                                             (specs_high, "read log end offsets")])
        out = {tp: Watermarks(low[tp].offset, r.offset) for tp, r in high.items()}
        return {t: out[t] for t in sorted(out)} if ordered else out

    def offsets_for_time(self, tps: Iterable[TopicPartition], timestamp_ms: int) -> dict[TopicPartition, int | None]:
        """Offset of the first record with timestamp >= `timestamp_ms`; None when there is none."""
        res = self._list_offsets(
            {CkTopicPartition(t.topic, t.partition): OffsetSpec.for_timestamp(int(timestamp_ms))
             for t in set(tps)},
            "look up offsets by time",
        )
        return {tp: (r.offset if r.offset >= 0 else None) for tp, r in res.items()}

    def end_offsets(self, tps: Iterable[TopicPartition], *, read_committed: bool = True) -> dict[TopicPartition, int]:
        """Log end of each partition; with `read_committed` the last stable offset (LSO)."""
        level = IsolationLevel.READ_COMMITTED if read_committed else IsolationLevel.READ_UNCOMMITTED
        res = self._list_offsets({CkTopicPartition(t.topic, t.partition): OffsetSpec.latest()
                                  for t in set(tps)}, "read log end offsets", isolation_level=level)
        return {tp: r.offset for tp, r in res.items()}

    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        """Non-default configuration values of each topic (describe_configs)."""
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in dict.fromkeys(topics)]
        if not resources:
            return {}
        try:
            futures = self.admin.describe_configs(resources, request_timeout=self.timeout)
        except KafkaException as exc:
            raise translate(exc, action="describe topic configs") from exc
        out: dict[str, dict[str, str]] = {}
        for res, fut in futures.items():
            try:
                entries = self._wait(fut, action="describe topic configs", topic=res.name)
            except KafkaOperationError as exc:
                # sent to a broker that just died: once more, to another one
                if exc.code not in ("_TIMED_OUT", "_TRANSPORT"):
                    raise
                again = self.admin.describe_configs([res], request_timeout=self.timeout)[res]
                entries = self._wait(again, action="describe topic configs", topic=res.name)
            out[res.name] = {
                name: e.value for name, e in sorted(entries.items())
                if e.value is not None and not e.is_default
                and e.source not in (ConfigSource.DEFAULT_CONFIG.value, ConfigSource.STATIC_BROKER_CONFIG.value)
                and not e.is_sensitive
            }
        return out

    def create_topic(self, name: str, partitions: int, *, replication_factor: int = -1,
                     configs: Mapping[str, str] | None = None) -> None:
        """Create a topic and wait until its metadata shows every partition."""
        import time

        from confluent_kafka.admin import NewTopic

        fut = self.admin.create_topics(
            [NewTopic(name, partitions, replication_factor, config=dict(configs or {}))],
            request_timeout=self.timeout)[name]
        self._wait(fut, action="create topic", topic=name)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            md = self.admin.list_topics(name, timeout=self.timeout)
            t = md.topics.get(name)
            # every partition led: before that its broker answers NOT_LEADER_OR_FOLLOWER
            if (t is not None and t.error is None and len(t.partitions) >= partitions
                    and all(p.leader >= 0 and p.error is None for p in t.partitions.values())):
                break
            time.sleep(0.1)
        # Apache Kafka shows the new partitions in metadata a moment before their leader serves
        # ListOffsets (NOT_LEADER_OR_FOLLOWER): wait until it does, so callers can read offsets.
        # A broker that has not applied the new topic's metadata yet answers
        # UNKNOWN_TOPIC_OR_PARTITION for the topic this call just created (seen on Kafka 4.4
        # when a node was killed meanwhile): that too is waited out, never "unknown topic".
        tps = [TopicPartition(name, p) for p in range(partitions)]
        while True:
            try:
                self.watermarks(tps, ordered=False)
                return
            except (KafkaOperationError, UnknownTopicError) as exc:
                retriable = isinstance(exc, UnknownTopicError) or exc.retriable
                if not retriable or time.monotonic() >= deadline:
                    raise
                time.sleep(0.1)

    # -- transactions: the log as a read_committed consumer sees it (kafka/stable.py) ----------
    def log_offsets(self, tps: Iterable[TopicPartition], *, ordered: bool = True) -> dict:
        """Per partition a `kafka.stable.LogOffsets`: log start, log end and last stable offset
        (LSO: the log end under READ_COMMITTED isolation). The LSO request is in flight while
        the watermarks are read."""
        from offsetkeeper.kafka.stable import LogOffsets

        wanted = set(tps)
        if not wanted:
            return {}
        with cf.ThreadPoolExecutor(max_workers=1) as pool:
            lso_future = pool.submit(self.end_offsets, wanted, read_committed=True)
            marks = self.watermarks(wanted, ordered=ordered)
            lso = lso_future.result()
        return {tp: LogOffsets(wm.low, wm.high, min(lso.get(tp, wm.high), wm.high))
                for tp, wm in marks.items()}

    def count_readable(self, ranges: Mapping[TopicPartition, tuple[int, int]], *,
                       timeout_s: float = 3.0) -> dict[TopicPartition, tuple[int, int | None]]:
        """Per partition, the records a read_committed consumer gets from `start` up to `end`
        (markers and aborted records skipped) and the first one's timestamp: (count, ts|None).
        Partitions that did not answer within `timeout_s` are absent. For short ranges (kafka/
        stable.py: a few offsets below the LSO); one short-lived consumer that never joins a
        group and never commits (kafka/peek.py)."""
        return self._peek(lambda p: p.count_records(
            {(tp.topic, tp.partition): r for tp, r in ranges.items()}), True, timeout_s) \
            if ranges else {}

    def first_records(self, offsets: Mapping[TopicPartition, int], *, read_committed: bool = True,
                      timeout_s: float = 3.0) -> dict[TopicPartition, tuple[int, int | None]]:
        """Per partition, the (offset, timestamp ms) of the first record a consumer gets when it
        fetches from the given offset; (end offset, None) when it gets none before the end (the
        LSO for read_committed). Read uncommitted at the LSO: the first record of the open
        transaction holding it. Partitions that did not answer within `timeout_s` are absent."""
        return self._peek(lambda p: p.next_records(
            {(tp.topic, tp.partition): o for tp, o in offsets.items()}), read_committed,
            timeout_s) if offsets else {}

    def _peek(self, fn, read_committed: bool, timeout_s: float) -> dict:
        from offsetkeeper.kafka.peek import NextRecordTimes

        conf = {**self.conn.client_config(),
                "isolation.level": "read_committed" if read_committed else "read_uncommitted"}
        probe = NextRecordTimes(conf, timeout_s=timeout_s)
        try:
            got = fn(probe)
        finally:
            probe.close()
        return {TopicPartition(*k): v for k, v in got.items() if v is not None}

    def topic_ids(self) -> dict[str, str]:
        """Topic id (as Kafka prints it: URL-safe base64) -> name, for every topic (internal
        ones included): the newer `__consumer_offsets` records name topics by id."""
        from confluent_kafka import TopicCollection

        try:
            names = list(self.admin.list_topics(timeout=self.timeout).topics)
        except KafkaException as exc:
            raise translate(exc, action="list topics") from exc
        if not names:
            return {}
        futures = self.admin.describe_topics(TopicCollection(names), request_timeout=self.timeout)
        out: dict[str, str] = {}
        for name, fut in futures.items():
            try:
                d = self._wait(fut, action="describe topic", topic=name)
            except OffsetkeeperError:
                continue  # deleted meanwhile, or not authorized: its id stays unnamed
            if d.topic_id is not None:
                # librdkafka prints ids in standard base64; Kafka (and the records) URL-safe
                out[str(d.topic_id).translate(str.maketrans("+/", "-_")).rstrip("=")] = name
        return out


# -- the facade: one admin object composed of the two clients ------------------------------------

P = ParamSpec("P")
R = TypeVar("R")


def _group_info(group_id: str, d: Any) -> GroupInfo | OffsetkeeperError:
    """The Java client's describe of a consumer group as librdkafka's reader gives it: Kafka's
    state and type names in lower case, a group Kafka does not know as an empty Dead classic
    one (what Kafka's classic describe answers librdkafka; its coordinator is not named)."""
    from offsetkeeper.kafka.group_types import ConsumerGroupDetail, state_key

    if isinstance(d, UnknownGroupError) or d is None:
        return GroupInfo(group_id=group_id, state="dead", group_type="classic")
    if not isinstance(d, ConsumerGroupDetail):
        return d
    kind = state_key(d.group_type)
    return GroupInfo(
        group_id=group_id, state=state_key(d.state), coordinator=d.coordinator,
        assignor=d.assignor, group_type="" if kind == "unknown" else kind,
        members=tuple(MemberInfo(member_id=m.member_id, client_id=m.client_id, host=m.host,
                                 group_instance_id=m.group_instance_id,
                                 assignment=tuple(sorted(m.assignment)))
                      for m in d.members))


def _rd(fn: Callable[Concatenate[LibrdkafkaAdmin, P], R]) -> Callable[Concatenate[KafkaAdmin, P], R]:
    """A facade method answered by its librdkafka client (same signature and docstring)."""
    @functools.wraps(fn)
    def call(self: KafkaAdmin, *args: P.args, **kwargs: P.kwargs) -> R:
        return fn(self.rd, *args, **kwargs)
    return call


def _java(fn: Callable[Concatenate[JavaAdmin, P], R]) -> Callable[Concatenate[KafkaAdmin, P], R]:
    """A facade method answered by its Java-helper client (same signature and docstring)."""
    @functools.wraps(fn)
    def call(self: KafkaAdmin, *args: P.args, **kwargs: P.kwargs) -> R:
        return fn(self.java, *args, **kwargs)
    return call


class KafkaAdmin:
    """Admin operations on one cluster: the one object ops and the domain get (typed by the
    roles of kafka/ports.py they use). Thread-safe; close() when done (or use `with`).

    Composed of two clients on the same `Connection`: `rd`, librdkafka's (`LibrdkafkaAdmin`:
    topics, log offsets, consumer groups and their committed offsets), and `java`, Kafka's Java
    Admin client through the helper (`kafka.jvm.JavaAdmin`: share groups, streams groups, the
    KIP-848/KIP-1099 details of consumer groups, which confluent-kafka lacks). The Java client
    corrects the group states librdkafka cannot name inside `describe_groups_each`."""

    group_type = "consumer"  # its committed offsets are consumer groups' (see for_group_type)

    def __init__(self, conn: Connection, *, timeout: float = DEFAULT_TIMEOUT,
                 daemon: bool = False) -> None:
        self.conn = conn
        self.daemon = daemon
        self.java = JavaAdmin(conn, timeout=timeout)
        self.rd = LibrdkafkaAdmin(conn, timeout=timeout,
                                  correct_states=self.java.with_other_group_types,
                                  exact=self.java)

    @property
    def timeout(self) -> float:
        """Seconds each request may take."""
        return self.rd.timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        self.rd.timeout = self.java.timeout = seconds

    @property
    def bootstrap_servers(self) -> str:
        """The address the clients were given (snapshots record it; messages name it)."""
        return self.conn.bootstrap_servers

    @property
    def last_list_errors(self) -> list[str]:
        """The brokers' errors of the latest `list_groups` (their groups are missing)."""
        return self.rd.last_list_errors

    def close(self) -> None:
        self.rd.close()
        self.java.close()

    def __enter__(self) -> KafkaAdmin:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def for_group_type(self, group_type: str) -> AdminPort:
        """The facade as the reset pipeline must see groups of `group_type` (a `GroupType`):
        itself for groups with committed offsets, a `ShareGroupsView` for share groups (whose
        start offsets it reads and changes instead). The executor applies a plan through the
        view of the plan's group type."""
        from offsetkeeper.models import GroupType

        if group_type == GroupType.SHARE:
            from offsetkeeper.kafka.share_offsets import ShareGroupsView

            return ShareGroupsView(self)
        return self

    # -- the cluster and its topics (librdkafka) -------------------------------------------------
    connect = _rd(LibrdkafkaAdmin.connect)
    reconnect = _rd(LibrdkafkaAdmin.reconnect)
    ping = _rd(LibrdkafkaAdmin.ping)
    cluster_id = _rd(LibrdkafkaAdmin.cluster_id)
    api_versions = _rd(LibrdkafkaAdmin.api_versions)
    require_api = _rd(LibrdkafkaAdmin.require_api)
    topic_partitions = _rd(LibrdkafkaAdmin.topic_partitions)
    topics_without_read = _rd(LibrdkafkaAdmin.topics_without_read)
    resolve_partitions = _rd(LibrdkafkaAdmin.resolve_partitions)
    topic_configs = _rd(LibrdkafkaAdmin.topic_configs)
    topic_ids = _rd(LibrdkafkaAdmin.topic_ids)
    create_topic = _rd(LibrdkafkaAdmin.create_topic)

    # -- consumer groups and their committed offsets (librdkafka; a daemon's reads: Java) -------
    list_groups = _rd(LibrdkafkaAdmin.list_groups)
    all_group_ids = _rd(LibrdkafkaAdmin.all_group_ids)

    def _java_reads(self) -> bool:
        """Whether group reads go to the Java client: a daemon facade, with Java here.

        A daemon (the sampler, the exporter, the dashboard) runs for weeks, through broker
        restarts; librdkafka's admin client can take the process down with a group request
        sent to a coordinator that moves or a connection that drops (an OffsetFetch answered
        NOT_COORDINATOR, #5040; an aborting assertion in its coordinator requests, #4605), seen
        in a sampler that went on through a broker restart. The Java client retries instead.
        Its JVM starts once per process; a one-off command keeps librdkafka (no JVM start)."""
        return self.daemon and jvm.available()

    # the one-group forms, as the librdkafka client's: they call this facade's `_each` forms
    describe_groups = LibrdkafkaAdmin.describe_groups
    committed_offsets = LibrdkafkaAdmin.committed_offsets

    def describe_groups_each(self, group_ids: Iterable[str], *, real_states: bool = True,
                             ) -> dict[str, GroupInfo | OffsetkeeperError]:
        """Like describe_groups, but one failing group does not hide the others' answers (see
        `LibrdkafkaAdmin.describe_groups_each`; a daemon facade asks the Java client)."""
        if not self._java_reads():
            return self.rd.describe_groups_each(group_ids, real_states=real_states)
        answers = self._java_each(group_ids, self.java.describe_consumer_groups_verbose,
                                  _group_info)
        return self.java.with_other_group_types(answers) if real_states else answers

    def _java_each(self, group_ids: Iterable[str], read: Callable[[list[str]], dict[str, Any]],
                   answer: Callable[[str, Any], Any]) -> dict[str, Any]:
        """`answer(group, its entry of read(groups))` per group, in the order asked, each once;
        a read that fails as a whole (the helper died or timed out) is every group's error."""
        ids = list(dict.fromkeys(group_ids))
        if not ids:
            return {}
        try:
            got = read(ids)
        except OffsetkeeperError as exc:
            return dict.fromkeys(ids, exc)
        return {g: answer(g, got.get(g)) for g in ids}

    def committed_offsets_each(
        self, group_ids: Iterable[str], *,
        described: Mapping[str, GroupInfo | OffsetkeeperError] | None = None,
    ) -> dict[str, dict[TopicPartition, CommittedOffset] | OffsetkeeperError]:
        """Committed offsets of many groups; a group that fails maps to its error (see
        `LibrdkafkaAdmin.committed_offsets_each`).

        A daemon facade asks the Java client (`_java_reads`), which also answers all groups in
        one request per coordinator."""
        if not self._java_reads():
            return self.rd.committed_offsets_each(group_ids, described=described)
        return self._java_each(group_ids, self.java.exact_committed_offsets,
                               lambda _g, read: {} if read is None else read)

    alter_offsets_async = _rd(LibrdkafkaAdmin.alter_offsets_async)
    alter_result = _rd(LibrdkafkaAdmin.alter_result)
    delete_offsets = _rd(LibrdkafkaAdmin.delete_offsets)
    delete_groups = _rd(LibrdkafkaAdmin.delete_groups)

    # -- offsets of the log (librdkafka) ---------------------------------------------------------
    watermarks = _rd(LibrdkafkaAdmin.watermarks)
    offsets_for_time = _rd(LibrdkafkaAdmin.offsets_for_time)
    end_offsets = _rd(LibrdkafkaAdmin.end_offsets)
    log_offsets = _rd(LibrdkafkaAdmin.log_offsets)
    count_readable = _rd(LibrdkafkaAdmin.count_readable)
    first_records = _rd(LibrdkafkaAdmin.first_records)

    # -- groups of every type (Kafka's Java Admin client) ----------------------------------------
    list_all_groups = _java(JavaAdmin.list_all_groups)
    describe_consumer_groups_verbose = _java(JavaAdmin.describe_consumer_groups_verbose)
    describe_share_groups = _java(JavaAdmin.describe_share_groups)
    share_group_offsets = _java(JavaAdmin.share_group_offsets)
    alter_share_group_offsets = _java(JavaAdmin.alter_share_group_offsets)
    delete_share_group_offsets = _java(JavaAdmin.delete_share_group_offsets)
    describe_streams_groups = _java(JavaAdmin.describe_streams_groups)
    streams_group_offsets = _java(JavaAdmin.streams_group_offsets)
    with_other_group_types = _java(JavaAdmin.with_other_group_types)
