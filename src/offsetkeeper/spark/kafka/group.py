"""`commitToGroup`: publish a streaming query's position as a consumer group's offsets.

A light path, called once per batch from the driver: the group must be inactive (no members,
as the reset executor requires), the commit is read back per partition. It takes no snapshot
(one per batch would flood the store); `offsetkeeper streaming commit-to-group` is the
audited, one-off way through the reset executor.
"""

from __future__ import annotations

from collections.abc import Mapping

from offsetkeeper.errors import GroupActiveError, KafkaOperationError


def commit_positions(admin, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """Commit `offsets` ({(topic, partition): next offset}) for the inactive `group`."""
    from offsetkeeper.models import TopicPartition

    info = admin.describe_groups([group])[group]
    if info.refusal:
        raise GroupActiveError(info.refusal, group=group)
    tps = {TopicPartition(t, p): o for (t, p), o in offsets.items()}
    result = admin.alter_result(group, admin.alter_offsets_async(group, tps))
    failed = {str(tp): err for tp, err in result.items() if err}
    if failed:
        first = sorted(failed.items())[0]
        raise KafkaOperationError(f"commit to group {group} failed for {len(failed)} "
                                  f"partition(s), first {first[0]}: {first[1]}", group=group)
