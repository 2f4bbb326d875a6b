"""`offsets reset --from-mm2 --source-alias A`: each group's offsets as MirrorMaker 2 translated
them, read from the checkpoints on the target cluster (the cluster the reset runs on).

The same answer as `RemoteClusterUtils.translateOffsets` (its newest checkpoint per partition,
the topic renamed ``<alias>.<topic>``), as a `FromOffsets` target: the planner clamps a
translated offset beyond the log end with its usual visible note, and the executor snapshots,
re-checks, applies and reads back as for any reset.
"""

from __future__ import annotations

import time

from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.ports import ClusterPort
from offsetkeeper.mm2.records import Checkpoint, latest_checkpoints
from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.targets import FromOffsets


def source_topic(source_alias: str, topic: str) -> str:
    """The source cluster's name of a mirrored topic (DefaultReplicationPolicy, separator ".";
    IdentityReplicationPolicy keeps names: returned unchanged)."""
    prefix = f"{source_alias}."
    return topic[len(prefix):] if topic.startswith(prefix) else topic


def translations(checkpoints: dict[tuple[str, str, int], Checkpoint], source_alias: str,
                 groups: set[str] | None = None) -> dict[str, dict[TopicPartition, int]]:
    """group -> {target partition: translated offset} (pure)."""
    out: dict[str, dict[TopicPartition, int]] = {}
    for (group, topic, partition), c in checkpoints.items():
        if groups is not None and group not in groups:
            continue
        out.setdefault(group, {})[TopicPartition(topic, partition)] = c.downstream
    return out


def mm2_target(admin: ClusterPort, source_alias: str, groups: tuple[str, ...], *, all_groups: bool = False,
               max_age_s: float | None = None) -> tuple[FromOffsets, tuple[str, ...]]:
    """The reset target and notes (groups with no checkpoint, checkpoints older than
    `max_age_s`)."""
    if not source_alias or not source_alias.strip() or "." in source_alias.strip("."):
        raise UsageError(f"--source-alias {source_alias!r} is not a cluster alias (expected "
                         "the source cluster's name in the MM2 configuration, e.g. A)")
    latest, skipped = latest_checkpoints(admin.conn.client_config(), source_alias)
    wanted = None if all_groups else set(groups)
    got = translations(latest, source_alias, wanted)
    notes = []
    now = time.time() * 1000
    ages: dict[str, dict[TopicPartition, str]] = {}
    for (g, t, p), c in latest.items():
        if g in got and c.timestamp_ms is not None:
            ages.setdefault(g, {})[TopicPartition(t, p)] = (
                f"MM2 checkpoint {max(0.0, now - c.timestamp_ms) / 1000:.0f}s old "
                f"(source offset {c.upstream})")
    for g in sorted(wanted or ()):
        if g not in got:
            notes.append(f"group {g} has no MM2 checkpoint from {source_alias}: left unchanged")
    if max_age_s is not None:
        for (g, t, p), c in sorted(latest.items()):
            if g in got and c.timestamp_ms is not None and now - c.timestamp_ms > max_age_s * 1000:
                notes.append(f"group {g} {t}:{p}: checkpoint is {(now - c.timestamp_ms) / 1000:.0f}s "
                             "old")
    if skipped:
        notes.append(f"{skipped} malformed records in {source_alias}.checkpoints.internal "
                     "were skipped")
    return FromOffsets({g: dict(v) for g, v in got.items()},
                       source=f"MM2 checkpoints from {source_alias}", notes=ages), tuple(notes)
