"""`restore three-phase`: (back up,) restore, translate and commit the groups, validate.

Phase 1  backup     run a backup of the source (optional; otherwise use an existing backup)
Phase 2  restore    run_restore with the exact offset mapping
Phase 3  groups     strategy translate: the source group offsets (captured in the backup, read
                    from the live source, or from an offset snapshot) are read ONCE, translated
                    through the mapping, reported, and exactly those are committed on the target
                    through the reset pipeline (build_plan -> apply_plan: refusal of active
                    groups, auto-snapshot, retries, read-back); header-based / skip: nothing
Phase 4  validate   counts and checksums per partition against the manifest, and every committed
                    group offset checked against the translation of the same source offsets

One report; `ok` is False on any mismatch or failure. `ThreePhaseRequest` is what a user gives
(flags and/or a YAML file); `build_three_phase_options` merges it (the file is loaded once).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any

from offsetkeeper.config import Connection
from offsetkeeper.errors import UsageError
from offsetkeeper.progress import ProgressFn, no_progress
from offsetkeeper.reset.options import ExecuteOptions
from offsetkeeper.restore.config import (
    RestoreOptions,
    RestoreRequest,
    build_restore_options,
    load_restore_file,
)

STRATEGIES = ("translate", "header-based", "skip")


class PhaseStatus(enum.StrEnum):
    OK = "ok"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass(frozen=True)
class ThreePhaseOptions:
    restore: RestoreOptions
    backup_config: Any = None                 # offsetkeeper.backup.config.BackupConfig, or None
    strategy: str = "translate"
    groups: tuple[str, ...] = ()              # empty = every group captured in the backup
    offsets_source: str = "backup"            # backup | live | snapshot:ID
    offsets_snapshot_store: str | None = None # where snapshot:ID is read from
    source: Connection | None = None          # the live source cluster (offsets_source=live)
    # How the group commits execute, as the request gave them (its snapshot store resolved):
    # `snapshot` auto-snapshots the target groups before committing.
    execute: ExecuteOptions = field(default_factory=ExecuteOptions)
    validate: bool = True


@dataclass(frozen=True)
class ThreePhaseRequest:
    """A three-phase restore as a user asks for it: the restore request (flags and/or YAML
    file) plus the three-phase flags (None = not given: the file's value, else the default)."""

    restore: RestoreRequest
    source_bootstrap_server: str | None = None
    source_cluster: str | None = None
    run_backup: bool = False
    strategy: str | None = None
    groups: tuple[str, ...] = ()
    group_offsets: str | None = None
    # How the group commits execute (the snapshot switch and store: --no-snapshot,
    # --snapshot-store), passed to the executor as they are.
    options: ExecuteOptions = field(default_factory=ExecuteOptions)
    validate: bool = True


def build_three_phase_options(req: ThreePhaseRequest) -> ThreePhaseOptions:
    """Merge the YAML file (loaded once), the config file and the flags (flags win). The
    snapshot store (auto-snapshot and `snapshot:ID`) is resolved by the one resolver:
    --snapshot-store, $OFFSETKEEPER_SNAPSHOT_STORE, the config's snapshots.store, the default."""
    from offsetkeeper.config import load_config_file
    from offsetkeeper.kafka.connect import connect_ref
    from offsetkeeper.snapshots.store import resolve_store_url

    r = req.restore
    f = load_restore_file(r.file) if r.file else None
    ropts = build_restore_options(r, file=f)
    fg = (f.groups or {}) if f else {}
    if not isinstance(fg, dict):
        raise UsageError("restore file: 'groups' must be a mapping (strategy, groups, offsets)")
    cfg = load_config_file(r.config)
    source = None
    if req.source_bootstrap_server or req.source_cluster or (f is not None and f.source is not None):
        source = connect_ref(f.source if f else None, bootstrap_server=req.source_bootstrap_server,
                             cluster=req.source_cluster, config=cfg)
    backup_cfg = None
    if req.run_backup or (f is not None and f.run_backup is not None):
        if source is None:
            raise UsageError("--run-backup needs the source cluster (--source-bootstrap-server)")
        from offsetkeeper.backup.config import BackupConfig

        include = tuple(r.topics) or tuple((f.run_backup or {}).get("topics", []) if f else ())
        backup_cfg = BackupConfig(connection=source, include=include or ("*",),
                                  destination=ropts.destination, backup_id=ropts.backup_id,
                                  master=ropts.master or "local[*]", spark_conf=dict(ropts.spark_conf))
    store = resolve_store_url(req.options.snapshot_store, cfg)
    file_groups = fg.get("groups", []) or []
    if isinstance(file_groups, str):
        file_groups = [file_groups]
    return ThreePhaseOptions(
        restore=ropts, backup_config=backup_cfg,
        strategy=req.strategy or fg.get("strategy") or "translate",
        groups=tuple(req.groups) or tuple(str(g) for g in file_groups),
        offsets_source=req.group_offsets or fg.get("offsets") or "backup",
        source=source, execute=replace(req.options, snapshot_store=store),
        offsets_snapshot_store=store,
        validate=req.validate and (f.validate_after if f else True))


@dataclass
class ThreePhaseReport:
    phases: list[dict[str, Any]] = field(default_factory=list)
    backup: dict[str, Any] | None = None
    restore: dict[str, Any] | None = None
    offsets_source: str = "backup"
    translation: list[dict[str, Any]] = field(default_factory=list)
    commit: dict[str, Any] | None = None
    validation: dict[str, Any] | None = None

    def phase(self, name: str, status: PhaseStatus, detail: str) -> None:
        self.phases.append({"phase": name, "status": status, "detail": detail})

    @property
    def ok(self) -> bool:
        return all(p["status"] in (PhaseStatus.OK, PhaseStatus.SKIPPED) for p in self.phases)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "phases": [{**p, "status": str(p["status"])} for p in self.phases],
                "backup": self.backup, "restore": self.restore, "offsets_source": self.offsets_source,
                "translation": self.translation, "commit": self.commit, "validation": self.validation}


def _check(o: ThreePhaseOptions) -> None:
    from offsetkeeper.restore.translate import check_offsets_source

    if o.strategy not in STRATEGIES:
        raise UsageError(f"group strategy '{o.strategy}' is not one of: {', '.join(STRATEGIES)}")
    check_offsets_source(o.offsets_source)
    if o.strategy == "header-based" and not o.restore.offset_headers:
        raise UsageError("group strategy header-based needs the offset headers; drop --no-offset-headers")
    if o.offsets_source == "live" and o.source is None:
        raise UsageError("--group-offsets live needs the source cluster (--source-bootstrap-server)")
    r = o.restore
    if o.strategy == "translate" and o.groups and o.offsets_source == "backup" and o.backup_config is None:
        from offsetkeeper.errors import UnknownGroupError
        from offsetkeeper.restore.backup_view import load_backup_view

        captured = load_backup_view(r.destination, r.backup_id).groups
        missing = [g for g in o.groups if g not in captured]
        if missing:  # say so before restoring anything
            raise UnknownGroupError(f"group '{missing[0]}' has no offsets in backup '{r.backup_id}' "
                                    f"(it holds: {', '.join(sorted(captured)) or 'none'})", group=missing[0])


def run_three_phase(o: ThreePhaseOptions, *, spark=None, progress: ProgressFn | None = None) -> ThreePhaseReport:
    """Run the phases; bad input raises before anything is written, a failed phase is reported."""
    _check(o)
    notify = progress or no_progress
    rep = ThreePhaseReport(offsets_source=o.offsets_source)
    r = o.restore
    if spark is None:
        from offsetkeeper.spark.session import get_spark

        spark = get_spark(r.master, r.spark_conf, app_name="offsetkeeper-three-phase",
                          warm=r.spark_warm)

    # Phase 1: backup
    if o.backup_config is not None:
        from offsetkeeper.backup.run import run_backup

        b = run_backup(o.backup_config, spark=spark, progress=notify)
        rep.backup = {"backup_id": b.backup_id, "location": b.location, "run": b.run,
                      "records": b.records, "partitions": b.partitions}
        rep.phase("backup", PhaseStatus.OK, f"run {b.run}: {b.records} records from {b.partitions} partitions")
    else:
        rep.phase("backup", PhaseStatus.SKIPPED, f"existing backup {r.backup_id}")

    # Phase 2: restore
    from offsetkeeper.restore.run import new_restore_id, run_restore

    if r.restore_id is None:
        r = r.with_(restore_id=new_restore_id())
    res = run_restore(r, spark=spark, progress=notify)
    rep.restore = res.to_dict()
    rep.phase("restore", PhaseStatus.OK,
              f"restore {res.restore_id}: {res.records} records to {len(res.partitions)} partitions")

    # Phase 3: groups — the source offsets are read once; what is reported is what is committed
    groups = list(o.groups) or None
    committed = None
    if o.strategy == "translate":
        committed = _translate_and_commit(o, r, res.restore_id, groups, rep)
    else:
        rep.phase("groups", PhaseStatus.SKIPPED, f"strategy {o.strategy}: group offsets not changed")

    # Phase 4: validate, against the same source offsets
    if o.validate:
        from offsetkeeper.restore.validate import validate_restore

        v = validate_restore(r.destination, r.backup_id, res.restore_id, r.target, groups=groups,
                             check_group_offsets=o.strategy == "translate",
                             offsets_source=o.offsets_source, committed=committed, spark=spark)
        v.offsets_source = o.offsets_source
        rep.validation = v.to_dict()
        rep.phase("validate", PhaseStatus.OK if v.ok else PhaseStatus.FAILED,
                  f"{len(v.partitions)} partition(s), {len(v.groups)} group offset(s), "
                  f"{v.mismatches} mismatch(es)")
    else:
        rep.phase("validate", PhaseStatus.SKIPPED, "--no-validate")
    return rep


def _translate_and_commit(o: ThreePhaseOptions, r: RestoreOptions, restore_id: str,
                          groups: list[str] | None, rep: ThreePhaseReport):
    """Read the source offsets once, translate, report, commit exactly those; returns them."""
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.reset.apply import ApplyOptions, apply_plan
    from offsetkeeper.reset.facts import build_plan
    from offsetkeeper.reset.plan import ResetScope
    from offsetkeeper.restore.translate import read_committed, target_from_rows, translate_groups
    from offsetkeeper.snapshots.capture import snapshot_fn

    state = None
    topics = set()
    if o.offsets_source == "live":
        from offsetkeeper.restore.state import resolve_restore

        state = resolve_restore(r.destination, r.backup_id, restore_id)
        topics = {s.source_topic for s in state.routes}
    committed = read_committed(r.destination, r.backup_id, o.offsets_source, topics,
                               source_connection=o.source, snapshot_store=o.offsets_snapshot_store)
    _, rows = translate_groups(r.destination, r.backup_id, restore_id, groups, source=o.offsets_source,
                               committed=committed)
    rep.translation = [x.to_dict() for x in rows]
    target = target_from_rows(rows, f"mapping {r.destination}/{r.backup_id}:{restore_id} "
                                    f"({o.offsets_source} offsets)")
    if not target.groups():
        rep.phase("groups", PhaseStatus.SKIPPED, "no group offsets on the restored partitions")
        return committed
    with KafkaAdmin(r.target) as admin:
        plan = build_plan(admin, ResetScope(groups=(), all_groups=False, topics=(), all_topics=True),
                          target, label=target.source)
        report = apply_plan(admin, plan, ApplyOptions(
            o.execute, snapshot_fn=snapshot_fn(o.execute.snapshot_store) if o.execute.snapshot else None,
            description=f"before three-phase restore {restore_id}"))
    rep.commit = report.to_dict()
    ok = report.failed == 0 and not plan.refused
    detail = f"{report.succeeded} group(s) committed, {report.partitions_changed} partition(s) changed"
    if plan.refused:
        detail += "; refused: " + "; ".join(str(g.refused) for g in plan.refused)
    if report.failed:
        detail += f"; {report.failed} group(s) failed"
    rep.phase("groups", PhaseStatus.OK if ok else PhaseStatus.FAILED, detail)
    return committed
