"""The one group facade: groups of every Kafka 4 type for the commands that show them
(`groups`, `offsets show`, `share-groups`, `streams-groups`) and for the dashboard — the typed
listing (`groups list`), which type one group is, describing classic and consumer groups with
their offsets, and the share and streams groups' own views (`share-groups describe`,
`streams-groups describe`). The readers of describe/ and groups/ are its surface, with the
dashboard's page reads (`group_summaries`, `describe_consumer_groups`) built on them.

Share and streams groups are read through Kafka's Java admin client (the JVM helper, one
process per call: ~1 s each), so `group_summaries` reads the groups of one page with one call
per type, both types side by side.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from offsetkeeper.describe import (
    describe_offsets,
    describe_states,
    resolve_group_ids,
    rows_as_dicts,
    show_offsets,
)
from offsetkeeper.errors import JvmHelperUnavailable, OffsetkeeperError, UnknownGroupError
from offsetkeeper.groups import (
    consumer_group_details,
    describe_share_groups,
    describe_streams_groups,
    list_streams_groups,
    list_typed_groups,
)
from offsetkeeper.groups.listing import GROUP_TYPES, GroupRow
from offsetkeeper.groups.share import ShareGroupView
from offsetkeeper.groups.streams import StreamsGroupView
from offsetkeeper.kafka.group_types import state_key
from offsetkeeper.kafka.jvm import helper_command
from offsetkeeper.kafka.ports import AdminPort, GroupsPort, KafkaPort
from offsetkeeper.models import GroupInfo

__all__ = ["GROUP_TYPES", "TYPED", "GroupRow", "GroupSummary", "consumer_group_details",
           "describe_consumer_groups", "describe_offsets", "describe_share_groups",
           "describe_states", "describe_streams_groups", "group_info", "group_summaries",
           "helper_command", "helper_missing", "list_streams_groups", "list_typed_groups", "resolve_group_ids",
           "rows_as_dicts", "share_group", "show_offsets", "streams_group", "typed_kind"]

# The types whose groups librdkafka cannot describe (the Java client does).
TYPED = ("share", "streams")


def helper_missing() -> str | None:
    """The JVM helper's one sentence when it is not installed (share and streams groups cannot
    be read), else None."""
    try:
        helper_command()
    except JvmHelperUnavailable as exc:
        return exc.message
    return None


def describe_consumer_groups(admin: AdminPort, ids: Iterable[str], *, drop_vanished: bool = True):
    """States, members and committed offsets of classic and consumer groups, in one describe:
    `(infos, offset rows)`. With `drop_vanished`, groups that disappear between listing and
    describing (a live cluster changes under us) are left out instead of failing the read."""
    from offsetkeeper.describe import describe_groups_offsets

    ids = list(ids)
    if not drop_vanished:
        return describe_groups_offsets(admin, ids)
    for _ in range(5):
        try:
            return describe_groups_offsets(admin, ids)
        except UnknownGroupError as exc:
            if exc.group not in ids:
                raise
            ids.remove(exc.group)
    return describe_groups_offsets(admin, ids)


def group_info(admin: GroupsPort, group: str) -> GroupInfo | OffsetkeeperError:
    """What the cluster says about one group, its type included: librdkafka's describe,
    corrected for share and streams groups (which it reads as member-less Dead classic groups)
    by the Java client when the helper is installed. Errors are returned, not raised."""
    return admin.describe_groups_each([group])[group]


def typed_kind(admin: GroupsPort, group: str) -> str:
    """"share" or "streams" when the cluster says the group is one (its page is the typed
    group's), else "" (a classic or consumer group, or one that cannot be described)."""
    t = getattr(group_info(admin, group), "group_type", "")
    return t if t in TYPED else ""


def share_group(admin: KafkaPort, group: str) -> ShareGroupView:
    """`share-groups describe G`: state, members with assignments, and per partition the start
    offset, lag (KIP-1226) and log start/end. Raises JvmHelperUnavailable without the helper."""
    return describe_share_groups(admin, [group])[0]


def streams_group(admin: KafkaPort, group: str) -> StreamsGroupView:
    """`streams-groups describe G`: topology, members with processes and tasks, committed
    offsets of the input topics with log end and lag. Raises JvmHelperUnavailable without the
    helper."""
    return describe_streams_groups(admin, [group])[0]


@dataclass(frozen=True)
class GroupSummary:
    """One share or streams group on the groups page."""

    group: str
    group_type: str
    state: str              # lower-case, as `groups list`
    members: int
    partitions: int
    lag: int | None
    error: str | None = None


def _summaries(admin: KafkaPort, group_type: str, ids: list[str]) -> dict[str, GroupSummary]:
    describe = describe_share_groups if group_type == "share" else describe_streams_groups
    ids = list(ids)
    gone: list[str] = []
    views: list = []
    while ids:
        try:
            views = describe(admin, ids)
            break
        except UnknownGroupError as exc:  # deleted since it was listed: leave it out
            if exc.group not in ids:
                raise
            ids.remove(exc.group)
            gone.append(exc.group)
    out = {}
    for v in views:
        lags = [r.lag for r in v.offsets if r.lag is not None]
        out[v.detail.group_id] = GroupSummary(
            v.detail.group_id, group_type, state_key(v.detail.state), len(v.detail.members),
            len(v.offsets), sum(max(0, x) for x in lags) if lags else None)
    return out


def group_summaries(admin: KafkaPort, groups: Iterable[tuple[str, str]]
                    ) -> dict[str, GroupSummary]:
    """State, members, partitions and total lag of the given (group, type) pairs of type share
    or streams: one describe per type, the two types at the same time. A type whose describe
    fails gives its groups a summary with `error` (the rest of the page is still shown); a
    group deleted since it was listed is left out."""
    by_type: dict[str, list[str]] = {t: [] for t in TYPED}
    for g, t in groups:
        if t in by_type:
            by_type[t].append(g)
    todo = {t: ids for t, ids in by_type.items() if ids}
    if not todo:
        return {}
    out: dict[str, GroupSummary] = {}
    with ThreadPoolExecutor(max_workers=len(todo), thread_name_prefix="typed-groups") as pool:
        futures = {t: pool.submit(_summaries, admin, t, ids) for t, ids in todo.items()}
        for t, fut in futures.items():
            try:
                out.update(fut.result())
            except OffsetkeeperError as exc:
                for g in todo[t]:
                    out[g] = GroupSummary(g, t, "unknown", 0, 0, None, exc.message)
    return out
