"""The dashboard application (Starlette): pages, the reset wizard, and the guards around them.

Every page is also JSON (`?format=json` or `Accept: application/json`). Every state-changing
request is a POST carrying the CSRF token; with `read_only` those are refused (403) and the
pages show no buttons for them. See docs/dashboard.md.
"""

from __future__ import annotations

import logging
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from offsetkeeper.errors import OffsetkeeperError, UnknownGroupError
from offsetkeeper.web import backups as bk
from offsetkeeper.web import security as sec
from offsetkeeper.web.data import RANGES_MS, HistoryView
from offsetkeeper.web.service import (
    Clusters,
    PlanBook,
    PlanEntry,
    filter_sort,
    group_view,
    overview,
)
from offsetkeeper.web.svg import sparkline, time_chart

log = logging.getLogger("offsetkeeper.web")
HERE = Path(__file__).parent


@dataclass(frozen=True)
class UiSettings:
    """How the dashboard runs. `token` is a secret: never rendered, logged or returned."""

    read_only: bool = False
    token: str | None = field(default=None, repr=False)
    history_store: str | None = None
    backup_destinations: tuple[str, ...] = ()
    snapshot_store: str | None = None
    config_path: Path | None = None
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]", "::1")
    tls: bool = False


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def _wants_json(request: Request) -> bool:
    return (request.query_params.get("format") == "json"
            or request.headers.get("accept", "").startswith("application/json"))


def _jsonable(obj: Any) -> Any:
    if hasattr(obj, "__dataclass_fields__"):
        return _jsonable(asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    return obj


def _fmt_s(v: float | None) -> str:
    if v is None:
        return "-"
    if v < 60:
        return f"{v:.0f}s"
    if v < 3600:
        return f"{v / 60:.1f}m"
    if v < 86400:
        return f"{v / 3600:.1f}h"
    return f"{v / 86400:.1f}d"


class Dashboard:
    """The application state: settings, clusters, history, previewed plans, sessions."""

    def __init__(self, settings: UiSettings, clusters: Clusters,
                 history: HistoryView | None) -> None:
        self.settings, self.clusters, self.history = settings, clusters, history
        self.plans = PlanBook()
        self.sessions = sec.Sessions()
        env = Environment(loader=FileSystemLoader(str(HERE / "templates")),
                          autoescape=select_autoescape(default=True, default_for_string=True))
        env.filters["dur"] = _fmt_s
        env.filters["q"] = lambda s: quote(str(s), safe="")
        env.globals["sparkline"] = sparkline
        self.templates = Jinja2Templates(env=env)

    # -- rendering -------------------------------------------------------------------------
    def page(self, request: Request, name: str, ctx: dict, *, status: int = 200,
             data: Any = None) -> Response:
        if _wants_json(request):
            return JSONResponse(_jsonable(data if data is not None else {}), status_code=status)
        cluster = ctx.get("cluster") or self.clusters.default
        base = {"request": request, "read_only": self.settings.read_only,
                "csrf": self.sessions.csrf_token(request.state.session_id),
                "clusters": self.clusters.names, "cluster": cluster,
                "has_history": self.history is not None, "auth": bool(self.settings.token)}
        return self.templates.TemplateResponse(request, name, {**base, **ctx}, status_code=status)

    def error(self, request: Request, status: int, message: str) -> Response:
        if _wants_json(request) or (request.method == "POST" and \
                request.headers.get("accept", "").startswith("application/json")):
            return JSONResponse({"error": message}, status_code=status)
        return self.page(request, "error.html", {"message": message, "status": status},
                         status=status)

    # -- guards ----------------------------------------------------------------------------
    async def form(self, request: Request, *, mutation: bool = True) -> dict:
        """The POSTed form after the CSRF check (and, for mutations, the read-only check)."""
        if mutation and self.settings.read_only:
            raise HttpError(403, "the dashboard runs read-only (--read-only): nothing can be "
                                 "changed from it")
        form = await request.form()
        token = request.headers.get(sec.CSRF_HEADER) or form.get(sec.CSRF_FIELD)
        if not self.sessions.csrf_ok(request.state.session_id, token if isinstance(token, str)
                                     else None):
            raise HttpError(403, "missing or invalid CSRF token: reload the page and try again")
        return form

    def admin(self, cluster: str):
        if cluster not in self.clusters.names:
            raise HttpError(404, f"cluster '{cluster}' is not configured")
        return self.clusters.admin(cluster)

    def exec_options(self, **kw):
        from offsetkeeper.ops import ExecuteOptions

        return ExecuteOptions(snapshot_store=self.settings.snapshot_store,
                              config_path=self.settings.config_path, **kw)


# -- middleware ----------------------------------------------------------------------------------

class Guard(BaseHTTPMiddleware):
    """Session cookie, authentication, security headers."""

    def __init__(self, app, dash: Dashboard) -> None:
        super().__init__(app)
        self.dash = dash

    async def dispatch(self, request: Request, call_next) -> Response:
        dash = self.dash
        sid = request.cookies.get(sec.SESSION_COOKIE)
        fresh = not sid or len(sid) > 64
        if fresh:
            sid = sec.Sessions.new_id()
        request.state.session_id = sid
        path = request.url.path
        token = dash.settings.token
        if token and not (path.startswith("/static/") or path in ("/login", "/healthz")):
            given = sec.token_from_header(request.headers.get("authorization"),
                                          tls=dash.settings.tls or request.url.scheme == "https")
            ok = (given is not None and sec.same(given, token)) or dash.sessions.authed(sid)
            if not ok:
                if request.method == "GET" and not _wants_json(request):
                    resp: Response = RedirectResponse(
                        "/login?" + urlencode({"next": path + ("?" + request.url.query
                                                               if request.url.query else "")}),
                        status_code=303)
                else:
                    resp = JSONResponse({"error": "authentication required"}, status_code=401,
                                        headers={"WWW-Authenticate": 'Bearer realm="offsetkeeper"'})
                return self._finish(resp, sid, fresh)
        try:
            resp = await call_next(request)
        except Exception:  # pragma: no cover - last resort; handlers catch what they expect
            log.exception("request failed: %s %s", request.method, path)
            resp = JSONResponse({"error": "internal error"}, status_code=500)
        return self._finish(resp, sid, fresh)

    def _finish(self, resp: Response, sid: str, fresh: bool) -> Response:
        h = resp.headers
        h["Content-Security-Policy"] = ("default-src 'self'; script-src 'self'; style-src 'self'; "
                                        "img-src 'self' data:; object-src 'none'; "
                                        "base-uri 'none'; form-action 'self'; "
                                        "frame-ancestors 'none'")
        h["X-Content-Type-Options"] = "nosniff"
        h["X-Frame-Options"] = "DENY"
        h["Referrer-Policy"] = "no-referrer"
        h["Cache-Control"] = "no-store"
        if fresh:
            resp.set_cookie(sec.SESSION_COOKIE, sid, httponly=True, samesite="strict",
                            secure=self.dash.settings.tls, path="/")
        return resp


def _handler(fn):
    """Turn expected errors into pages with the right status (never a traceback)."""
    async def wrapped(request: Request) -> Response:
        dash: Dashboard = request.app.state.dash
        try:
            return await fn(dash, request)
        except HttpError as exc:
            return dash.error(request, exc.status, exc.message)
        except UnknownGroupError as exc:
            return dash.error(request, 404, exc.message)
        except OffsetkeeperError as exc:
            return dash.error(request, _status_of(exc), exc.message)
    wrapped.__name__ = fn.__name__
    return wrapped


def _status_of(exc: OffsetkeeperError) -> int:
    from offsetkeeper.errors import KafkaOperationError, StoreError

    if exc.exit_code == 2:
        return 400
    if isinstance(exc, StoreError):
        return 404 if " not found" in exc.message else 500
    if isinstance(exc, KafkaOperationError):
        return 502
    return 500


async def _thread(fn, *args, **kw):
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args, **kw)


# -- pages ---------------------------------------------------------------------------------------

@_handler
async def home(dash: Dashboard, request: Request) -> Response:
    return RedirectResponse(f"/c/{quote(dash.clusters.default, safe='')}/groups", status_code=303)


@_handler
async def healthz(dash: Dashboard, request: Request) -> Response:
    return JSONResponse({"ok": True, "read_only": dash.settings.read_only})


@_handler
async def csrf_token(dash: Dashboard, request: Request) -> Response:
    """The CSRF token of this session (for scripts that POST; a cross-site page cannot read it)."""
    return JSONResponse({"csrf": dash.sessions.csrf_token(request.state.session_id)})


@_handler
async def login_page(dash: Dashboard, request: Request) -> Response:
    return dash.page(request, "login.html", {"next": _safe_next(request.query_params.get("next"))})


def _safe_next(nxt: str | None) -> str:
    # Only local paths: "/x", never "//host" or "http://host" (no open redirect).
    if not nxt or not nxt.startswith("/") or nxt.startswith("//") or "\\" in nxt:
        return "/"
    return nxt


@_handler
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


@_handler
async def logout(dash: Dashboard, request: Request) -> Response:
    await dash.form(request, mutation=False)
    dash.sessions.logout(request.state.session_id)
    resp = RedirectResponse("/login", status_code=303)
    resp.delete_cookie(sec.SESSION_COOKIE, path="/")
    return resp


def groups_data(dash: Dashboard, cluster: str, params) -> dict:
    """The groups page's data (also used by the benchmark)."""
    admin = dash.admin(cluster)
    rows, herr = overview(admin, dash.history)
    sort = params.get("sort", "group")
    desc = params.get("dir", "asc") == "desc"
    shown = filter_sort(rows, q=params.get("q", ""), state=params.get("state", ""),
                        status=params.get("status", ""), sort=sort, desc=desc)
    return {"rows": shown, "total": len(rows), "history_error": herr,
            "states": sorted({r.state for r in rows}),
            "q": params.get("q", ""), "state": params.get("state", ""),
            "status": params.get("status", ""), "sort": sort, "desc": desc}


@_handler
async def groups(dash: Dashboard, request: Request) -> Response:
    cluster = request.path_params["cluster"]
    d = await _thread(groups_data, dash, cluster, request.query_params)
    data = {"cluster": cluster, "total": d["total"], "groups": d["rows"],
            "history_error": d["history_error"]}
    return dash.page(request, "groups.html", {**d, "cluster": cluster}, data=data)


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


@_handler
async def group(dash: Dashboard, request: Request) -> Response:
    cluster = request.path_params["cluster"]
    name = _group_param(request)
    rng = _range(request)
    admin = dash.admin(cluster)
    view = await _thread(group_view, admin, name, dash.history)
    charts = None
    series = None
    if dash.history is not None:
        series = await _thread(dash.history.series, name, rng)
        charts = (time_chart(series.lag, title=f"lag, last {rng}", unit="records",
                             since_ms=series.since_ms, until_ms=series.until_ms),
                  time_chart(series.time_lag, title=f"time lag, last {rng}", unit="seconds",
                             since_ms=series.since_ms, until_ms=series.until_ms))
    data = {"group": view, "range": rng,
            "series": None if series is None else {"lag": series.lag,
                                                   "time_lag": series.time_lag}}
    return dash.page(request, "group.html", {"cluster": cluster, "v": view, "range": rng,
                                             "ranges": list(RANGES_MS), "charts": charts},
                     data=data)


# -- reset wizard --------------------------------------------------------------------------------

def _target_kinds(dash: Dashboard) -> list[dict]:
    from offsetkeeper.ops import TargetKind

    kinds = []
    for k in TargetKind:
        if k.value == "to-history" and dash.history is None:
            continue
        kinds.append({"value": k.value, "flag": k.flag, "takes_value": k.takes_value})
    return kinds


@_handler
async def reset_form(dash: Dashboard, request: Request) -> Response:
    cluster = request.path_params["cluster"]
    if dash.settings.read_only:
        raise HttpError(403, "the dashboard runs read-only (--read-only): resets are disabled")
    dash.admin(cluster)
    from offsetkeeper.ops import list_snapshots

    snaps, _ = _safe_call(lambda: list_snapshots(store=dash.settings.snapshot_store,
                                                 config_path=dash.settings.config_path), [])
    groups_given = request.query_params.getlist("g")
    return dash.page(request, "reset.html", {
        "cluster": cluster, "groups_text": "\n".join(groups_given), "kinds": _target_kinds(dash),
        "snapshots": [s for s in reversed(snaps) if not s.error][:50],
        "backups": [(i, bk.shown(d)) for i, d in enumerate(dash.settings.backup_destinations)]})


def _safe_call(fn, default):
    try:
        return fn(), None
    except (OffsetkeeperError, OSError) as exc:
        return default, str(exc)


def _lines(text: str) -> list[str]:
    return [x.strip() for x in text.replace("\r", "").split("\n") if x.strip()]


async def _target_spec(dash: Dashboard, form, tmpdir: str):
    from offsetkeeper.ops import TargetKind, TargetSpec
    from offsetkeeper.web.timefield import datetime_local_to_iso

    kind_s = form.get("kind") or ""
    try:
        kind = TargetKind(kind_s)
    except ValueError:
        raise HttpError(400, f"reset target '{kind_s}' is unknown (expected one of "
                             f"{', '.join(k.value for k in TargetKind)})") from None
    if not kind.takes_value:
        return TargetSpec(kind)
    field_name = f"value_{kind.value}"
    if kind is TargetKind.FROM_FILE:
        upload = form.get(field_name)
        if upload is None or isinstance(upload, str) or not upload.filename:
            raise HttpError(400, "--from-file: choose a CSV file to upload")
        data = await upload.read()
        if len(data) > 20 * 1024 * 1024:
            raise HttpError(400, "--from-file: the uploaded file is larger than 20 MB")
        path = Path(tmpdir) / "offsets.csv"
        path.write_bytes(data)
        return TargetSpec(kind, str(path))
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
    from offsetkeeper.backup.manifest import validate_backup_id

    validate_backup_id(bid)
    return f"{dest.rstrip('/')}/{bid}" + (f":{rid}" if rid else "")


@_handler
async def reset_preview(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops import ResetRequest, plan_reset_request
    from offsetkeeper.reset.parse import parse_topic_spec
    from offsetkeeper.reset.plan import TopicSpec

    cluster = request.path_params["cluster"]
    form = await dash.form(request)
    admin = dash.admin(cluster)
    groups_ = _lines(str(form.get("groups") or ""))
    topics = [TopicSpec(*parse_topic_spec(t)) for t in _lines(str(form.get("topics") or ""))]
    with tempfile.TemporaryDirectory(prefix="offsetkeeper-ui-") as tmp:
        spec = await _target_spec(dash, form, tmp)
        req = ResetRequest(
            target=spec, groups=tuple(dict.fromkeys(groups_)),
            all_groups=form.get("all_groups") == "on", topics=tuple(topics),
            all_topics=form.get("all_topics") == "on" and not topics,
            create_groups=form.get("create_groups") == "on",
            options=dash.exec_options(allow_unknown_state=form.get("allow_unknown_state") == "on"))
        plan, notes = await _thread(plan_reset_request, admin, req)
    entry = PlanEntry(cluster, plan, tuple(notes), "reset", f"before reset {plan.target}")
    return _show_plan(dash, request, cluster, dash.plans.put(entry), entry, req.options)


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


def _show_plan(dash: Dashboard, request: Request, cluster: str, pid: str, entry: PlanEntry,
               options) -> Response:
    plan = entry.plan
    rows = _plan_rows(plan)
    # Executable: something changes in a group that is not refused (refused groups keep their
    # partitions in the plan, for the table).
    executable = any(p.changes for g in plan.groups if not g.refused for p in g.partitions)
    data = {"plan_id": pid if executable else None, "kind": entry.kind,
            "notes": list(entry.notes), "changes": executable, "has_errors": plan.has_errors,
            "uncreatable": plan.uncreatable, "plan": plan.to_dict()}
    return dash.page(request, "plan.html", {
        "cluster": cluster, "pid": pid, "entry": entry, "plan": plan, "rows": rows,
        "executable": executable,
        "refused": plan.refused, "notes": entry.notes}, data=data)


@_handler
async def plan_execute(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops import execute_plan
    from offsetkeeper.reset.facts import check_creatable

    cluster = request.path_params["cluster"]
    await dash.form(request)
    admin = dash.admin(cluster)
    entry = dash.plans.take(request.path_params["pid"], cluster)
    if entry.kind == "reset":
        check_creatable(entry.plan)
    opts = dash.exec_options()
    t0 = time.monotonic()
    report = await _thread(execute_plan, admin, entry.plan, opts, description=entry.description)
    log.info("executed %s plan on cluster %s: %s in %.1fs", entry.kind, cluster,
             report.status, time.monotonic() - t0)
    data = {"report": report.to_dict(), "plan": entry.plan.to_dict()}
    return dash.page(request, "report.html", {
        "cluster": cluster, "entry": entry, "report": report, "summary": report.summary(),
        "rows": _plan_rows(entry.plan)}, data=data)


# -- snapshots ------------------------------------------------------------------------------------

@_handler
async def snapshots(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops import list_snapshots

    cluster = request.path_params["cluster"]
    dash.admin(cluster)
    snaps = await _thread(lambda: list_snapshots(store=dash.settings.snapshot_store,
                                                 config_path=dash.settings.config_path))
    snaps = list(reversed(snaps))
    return dash.page(request, "snapshots.html", {"cluster": cluster, "snaps": snaps},
                     data={"snapshots": [s.as_row() for s in snaps]})


@_handler
async def snapshot_diff(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops import diff_with_live

    cluster = request.path_params["cluster"]
    sid = request.path_params["sid"]
    admin = dash.admin(cluster)
    diffs = await _thread(diff_with_live, admin, sid, store=dash.settings.snapshot_store,
                          config_path=dash.settings.config_path)
    rows = [d.as_row() for d in diffs]
    return dash.page(request, "snapshot.html", {"cluster": cluster, "sid": sid, "rows": rows},
                     data={"snapshot_id": sid, "diff": rows})


@_handler
async def rollback_preview(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.ops import RollbackRequest, rollback

    cluster = request.path_params["cluster"]
    sid = request.path_params["sid"]
    await dash.form(request)
    admin = dash.admin(cluster)
    opts = dash.exec_options()
    outcome = await _thread(rollback, admin, RollbackRequest(snapshot_id=sid, execute=False,
                                                             options=opts))
    entry = PlanEntry(cluster, outcome.plan, tuple(outcome.notes), "rollback",
                      f"before rollback to {sid}")
    return _show_plan(dash, request, cluster, dash.plans.put(entry), entry, opts)


# -- backups --------------------------------------------------------------------------------------

@_handler
async def backups(dash: Dashboard, request: Request) -> Response:
    dests = await _thread(bk.safe_list, list(dash.settings.backup_destinations))
    return dash.page(request, "backups.html", {"dests": dests},
                     data={"destinations": [{"index": i, "destination": d, "error": e,
                                             "backups": [asdict(b) for b in lines]}
                                            for i, d, lines, e in dests]})


@_handler
async def backup(dash: Dashboard, request: Request) -> Response:
    from offsetkeeper.backup.manifest import validate_backup_id

    idx = request.path_params["dest"]
    bid = request.path_params["bid"]
    validate_backup_id(bid)
    dest = bk.destination(list(dash.settings.backup_destinations), idx)
    detail = await _thread(bk.backup_detail, dest, bid)
    mapping = None
    rid = request.query_params.get("restore")
    if rid:
        status, rows = await _thread(bk.mapping_summary, dest, bid, rid)
        mapping = {"restore_id": rid, "status": status, "rows": rows}
    return dash.page(request, "backup.html", {"idx": idx, "d": detail, "mapping": mapping},
                     data={"backup": asdict(detail), "mapping": mapping})


async def not_found(request: Request, exc) -> Response:
    dash: Dashboard = request.app.state.dash
    code = getattr(exc, "status_code", 404)
    msg = "page not found" if code == 404 else "method not allowed" if code == 405 else "error"
    return dash.error(request, code, msg)


def create_app(settings: UiSettings, clusters: Clusters,
               history: HistoryView | None = None) -> Starlette:
    """The dashboard as an ASGI app (served by `offsetkeeper ui` through uvicorn)."""
    dash = Dashboard(settings, clusters, history)
    c = "/c/{cluster}"
    routes = [
        Route("/", home),
        Route("/healthz", healthz),
        Route("/api/csrf", csrf_token),
        Route("/login", login_page, methods=["GET"]),
        Route("/login", login, methods=["POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route(f"{c}/groups", groups),
        Route(f"{c}/group", group),
        Route(f"{c}/reset", reset_form, methods=["GET"]),
        Route(f"{c}/reset/preview", reset_preview, methods=["POST"]),
        Route(f"{c}/plans/{{pid}}/execute", plan_execute, methods=["POST"]),
        Route(f"{c}/snapshots", snapshots),
        Route(f"{c}/snapshots/{{sid}}", snapshot_diff),
        Route(f"{c}/snapshots/{{sid}}/rollback", rollback_preview, methods=["POST"]),
        Route("/backups", backups),
        Route("/backups/{dest}/{bid}", backup),
        Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=list(settings.allowed_hosts)),
                  Middleware(Guard, dash=dash)]
    app = Starlette(routes=routes, middleware=middleware,
                    exception_handlers={404: not_found, 405: not_found})
    app.state.dash = dash
    return app


def settings_replace(s: UiSettings, **kw) -> UiSettings:
    return replace(s, **kw)
