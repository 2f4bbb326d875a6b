"""What every dashboard handler shares: settings, the application state (`Dashboard`), the
guards (session, authentication, CSRF, read-only, security headers) and error rendering.

Every page is also JSON (`?format=json` or `Accept: application/json`). Every state-changing
request is a POST carrying the CSRF token; with `read_only` those are refused (403) and the
pages show no buttons for them. See docs/dashboard.md.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.exceptions import HTTPException
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.templating import Jinja2Templates

from offsetkeeper.errors import OffsetkeeperError, UnknownGroupError
from offsetkeeper.ops import ExecuteOptions
from offsetkeeper.ops.group_pages import ListingCache
from offsetkeeper.ops.history_view import HistoryView
from offsetkeeper.ops.itemerr import guarded
from offsetkeeper.redact import mask_url
from offsetkeeper.tables import printable
from offsetkeeper.times import iso_ms
from offsetkeeper.web import security as sec
from offsetkeeper.web.checkpoints import CheckpointEntry
from offsetkeeper.web.clusters import Clusters
from offsetkeeper.web.connectors import Mm2Entry, WorkerEntry
from offsetkeeper.web.http_error import HttpError
from offsetkeeper.web.svg import human_duration, sparkline

log = logging.getLogger("offsetkeeper.web")
HERE = Path(__file__).parent


@dataclass(frozen=True)
class UiSettings:
    """How the dashboard runs. `token` is a secret: never rendered, logged or returned."""

    read_only: bool = False
    token: str | None = field(default=None, repr=False)
    history_store: str | None = None
    backup_destinations: tuple[str, ...] = ()
    checkpoints: tuple[CheckpointEntry, ...] = ()
    connect_workers: tuple[WorkerEntry, ...] = ()
    mm2_flows: tuple[Mm2Entry, ...] = ()
    # How the dashboard's resets and rollbacks execute, built once from `ui`'s flags: the
    # snapshot store (and the config file naming one) the snapshot pages read, too.
    execute: ExecuteOptions = field(default_factory=ExecuteOptions)
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]", "::1")
    tls: bool = False


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


def _shown(value: Any) -> Any:
    """Every value a template prints: text with control and bidi characters (U+202E ...)
    escaped exactly as the CLI prints them (`tables.printable`), so a name cannot reorder
    or hide what is around it; markup we built (charts) passes as is. Then autoescaped."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return printable(value)
    return value


class Dashboard:
    """The application state: settings, clusters, history, previewed plans, sessions."""

    def __init__(self, settings: UiSettings, clusters: Clusters,
                 history: HistoryView | None) -> None:
        self.settings, self.clusters, self.history = settings, clusters, history
        from offsetkeeper.ops.plans import PlanBook

        self.plans = PlanBook()
        self.listings = ListingCache()
        self.sessions = sec.Sessions()
        env = Environment(loader=FileSystemLoader(str(HERE / "templates")),
                          autoescape=select_autoescape(default=True, default_for_string=True),
                          finalize=_shown)
        env.filters["dur"] = human_duration
        env.filters["iso"] = lambda ms: iso_ms(ms) or "-"
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
                "has_history": self.history is not None,
                "has_checkpoints": bool(self.settings.checkpoints),
                "has_connect": bool(self.settings.connect_workers),
                "has_mm2": bool(self.settings.mm2_flows), "auth": bool(self.settings.token)}
        return self.templates.TemplateResponse(request, name, {**base, **ctx}, status_code=status)

    def error(self, request: Request, status: int, message: str) -> Response:
        if _wants_json(request) or (request.method == "POST" and \
                request.headers.get("accept", "").startswith("application/json")):
            return JSONResponse({"error": message}, status_code=status)
        return self.page(request, "error.html", {"message": message, "status": status},
                         status=status)

    # -- guards ----------------------------------------------------------------------------
    async def form(self, request: Request, *, mutation: bool = True, upload: bool = False):
        """The POSTed form after the read-only check (mutations) and the CSRF check, read as
        a bounded stream (`forms.read_form`): 1 MB, or one file of up to 20 MB with `upload`."""
        from offsetkeeper.web import forms

        if mutation and self.settings.read_only:
            raise HttpError(403, "the dashboard runs read-only (--read-only): nothing can be "
                                 "changed from it")
        sid = request.state.session_id
        limit = forms.UPLOAD_LIMIT + forms.FORM_LIMIT if upload else forms.FORM_LIMIT
        return await forms.read_form(request, lambda t: self.sessions.csrf_ok(sid, t),
                                     limit=limit,
                                     file_limit=forms.UPLOAD_LIMIT if upload else 0)

    def admin(self, cluster: str):
        if cluster not in self.clusters.names:
            raise HttpError(404, f"cluster '{cluster}' is not configured")
        return self.clusters.admin(cluster)


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
        except Exception:  # last resort (the handlers catch and log): still logged, no traceback
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


def handler(fn):
    """Turn expected errors into pages with the right status (never a traceback)."""
    async def wrapped(request: Request) -> Response:
        dash: Dashboard = request.app.state.dash
        try:
            return await fn(dash, request)
        except HttpError as exc:
            return dash.error(request, exc.status, exc.message)
        except HTTPException as exc:  # Starlette's own (a malformed form: 400)
            return dash.error(request, exc.status_code, str(exc.detail))
        except UnknownGroupError as exc:
            return dash.error(request, 404, exc.message)
        except OffsetkeeperError as exc:
            status = _status_of(exc)
            if status >= 500:
                log.warning("%s %s: %d %s", request.method, request.url.path, status,
                            mask_url(exc.message))
            return dash.error(request, status, exc.message)
        except Exception:
            # Unexpected: the log gets the traceback, the user one sentence (never a traceback).
            log.exception("%s %s failed", request.method, request.url.path)
            return dash.error(request, 500, "internal error: the dashboard's log has the "
                                            "details")
    wrapped.__name__ = fn.__name__
    return wrapped


def _status_of(exc: OffsetkeeperError) -> int:
    from offsetkeeper.errors import KafkaOperationError, NotFoundError, StoreError

    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc.__cause__, ImportError):
        return 503  # a package the configured store needs is not installed here
    if exc.exit_code == 2:
        return 400
    if isinstance(exc, StoreError):
        return 404 if " not found" in exc.message else 500
    if isinstance(exc, KafkaOperationError):
        return 502
    return 500


async def in_thread(fn, *args, **kw):
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(fn, *args, **kw)



def safe_call(fn, default, *, what: str = "dashboard read"):
    """(fn(), None) or (default, a one-line error) — see itemerr.guarded."""
    return guarded(fn, default, what=what)
