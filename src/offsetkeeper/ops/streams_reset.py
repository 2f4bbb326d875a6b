"""`streams-groups reset-offsets`: a streams group's committed offsets, moved through the one
executor (plan, snapshot, apply, read back) like any reset.

A streams group commits ordinary group offsets for its input topics, and the broker accepts an
admin's offset commit for it once it is Empty (kafka-streams-groups.sh --reset-offsets does the
same through AlterStreamsGroupOffsets). What differs is the check before: the group must be a
streams group (described through Kafka's Java client) and Empty or Dead; the executor's own
re-check sees the streams group's real state through the admin facade
(`KafkaAdmin.with_other_group_types`), so an application started after planning is refused too.
"""

from __future__ import annotations

from dataclasses import replace

from offsetkeeper.errors import GroupActiveError, UnknownGroupError, UsageError
from offsetkeeper.kafka.group_types import state_key
from offsetkeeper.kafka.ports import KafkaPort
from offsetkeeper.ops.reset import Outcome, ResetRequest, reset_offsets
from offsetkeeper.progress import ProgressFn, no_progress
from offsetkeeper.reset.plan import TopicSpec


def reset_streams_group(admin: KafkaPort, req: ResetRequest, *, all_input_topics: bool = False,
                        progress: ProgressFn = no_progress) -> Outcome:
    """Reset the one streams group `req.scope` names (refused unless it is empty). With
    `all_input_topics`, every input topic of its topology; otherwise the request's topics."""
    scope = req.scope
    if len(scope.groups) != 1 or scope.all_groups or scope.group_patterns or not scope.groups[0]:
        raise UsageError("a streams group reset takes exactly one --group")
    group = scope.groups[0]
    detail = admin.describe_streams_groups([group])[group]
    if isinstance(detail, UnknownGroupError):
        from offsetkeeper.groups.listing import not_found_error

        raise not_found_error(admin, group, "streams") from detail
    if isinstance(detail, Exception):
        raise detail
    if detail.members or state_key(detail.state) not in ("empty", "dead"):
        n = len(detail.members)
        raise GroupActiveError(f"streams group {group} has {n} active member{'s' if n != 1 else ''} "
                               f"(state {state_key(detail.state)}); stop the application and "
                               "run again",
                               group=group)
    if all_input_topics:
        if scope.topics:
            raise UsageError("give --topic or --all-input-topics, not both")
        if not detail.input_topics:
            raise UsageError(f"streams group {group} has no input topics in its topology")
        scope = replace(scope, topics=tuple(TopicSpec(t) for t in detail.input_topics))
    elif not scope.topics and not scope.all_topics:
        raise UsageError("name the topics with --topic, or use --all-input-topics")
    scope = replace(scope, live=False)
    outcome = reset_offsets(admin, replace(req, scope=scope), progress=progress)
    # the offsets are committed offsets (GroupType.CONSUMER) of a streams group: say which
    return replace(outcome, plan=replace(outcome.plan, group_kind="streams"))
