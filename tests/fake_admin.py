"""An in-memory cluster playing every role of `offsetkeeper.kafka.ports` (`KafkaPort`; a unit
test, tests/unit/test_ports.py, checks it against the protocols method by method).

It models what the executor, the planner, snapshots and the history sampler read and change:
topics with per-partition log start/end (and a last stable offset), consumer groups with a
state, members and committed offsets, and share groups with members, start offsets and the
broker's lag (the view `for_group_type("share")` is the product's own `ShareGroupsView`). Faults are injected per
call (and optionally per group): a retriable error, a fatal one, a timeout, or an error name per
partition of a commit. Hooks run "another client" at a chosen call, e.g. a consumer joining or a
tool committing between the executor's read and its write.

    admin = FakeAdmin(topics={"orders": [(0, 100)] * 2})
    admin.add_group("g", committed={("orders", 0): 10, ("orders", 1): 20})
    admin.fail("alter_result", RETRIABLE, group="g", times=2)
    admin.after("committed_offsets_each", lambda a: a.commit("g", {("orders", 0): 55}), times=1)

Not modelled: coordinators, streams groups (their calls answer "no such group"), record
contents (`count_readable`/`first_records` answer nothing: "could not tell"), topic configs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from offsetkeeper.config import Connection
from offsetkeeper.errors import OffsetkeeperError, UnknownTopicError
from offsetkeeper.kafka.errors import translate_code
from offsetkeeper.kafka.group_types import (
    AnyGroupListing,
    ConsumerGroupDetail,
    ShareGroupDetail,
    ShareMember,
    SharePartitionOffset,
    StreamsGroupDetail,
)
from offsetkeeper.kafka.ports import AdminPort, unwrap_each
from offsetkeeper.kafka.stable import LogOffsets
from offsetkeeper.models import (
    CommittedOffset,
    GroupInfo,
    GroupListing,
    GroupType,
    MemberInfo,
    TopicPartition,
    Watermarks,
)

# Fault kinds, as the real facade raises them (translated through kafka/errors.py).
RETRIABLE = "COORDINATOR_LOAD_IN_PROGRESS"
TIMEOUT = "_TIMED_OUT"
UNREACHABLE = "_TRANSPORT"
FATAL = "GROUP_AUTHORIZATION_FAILED"


def error(code: str, *, group: str | None = None) -> OffsetkeeperError:
    """The translated error KafkaAdmin raises for `code` (retriable or not, with advice)."""
    return translate_code(code, action="fake call", group=group)


def _tp(key: TopicPartition | tuple[str, int]) -> TopicPartition:
    return key if isinstance(key, TopicPartition) else TopicPartition(*key)


@dataclass
class FakeGroup:
    state: str = "empty"
    members: tuple[MemberInfo, ...] = ()
    committed: dict[TopicPartition, CommittedOffset] = field(default_factory=dict)


@dataclass
class FakeShareGroup:
    """A share group: members, and per partition its start offset and the broker's lag."""

    members: tuple[ShareMember, ...] = ()
    start: dict[TopicPartition, int] = field(default_factory=dict)
    lag: dict[TopicPartition, int] = field(default_factory=dict)

    @property
    def state(self) -> str:
        return "Stable" if self.members else "Empty"


@dataclass
class _Fault:
    call: str
    code: str
    group: str | None
    times: int


@dataclass
class _Hook:
    call: str
    fn: Callable[[FakeAdmin], None]
    group: str | None
    times: int
    before: bool


class FakeAdmin:
    """Every port role over an in-memory cluster; `calls` records every port call in order."""

    group_type = "consumer"

    def __init__(self, topics: Mapping[str, list[tuple[int, int]]] | None = None,
                 *, timeout: float = 1.0) -> None:
        self.conn = Connection("fake:9092")
        self.timeout = timeout
        self.logs: dict[TopicPartition, Watermarks] = {}
        self.lso: dict[TopicPartition, int] = {}   # below the log end: an open transaction
        for topic, parts in (topics or {}).items():
            self.add_topic(topic, parts)
        self.groups: dict[str, FakeGroup] = {}
        self.share_groups: dict[str, FakeShareGroup] = {}
        self.last_list_errors: list[str] = []
        self.api_keys: set[int] | None = None  # None: every API; else the brokers' API keys
        self.calls: list[tuple[str, tuple[str, ...]]] = []
        self.reconnects = 0
        self._faults: list[_Fault] = []
        self._partition_faults: dict[tuple[str, TopicPartition], list[str]] = {}
        self._hooks: list[_Hook] = []

    # -- building the cluster -------------------------------------------------------------------
    def add_topic(self, topic: str, partitions: list[tuple[int, int]]) -> None:
        for p, (low, high) in enumerate(partitions):
            self.logs[TopicPartition(topic, p)] = Watermarks(low, high)

    def add_group(self, group: str, *, state: str = "empty", members: int = 0,
                  committed: Mapping[Any, int] | None = None) -> FakeGroup:
        g = FakeGroup(state, (), {})
        self.groups[group] = g
        self.set_members(group, members)
        if state != "empty":
            g.state = state
        self.commit(group, committed or {})
        return g

    def set_members(self, group: str, n: int) -> None:
        """A consumer group with `n` members is "stable"; with none "empty"."""
        g = self.groups.setdefault(group, FakeGroup())
        g.members = tuple(MemberInfo(f"m{i}", f"client-{i}", "10.0.0.1") for i in range(n))
        g.state = "stable" if n else "empty"

    def commit(self, group: str, offsets: Mapping[Any, int]) -> None:
        """Another client commits (or the test sets the starting offsets)."""
        g = self.groups.setdefault(group, FakeGroup())
        for key, o in offsets.items():
            g.committed[_tp(key)] = CommittedOffset(o)

    def add_share_group(self, group: str, *, members: int = 0,
                        start: Mapping[Any, int] | None = None,
                        lag: Mapping[Any, int] | None = None) -> FakeShareGroup:
        """A share group with `members` members and start offsets (and the broker's lag)."""
        g = FakeShareGroup(
            members=tuple(ShareMember(f"s{i}", f"share-client-{i}", "10.0.0.2", None, 1, ())
                          for i in range(members)),
            start={_tp(k): o for k, o in (start or {}).items()},
            lag={_tp(k): n for k, n in (lag or {}).items()})
        self.share_groups[group] = g
        return g

    def share_start(self, group: str) -> dict[TopicPartition, int]:
        return dict(sorted(self.share_groups[group].start.items()))

    def committed(self, group: str) -> dict[TopicPartition, int]:
        g = self.groups.get(group)
        return {} if g is None else {tp: c.offset for tp, c in sorted(g.committed.items())}

    # -- faults and hooks ------------------------------------------------------------------------
    def fail(self, call: str, code: str, *, group: str | None = None, times: int = 1) -> None:
        """The next `times` calls of `call` (for `group`, or any) fail with `code`. Per-group
        calls (`*_each`, `delete_groups`) answer that group with the error; others raise."""
        self._faults.append(_Fault(call, code, group, times))

    def fail_partition(self, group: str, tp: Any, code: str, *, times: int = 1) -> None:
        """The next `times` commits/deletes of `group` answer `code` for partition `tp`
        (and change nothing there)."""
        self._partition_faults.setdefault((group, _tp(tp)), []).extend([code] * times)

    def before(self, call: str, fn: Callable[[FakeAdmin], None], *, group: str | None = None,
               times: int = 1) -> None:
        """Run `fn(admin)` right before the next `times` calls of `call`."""
        self._hooks.append(_Hook(call, fn, group, times, before=True))

    def after(self, call: str, fn: Callable[[FakeAdmin], None], *, group: str | None = None,
              times: int = 1) -> None:
        """Run `fn(admin)` right after the next `times` calls of `call` (before it returns)."""
        self._hooks.append(_Hook(call, fn, group, times, before=False))

    def _hook(self, call: str, groups: Iterable[str], *, before: bool) -> None:
        groups = list(groups)
        for h in self._hooks:
            if h.times and h.call == call and h.before is before and (
                    h.group is None or h.group in groups):
                h.times -= 1
                h.fn(self)

    def _fault(self, call: str, group: str | None = None) -> OffsetkeeperError | None:
        for f in self._faults:
            if f.times and f.call == call and (f.group is None or f.group == group):
                f.times -= 1
                return error(f.code, group=group)
        return None

    def _enter(self, call: str, *groups: str) -> None:
        self.calls.append((call, groups))
        self._hook(call, groups, before=True)
        if (err := self._fault(call)) is not None and not groups:
            raise err

    def _each(self, call: str, ids: list[str], answer: Callable[[str], Any]) -> dict[str, Any]:
        self._enter(call, *ids)
        out: dict[str, Any] = {}
        for g in ids:
            err = self._fault(call, g)
            out[g] = err if err is not None else answer(g)
        self._hook(call, ids, before=False)
        return out

    def count(self, call: str) -> int:
        return sum(1 for c, _ in self.calls if c == call)

    # -- ClusterPort -----------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        return self.conn.bootstrap_servers

    def connect(self) -> None:
        self.calls.append(("connect", ()))

    def require_api(self, key: int, name: str) -> None:
        self._enter("require_api")
        if self.api_keys is not None and key not in self.api_keys:
            raise translate_code("UNSUPPORTED_VERSION", action=f"use {name}",
                                 detail="broker fake:9092 lacks it")

    def ping(self) -> None:
        self._enter("ping")
        self._hook("ping", (), before=False)

    def reconnect(self) -> None:
        self.calls.append(("reconnect", ()))
        self.reconnects += 1

    def topic_partitions(self, topics: Iterable[str] | None = None) -> dict[str, list[int]]:
        self._enter("topic_partitions")
        parts: dict[str, list[int]] = {}
        for tp in sorted(self.logs):
            parts.setdefault(tp.topic, []).append(tp.partition)
        if topics is None:
            return parts
        for t in topics:
            if t not in parts:
                raise UnknownTopicError(f"unknown topic '{t}'", topic=t)
        return {t: parts[t] for t in topics}

    def resolve_partitions(self, specs: Iterable[Any]
                           ) -> tuple[dict[str, list[int]], list[TopicPartition]]:
        pairs = [(s.topic, s.partitions) if hasattr(s, "topic") else tuple(s) for s in specs]
        parts = self.topic_partitions(list(dict.fromkeys(t for t, _ in pairs)))
        selected = {TopicPartition(t, p) for t, ps in pairs for p in (ps or parts[t])}
        return parts, sorted(selected)

    def watermarks(self, tps: Iterable[TopicPartition], *,
                   ordered: bool = True) -> dict[TopicPartition, Watermarks]:
        self._enter("watermarks")
        return {tp: self.logs[tp] for tp in sorted(set(tps))}

    def offsets_for_time(self, tps: Iterable[TopicPartition],
                         timestamp_ms: int) -> dict[TopicPartition, int | None]:
        self._enter("offsets_for_time")
        return {tp: None for tp in sorted(set(tps))}

    def log_offsets(self, tps: Iterable[TopicPartition], *,
                    ordered: bool = True) -> dict[TopicPartition, LogOffsets]:
        self._enter("log_offsets")
        return {tp: LogOffsets(self.logs[tp].low, self.logs[tp].high,
                               self.lso.get(tp, self.logs[tp].high))
                for tp in sorted(set(tps))}

    def end_offsets(self, tps: Iterable[TopicPartition], *,
                    read_committed: bool = True) -> dict[TopicPartition, int]:
        self._enter("end_offsets")
        return {tp: (self.lso.get(tp, self.logs[tp].high) if read_committed
                     else self.logs[tp].high) for tp in sorted(set(tps))}

    def count_readable(self, ranges: Mapping[TopicPartition, tuple[int, int]], *,
                       timeout_s: float = 3.0) -> dict[TopicPartition, tuple[int, int | None]]:
        """No record contents: no partition answers (callers then say they could not tell)."""
        self._enter("count_readable")
        return {}

    def first_records(self, offsets: Mapping[TopicPartition, int], *, read_committed: bool = True,
                      timeout_s: float = 3.0) -> dict[TopicPartition, tuple[int, int | None]]:
        self._enter("first_records")
        return {}

    # -- TopicsPort --------------------------------------------------------------------------------
    def topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        self._enter("topic_configs")
        return {t: {} for t in dict.fromkeys(topics)}

    def topic_ids(self) -> dict[str, str]:
        self._enter("topic_ids")
        return {f"id-{t}": t for t in sorted({tp.topic for tp in self.logs})}

    def create_topic(self, name: str, partitions: int, *, replication_factor: int = -1,
                     configs: Mapping[str, str] | None = None) -> None:
        self._enter("create_topic")
        self.add_topic(name, [(0, 0)] * partitions)

    def topics_without_read(self, topics: Iterable[str]) -> set[str]:
        self._enter("topics_without_read")
        return set()

    # -- GroupsPort --------------------------------------------------------------------------------
    def list_groups(self) -> list[GroupListing]:
        self._enter("list_groups")
        return [GroupListing(g, self.groups[g].state) for g in sorted(self.groups)]

    def all_group_ids(self) -> set[str]:
        self._enter("all_group_ids")
        return set(self.groups) | set(self.share_groups)

    def describe_groups_each(self, group_ids: Iterable[str]
                             ) -> dict[str, GroupInfo | OffsetkeeperError]:
        def describe(g: str) -> GroupInfo:
            grp = self.groups.get(g)
            share = self.share_groups.get(g)
            if grp is None and share is not None:
                # as the facade answers once its Java client corrected librdkafka's "dead"
                return GroupInfo(g, share.state.lower(), group_type=GroupType.SHARE.value,
                                 members=tuple(MemberInfo(m.member_id, m.client_id, m.host)
                                               for m in share.members))
            if grp is None:
                return GroupInfo(g, "dead")
            return GroupInfo(g, grp.state, members=grp.members)
        return self._each("describe_groups_each", list(dict.fromkeys(group_ids)), describe)

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupInfo]:
        """The facade's raising form of describe_groups_each (snapshots read groups with it)."""
        return unwrap_each(self.describe_groups_each(group_ids))

    def committed_offsets(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        """The facade's raising form of committed_offsets_each for one group (--from-group)."""
        return unwrap_each(self.committed_offsets_each([group_id]))[group_id]

    def cluster_id(self) -> str:
        """The id snapshots record and rollbacks check (ops calls it; the port lacks it)."""
        self._enter("cluster_id")
        return "fake-cluster"

    def committed_offsets_each(
        self, group_ids: Iterable[str], *,
        described: Mapping[str, GroupInfo | OffsetkeeperError] | None = None,
    ) -> dict[str, dict[TopicPartition, CommittedOffset] | OffsetkeeperError]:
        def read(g: str) -> dict[TopicPartition, CommittedOffset]:
            grp = self.groups.get(g)
            return {} if grp is None else dict(sorted(grp.committed.items()))
        return self._each("committed_offsets_each", list(dict.fromkeys(group_ids)), read)

    # -- CommittedOffsetsPort: changes -----------------------------------------------------------
    def _change(self, group: str, tps: Iterable[TopicPartition],
                apply: Callable[[FakeGroup, TopicPartition], None]) -> dict[TopicPartition, str | None]:
        grp = self.groups.setdefault(group, FakeGroup())  # a commit creates the group
        out: dict[TopicPartition, str | None] = {}
        for tp in sorted(tps):
            queued = self._partition_faults.get((group, tp))
            if queued:
                out[tp] = queued.pop(0)
                continue
            apply(grp, tp)
            out[tp] = None
        return out

    def alter_offsets_async(self, group_id: str,
                            offsets: Mapping[TopicPartition, int | CommittedOffset]) -> Any:
        """The commit reaches the cluster now; a fault on `alter_result` loses only its answer
        (like a timeout after the broker committed)."""
        self._enter("alter_offsets_async", group_id)
        if (err := self._fault("alter_offsets_async", group_id)) is not None:
            raise err
        targets = {tp: (o if isinstance(o, CommittedOffset) else CommittedOffset(int(o)))
                   for tp, o in offsets.items()}

        def put(grp: FakeGroup, tp: TopicPartition) -> None:
            grp.committed[tp] = targets[tp]
        result = self._change(group_id, targets, put)
        self._hook("alter_offsets_async", [group_id], before=False)
        return result

    def alter_result(self, group_id: str, pending: Any) -> dict[TopicPartition, str | None]:
        self._enter("alter_result", group_id)
        if (err := self._fault("alter_result", group_id)) is not None:
            raise err
        self._hook("alter_result", [group_id], before=False)
        return dict(pending)

    def delete_offsets(self, group_id: str,
                       tps: Iterable[TopicPartition]) -> dict[TopicPartition, str | None]:
        self._enter("delete_offsets", group_id)
        if (err := self._fault("delete_offsets", group_id)) is not None:
            raise err

        def drop(grp: FakeGroup, tp: TopicPartition) -> None:
            grp.committed.pop(tp, None)
        result = self._change(group_id, tps, drop)
        self._hook("delete_offsets", [group_id], before=False)
        return result

    def delete_groups(self, group_ids: Iterable[str]) -> dict[str, Exception | None]:
        def delete(g: str) -> Exception | None:
            grp = self.groups.get(g)
            if grp is not None and grp.members:
                return error("NON_EMPTY_GROUP", group=g)
            self.groups.pop(g, None)
            return None
        return self._each("delete_groups", list(dict.fromkeys(group_ids)), delete)

    def for_group_type(self, group_type: str) -> AdminPort:
        """Like the facade: the product's share view over this fake for share groups."""
        if group_type == GroupType.SHARE:
            from offsetkeeper.kafka.share_offsets import ShareGroupsView

            return ShareGroupsView(self)
        return self

    def close(self) -> None:
        self.calls.append(("close", ()))

    # -- TypedGroupsPort: share groups (streams groups are not modelled) ---------------------------
    def list_all_groups(self) -> list[AnyGroupListing]:
        self._enter("list_all_groups")
        out = [AnyGroupListing(g, "Classic", "consumer", self.groups[g].state.capitalize())
               for g in self.groups]
        out += [AnyGroupListing(g, "Share", "share", s.state) for g, s in self.share_groups.items()]
        return sorted(out, key=lambda x: x.group_id)

    def _share(self, g: str) -> FakeShareGroup | OffsetkeeperError:
        grp = self.share_groups.get(g)
        return grp if grp is not None else error("GROUP_ID_NOT_FOUND", group=g)

    def describe_share_groups(self, group_ids: Iterable[str]
                              ) -> dict[str, ShareGroupDetail | OffsetkeeperError]:
        def describe(g: str) -> ShareGroupDetail | OffsetkeeperError:
            grp = self._share(g)
            if isinstance(grp, OffsetkeeperError):
                return grp
            return ShareGroupDetail(g, grp.state, "fake:9092 (1)", 1, 1, grp.members)
        return self._each("describe_share_groups", list(dict.fromkeys(group_ids)), describe)

    def share_group_offsets(self, group_ids: Iterable[str]
                            ) -> dict[str, list[SharePartitionOffset] | OffsetkeeperError]:
        def read(g: str) -> list[SharePartitionOffset] | OffsetkeeperError:
            grp = self._share(g)
            if isinstance(grp, OffsetkeeperError):
                return grp
            return [SharePartitionOffset(tp.topic, tp.partition, o, 0, grp.lag.get(tp))
                    for tp, o in sorted(grp.start.items())]
        return self._each("share_group_offsets", list(dict.fromkeys(group_ids)), read)

    def alter_share_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int]
                                  ) -> dict[TopicPartition, OffsetkeeperError | None]:
        self._enter("alter_share_group_offsets", group_id)
        grp = self._share(group_id)
        if isinstance(grp, OffsetkeeperError):
            return {tp: grp for tp in offsets}
        if grp.members:  # the broker refuses while the group has members
            return {tp: error("NON_EMPTY_GROUP", group=group_id) for tp in offsets}
        for tp, o in offsets.items():
            grp.start[tp] = int(o)
        return {tp: None for tp in sorted(offsets)}

    def delete_share_group_offsets(self, group_id: str, topics: Iterable[str]
                                   ) -> dict[str, OffsetkeeperError | None]:
        self._enter("delete_share_group_offsets", group_id)
        grp = self._share(group_id)
        names = sorted(set(topics))
        if isinstance(grp, OffsetkeeperError):
            return {t: grp for t in names}
        grp.start = {tp: o for tp, o in grp.start.items() if tp.topic not in names}
        return {t: None for t in names}

    def describe_consumer_groups_verbose(self, group_ids: Iterable[str]
                                         ) -> dict[str, ConsumerGroupDetail | OffsetkeeperError]:
        def describe(g: str) -> ConsumerGroupDetail | OffsetkeeperError:
            grp = self.groups.get(g)
            if grp is None:
                return error("GROUP_ID_NOT_FOUND", group=g)
            return ConsumerGroupDetail(g, "Classic", grp.state.capitalize(), "fake:9092 (1)", "",
                                       None, None)
        return self._each("describe_consumer_groups_verbose", list(dict.fromkeys(group_ids)),
                          describe)

    def describe_streams_groups(self, group_ids: Iterable[str]
                                ) -> dict[str, StreamsGroupDetail | OffsetkeeperError]:
        return self._each("describe_streams_groups", list(dict.fromkeys(group_ids)),
                          lambda g: error("GROUP_ID_NOT_FOUND", group=g))

    def streams_group_offsets(self, group_ids: Iterable[str]
                              ) -> dict[str, dict[TopicPartition, int] | OffsetkeeperError]:
        return self._each("streams_group_offsets", list(dict.fromkeys(group_ids)),
                          lambda g: error("GROUP_ID_NOT_FOUND", group=g))


class FakeClock:
    """Replaces the `time` module of reset/apply.py: sleeping advances the clock at once, and a
    test (or a hook) can move it with `advance`. Use with `monkeypatch.setattr(apply, "time",
    clock)`."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds

    def advance(self, seconds: float) -> None:
        self.now += seconds
