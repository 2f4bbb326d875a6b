"""Consumer groups as Kafka's Java Admin client describes them: the real state of
consumer-protocol (KIP-848) groups, Assigning and Reconciling included, and the KIP-1099
epochs (`kafka-consumer-groups.sh --describe --state|--members --verbose`)."""

from __future__ import annotations

from offsetkeeper.errors import UnknownGroupError
from offsetkeeper.kafka.group_types import ConsumerGroupDetail
from offsetkeeper.kafka.ports import TypedGroupsPort


def consumer_group_details(admin: TypedGroupsPort, group_ids: list[str]) -> list[ConsumerGroupDetail]:
    """Details of each group, in the order given; raises the first group's error (an unknown
    group is an UnknownGroupError, as `groups describe` reports it)."""
    res = admin.describe_consumer_groups_verbose(group_ids)
    out = []
    for g in group_ids:
        d = res[g]
        if isinstance(d, Exception):
            raise d
        if d.state.lower() == "dead" and not d.members:
            raise UnknownGroupError(f"consumer group '{g}' does not exist", group=g)
        out.append(d)
    return out
