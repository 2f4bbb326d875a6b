"""Reading what planning needs from the cluster: groups, committed offsets, partitions, watermarks.

Everything here does I/O through the admin port (`kafka.ports.AdminPort`); `reset.plan` turns the resulting `ResetFacts`
into a plan without any I/O. `build_plan` / `build_delete_plan` do both steps.
"""

from __future__ import annotations

import time

from offsetkeeper.errors import UnknownGroupError, UnknownTopicError, UsageError
from offsetkeeper.kafka.errors import unknown_group
from offsetkeeper.kafka.ports import AdminPort, GroupsPort, KafkaPort
from offsetkeeper.models import TopicPartition, check_names
from offsetkeeper.progress import ProgressEvent, ProgressFn, no_progress
from offsetkeeper.reset.plan import (
    GroupFacts,
    GroupReads,
    ResetFacts,
    ResetPlan,
    ResetScope,
    plan_delete,
    plan_reset,
)
from offsetkeeper.reset.targets import FromOffsets, ResetTarget, ShiftBy, ToDatetime


def resolve_groups(admin: GroupsPort, scope: ResetScope, target: ResetTarget | None = None) -> list[str]:
    """The group ids in scope: the named ones, those a file/snapshot/mapping names, or all.

    With an input that names its groups (`--from-file` in the several-group form,
    `--from-snapshot`, `--from-mapping`), `--all-groups` means every group the input names —
    on a fresh DR cluster the groups do not exist yet, so "all groups of the cluster" would
    select nothing.
    """
    if (scope.groups or scope.group_patterns) and scope.all_groups:
        raise UsageError("--group/--group-pattern and --all-groups are mutually exclusive")
    for g in scope.groups:
        if not g:
            raise UsageError("--group '' is empty: give a consumer group id")
    check_names(scope.groups)
    check_names([s.topic for s in scope.topics], what="topic")
    named = target.groups() if isinstance(target, FromOffsets) else []
    if scope.all_groups:
        groups = named or [g.group_id for g in admin.list_groups()]
        if not groups:
            raise UsageError("--all-groups selects no group: the cluster has no consumer groups")
        return groups
    if scope.group_patterns:
        return list(dict.fromkeys([*scope.groups, *_matching_groups(admin, scope.group_patterns, named)]))
    if scope.groups:
        return list(dict.fromkeys(scope.groups))
    if named:
        return named
    raise UsageError("no group given: use --group GROUP (repeatable) or --all-groups")


def _matching_groups(admin: GroupsPort, patterns: tuple[str, ...], named: list[str]) -> list[str]:
    """Groups matching any pattern, sorted; a pattern that selects nothing is bad input (a run
    that selects nothing is not a success)."""
    from offsetkeeper.models import compile_pattern
    from offsetkeeper.reset.parse import show

    compiled = [(p, compile_pattern(p, what="group")) for p in patterns]
    pool = named or [g.group_id for g in admin.list_groups()]
    out = []
    for p, rx in compiled:
        hits = sorted(g for g in pool if rx.fullmatch(g))
        if not hits:
            where = "the input's groups" if named else "the cluster's groups"
            raise UsageError(f"--group-pattern {show(p)} selects no group among {where} "
                             f"({len(pool)}); a glob (migr-svc-*) or ~REGEX over group ids")
        out.extend(hits)
    return out


# A group whose read fails with a retriable error (its coordinator moving after a broker died,
# a broken connection) is read again with these pauses, for up to READ_RETRY_FOR_S in all: a
# coordinator moves within seconds, and one group's failover should not fail a 300-group run.
READ_RETRY_PAUSES_S = (0.25, 0.5, 1.0, 2.0, 4.0)
READ_RETRY_FOR_S = 20.0


def _is_denied(res) -> bool:
    from offsetkeeper.errors import KafkaOperationError
    from offsetkeeper.kafka.errors import AUTHORIZATION

    return isinstance(res, KafkaOperationError) and res.code in AUTHORIZATION


def read_groups(admin: AdminPort, groups: list[str]) -> tuple[dict, dict]:
    """Each group's describe answer and committed offsets (`*_each` form: a value or the
    group's error), both read at once per round. Groups whose read failed with a retriable
    error are read again (READ_RETRY_PAUSES_S, for up to READ_RETRY_FOR_S); what still fails
    stays in the answer for the caller to report. Groups the principal may not describe are
    not asked for offsets."""
    from offsetkeeper.errors import OffsetkeeperError

    def read(ids: list[str]) -> tuple[dict, dict]:
        infos = admin.describe_groups_each(ids)
        readable = [g for g in ids if not _is_denied(infos.get(g))]
        # the describe above is the coordinator check the offset read needs: not made twice
        return infos, admin.committed_offsets_each(readable, described=infos)

    def failed_retriably(g: str) -> bool:
        return any(isinstance(r, OffsetkeeperError) and getattr(r, "retriable", False)
                   for r in (infos.get(g), committed.get(g)))

    infos, committed = read(groups)
    give_up_at = time.monotonic() + READ_RETRY_FOR_S
    for pause in (*READ_RETRY_PAUSES_S, *[READ_RETRY_PAUSES_S[-1]] * 8):
        again = [g for g in groups if failed_retriably(g)]
        if not again or time.monotonic() + pause > give_up_at:
            break
        time.sleep(pause)
        more_infos, more_committed = read(again)
        infos.update(more_infos)
        committed.update(more_committed)
    return infos, committed


def _group_facts(admin: AdminPort, groups: list[str]) -> tuple[dict[str, GroupFacts], GroupReads]:
    """State and committed offsets of each group (`read_groups`: retriable errors read again),
    and the reads they came from. A group the principal is not authorized for (ACLs) is marked
    `denied` so the plan refuses it alone; any other error fails the run."""
    from offsetkeeper.models import GroupInfo

    infos, committed = read_groups(admin, groups)
    reads = GroupReads(infos, committed, time.monotonic())
    out = {}
    for g in groups:
        res = committed.get(g, infos.get(g))
        if _is_denied(infos.get(g)) or _is_denied(res):
            err = infos[g] if _is_denied(infos.get(g)) else res
            out[g] = GroupFacts(GroupInfo(g, "unknown"), denied=err.message)
            continue
        for r in (infos[g], committed[g]):
            if isinstance(r, Exception):
                raise r
        out[g] = GroupFacts(infos[g], committed[g])
    return out, reads


def check_creatable(plan: ResetPlan, admin: AdminPort | None = None) -> None:
    """Refuse (exit 2) to execute a plan that would create groups nobody asked for; with
    `admin`, suggest the closest existing group ("did you mean payments?").

    A misspelled group would otherwise be created silently by the commit, and the undo
    snapshot could not remove it again. A dry run of such a plan is refused the same way
    (after the plan is shown), so a typo is never a success.
    """
    missing = plan.uncreatable
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        hint = (f"{more}; check the name, or pass --create-groups to create it with these "
                "offsets")
        if any(c in missing[0] for c in "*?["):
            hint += f" (to select groups by pattern: --group-pattern '{missing[0]}')"
        if admin is not None:
            raise unknown_group(admin, missing[0], hint=hint)
        raise UnknownGroupError(f"consumer group '{missing[0]}' does not exist{hint}",
                                group=missing[0])


def gather_facts(admin: AdminPort, scope: ResetScope, target: ResetTarget, groups: list[str], *,
                 allow_unknown_state: bool = False, may_create: frozenset[str] = frozenset()
                 ) -> ResetFacts:
    """Read group states, committed offsets, partitions, watermarks (and times) for planning."""
    gfacts, reads = _group_facts(admin, groups)

    needs_commit = isinstance(target, ShiftBy) or (scope.all_topics and not isinstance(target, FromOffsets))
    lacking = [g for g, gf in gfacts.items() if not gf.committed and not gf.denied]
    # Several groups where some have commits: the others are planned with no partition and
    # reported (kafka-consumer-groups.sh resets the ones with commits); refused only when no
    # named group has any (nothing to do is not a success).
    if needs_commit and not scope.all_groups and not scope.group_patterns \
            and len(lacking) == len(gfacts):
        g = lacking[0]
        glob = any(c in g for c in "*?[")
        raise UnknownGroupError(
            f"group '{g}' has no committed offsets"
            + (" to shift from" if isinstance(target, ShiftBy) else " (--all-topics needs them)")
            + (f"; to select groups by pattern use --group-pattern '{g}'" if glob else ""),
            group=g)

    topics = {s.topic for s in scope.topics}
    for gf in gfacts.values():
        if isinstance(target, FromOffsets):
            topics.update(tp.topic for tp in target.for_group(gf.info.group_id))
            topics.update(tp.topic for tp in target.deletes_for(gf.info.group_id))
        elif scope.all_topics:
            topics.update(tp.topic for tp in gf.committed)
    parts, _ = admin.resolve_partitions([*scope.topics, *((t, None) for t in sorted(topics))])
    topic_parts = {t: tuple(p) for t, p in parts.items()}
    if isinstance(target, FromOffsets):
        for g in groups:
            for tp in target.for_group(g):
                if tp.partition not in topic_parts.get(tp.topic, ()):
                    raise UnknownTopicError(f"{target.source}: topic '{tp.topic}' has no partition "
                                            f"{tp.partition}", topic=tp.topic, partition=tp.partition)
    all_tps = [TopicPartition(t, p) for t, ps in topic_parts.items() for p in ps]
    watermarks = admin.watermarks(all_tps)
    time_offsets = admin.offsets_for_time(all_tps, target.timestamp_ms) \
        if isinstance(target, ToDatetime) else {}
    return ResetFacts(groups=gfacts, topic_partitions=topic_parts, watermarks=watermarks,
                      time_offsets=time_offsets, allow_unknown_state=allow_unknown_state,
                      may_create=may_create, reads=reads)


def build_plan(admin: AdminPort, scope: ResetScope, target: ResetTarget, *, label: str = "",
               allow_unknown_state: bool = False, progress: ProgressFn = no_progress) -> ResetPlan:
    """Read the cluster and plan the reset (nothing is changed): `plan_with_reads`' plan."""
    return plan_with_reads(admin, scope, target, label=label,
                           allow_unknown_state=allow_unknown_state, progress=progress)[0]


def plan_with_reads(admin: AdminPort, scope: ResetScope, target: ResetTarget, *, label: str = "",
                    allow_unknown_state: bool = False, progress: ProgressFn = no_progress,
                    ) -> tuple[ResetPlan, GroupReads | None]:
    """Read the cluster and plan the reset (nothing is changed); also the groups' reads the
    plan was made from (`apply_plan(..., reads=)` takes them while they are fresh).

    Groups that do not exist are marked in the plan; they may be created by executing it only
    when `scope.create_groups` is set or the target's input names them (a several-group CSV, a
    snapshot, a mapping) — see `check_creatable`. A scope that selects no partition at all is
    a UsageError: nothing to do is not a success. `allow_unknown_state`: the executor's option
    of that name (`ExecuteOptions`), which planning applies the same way.
    """
    if not (scope.topics or scope.all_topics or isinstance(target, FromOffsets)):
        raise UsageError("no topic given: use --topic TOPIC[:P,...] (repeatable) or --all-topics")
    if scope.topics and scope.all_topics:
        raise UsageError("--topic and --all-topics are mutually exclusive")
    groups = resolve_groups(admin, scope, target)
    named = target.named_groups if isinstance(target, FromOffsets) else frozenset()
    progress(ProgressEvent("reading groups from the cluster", 0, len(groups), "groups"))
    facts = gather_facts(admin, scope, target, groups, allow_unknown_state=allow_unknown_state,
                         may_create=frozenset(groups) if scope.create_groups else named)
    progress(ProgressEvent("reading groups from the cluster", len(groups), len(groups), "groups"))
    plan = _typed(plan_reset(facts, scope, target, label=label, progress=progress), admin)
    if plan.group_type == "share" and isinstance(admin, KafkaPort):
        plan = with_redelivery(plan, admin)
    if not any(True for _ in plan.partitions()) and not plan.refused:
        where = f" of {target.source}" if isinstance(target, FromOffsets) else ""
        raise UsageError(f"the reset selects no partition: none of the {len(groups)} group(s) in "
                         f"scope has a partition{where} in the topics given")
    return plan, facts.reads


def build_delete_plan(admin: AdminPort, scope: ResetScope, *, whole_groups: bool,
                      allow_unknown_state: bool = False) -> ResetPlan:
    """Read the cluster and plan deleting offsets (`--topic` scope) or whole groups."""
    if not whole_groups and not scope.topics:
        raise UsageError("offsets delete needs --topic TOPIC[:P,...]")
    groups = resolve_groups(admin, scope)
    gfacts, _ = _group_facts(admin, groups)
    parts, _ = admin.resolve_partitions(scope.topics)
    topic_parts = {t: tuple(p) for t, p in parts.items()}
    if not whole_groups:
        for g, gf in gfacts.items():
            if not gf.exists and not gf.denied:
                raise unknown_group(admin, g)
    else:
        missing = sorted(g for g, gf in gfacts.items() if not gf.exists and not gf.denied)
        if missing:
            raise unknown_group(admin, missing[0])
    # Watermarks only for the topics named (a group may hold commits for deleted topics).
    tps = {TopicPartition(t, p) for t, ps in topic_parts.items() for p in ps}
    facts = ResetFacts(groups=gfacts, topic_partitions=topic_parts, watermarks=admin.watermarks(tps),
                       allow_unknown_state=allow_unknown_state)
    return _typed(plan_delete(facts, scope, whole_groups=whole_groups), admin)


def with_redelivery(plan: ResetPlan, admin: KafkaPort) -> ResetPlan:
    """A share plan with, on each partition whose start offset moves back, how many records
    executing it delivers again: moving the start offset from S back to T drops the
    acknowledgement state from T on, so every readable record in [T, log end) is available
    again, of which the group has not yet acknowledged `lag` (all at or after S). Counted by
    reading (compacted and transactional logs have gaps), not by subtracting offsets; a
    partition that cannot be counted says so."""
    from dataclasses import replace

    back = {(gp.group, p.tp): p for gp in plan.groups if not gp.refused for p in gp.partitions
            if p.changes and not p.delete and p.current is not None and p.target is not None
            and p.target < p.current}
    if not back:
        return plan
    groups = sorted({g for g, _ in back})
    lags: dict[tuple[str, TopicPartition], int | None] = {}
    for g, res in admin.share_group_offsets(groups).items():
        if not isinstance(res, Exception):
            for o in res:
                lags[(g, TopicPartition(o.topic, o.partition))] = o.lag
    counts: dict[tuple[str, TopicPartition], int] = {}
    for g in groups:
        ranges = {tp: (p.target, p.log_end) for (gg, tp), p in back.items() if gg == g}
        for tp, (n, _) in admin.count_readable(ranges, timeout_s=15.0).items():
            counts[(g, tp)] = n
    new_groups = []
    for gp in plan.groups:
        parts = []
        for p in gp.partitions:
            key = (gp.group, p.tp)
            if key in back:
                n, lag = counts.get(key), lags.get(key)
                redeliver = None if n is None else max(0, n - (lag or 0))
                say = (f"{redeliver} record(s) will be delivered again (moving the start offset "
                       "back drops their acknowledgements)" if redeliver is not None else
                       "records from the new start offset on will be delivered again (could not "
                       "count them)")
                p = replace(p, redeliver=redeliver, note="; ".join(x for x in (p.note, say) if x))
            parts.append(p)
        new_groups.append(replace(gp, partitions=tuple(parts)))
    return replace(plan, groups=tuple(new_groups))


def _typed(plan: ResetPlan, admin: AdminPort) -> ResetPlan:
    """The plan, marked with the group type of the admin view its facts were read through (a
    share group's start offsets: `KafkaAdmin.for_group_type`), so the executor applies it
    through the same view."""
    from dataclasses import replace

    from offsetkeeper.models import GroupType

    group_type = admin.group_type
    return plan if group_type == plan.group_type else replace(plan, group_type=GroupType(group_type))
