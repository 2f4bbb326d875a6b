"""Which source partition goes to which target partition (pure, no I/O)."""

from __future__ import annotations

from dataclasses import dataclass

from offsetkeeper.errors import UsageError
from offsetkeeper.models import TopicPartition, compile_pattern
from offsetkeeper.restore.backup_view import BackupView
from offsetkeeper.restore.config import RestoreOptions


@dataclass(frozen=True, order=True)
class Route:
    """Records of `source` are written, in source-offset order, to `target`."""

    source: TopicPartition
    target: TopicPartition


@dataclass(frozen=True)
class TopicToCreate:
    name: str
    partitions: int
    configs: dict[str, str]
    source_topic: str


# The most partitions a restore creates in one topic (a partition map beyond it is a typo).
MAX_TOPIC_PARTITIONS = 100_000


def _selected(topic: str, include: tuple[str, ...], exclude: tuple[str, ...]) -> bool:
    """The one topic selector (backup/topics.py): NAME, GLOB or ~REGEX, include then exclude."""
    if include and not any(compile_pattern(p).fullmatch(topic) for p in include):
        return False
    return not any(compile_pattern(p).fullmatch(topic) for p in exclude)


def _holds(view: BackupView) -> str:
    return ", ".join(sorted(view.topics)) or "nothing"


def route_partitions(view: BackupView, o: RestoreOptions) -> list[Route]:
    """One route per selected source partition; refuses two sources on one target partition."""
    topics = sorted(t for t in view.topics if _selected(t, o.topics, o.exclude_topics))
    for pattern in o.topics:
        if not any(compile_pattern(pattern).fullmatch(t) for t in view.topics):
            raise UsageError(f"topic '{pattern}' is not in backup '{view.backup_id}' "
                             f"(it holds: {_holds(view)})")
    for src in o.rename:
        if src not in view.topics:
            raise UsageError(f"--rename names topic '{src}', which is not in backup '{view.backup_id}'")
    for flag, named in (("--partition-map", o.partition_map), ("--source-partitions", o.source_partitions)):
        for t in named:
            if t is not None and t not in view.topics:
                raise UsageError(f"{flag} names topic '{t}', which is not in backup "
                                 f"'{view.backup_id}' (it holds: {_holds(view)})")
    routes: list[Route] = []
    for t in topics:
        meta = view.topics[t]
        parts = sorted({tp.partition for tp in view.partitions if tp.topic == t}
                       or range(meta.partition_count))
        wanted = o.source_partitions.get(t, o.source_partitions.get(None))
        if wanted is not None:
            missing = sorted(set(wanted) - set(parts))
            if missing and t in o.source_partitions:
                raise UsageError(f"--source-partitions: topic '{t}' has no backed-up partition "
                                 f"{missing[0]} (it has {', '.join(map(str, parts))})")
            parts = [p for p in parts if p in wanted]
        pmap = {**o.partition_map.get(None, {}), **o.partition_map.get(t, {})}
        target_topic = o.rename.get(t, t)
        for p in parts:
            routes.append(Route(TopicPartition(t, p), TopicPartition(target_topic, pmap.get(p, p))))
    seen: dict[TopicPartition, TopicPartition] = {}
    for r in routes:
        if r.target in seen:
            raise UsageError(f"{seen[r.target]} and {r.source} would both be restored to {r.target}; "
                             "give each source partition its own target partition")
        seen[r.target] = r.source
    if not routes:
        raise UsageError(f"nothing to restore: no backed-up partition of backup '{view.backup_id}' "
                         "matches the topic and partition filters")
    return sorted(routes)


def topics_to_create(view: BackupView, routes: list[Route], existing: dict[str, list[int]]) -> list[TopicToCreate]:
    """Target topics that do not exist yet: the backed-up partition count (or more, when a
    partition map needs it) and the backed-up configs."""
    need: dict[str, tuple[str, int]] = {}
    for r in routes:
        src, n = need.get(r.target.topic, (r.source.topic, 0))
        need[r.target.topic] = (src, max(n, r.target.partition + 1))
    out = []
    for name, (src, n) in sorted(need.items()):
        if name in existing:
            continue
        meta = view.topics[src]
        count = max(n, meta.partition_count)
        if count > MAX_TOPIC_PARTITIONS:
            raise UsageError(f"restoring would create topic '{name}' with {count} partitions (more than "
                             f"{MAX_TOPIC_PARTITIONS}); check --partition-map")
        out.append(TopicToCreate(name, count, dict(meta.configs), src))
    return out


def check_existing_targets(routes: list[Route], existing: dict[str, list[int]]) -> None:
    """Every target partition of an existing topic must exist."""
    for r in routes:
        parts = existing.get(r.target.topic)
        if parts is not None and r.target.partition not in parts:
            raise UsageError(f"target topic '{r.target.topic}' has no partition {r.target.partition} "
                             f"(it has {len(parts)}); use --partition-map or add partitions")
