"""The arguments of `OffsetConsumer`, checked before anything connects (ConsumerConfigError
naming the bad one and what is expected)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from offsetkeeper.consumer.policy import CommitPolicy
from offsetkeeper.consumer.stores import OffsetStore
from offsetkeeper.errors import ConsumerConfigError

OFFSET_RESETS = ("earliest", "latest", "none")
# Properties the policy and auto_offset_reset own: setting them too would contradict the policy.
OWNED_PROPERTIES = ("enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset",
                    "auto.commit.interval.ms", "on_commit", "enable.partition.eof")


def check_arguments(conf: Mapping[str, object], topics: Sequence[str], *,
                    policy: CommitPolicy | None, auto_offset_reset: str,
                    store: OffsetStore | str | None, mirror_to_kafka: bool,
                    max_poll_records: int) -> str:
    """Refuse invalid arguments of `OffsetConsumer`; the group id."""
    group = conf.get("group.id")
    if not isinstance(group, str) or not group:
        raise ConsumerConfigError(f"group.id={group!r} is invalid; expected a non-empty group name")
    if group != group.lstrip():
        # librdkafka strips leading whitespace from property values: the consumer would
        # join and commit to another group than the one named.
        raise ConsumerConfigError(f"group.id={group!r} starts with whitespace, which the Kafka "
                                  "client drops (it would use another group); rename the group")
    for key in OWNED_PROPERTIES:
        if key in conf:
            raise ConsumerConfigError(
                f"consumer property {key!r} is set by OffsetConsumer (policy / auto_offset_reset); "
                "remove it from the config")
    if isinstance(topics, str) or not topics or not all(isinstance(t, str) and t for t in topics):
        raise ConsumerConfigError(f"topics={topics!r} is invalid; expected a non-empty list of topic names")
    if auto_offset_reset not in OFFSET_RESETS:
        raise ConsumerConfigError(
            f"auto_offset_reset={auto_offset_reset!r} is invalid; expected earliest, latest or none")
    if isinstance(max_poll_records, bool) or not isinstance(max_poll_records, int) or max_poll_records < 1:
        raise ConsumerConfigError(f"max_poll_records={max_poll_records!r} is invalid; expected an integer >= 1")
    if policy is not None and not isinstance(policy, CommitPolicy):
        raise ConsumerConfigError(f"policy={policy!r} is invalid; expected a CommitPolicy")
    if store is not None and policy is not None:
        raise ConsumerConfigError(
            "policy and store are exclusive: with an offset store, offsets are committed by "
            "transaction(); drop policy=")
    if mirror_to_kafka and store is None:
        raise ConsumerConfigError("mirror_to_kafka=True needs an offset store (store=...)")
    return group
