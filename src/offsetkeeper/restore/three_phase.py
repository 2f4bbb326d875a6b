"""`restore three-phase`: (back up,) restore, translate and commit the groups, validate.

Phase 1  backup     run a backup of the source (optional; otherwise use an existing backup)
Phase 2  restore    run_restore with the exact offset mapping
Phase 3  groups     strategy translate: the group offsets captured in the backup (or read from
                    the live source) translated through the mapping and committed on the target
                    through the reset pipeline (build_plan -> apply_plan: refusal of active
                    groups, auto-snapshot, retries, read-back); header-based / skip: nothing
Phase 4  validate   counts and checksums per partition, and every committed group offset
                    pointing at the record with the same original offset

One report; `ok` is False on any mismatch or failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from offsetkeeper.config import Connection
from offsetkeeper.errors import UsageError
from offsetkeeper.restore.config import RestoreOptions

STRATEGIES = ("translate", "header-based", "skip")


@dataclass(frozen=True)
class ThreePhaseOptions:
    restore: RestoreOptions
    backup_config: Any = None                 # offsetkeeper.backup.config.BackupConfig, or None
    strategy: str = "translate"
    groups: tuple[str, ...] = ()              # empty = every group captured in the backup
    offsets_source: str = "backup"            # backup | live | snapshot:ID
    offsets_snapshot_store: str | None = None # where snapshot:ID is read from
    source: Connection | None = None          # the live source cluster (offsets_source=live)
    snapshot: bool = True                     # auto-snapshot the target groups before committing
    snapshot_store: str | None = None
    validate: bool = True


@dataclass
class ThreePhaseReport:
    phases: list[dict[str, Any]] = field(default_factory=list)
    backup: dict[str, Any] | None = None
    restore: dict[str, Any] | None = None
    translation: list[dict[str, Any]] = field(default_factory=list)
    commit: dict[str, Any] | None = None
    validation: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return all(p["status"] in ("ok", "skipped") for p in self.phases)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "phases": self.phases, "backup": self.backup, "restore": self.restore,
                "translation": self.translation, "commit": self.commit, "validation": self.validation}


def run_three_phase(o: ThreePhaseOptions, *, spark=None) -> ThreePhaseReport:
    if o.strategy not in STRATEGIES:
        raise UsageError(f"group strategy '{o.strategy}' is not one of: {', '.join(STRATEGIES)}")
    if o.strategy == "header-based" and not o.restore.offset_headers:
        raise UsageError("group strategy header-based needs the offset headers; drop --no-offset-headers")
    if o.offsets_source == "live" and o.source is None:
        raise UsageError("--group-offsets live needs the source cluster (--source-bootstrap-server)")
    rep = ThreePhaseReport()
    r = o.restore
    if o.strategy == "translate" and o.groups and o.offsets_source == "backup" and o.backup_config is None:
        from offsetkeeper.errors import UnknownGroupError
        from offsetkeeper.restore.backup_view import load_backup_view

        captured = load_backup_view(r.destination, r.backup_id).groups
        missing = [g for g in o.groups if g not in captured]
        if missing:  # say so before restoring anything
            raise UnknownGroupError(f"group '{missing[0]}' has no offsets in backup '{r.backup_id}' "
                                    f"(it holds: {', '.join(sorted(captured)) or 'none'})", group=missing[0])
    if spark is None:
        from offsetkeeper.spark.session import get_spark

        spark = get_spark(r.master, r.spark_conf, app_name="offsetkeeper-three-phase")

    # Phase 1: backup
    if o.backup_config is not None:
        from offsetkeeper.backup.run import run_backup

        b = run_backup(o.backup_config, spark=spark)
        rep.backup = {"backup_id": b.backup_id, "location": b.location, "run": b.run,
                      "records": b.records, "partitions": b.partitions}
        rep.phases.append({"phase": "backup", "status": "ok",
                           "detail": f"run {b.run}: {b.records} records from {b.partitions} partitions"})
    else:
        rep.phases.append({"phase": "backup", "status": "skipped",
                           "detail": f"existing backup {r.backup_id}"})

    # Phase 2: restore
    from offsetkeeper.restore.run import new_restore_id, run_restore

    if r.restore_id is None:
        r = r.with_(restore_id=new_restore_id())
    res = run_restore(r, spark=spark)
    rep.restore = res.to_dict()
    rep.phases.append({"phase": "restore", "status": "ok",
                       "detail": f"restore {res.restore_id}: {res.records} records to "
                                 f"{len(res.partitions)} partitions"})

    # Phase 3: groups
    groups = list(o.groups) or None
    if o.strategy == "translate":
        from offsetkeeper.kafka.admin import KafkaAdmin
        from offsetkeeper.reset.apply import ApplyOptions, apply_plan
        from offsetkeeper.reset.facts import build_plan
        from offsetkeeper.reset.plan import ResetScope
        from offsetkeeper.restore.translate import offsets_from_mapping, translate_groups
        from offsetkeeper.snapshots.capture import snapshot_fn

        _, rows = translate_groups(r.destination, r.backup_id, res.restore_id, groups,
                                   source=o.offsets_source, source_connection=o.source,
                                   snapshot_store=o.offsets_snapshot_store)
        rep.translation = [x.to_dict() for x in rows]
        target = offsets_from_mapping(r.destination, r.backup_id, res.restore_id, groups,
                                      source=o.offsets_source, source_connection=o.source,
                                      snapshot_store=o.offsets_snapshot_store)
        if not target.groups():
            rep.phases.append({"phase": "groups", "status": "skipped",
                               "detail": "no group offsets on the restored partitions"})
        else:
            with KafkaAdmin(r.target) as admin:
                plan = build_plan(admin, ResetScope(groups=(), all_groups=False, topics=(), all_topics=True),
                                  target, label=target.source)
                report = apply_plan(admin, plan, ApplyOptions(
                    snapshot_fn=snapshot_fn(o.snapshot_store) if o.snapshot else None,
                    description=f"before three-phase restore {res.restore_id}"))
            rep.commit = report.to_dict()
            ok = report.failed == 0 and not plan.refused
            detail = f"{report.succeeded} group(s) committed, {report.partitions_changed} partition(s) changed"
            if plan.refused:
                detail += "; refused: " + "; ".join(str(g.refused) for g in plan.refused)
            if report.failed:
                detail += f"; {report.failed} group(s) failed"
            rep.phases.append({"phase": "groups", "status": "ok" if ok else "failed", "detail": detail})
    else:
        rep.phases.append({"phase": "groups", "status": "skipped",
                           "detail": f"strategy {o.strategy}: group offsets not changed"})

    # Phase 4: validate
    if o.validate:
        from offsetkeeper.restore.validate import validate_restore

        v = validate_restore(r.destination, r.backup_id, res.restore_id, r.target, groups=groups,
                             check_group_offsets=o.strategy == "translate", spark=spark)
        rep.validation = v.to_dict()
        rep.phases.append({"phase": "validate", "status": "ok" if v.ok else "failed",
                           "detail": f"{len(v.partitions)} partition(s), {len(v.groups)} group offset(s), "
                                     f"{v.mismatches} mismatch(es)"})
    else:
        rep.phases.append({"phase": "validate", "status": "skipped", "detail": "--no-validate"})
    return rep
