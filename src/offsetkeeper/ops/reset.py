"""Operations that change committed offsets: reset, rollback, delete offsets, delete groups.

Each takes a typed request, plans with the pure planner, writes the plan files it was asked for
(before changing anything, so a bad path changes nothing), and — with `execute` — runs the ONE
executor, which snapshots the groups first. The command line and the web dashboard call these;
neither builds plans or executes them any other way.

One sequence for both front ends: `prepare_reset` / `prepare_rollback` make a `PlannedChange`
(the plan, its notes, the snapshot description and the executor options), `execute_planned`
runs it. The command line does both in one call (`reset_offsets`, `rollback`); the dashboard
shows the planned change, keeps it in the plan book (`ops.plans`) and runs it when the user
confirms with the plan's fingerprint.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.ports import OFFSET_DELETE_API, AdminPort, ClusterPort
from offsetkeeper.ops.targets import TargetContext, TargetKind, TargetSpec, resolve_target
from offsetkeeper.progress import ProgressFn, no_progress
from offsetkeeper.reset.apply import (
    ApplyOptions,
    ApplyReport,
    LiveChannel,
    ReportStatus,
    apply_plan,
)
from offsetkeeper.reset.facts import build_delete_plan, check_creatable, plan_with_reads
from offsetkeeper.reset.options import ExecuteOptions
from offsetkeeper.reset.plan import GroupReads, ResetPlan, ResetScope


@dataclass(frozen=True)
class PlanFiles:
    """The plan files a reset writes before it changes anything (`--export`, `--script`)."""

    export_csv: Path | None = None
    script: Path | None = None
    # For the script: how kafka-consumer-groups.sh should connect.
    script_bootstrap: str = ""
    script_command_config: str | None = None


@dataclass(frozen=True)
class ResetRequest:
    """`offsets reset`: which groups and partitions (`scope`, what the planner takes as it is),
    to what, and whether to apply it. One object passed down: its parts go to the target
    providers, the planner and the executor as they are, not copied field by field."""

    target: TargetSpec
    # Groups, patterns, topics; `scope.live`: a live reset, published to the group's RUNNING
    # members (offsetkeeper.consumer), which apply it at their next poll; `scope.create_groups`:
    # named groups the cluster lacks may be created.
    scope: ResetScope = field(default_factory=ResetScope)
    execute: bool = False
    # --from-snapshot may be a snapshot of another cluster (the provider's check, which says so)
    allow_cluster_mismatch: bool = False
    # A live reset waits up to live_timeout_s for every partition; it is signed with the
    # operator's Ed25519 private key (PEM): the group's consumers apply only requests signed by
    # a key they trust (consumer.live_auth).
    live_timeout_s: float = 60.0
    live_signing_key: Path | None = None
    files: PlanFiles = field(default_factory=PlanFiles)
    options: ExecuteOptions = field(default_factory=ExecuteOptions)


@dataclass(frozen=True)
class DeleteRequest:
    """`offsets delete` (with topics) or `groups delete` (whole_groups): the groups and topics
    in `scope` (what the planner takes as it is)."""

    scope: ResetScope
    whole_groups: bool = False
    execute: bool = False
    options: ExecuteOptions = field(default_factory=ExecuteOptions)


@dataclass(frozen=True)
class RollbackRequest:
    """`snapshots rollback`: put a snapshot's groups back to its offsets."""

    snapshot_id: str
    execute: bool = False
    allow_cluster_mismatch: bool = False
    options: ExecuteOptions = field(default_factory=ExecuteOptions)


@dataclass(frozen=True)
class PlannedChange:
    """A plan made and shown, not executed yet: what `execute_planned` runs."""

    plan: ResetPlan
    options: ExecuteOptions
    description: str                # of the snapshot taken first ("before reset ...")
    kind: str = "reset"             # "reset" or "rollback"
    notes: tuple[str, ...] = ()
    files: tuple[str, ...] = ()     # plan files written (--export, --script)
    # Executing would be refused as bad input (a misspelled group): a dry run shows the plan
    # and then says it.
    error: Any = None

    @property
    def fingerprint(self) -> str:
        """What the user saw: a digest of the plan (groups, partitions, offsets, target) that a
        confirmation must repeat, so a different plan is never executed in its name."""
        import hashlib
        import json

        text = json.dumps(self.plan.to_dict(), sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Outcome:
    """A plan, the execution report (None for a dry run), notes and files written."""

    plan: ResetPlan
    report: ApplyReport | None = None
    notes: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    live: bool = False  # `report` is a live reset's (applied by the group's running members)
    # A dry run whose --execute would be refused as bad input (a misspelled group): shown
    # with the plan, then raised by the caller (exit 2).
    error: Any = None

    @property
    def ok(self) -> bool:
        """True when nothing was refused or failed (a dry run: when the plan has no errors)."""
        if self.report is not None:
            return self.report.status is ReportStatus.SUCCESS
        return not self.plan.has_errors

    @property
    def exit_code(self) -> int:
        return 0 if self.ok else 1


def snapshot_store_url(store: str | None, config_path: Path | None) -> str:
    """The snapshot store: the flag, $OFFSETKEEPER_SNAPSHOT_STORE, the config file, the default.
    The one place it is resolved (reset, rollback, delete, restore three-phase)."""
    import os

    from offsetkeeper.config.paths import CONFIG_ENV, DEFAULT_CONFIG_PATH
    from offsetkeeper.snapshots.store import resolve_store_url

    if config_path is None and CONFIG_ENV not in os.environ \
            and not DEFAULT_CONFIG_PATH.expanduser().exists():
        return resolve_store_url(store)  # no config file: its models (pydantic, YAML) unneeded
    from offsetkeeper.config import load_config_file

    return resolve_store_url(store, load_config_file(config_path))


def apply_options(opts: ExecuteOptions, *, description: str = "",
                  progress: ProgressFn = no_progress, live: LiveChannel | None = None,
                  ) -> ApplyOptions:
    """The executor's options: the operation's ExecuteOptions as they are, with the snapshot
    function made from the store they name and the run's own parts."""
    from offsetkeeper.snapshots.capture import snapshot_fn

    fn = snapshot_fn(snapshot_store_url(opts.snapshot_store, opts.config_path)) \
        if opts.snapshot else None
    return ApplyOptions(opts, snapshot_fn=fn, description=description, progress=progress,
                        live=live)


def execute_plan(admin: AdminPort, plan: ResetPlan, opts: ExecuteOptions, *, description: str = "",
                 progress: ProgressFn = no_progress, reads: GroupReads | None = None) -> ApplyReport:
    """Execute a plan made earlier (e.g. previewed in the dashboard, then confirmed).

    Safe to call later than planning: the executor refuses groups that gained members or whose
    offsets moved since the plan was made. `reads`: the groups as planning read them (see
    `apply_plan`).
    """
    return apply_plan(admin, plan, apply_options(opts, description=description, progress=progress),
                      reads=reads)


def write_user_file(path: Path, text: str, *, what: str, mode: int | None = None) -> str:
    """Write a file the user named (temp file + rename): the directory must exist, as for shell
    redirection — a typo in it is bad input (exit 2) and nothing is written; a failed write
    (read-only, full disk) leaves no temporary file and is reported naming the option."""
    from offsetkeeper.errors import StoreError
    from offsetkeeper.reset.parse import show
    from offsetkeeper.storage import write_text_atomic

    p = Path(path).expanduser()
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        why = "is not a directory" if parent.exists() else "does not exist"
        raise UsageError(f"{what} {show(str(path))}: directory {show(str(parent))} {why}")
    if p.is_dir():
        raise UsageError(f"{what} {show(str(path))} is a directory; give a file name")
    try:
        return write_text_atomic(str(p.absolute()), text, mode=mode, what=f"{what} file")
    except StoreError as exc:
        raise UsageError(exc.message) from None


def _write_files(plan: ResetPlan, req: ResetRequest) -> tuple[str, ...]:
    from offsetkeeper.reset.render import plan_csv, plan_script

    written = []
    files = req.files
    if files.export_csv is not None:
        written.append(write_user_file(files.export_csv, plan_csv(plan), what="--export")
                       + " (use with --from-file)")
    if files.script is not None:
        text = plan_script(plan, bootstrap_servers=files.script_bootstrap,
                           command_config=files.script_command_config)
        written.append(write_user_file(files.script, text, what="--script", mode=0o755)
                       + " (review it, then run it)")
    return tuple(written)


def plan_reset_request(admin: AdminPort, req: ResetRequest, *, progress: ProgressFn = no_progress,
                       ) -> tuple[ResetPlan, tuple[str, ...]]:
    """Resolve the target and plan the reset (nothing is changed); returns the plan and notes.
    `progress` hears the lines of a plan file read and the groups planned."""
    plan, notes, _ = _plan_request(admin, req, progress=progress)
    return plan, notes


def _plan_request(admin: AdminPort, req: ResetRequest, *, progress: ProgressFn,
                  ) -> tuple[ResetPlan, tuple[str, ...], GroupReads | None]:
    ctx = TargetContext(admin=admin,
                        snapshot_store=snapshot_store_url(req.options.snapshot_store,
                                                          req.options.config_path),
                        allow_cluster_mismatch=req.allow_cluster_mismatch,
                        scope=req.scope, progress=progress)
    resolved = resolve_target(req.target, ctx)
    plan, reads = plan_with_reads(admin, req.scope, resolved.target, label=resolved.label,
                                  allow_unknown_state=req.options.allow_unknown_state,
                                  progress=progress)
    return plan, resolved.notes + _missing_named_groups(plan, req), reads


def _missing_named_groups(plan: ResetPlan, req: ResetRequest) -> tuple[str, ...]:
    """A warning when a --from-file CSV names groups the cluster does not have: executing
    would create them, and a name the file mangled would leave the real group unchanged."""
    if req.target.kind is not TargetKind.FROM_FILE:
        return ()
    from offsetkeeper.reset.parse import show

    missing = [g.group for g in plan.groups if g.new_group]
    if not missing:
        return ()
    names = ", ".join(show(g) for g in missing[:5])
    more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
    return (f"warning: --from-file names {len(missing)} group(s) that do not exist on the "
            f"cluster: {names}{more}; --execute would create them with these offsets "
            "(check the names in the file)",)


def _drop_unused_snapshot(admin: AdminPort, report: ApplyReport, req: ResetRequest, *, withdrawn: bool):
    """A live reset that no member applied leaves its groups as the snapshot recorded them: the
    snapshot would only clutter the store (and look like an undo point). Removed only when the
    requests were withdrawn for good (`withdrawn`: no member can apply them any more, a replay
    included) and the groups read back exactly as recorded; kept whenever anything may still
    move."""
    from offsetkeeper.errors import OffsetkeeperError
    from offsetkeeper.snapshots.compare import diff_live
    from offsetkeeper.snapshots.store import SnapshotStore

    if not report.snapshot_id or report.partitions_changed or not withdrawn:
        return report, ()
    try:
        store = SnapshotStore(snapshot_store_url(req.options.snapshot_store, req.options.config_path))
        if diff_live(admin, store.load(report.snapshot_id)):
            return report, ()
        store.delete(report.snapshot_id)
    except OffsetkeeperError:
        return report, ()
    return replace(report, snapshot_id=None), (
        f"no partition was applied and the groups are as before; the snapshot taken first "
        f"({report.snapshot_id}) was removed",)


def _earlier_run_note(admin: ClusterPort, plan: ResetPlan, req: ResetRequest) -> tuple[str, ...]:
    """A rerun of an interrupted bulk reset finds some groups already at the target; the
    snapshot it takes now holds the half-changed state. Point to the earlier run's snapshot,
    which holds the offsets from before it (the ones an undo wants)."""
    from offsetkeeper.errors import OffsetkeeperError
    from offsetkeeper.snapshots.store import SnapshotStore

    done = {g.group for g in plan.groups
            if not g.refused and g.partitions and not any(p.changes for p in g.partitions)}
    if not done or not req.options.snapshot:
        return ()
    from offsetkeeper.reset.parse import show

    want = f"before reset {plan.target}"
    by = {g.group: g for g in plan.groups}
    try:
        store = SnapshotStore(snapshot_store_url(req.options.snapshot_store, req.options.config_path))
        cluster = admin.cluster_id()
        for sid in store.ids()[:20]:
            snap = store.load(sid)
            if snap.description != want or (cluster and snap.cluster_id and snap.cluster_id != cluster):
                continue
            moved = sorted(g for g in done & set(snap.groups)
                           if {tp: c.offset for tp, c in snap.groups[g].offsets.items()}
                           != {p.tp: p.target for p in by[g].partitions
                               if p.tp in snap.groups[g].offsets})
            if moved:
                names = ", ".join(show(g) for g in moved[:3]) + \
                    (f" (+{len(moved) - 3})" if len(moved) > 3 else "")
                return (f"warning: {len(moved)} group(s) are already at the target ({names}): an "
                        f"earlier run ({snap.created_at}) moved them; its snapshot {sid} holds their "
                        f"offsets from before that run (undo both: offsetkeeper snapshots rollback "
                        f"{sid} --execute)",)
    except OffsetkeeperError:
        return ()  # a hint only: an unreadable store is reported by the snapshot step itself
    return ()


def _without_commits_notes(plan: ResetPlan, req: ResetRequest) -> tuple[str, ...]:
    """A note per named group that --all-topics (or --shift-by) selected nothing of because it
    has no committed offsets, while other named groups had some."""
    from offsetkeeper.reset.parse import show

    scope = req.scope
    if not scope.groups or scope.all_groups or scope.group_patterns or not scope.all_topics:
        return ()
    return tuple(f"group {show(g.group)} has no committed offsets: --all-topics selects none of "
                 "its partitions, so it is left as it is (as kafka-consumer-groups.sh does)"
                 for g in plan.groups if not g.partitions and not g.refused
                 and g.group in scope.groups)


def prepare_reset(admin: AdminPort, req: ResetRequest, *, progress: ProgressFn = no_progress,
                  ) -> PlannedChange:
    """Resolve the target, plan the reset (nothing is changed) and write the requested plan
    files. A plan that would create groups nobody asked for is refused here when
    `req.execute` (exit 2, nothing written); a dry run carries the refusal in `error`.
    `progress` hears the lines of a plan file read and the groups planned."""
    return _prepare(admin, req, progress=progress)[0]


def _prepare(admin: AdminPort, req: ResetRequest, *, progress: ProgressFn,
             ) -> tuple[PlannedChange, GroupReads | None]:
    """`prepare_reset`, and the groups as planning read them (for an execution that follows at
    once, with no one shown the plan in between)."""
    plan, notes, reads = _plan_request(admin, req, progress=progress)
    error = None
    try:
        check_creatable(plan, admin)
    except UsageError as exc:
        if req.execute:
            raise
        error = exc  # the dry run shows the plan, then says it (exit 2)
    notes = notes + _earlier_run_note(admin, plan, req) + _without_commits_notes(plan, req)
    return PlannedChange(plan, req.options, f"before reset {plan.target}", "reset", notes,
                         _write_files(plan, req), error), reads


def execute_planned(admin: AdminPort, planned: PlannedChange, *,
                    progress: ProgressFn = no_progress, reads: GroupReads | None = None,
                    ) -> ApplyReport:
    """Run a planned change through the one executor (made now, or previewed earlier and
    confirmed). A reset that would create groups nobody asked for is refused (exit 2).
    `reads`: only for a plan executed straight after it was made, nobody shown it in between
    (`reset_offsets`): planning's reads of the groups (see `apply_plan`)."""
    if planned.kind == "reset":
        check_creatable(planned.plan, admin)
    return execute_plan(admin, planned.plan, planned.options, description=planned.description,
                        progress=progress, reads=reads)


def reset_offsets(admin: AdminPort, req: ResetRequest, *, progress: ProgressFn = no_progress) -> Outcome:
    """Plan a reset, write the requested plan files, and with `req.execute` apply it:
    `prepare_reset` then `execute_planned`, the sequence the dashboard runs in two steps."""
    signer = None
    if req.scope.live and req.execute:
        from offsetkeeper.consumer.live_auth import load_signer

        if req.live_signing_key is None:
            raise UsageError("--live --execute needs --signing-key FILE (or "
                             "$OFFSETKEEPER_LIVE_SIGNING_KEY): the operator key the group's "
                             "consumers trust; make one with `offsetkeeper live-key generate`")
        signer = load_signer(req.live_signing_key)  # bad key: exit 2 before anything changes
    planned, reads = _prepare(admin, req, progress=progress)
    plan, notes, files = planned.plan, planned.notes, planned.files
    if signer is not None:
        from offsetkeeper.consumer.live import ControlTopicChannel

        channel = ControlTopicChannel(admin.conn.client_config(), signer,
                                      cluster_id=admin.cluster_id(), timeout_s=req.live_timeout_s)
        report = apply_plan(admin, plan, apply_options(
            req.options, description=f"before live reset {plan.target}", progress=progress,
            live=channel))
        report, dropped = _drop_unused_snapshot(admin, report, req, withdrawn=channel.withdrawn)
        return Outcome(plan, report, notes + dropped, files, live=True)
    report = execute_planned(admin, planned, progress=progress, reads=reads) \
        if req.execute else None
    return Outcome(plan, report, notes, files, error=planned.error)


def delete(admin: AdminPort, req: DeleteRequest, *, progress: ProgressFn = no_progress) -> Outcome:
    """Delete committed offsets of partitions, or whole groups, through the one executor."""
    if not req.scope.groups:
        raise UsageError("no group given: name the groups to delete from")
    if req.execute and not req.whole_groups:
        admin.require_api(OFFSET_DELETE_API, "OffsetDelete (KIP-496, Kafka 2.4+)")
    plan = build_delete_plan(admin, req.scope, whole_groups=req.whole_groups,
                             allow_unknown_state=req.options.allow_unknown_state)
    report = execute_plan(admin, plan, req.options, description=f"before {plan.kind}",
                          progress=progress) if req.execute else None
    return Outcome(plan, report)


def prepare_rollback(admin: AdminPort, req: RollbackRequest) -> PlannedChange:
    """Plan putting the snapshot's groups back to its offsets (nothing is changed)."""
    from offsetkeeper.snapshots.model import ROLLBACK_PREFIX
    from offsetkeeper.snapshots.rollback import plan_rollback
    from offsetkeeper.snapshots.store import SnapshotStore

    store = SnapshotStore(snapshot_store_url(req.options.snapshot_store, req.options.config_path))
    # `latest` means the newest snapshot of this cluster that is not itself a pre-rollback one,
    # so running the same rollback twice never undoes the first.
    snap = store.load(req.snapshot_id, cluster=(admin.cluster_id(), admin.bootstrap_servers))
    plan, note = plan_rollback(admin, snap, allow_cluster_mismatch=req.allow_cluster_mismatch)
    return PlannedChange(plan, replace(req.options, snapshot_store=store.url),
                         f"{ROLLBACK_PREFIX}{snap.id}", "rollback", (note,) if note else ())


def rollback(admin: AdminPort, req: RollbackRequest, *, progress: ProgressFn = no_progress) -> Outcome:
    """Put the snapshot's groups back to its offsets (a reset from the snapshot):
    `prepare_rollback` then, with `req.execute`, `execute_planned`."""
    planned = prepare_rollback(admin, req)
    report = execute_planned(admin, planned, progress=progress) if req.execute else None
    return Outcome(planned.plan, report, planned.notes)
