"""`share-groups reset-offsets|delete-offsets`: a share group's start offsets, moved or deleted
through the one executor (plan, snapshot, re-check, apply, read back) like any reset.

A share group (KIP-932) has no committed offsets: each share-partition has a start offset. The
admin facade's share view (`KafkaAdmin.for_group_type(GroupType.SHARE)`, kafka/share_offsets.py)
answers the pipeline's reads with the group's members and start offsets and applies plans with
AlterShareGroupOffsets / DeleteShareGroupOffsets; planning through it marks the plan as a share
plan, and the executor applies a plan through the view of its group type. So the same rules hold:
a dry run unless executed, refused while the group has members (at planning, and again right
before applying), refused when another writer moved a start offset since planning, a snapshot
first (`snapshots rollback` restores the start offsets, and deletes those that did not exist),
every partition read back.
"""

from __future__ import annotations

from dataclasses import replace

from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.ports import AdminPort
from offsetkeeper.models import GroupType
from offsetkeeper.ops.reset import (
    DeleteRequest,
    Outcome,
    ResetRequest,
    execute_plan,
    reset_offsets,
)
from offsetkeeper.ops.targets import TargetKind
from offsetkeeper.progress import ProgressFn, no_progress

# Targets a share reset takes (the ones that need no other group's or store's offsets).
SHARE_TARGETS = (TargetKind.TO_EARLIEST, TargetKind.TO_LATEST, TargetKind.TO_CURRENT,
                 TargetKind.TO_OFFSET, TargetKind.SHIFT_BY, TargetKind.TO_DATETIME,
                 TargetKind.BY_DURATION, TargetKind.FROM_FILE)


def share_view(admin: AdminPort):
    """The admin facade for share groups (their start offsets instead of committed offsets)."""
    return admin.for_group_type(GroupType.SHARE)


def _one_group(view, group: str) -> dict:
    """The group's start offsets; UnknownGroupError when it is not a share group."""
    if not group:
        raise UsageError("--group must not be empty")
    info = view.describe_groups_each([group])[group]
    if isinstance(info, Exception):
        raise info
    offsets = view.committed_offsets_each([group])[group]
    if isinstance(offsets, Exception):
        raise offsets
    return offsets


def reset_share_group(admin: AdminPort, req: ResetRequest, *, progress: ProgressFn = no_progress) -> Outcome:
    """Plan (and with `req.execute` apply) a reset of one share group's start offsets.

    Without topics (and without a file), every partition the group has a start offset for.
    """
    if req.target.kind not in SHARE_TARGETS:
        raise UsageError(f"{req.target.kind.flag} is not a share group reset target")
    scope = req.scope
    if len(scope.groups) != 1 or scope.all_groups or scope.group_patterns:
        raise UsageError("a share group reset takes exactly one --group")
    if scope.live or scope.create_groups:
        raise UsageError("--live and --create-groups do not apply to share groups")
    view = share_view(admin)
    current = _one_group(view, scope.groups[0])
    if not scope.topics and req.target.kind is not TargetKind.FROM_FILE:
        if not current:
            raise UsageError(f"share group {scope.groups[0]} has no start offsets yet; name the "
                             "topics with --topic", group=scope.groups[0])
        req = replace(req, scope=replace(scope, all_topics=True))
    return reset_offsets(view, req, progress=progress)


def delete_share_offsets(admin: AdminPort, req: DeleteRequest, *,
                         progress: ProgressFn = no_progress) -> Outcome:
    """Plan (and with `req.execute` apply) deleting one share group's start offsets of whole
    topics (the broker deletes them per topic); the group then starts those topics again by its
    share.auto.offset.reset."""
    from offsetkeeper.reset.facts import build_delete_plan

    scope = req.scope
    if len(scope.groups) != 1:
        raise UsageError("a share group delete takes exactly one --group")
    if not scope.topics:
        raise UsageError("name the topics whose start offsets to delete with --topic")
    if any(t.partitions is not None for t in scope.topics):
        raise UsageError("--topic takes whole topics here (no :PARTITIONS): the broker deletes "
                         "a share group's start offsets per topic")
    if req.whole_groups:
        raise UsageError("deleting share groups is not supported (kafka-share-groups.sh --delete)")
    view = share_view(admin)
    _one_group(view, scope.groups[0])
    plan = build_delete_plan(view, scope, whole_groups=False)
    report = execute_plan(view, plan, req.options, description=f"before {plan.kind}",
                          progress=progress) if req.execute else None
    return Outcome(plan, report)
