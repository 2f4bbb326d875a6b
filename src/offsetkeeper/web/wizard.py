"""The reset wizard and every change the dashboard makes, in the steps of the operations
layer's plan book (`ops.plans`): scope and target -> `ops.reset.prepare_reset` (or
`prepare_rollback`), the command line's own planning -> the plan shown with its fingerprint ->
confirmation with that fingerprint -> `ops.reset.execute_planned`, the one executor."""

from __future__ import annotations

import tempfile
import time
from dataclasses import replace
from pathlib import Path

from starlette.requests import Request
from starlette.responses import Response

from offsetkeeper.web import backups as bk
from offsetkeeper.web.core import (
    Dashboard,
    HttpError,
    handler,
    in_thread,
    log,
    safe_call,
)

# The targets the wizard offers and accepts: those docs/dashboard.md lists, each with a field
# of its own on the form. An allow-list, not every TargetKind: a target that makes the server
# open connections to an address the browser names (--from-zookeeper HOST:PORT) or scan a whole
# log (--to-commit-time) is a command-line target only, and a new CLI target does not reach
# the dashboard without a decision.
WIZARD_KINDS = ("to-earliest", "to-latest", "to-current", "to-offset", "shift-by", "to-datetime",
                "by-duration", "from-file", "from-snapshot", "from-mapping", "from-group",
                "to-history")


def _target_kinds(dash: Dashboard) -> list[dict]:
    from offsetkeeper.ops import TargetKind

    kinds = []
    for k in map(TargetKind, WIZARD_KINDS):
        if k.value == "to-history" and dash.history is None:
            continue
        kinds.append({"value": k.value, "flag": k.flag, "takes_value": k.takes_value})
    return kinds


@handler
async def reset_form(dash: Dashboard, request: Request) -> Response:
    cluster = request.path_params["cluster"]
    if dash.settings.read_only:
        raise HttpError(403, "the dashboard runs read-only (--read-only): resets are disabled")
    dash.admin(cluster)
    from offsetkeeper.ops import list_snapshots

    # off the event loop: a slow or hostile store must not stall every other request
    opts = dash.settings.execute
    snaps, _ = await in_thread(safe_call, lambda: list_snapshots(
        store=opts.snapshot_store, config_path=opts.config_path), [])
    groups_given = request.query_params.getlist("g")
    return dash.page(request, "reset.html", {
        "cluster": cluster, "groups_text": "\n".join(groups_given), "kinds": _target_kinds(dash),
        "snapshots": [s for s in reversed(snaps) if not s.error][:50],
        "backups": [(i, bk.shown(d)) for i, d in enumerate(dash.settings.backup_destinations)]})


def _lines(text: str) -> list[str]:
    return [x.strip() for x in text.replace("\r", "").split("\n") if x.strip()]


async def _target_spec(dash: Dashboard, form, tmpdir: str):
    from offsetkeeper.ops import TargetKind, TargetSpec
    from offsetkeeper.web.timefield import datetime_local_to_iso

    kind_s = form.get("kind") or ""
    if not kind_s:
        # Nothing is preselected (the first kind was --to-earliest, the most destructive).
        raise HttpError(400, "choose a reset target: nothing is preselected")
    offered = [k["value"] for k in _target_kinds(dash)]
    if kind_s not in offered:
        raise HttpError(400, f"reset target {kind_s[:60]!r} is not offered here (expected one "
                             f"of {', '.join(offered)})")
    kind = TargetKind(kind_s)
    if not kind.takes_value:
        return TargetSpec(kind)
    field_name = f"value_{kind.value}"
    if kind is TargetKind.FROM_FILE:
        upload = form.get(field_name)
        if upload is None or isinstance(upload, str) or not upload.filename:
            raise HttpError(400, "--from-file: choose a CSV file to upload")
        # The size was bounded while the body streamed in (forms.read_form: 413 over 20 MB).
        data = await upload.read()
        path = Path(tmpdir) / "offsets.csv"
        path.write_bytes(data)
        # Plans, notes and snapshot descriptions name the user's file, never the temp path.
        name = Path(upload.filename.replace("\\", "/")).name or "uploaded file"
        return TargetSpec(kind, str(path), {"shown_as": f"{name} (uploaded)"})
    value = form.get(field_name)
    value = value.strip() if isinstance(value, str) else ""
    if kind in (TargetKind.TO_DATETIME,) or kind.value == "to-history":
        value = datetime_local_to_iso(value)
    if kind is TargetKind.FROM_MAPPING:
        value = _mapping_ref(dash, form)
    if not value:
        raise HttpError(400, f"{kind.flag} needs a value")
    options = {}
    if kind.value == "to-history" and dash.settings.history_store:
        options["history_store"] = dash.settings.history_store
    return TargetSpec(kind, value, options)


def _mapping_ref(dash: Dashboard, form) -> str:
    """BACKUP_DIR[:RESTORE_ID] built from a configured destination (no free paths)."""
    dest = bk.destination(list(dash.settings.backup_destinations),
                          str(form.get("mapping_dest") or ""))
    bid = str(form.get("mapping_backup") or "").strip()
    rid = str(form.get("mapping_restore") or "").strip()
    from offsetkeeper.ops.backup import mapping_reference

    return mapping_reference(dest, bid, rid or None)


@handler
async def reset_preview(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops import ResetRequest
    from offsetkeeper.ops.reset import prepare_reset
    from offsetkeeper.reset.parse import parse_topic_spec
    from offsetkeeper.reset.plan import ResetScope, TopicSpec

    cluster = request.path_params["cluster"]
    form = await dash.form(request, upload=True)
    admin = dash.admin(cluster)
    groups_ = _lines(str(form.get("groups") or ""))
    topics = [TopicSpec(*parse_topic_spec(t)) for t in _lines(str(form.get("topics") or ""))]
    with tempfile.TemporaryDirectory(prefix="offsetkeeper-ui-") as tmp:
        spec = await _target_spec(dash, form, tmp)
        req = ResetRequest(
            target=spec,
            scope=ResetScope(groups=tuple(dict.fromkeys(groups_)),
                             all_groups=form.get("all_groups") == "on", topics=tuple(topics),
                             all_topics=form.get("all_topics") == "on" and not topics,
                             create_groups=form.get("create_groups") == "on"),
            options=replace(dash.settings.execute,
                            allow_unknown_state=form.get("allow_unknown_state") == "on"))
        change = await in_thread(prepare_reset, admin, req)
    return _show_plan(dash, request, cluster, *dash.plans.put(cluster, change))


def _plan_rows(plan) -> list[dict]:
    rows = []
    for g in plan.groups:
        if g.refused:
            rows.append({"group": g.group, "refused": str(g.refused), "state": g.state,
                         "members": g.members})
            continue
        for p in g.partitions:
            rows.append({"group": p.group, "topic": p.topic, "partition": p.partition,
                         "current": p.current, "target": p.target,
                         "log_start": p.log_start if p.log_start >= 0 else None,
                         "log_end": p.log_end if p.log_end >= 0 else None,
                         "delta": None if p.current is None or p.target is None
                         else p.target - p.current,
                         "note": p.note, "error": p.error, "changes": p.changes})
    return rows


def _show_plan(dash: Dashboard, request: Request, cluster: str, pid: str, entry) -> Response:
    plan = entry.plan
    fingerprint = entry.change.fingerprint
    rows = _plan_rows(plan)
    # Executable: something changes in a group that is not refused (refused groups keep their
    # partitions in the plan, for the table).
    executable = any(p.changes for g in plan.groups if not g.refused for p in g.partitions)
    data = {"plan_id": pid if executable else None,
            "fingerprint": fingerprint if executable else None, "kind": entry.kind,
            "notes": list(entry.notes), "changes": executable, "has_errors": plan.has_errors,
            "uncreatable": plan.uncreatable, "plan": plan.to_dict()}
    return dash.page(request, "plan.html", {
        "cluster": cluster, "pid": pid, "entry": entry, "plan": plan, "rows": rows,
        "executable": executable, "fingerprint": fingerprint,
        "refused": plan.refused, "notes": entry.notes}, data=data)


@handler
async def plan_execute(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops.reset import execute_planned

    cluster = request.path_params["cluster"]
    form = await dash.form(request)
    admin = dash.admin(cluster)
    entry = dash.plans.take(request.path_params["pid"], cluster,
                            str(form.get("fingerprint") or ""))
    t0 = time.monotonic()
    report = await in_thread(execute_planned, admin, entry.change)
    log.info("executed %s plan on cluster %s: %s in %.1fs", entry.kind, cluster,
             report.status, time.monotonic() - t0)
    data = {"report": report.to_dict(), "plan": entry.plan.to_dict()}
    return dash.page(request, "report.html", {
        "cluster": cluster, "entry": entry, "report": report, "summary": report.summary(),
        "rows": _plan_rows(entry.plan)}, data=data)


@handler
async def rollback_preview(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops import RollbackRequest
    from offsetkeeper.ops.reset import prepare_rollback

    cluster = request.path_params["cluster"]
    sid = request.path_params["sid"]
    await dash.form(request)
    admin = dash.admin(cluster)
    change = await in_thread(prepare_rollback, admin,
                             RollbackRequest(snapshot_id=sid, options=dash.settings.execute))
    return _show_plan(dash, request, cluster, *dash.plans.put(cluster, change))

