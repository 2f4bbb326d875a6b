"""`commitToGroup`: publish a streaming query's position as a consumer group's offsets.

Called once per batch from the driver, through the one reset executor like every other offset
change: the group must be inactive (no members), its offsets must not have been moved by
another writer since the plan, and the commit is read back per partition. No snapshot is
taken (one per batch would flood the store); `offsetkeeper streaming commit-to-group` is the
audited, one-off way.
"""

from __future__ import annotations

from collections.abc import Mapping

from offsetkeeper.errors import GroupActiveError, KafkaOperationError, OffsetkeeperError
from offsetkeeper.kafka.ports import AdminPort


class GroupCommitError(OffsetkeeperError):
    """Committing a streaming query's batch end offsets to its consumer group failed."""


def commit_positions(admin: AdminPort, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Commit `offsets` ({(topic, partition): next offset}) for the inactive `group`."""
    from offsetkeeper.models import TopicPartition
    from offsetkeeper.reset.apply import ApplyOptions, GroupStatus, apply_plan
    from offsetkeeper.reset.facts import build_plan
    from offsetkeeper.reset.options import ExecuteOptions
    from offsetkeeper.reset.plan import ResetScope
    from offsetkeeper.reset.targets import FromOffsets

    target = FromOffsets({group: {TopicPartition(t, p): o for (t, p), o in offsets.items()}},
                         source="streaming query position")
    plan = build_plan(admin, ResetScope(groups=(group,)), target, label="commitToGroup")
    [result] = apply_plan(admin, plan, ApplyOptions(ExecuteOptions(retries=2, deadline_s=30))).results
    if result.status is GroupStatus.REFUSED:
        raise GroupActiveError(result.error or f"group {group} is active", group=group)
    if result.status is GroupStatus.FAILED:
        detail = "; ".join(f"{k}: {v}" for k, v in sorted(result.partition_errors.items()))
        raise KafkaOperationError(f"commit to group {group} failed: {result.error}"
                                  + (f" ({detail})" if detail else ""), group=group)
