"""Streams groups (KIP-1071): Kafka Streams applications with group.protocol=streams.

The broker knows the application's topology (subtopologies, their source, repartition and
changelog topics), its members (one per stream thread, grouped by process) and their tasks.
Committed offsets are ordinary group offsets of the input topics; lag is log end - committed.
"""

from __future__ import annotations

from dataclasses import dataclass

from offsetkeeper.errors import UnknownGroupError
from offsetkeeper.groups.listing import GroupRow, list_typed_groups
from offsetkeeper.kafka.group_types import StreamsGroupDetail
from offsetkeeper.kafka.ports import KafkaPort
from offsetkeeper.models import TopicPartition


@dataclass(frozen=True)
class StreamsOffsetRow:
    """One line of `streams-groups describe --offsets` (kafka-streams-groups.sh --describe
    --offsets --verbose: committed offset, log end, lag)."""

    group: str
    topic: str
    partition: int
    current_offset: int | None
    log_end_offset: int
    lag: int | None


@dataclass(frozen=True)
class StreamsGroupView:
    detail: StreamsGroupDetail
    offsets: tuple[StreamsOffsetRow, ...]


def list_streams_groups(admin: KafkaPort, *, states: set[str] | None = None) -> list[GroupRow]:
    """Streams groups with their state (needs the Java admin helper)."""
    from offsetkeeper.kafka.jvm import helper_command

    helper_command()  # one line naming the fix when Java or the helper is missing
    rows, _ = list_typed_groups(admin, types={"streams"}, states=states, strict=True)
    return rows


def describe_streams_groups(admin: KafkaPort, group_ids: list[str]) -> list[StreamsGroupView]:
    """Topology, members (processes, tasks) and per input partition the committed offset,
    log end and lag of each streams group; an unknown group is an error."""
    if not group_ids:
        return []
    details = admin.describe_streams_groups(group_ids)
    committed = admin.streams_group_offsets(group_ids)
    for g in group_ids:
        for res in (details[g], committed[g]):
            if isinstance(res, UnknownGroupError):
                from offsetkeeper.groups.listing import not_found_error

                raise not_found_error(admin, g, "streams") from res
            if isinstance(res, Exception):
                raise res
    wanted: set[TopicPartition] = set()
    parts: dict[str, set[TopicPartition]] = {}
    existing = admin.topic_partitions()
    for g in group_ids:
        d: StreamsGroupDetail = details[g]  # type: ignore[assignment]
        offs: dict[TopicPartition, int] = committed[g]  # type: ignore[assignment]
        tps = set(offs)
        # input partitions never committed still show (with '-'), as the Kafka tool does
        tps |= {TopicPartition(t, p) for t in d.input_topics for p in existing.get(t, ())}
        parts[g] = tps
        wanted |= tps
    marks = admin.watermarks(wanted) if wanted else {}
    views = []
    for g in group_ids:
        offs = committed[g]  # type: ignore[assignment]
        rows = []
        for tp in sorted(parts[g]):
            cur = offs.get(tp)
            end = marks[tp].high
            rows.append(StreamsOffsetRow(g, tp.topic, tp.partition, cur, end,
                                         None if cur is None else end - cur))
        views.append(StreamsGroupView(details[g], tuple(rows)))  # type: ignore[arg-type]
    return views
