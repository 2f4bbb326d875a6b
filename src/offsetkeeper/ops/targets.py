"""Reset targets as a user names them (`TargetSpec`), and how each becomes a `ResetTarget`.

The command line, the dashboard and the streaming tools all describe a target the same way —
a kind and its value as text — and `resolve_target` turns it into the planner's typed target.
Targets read from elsewhere are built by their owners (a snapshot by snapshots/, a restore
mapping by restore/, a CSV file by reset/parse, another group by reading it), so that reset/
imports none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.ports import AdminPort
from offsetkeeper.progress import ProgressFn, no_progress
from offsetkeeper.reset.parse import parse_int, parse_offset
from offsetkeeper.reset.plan import ResetScope
from offsetkeeper.reset.targets import (
    FromOffsets,
    ResetTarget,
    ShiftBy,
    ToCurrent,
    ToDatetime,
    ToEarliest,
    ToLatest,
    ToOffset,
)
from offsetkeeper.times import duration_start_ms, parse_time


class TargetKind(StrEnum):
    """Every kind of reset target; the value is the command-line flag without dashes."""

    TO_EARLIEST = "to-earliest"
    TO_LATEST = "to-latest"
    TO_CURRENT = "to-current"
    TO_OFFSET = "to-offset"
    SHIFT_BY = "shift-by"
    TO_DATETIME = "to-datetime"
    BY_DURATION = "by-duration"
    FROM_FILE = "from-file"
    FROM_SNAPSHOT = "from-snapshot"
    FROM_MAPPING = "from-mapping"
    FROM_GROUP = "from-group"
    TO_HISTORY = "to-history"
    TO_COMMIT_TIME = "to-commit-time"
    FROM_ZOOKEEPER = "from-zookeeper"
    FROM_MM2 = "from-mm2"  # the value is the source cluster's alias

    @property
    def flag(self) -> str:
        return f"--{self.value}"

    @property
    def takes_value(self) -> bool:
        return self not in (TargetKind.TO_EARLIEST, TargetKind.TO_LATEST, TargetKind.TO_CURRENT)


@dataclass(frozen=True)
class TargetSpec:
    """A reset target as given by a user: its kind, its value as text, and provider options
    (e.g. the snapshot store for `from-snapshot`)."""

    kind: TargetKind
    value: str | None = None
    options: Mapping[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """The target as a command-line flag (shown in plans and reports)."""
        return self.kind.flag if self.value is None else f"{self.kind.flag} {self.value}"


@dataclass(frozen=True)
class TargetContext:
    """What target providers may need besides the spec."""

    admin: AdminPort
    snapshot_store: str
    allow_cluster_mismatch: bool = False
    # The reset's scope, for providers that read per group (--to-history).
    scope: ResetScope = field(default_factory=ResetScope)
    # Progress of long inputs (a --from-file plan of many lines).
    progress: ProgressFn = no_progress


@dataclass(frozen=True)
class ResolvedTarget:
    """A planner target plus notes for the user (e.g. a cluster-id warning)."""

    target: ResetTarget
    label: str
    notes: tuple[str, ...] = ()


Provider = Callable[[TargetSpec, TargetContext], ResolvedTarget]


def _simple(spec: TargetSpec, _ctx: TargetContext) -> ResolvedTarget:
    k, v = spec.kind, spec.value or ""
    if k is TargetKind.TO_EARLIEST:
        return ResolvedTarget(ToEarliest(), spec.label)
    if k is TargetKind.TO_LATEST:
        return ResolvedTarget(ToLatest(), spec.label)
    if k is TargetKind.TO_CURRENT:
        return ResolvedTarget(ToCurrent(), spec.label)
    if k is TargetKind.TO_OFFSET:
        n = parse_offset(v, what="--to-offset")
        return ResolvedTarget(ToOffset(n), f"--to-offset {n}")
    if k is TargetKind.SHIFT_BY:
        return ResolvedTarget(ShiftBy(parse_int(v, what="--shift-by", signed=True, minimum=None)),
                              spec.label)
    if k is TargetKind.TO_DATETIME:
        return ResolvedTarget(ToDatetime(parse_time(v, what="--to-datetime"), v), spec.label)
    return ResolvedTarget(ToDatetime(duration_start_ms(v, what="--by-duration"), v), spec.label)


def _from_file(spec: TargetSpec, ctx: TargetContext) -> ResolvedTarget:
    from offsetkeeper.reset.parse import MAX_PLAN_BYTES, decode_utf8, parse_offsets_csv

    p = Path(spec.value or "").expanduser()
    # `shown_as`: the name to show for the file in messages, the plan and the snapshot's
    # description (the dashboard's upload: the user's file name, never its temporary path).
    shown = spec.options.get("shown_as") or str(p)
    try:
        with p.open("rb") as f:  # bounded before it is read (a named pipe has no size)
            data = f.read(MAX_PLAN_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"--from-file {shown} cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_PLAN_BYTES:
        limit = f"{MAX_PLAN_BYTES / 2**20:g} MiB" if MAX_PLAN_BYTES >= 2**20 else \
            f"{MAX_PLAN_BYTES:,} bytes"
        raise UsageError(f"--from-file {shown} is larger than {limit} (the limit of a plan file); "
                         "split it into several files")
    return ResolvedTarget(parse_offsets_csv(decode_utf8(data, source=shown), source=shown,
                                            progress=ctx.progress), f"{spec.kind.flag} {shown}")


def _from_snapshot(spec: TargetSpec, ctx: TargetContext) -> ResolvedTarget:
    from offsetkeeper.snapshots.rollback import check_cluster, rollback_target
    from offsetkeeper.snapshots.store import SnapshotStore

    snap = SnapshotStore(ctx.snapshot_store).load(
        spec.value or "", cluster=(ctx.admin.cluster_id(), ctx.admin.bootstrap_servers))
    note = check_cluster(ctx.admin, snap, allow=ctx.allow_cluster_mismatch)
    _same_group_type(snap, ctx.admin)
    return ResolvedTarget(rollback_target(snap), f"--from-snapshot {snap.id}",
                          (note,) if note else ())


def _same_group_type(snap, admin: AdminPort) -> None:
    """A snapshot of share groups holds start offsets: only a share reset may use them (and a
    share reset only a share snapshot)."""
    from offsetkeeper.models import GroupType
    from offsetkeeper.snapshots.rollback import rollback_group_type

    have = rollback_group_type(snap)
    want = GroupType(admin.group_type)
    if have is not want:
        what = {GroupType.SHARE: "share group start offsets", GroupType.CONSUMER: "committed offsets"}
        raise UsageError(f"snapshot {snap.id} holds {what[have]}, not {what[want]}"
                         + ("; use offsetkeeper snapshots rollback" if have is GroupType.SHARE
                            else ""))


def parse_mapping_ref(ref: str) -> tuple[str, str, str | None]:
    """`DEST/BACKUP_ID[:RESTORE_ID]` -> (destination, backup_id, restore_id or None)."""
    base, sep, tail = ref.rpartition(":")
    if sep and tail and "/" not in tail:
        ref, restore_id = base, tail
    else:
        restore_id = None
    ref = ref.rstrip("/")
    dest, _, backup_id = ref.rpartition("/")
    if not backup_id or not dest:
        raise UsageError(f"--from-mapping '{ref}' must be BACKUP_DIR[:RESTORE_ID], "
                         "e.g. /backups/nightly-1:restore-1")
    return dest, backup_id, restore_id


def _from_mapping(spec: TargetSpec, _ctx: TargetContext) -> ResolvedTarget:
    from offsetkeeper.restore.translate import offsets_from_mapping

    dest, backup_id, restore_id = parse_mapping_ref(spec.value or "")
    return ResolvedTarget(offsets_from_mapping(dest, backup_id, restore_id), spec.label)


def _from_group(spec: TargetSpec, ctx: TargetContext) -> ResolvedTarget:
    """The committed offsets of another group (as Redpanda Console's "copy offsets")."""
    source = spec.value or ""
    if not source:
        raise UsageError("--from-group '' is empty: give the group to copy offsets from")
    committed = ctx.admin.committed_offsets(source)
    if not committed:
        raise UsageError(f"--from-group '{source}': that group has no committed offsets to copy")
    offsets = {None: {tp: c.offset for tp, c in committed.items()}}
    return ResolvedTarget(FromOffsets(offsets, source=f"group {source}"), spec.label)


def _to_history(spec: TargetSpec, ctx: TargetContext) -> ResolvedTarget:
    """Where the groups were at a time, from the offset history store (option
    `history_store`; else $OFFSETKEEPER_HISTORY_STORE or the default store)."""
    from offsetkeeper.history.target import history_target

    target = history_target(spec.value or "", store_url=spec.options.get("history_store"),
                            groups=ctx.scope.groups, all_groups=ctx.scope.all_groups)
    return ResolvedTarget(target, spec.label)


def _to_commit_time(spec: TargetSpec, ctx: TargetContext) -> ResolvedTarget:
    """The offsets the groups had committed at a time, replayed from a commit history written
    by `commits scan` (option `commit_history`)."""
    from offsetkeeper.offsetlog.target import commit_time_target

    target = commit_time_target(spec.options.get("commit_history"), spec.value or "", ctx.scope.groups)
    return ResolvedTarget(target, spec.label)


def _from_zookeeper(spec: TargetSpec, ctx: TargetContext) -> ResolvedTarget:
    """ZooKeeper-era offsets of the groups (refused while their old consumers are alive)."""
    from offsetkeeper.zk.offsets import from_zookeeper

    return ResolvedTarget(from_zookeeper(spec.value or "", ctx.scope.groups), spec.label)


def _from_mm2(spec: TargetSpec, ctx: TargetContext) -> ResolvedTarget:
    """MirrorMaker 2's translation of the groups' offsets, from its checkpoints on this (the
    target) cluster; the value is the source cluster's alias."""
    from offsetkeeper.mm2.target import mm2_target

    target, notes = mm2_target(ctx.admin, spec.value or "", ctx.scope.groups,
                               all_groups=ctx.scope.all_groups)
    return ResolvedTarget(target, f"--from-mm2 --source-alias {spec.value}", notes)


def mm2_alias(from_mm2: bool, source_alias: str | None) -> str | None:
    """The FROM_MM2 value of the flags `--from-mm2 --source-alias A` (both or neither)."""
    if from_mm2 and not source_alias:
        raise UsageError("--from-mm2 needs --source-alias ALIAS (the source cluster's alias in "
                         "MM2's configuration)")
    if source_alias is not None and not from_mm2:
        raise UsageError("--source-alias goes with --from-mm2")
    return source_alias if from_mm2 else None


# Kind -> provider.
_PROVIDERS: dict[TargetKind | str, Provider] = {
    **{k: _simple for k in (TargetKind.TO_EARLIEST, TargetKind.TO_LATEST, TargetKind.TO_CURRENT,
                            TargetKind.TO_OFFSET, TargetKind.SHIFT_BY, TargetKind.TO_DATETIME,
                            TargetKind.BY_DURATION)},
    TargetKind.FROM_FILE: _from_file,
    TargetKind.FROM_SNAPSHOT: _from_snapshot,
    TargetKind.FROM_MAPPING: _from_mapping,
    TargetKind.FROM_GROUP: _from_group,
    TargetKind.TO_HISTORY: _to_history,
    TargetKind.TO_COMMIT_TIME: _to_commit_time,
    TargetKind.FROM_ZOOKEEPER: _from_zookeeper,
    TargetKind.FROM_MM2: _from_mm2,
}


def resolve_target(spec: TargetSpec, ctx: TargetContext) -> ResolvedTarget:
    """The planner target for a spec (reads files, snapshots, mappings or the cluster)."""
    provider = _PROVIDERS.get(spec.kind)
    if provider is None:  # pragma: no cover - every TargetKind has a provider
        raise UsageError(f"unsupported reset target {spec.kind}")
    if spec.kind.takes_value and spec.value is None:
        raise UsageError(f"{spec.kind.flag} needs a value")
    return provider(spec, ctx)


def target_from_flags(given: Mapping[TargetKind, str | bool | None],
                      options: Mapping[str, str] | None = None) -> TargetSpec:
    """Exactly one target from command-line style flags (kind -> value, True for bare flags)."""
    chosen = [(k, v) for k, v in given.items() if v not in (None, False)]
    if not chosen:
        raise UsageError("missing reset target: use one of "
                         + ", ".join(k.flag for k in given))
    if len(chosen) > 1:
        raise UsageError(f"conflicting reset targets: {' and '.join(k.flag for k, _ in chosen)} "
                         "(give exactly one)")
    kind, value = chosen[0]
    return TargetSpec(kind, None if value is True else str(value), dict(options or {}))
