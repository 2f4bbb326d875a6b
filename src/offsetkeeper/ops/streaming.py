"""`streaming show|lag|reset|rollback|commit-to-group`: Spark Structured Streaming checkpoints
with Kafka offsets, managed like a consumer group's offsets.

A reset names its target as `offsets reset` does (`TargetSpec`, resolved by
`ops.targets.resolve_target`); committing a checkpoint's position to a group goes through the
one executor with its snapshot first, like every other offset change.
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetkeeper.errors import OffsetkeeperError, UsageError
from offsetkeeper.kafka.ports import AdminPort
from offsetkeeper.ops.reset import Outcome, execute_plan
from offsetkeeper.ops.targets import TargetContext, TargetKind, TargetSpec, resolve_target
from offsetkeeper.progress import ProgressFn, no_progress
from offsetkeeper.streaming.reset import (
    DEFAULT_ALIVE_WINDOW_S,
    CheckpointResetPlan,
    CheckpointRollbackRequest,
    CheckpointScope,
    CommitToGroupRequest,
    RollbackResult,
    commit_plan,
    execute_checkpoint_reset,
    plan_checkpoint_reset,
    rollback_checkpoint,
)
from offsetkeeper.streaming.store import ResetRecord
from offsetkeeper.streaming.view import (
    CheckpointView,
    LagRow,
    PositionRow,
    checkpoint_lag,
    checkpoint_positions,
    load_view,
)

__all__ = ["DEFAULT_ALIVE_WINDOW_S", "TARGET_KINDS", "CheckpointResetOutcome",
           "CheckpointResetPlan", "CheckpointResetRequest", "CheckpointRollbackRequest",
           "CheckpointScope", "CheckpointView", "CommitToGroupRequest", "LagRow", "PositionRow", "RollbackResult",
           "checkpoint_lag", "checkpoint_positions", "checkpoint_resets", "commit_to_group",
           "connector_jars", "load_view", "reset_checkpoint", "roll_back_checkpoint"]

# The targets a checkpoint can be reset to: everything `offsets reset` offers that does not
# name offsets per consumer group (a snapshot, a restore mapping, the offset history,
# ZooKeeper and the commit log hold groups' offsets, not a query's).
TARGET_KINDS = (TargetKind.TO_EARLIEST, TargetKind.TO_LATEST, TargetKind.TO_CURRENT,
                TargetKind.TO_OFFSET, TargetKind.SHIFT_BY, TargetKind.TO_DATETIME,
                TargetKind.BY_DURATION, TargetKind.FROM_FILE, TargetKind.FROM_GROUP)


@dataclass(frozen=True)
class CheckpointResetRequest:
    """`streaming reset`: which checkpoint and partitions with the safety switches (`scope`,
    what the planner takes as it is), to what, and whether to apply it."""

    scope: CheckpointScope
    target: TargetSpec
    execute: bool = False


@dataclass(frozen=True)
class CheckpointResetOutcome:
    """The plan, and with `execute` the record of the files rewritten (undo: its reset id)."""

    plan: CheckpointResetPlan
    record: ResetRecord | None = None

    @property
    def exit_code(self) -> int:
        return 1 if self.plan.has_errors else 0


def reset_checkpoint(admin: AdminPort, req: CheckpointResetRequest) -> CheckpointResetOutcome:
    """Resolve the target, plan the reset and, with `req.execute`, rewrite the checkpoint (every
    file it changes is copied first)."""
    if req.target.kind not in TARGET_KINDS:
        raise UsageError(f"{req.target.kind.flag} is not a target for a checkpoint: use one of "
                         + ", ".join(k.flag for k in TARGET_KINDS))
    resolved = resolve_target(req.target, TargetContext(admin=admin, snapshot_store=""))
    plan = plan_checkpoint_reset(admin, req.scope, resolved.target, label=resolved.label)
    record = execute_checkpoint_reset(plan, force=req.scope.force) if req.execute else None
    return CheckpointResetOutcome(plan, record)


def roll_back_checkpoint(req: CheckpointRollbackRequest) -> RollbackResult:
    """The files to restore and the reasons not to; with `req.execute` restore them."""
    return rollback_checkpoint(req)


def commit_to_group(admin: AdminPort, req: CommitToGroupRequest, *,
                    progress: ProgressFn = no_progress) -> Outcome:
    """Plan committing the end offsets of the checkpoint's last committed batch to the group
    and, with `req.execute`, apply it through the one executor: the group is snapshotted first
    (unless `options.snapshot` is False), refused while it has active members, read back."""
    plan = commit_plan(admin, req)
    report = execute_plan(admin, plan, req.options,
                          description=f"before streaming commit-to-group {req.group}",
                          progress=progress) if req.execute else None
    return Outcome(plan, report)


def checkpoint_resets(location: str) -> list[str]:
    """The ids of the offsetkeeper resets recorded in a checkpoint (what `streaming rollback`
    can undo), oldest first; none when the checkpoint cannot be read."""
    from offsetkeeper.streaming.store import CheckpointStore

    try:
        return CheckpointStore(location).records()
    except (OffsetkeeperError, OSError):
        return []


def connector_jars() -> str:
    """The jars of Spark's own Kafka connector for the installed pyspark, comma-separated (for
    ``spark.jars`` or ``spark-submit --jars``); UsageError saying how to install them."""
    from offsetkeeper.spark.connector import jars_conf

    return jars_conf()["spark.jars"]
