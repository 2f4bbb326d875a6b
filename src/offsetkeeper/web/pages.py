"""Read-only pages: groups, a group with its history, snapshots and their diff, backups, login."""

from __future__ import annotations

import dataclasses
from dataclasses import asdict
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from offsetkeeper.errors import UnknownGroupError, UsageError
from offsetkeeper.ops.group_pages import (
    MAX_PER_PAGE,
    PER_PAGE,
    SORT_KEYS,
    GroupsQuery,
    group_view,
    groups_page,
)
from offsetkeeper.ops.history_view import RANGES_MS, safe
from offsetkeeper.web import backups as bk
from offsetkeeper.web import checkpoints as ck
from offsetkeeper.web import security as sec
from offsetkeeper.web.core import Dashboard, HttpError, handler, in_thread, safe_call
from offsetkeeper.web.svg import time_chart


@handler
async def home(dash: Dashboard, request: Request) -> Response:
    return RedirectResponse(f"/c/{quote(dash.clusters.default, safe='')}/groups", status_code=303)


@handler
async def healthz(dash: Dashboard, request: Request) -> Response:
    return JSONResponse({"ok": True, "read_only": dash.settings.read_only})


@handler
async def csrf_token(dash: Dashboard, request: Request) -> Response:
    """The CSRF token of this session (for scripts that POST; a cross-site page cannot read it)."""
    return JSONResponse({"csrf": dash.sessions.csrf_token(request.state.session_id)})


@handler
async def login_page(dash: Dashboard, request: Request) -> Response:
    return dash.page(request, "login.html", {"next": _safe_next(request.query_params.get("next"))})


def _safe_next(nxt: str | None) -> str:
    # Only local paths: "/x", never "//host" or "http://host" (no open redirect).
    if not nxt or not nxt.startswith("/") or nxt.startswith("//") or "\\" in nxt:
        return "/"
    return nxt


@handler
async def login(dash: Dashboard, request: Request) -> Response:
    form = await dash.form(request, mutation=False)
    token = form.get("token")
    if not dash.settings.token:
        return RedirectResponse("/", status_code=303)
    if not isinstance(token, str) or not sec.same(token, dash.settings.token):
        return dash.page(request, "login.html", {"next": _safe_next(form.get("next")),
                                                 "failed": True}, status=401)
    # A new session id at login (no session fixation); the old one is forgotten.
    sid = sec.Sessions.new_id()
    dash.sessions.login(sid)
    resp = RedirectResponse(_safe_next(form.get("next")), status_code=303)
    resp.set_cookie(sec.SESSION_COOKIE, sid, httponly=True, samesite="strict",
                    secure=dash.settings.tls, path="/")
    return resp


@handler
async def logout(dash: Dashboard, request: Request) -> Response:
    await dash.form(request, mutation=False)
    dash.sessions.logout(request.state.session_id)
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(sec.SESSION_COOKIE, path="/")
    return resp


def groups_query(params) -> GroupsQuery:
    """The groups page's query string: q, state, type, status, sort, dir, page, per."""
    from offsetkeeper.ops.groups import GROUP_TYPES

    sort = params.get("sort", "group")
    if sort not in SORT_KEYS:
        raise HttpError(400, f"sort '{sort}' is not one of {', '.join(SORT_KEYS)}")
    group_type = params.get("type", "")
    if group_type and group_type not in GROUP_TYPES:
        raise HttpError(400, f"type '{group_type}' is not one of {', '.join(GROUP_TYPES)}")
    return GroupsQuery(q=params.get("q", ""), state=params.get("state", ""),
                       group_type=group_type,
                       status=params.get("status", ""), sort=sort,
                       desc=params.get("dir", "asc") == "desc",
                       page=_int_param(params, "page", 1, 1, 10**9),
                       per_page=_int_param(params, "per", PER_PAGE, 1, MAX_PER_PAGE))


def _int_param(params, name: str, default: int, lo: int, hi: int) -> int:
    raw = params.get(name, "")
    if raw == "":
        return default
    if not raw.isdigit() or not lo <= int(raw) <= hi:
        raise HttpError(400, f"{name} must be a whole number from {lo} to {hi}")
    return int(raw)


def groups_data(dash: Dashboard, cluster: str, params) -> dict:
    """The groups page's data (also used by the benchmark)."""
    gq = groups_query(params)
    from offsetkeeper.ops.groups import list_typed_groups

    admin = dash.admin(cluster)
    p = groups_page(admin, dash.history, gq,
                    listing=lambda: dash.listings.get(cluster, lambda: list_typed_groups(admin)))
    return {"rows": p.rows, "total": p.total, "matched": p.matched, "page": p.page,
            "pages": p.pages, "per": gq.per_page, "history_error": p.history_error,
            "states": p.states, "types": p.types, "q": gq.q, "state": gq.state,
            "type": gq.group_type, "status": gq.status, "sort": gq.sort, "desc": gq.desc,
            "note": p.note, "order": p.order, "order_note": p.order_note}


@handler
async def groups(dash: Dashboard, request: Request) -> Response:
    cluster = request.path_params["cluster"]
    d = await in_thread(groups_data, dash, cluster, request.query_params)
    data = {"cluster": cluster, "total": d["total"], "matched": d["matched"],
            "page": d["page"], "pages": d["pages"], "per_page": d["per"], "groups": d["rows"],
            "history_error": d["history_error"], "note": d["note"], "order": d["order"],
            "order_note": d["order_note"]}
    return dash.page(request, "groups.html", {**d, "cluster": cluster,
                                              "empty_store": _empty_store(dash)}, data=data)


def _empty_store(dash: Dashboard) -> bool:
    """A configured history store without a single sample (say so: the wrong file?)."""
    if dash.history is None:
        return False
    empty, _ = safe(dash.history.is_empty, False)
    return empty


def _range(request: Request) -> str:
    r = request.query_params.get("range", "1h")
    if r not in RANGES_MS:
        raise HttpError(400, f"range '{r}' is not one of {', '.join(RANGES_MS)}")
    return r


def _group_param(request: Request) -> str:
    g = request.query_params.get("g")
    if g is None or g == "":
        raise HttpError(400, "no group given: add ?g=GROUP")
    return g


def _group_kind(request: Request) -> str:
    """The `type` the groups page's link names (share or streams), or "" to find out."""
    from offsetkeeper.ops.groups import GROUP_TYPES

    kind = request.query_params.get("type", "")
    if kind and kind not in GROUP_TYPES:
        raise HttpError(400, f"type '{kind}' is not one of {', '.join(GROUP_TYPES)}")
    return kind


@handler
async def group(dash: Dashboard, request: Request) -> Response:
    """A group's page, by its type: a share or streams group gets its own (`typed_group`);
    classic and consumer groups this one."""
    from offsetkeeper.ops.groups import TYPED, helper_missing, typed_kind

    cluster = request.path_params["cluster"]
    name = _group_param(request)
    rng = _range(request)
    admin = dash.admin(cluster)
    kind = _group_kind(request)
    if kind not in TYPED:
        kind = await in_thread(typed_kind, admin, name)
    if kind in TYPED:
        return await typed_group(dash, request, cluster, admin, name, kind)
    try:
        view = await in_thread(group_view, admin, name, dash.history)
    except UnknownGroupError as exc:
        # Without the JVM helper a share group looks like a group that does not exist
        # (librdkafka cannot see it): say so with the helper's sentence.
        missing = helper_missing()
        if missing:
            raise HttpError(404, f"{exc.message}; if it is a share or streams group, it cannot "
                                 f"be seen without the JVM admin helper: {missing}") from None
        raise
    type_note = None
    if not view.members and view.state == "dead":
        # ... and a streams group with committed offsets as a member-less Dead classic group
        missing = helper_missing()
        if missing:
            type_note = ("librdkafka reads this group as a member-less Dead group, as it reads "
                         "every streams group (even a running one): its real type and state "
                         f"need the JVM admin helper: {missing}")
    charts = None
    series = None
    if dash.history is not None:
        hist = dash.history
        # The store down or a bad record: the page without charts, saying why (not a 500).
        series, serr = await in_thread(safe, lambda: hist.series(name, rng), None)
        if serr and not view.history_error:
            view = dataclasses.replace(view, history_error=serr)
    if series is not None:
        charts = (time_chart(series.lag, title=f"lag, last {rng}", unit="records",
                             since_ms=series.since_ms, until_ms=series.until_ms),
                  time_chart(series.time_lag, title=f"time lag, last {rng}", unit="duration",
                             since_ms=series.since_ms, until_ms=series.until_ms))
    data = {"group": view, "range": rng, "type_note": type_note,
            "series": None if series is None else {"lag": series.lag,
                                                   "time_lag": series.time_lag}}
    return dash.page(request, "group.html", {"cluster": cluster, "v": view, "range": rng,
                                             "ranges": list(RANGES_MS), "charts": charts,
                                             "type_note": type_note,
                                             "empty_store": _empty_store(dash)},
                     data=data)


async def typed_group(dash: Dashboard, request: Request, cluster: str, admin, name: str,
                      kind: str) -> Response:
    from offsetkeeper.ops.typed_group_pages import share_group_page, streams_group_page

    view = await in_thread(share_group_page if kind == "share" else streams_group_page, admin,
                           name)
    return dash.page(request, "typed_group.html", {"cluster": cluster, "v": view},
                     data={"group": view})


# -- snapshots ------------------------------------------------------------------------------------

@handler
async def snapshots(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops import list_snapshots

    cluster = request.path_params["cluster"]
    dash.admin(cluster)
    # The store unreadable as a whole (e.g. s3:// without s3fs): the page says so; a bad file
    # is a row with its error (the store's listing does that).
    opts = dash.settings.execute
    snaps, err = await in_thread(safe_call, lambda: list_snapshots(
        store=opts.snapshot_store, config_path=opts.config_path), [], what="snapshot store")
    snaps = list(reversed(snaps))
    return dash.page(request, "snapshots.html", {"cluster": cluster, "snaps": snaps,
                                                 "store_error": err},
                     data={"snapshots": [s.as_row() for s in snaps], "error": err})


@handler
async def snapshot_diff(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops import diff_with_live

    cluster = request.path_params["cluster"]
    sid = request.path_params["sid"]
    admin = dash.admin(cluster)
    opts = dash.settings.execute
    diffs = await in_thread(diff_with_live, admin, sid, store=opts.snapshot_store,
                            config_path=opts.config_path)
    rows = [d.as_row() for d in diffs]
    return dash.page(request, "snapshot.html", {"cluster": cluster, "sid": sid, "rows": rows},
                     data={"snapshot_id": sid, "diff": rows})


# -- backups --------------------------------------------------------------------------------------

@handler
async def backups(dash: Dashboard, request: Request) -> Response:
    dests = await in_thread(bk.safe_list, list(dash.settings.backup_destinations))
    return dash.page(request, "backups.html", {"dests": dests},
                     data={"destinations": [{"index": i, "destination": d, "error": e,
                                             "backups": [asdict(b) for b in lines]}
                                            for i, d, lines, e in dests]})


@handler
async def backup(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops.backup import mapping_reference

    idx = request.path_params["dest"]
    bid = request.path_params["bid"]
    dest = bk.destination(list(dash.settings.backup_destinations), idx)
    mapping_reference(dest, bid)  # the id is checked before anything is read
    detail = await in_thread(bk.backup_detail, dest, bid)
    mapping = None
    rid = request.query_params.get("restore")
    if rid:
        status, rows = await in_thread(bk.mapping_summary, dest, bid, rid)
        mapping = {"restore_id": rid, "status": status, "rows": rows}
    return dash.page(request, "backup.html", {"idx": idx, "d": detail, "mapping": mapping},
                     data={"backup": asdict(detail), "mapping": mapping})


# -- streaming checkpoints -------------------------------------------------------------------------

def _admin_for(dash: Dashboard):
    # Clusters.admin raises UsageError for an unknown cluster: the checkpoint's error row.
    return dash.clusters.admin


@handler
async def checkpoints(dash: Dashboard, request: Request) -> Response:
    lines = await in_thread(ck.list_checkpoints, dash.settings.checkpoints, _admin_for(dash),
                            dash.clusters.default)
    return dash.page(request, "checkpoints.html", {"lines": lines},
                     data={"checkpoints": [asdict(x) for x in lines]})


@handler
async def checkpoint(dash: Dashboard, request: Request) -> Response:
    idx = request.path_params["idx"]
    try:
        ck.entry_at(dash.settings.checkpoints, idx)  # 404 before any read
    except UsageError as exc:
        raise HttpError(404, exc.message) from None
    d = await in_thread(ck.checkpoint_detail, dash.settings.checkpoints, idx, _admin_for(dash),
                        dash.clusters.default)
    return dash.page(request, "checkpoint.html", {"d": d}, data={"checkpoint": asdict(d)})


# -- Kafka Connect and MirrorMaker 2 ---------------------------------------------------------------

@handler
async def connectors(dash: Dashboard, request: Request) -> Response:
    """Every configured worker's connectors with their offsets (read-only)."""
    from offsetkeeper.web import connectors as cn

    blocks = await in_thread(cn.list_workers, dash.settings.connect_workers,
                             dash.clusters.admin, dash.clusters.default)
    return dash.page(request, "connectors.html", {"blocks": blocks},
                     data={"workers": [b.as_dict() for b in blocks]})


@handler
async def mm2(dash: Dashboard, request: Request) -> Response:
    """`mm2 status` of every configured MirrorMaker 2 flow (read-only)."""
    from offsetkeeper.web import connectors as cn

    blocks = await in_thread(cn.mm2_reports, dash.settings.mm2_flows, dash.clusters.admin,
                             dash.clusters.default)
    return dash.page(request, "mm2.html", {"blocks": blocks},
                     data={"flows": [b.as_dict() for b in blocks]})


async def not_found(request: Request, exc) -> Response:
    dash: Dashboard = request.app.state.dash
    code = getattr(exc, "status_code", 404)
    msg = "page not found" if code == 404 else "method not allowed" if code == 405 else "error"
    return dash.error(request, code, msg)


