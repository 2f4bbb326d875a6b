"""The dashboard application (Starlette): routes, middleware, `create_app`.

Handlers live in `pages.py` (read-only pages) and `wizard.py` (the reset wizard, execution,
rollback); what they share (settings, guards, rendering) in `core.py`. See docs/dashboard.md.
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from offsetkeeper.ops.history_view import HistoryView
from offsetkeeper.web import pages, wizard
from offsetkeeper.web.clusters import Clusters
from offsetkeeper.web.core import HERE, Dashboard, Guard, UiSettings

__all__ = ["UiSettings", "create_app"]


def create_app(settings: UiSettings, clusters: Clusters,
               history: HistoryView | None = None) -> Starlette:
    """The dashboard as an ASGI app (served by `offsetkeeper ui` through uvicorn)."""
    dash = Dashboard(settings, clusters, history)
    c = "/c/{cluster}"
    routes = [
        Route("/", pages.home),
        Route("/healthz", pages.healthz),
        Route("/api/csrf", pages.csrf_token),
        Route("/login", pages.login_page, methods=["GET"]),
        Route("/login", pages.login, methods=["POST"]),
        Route("/logout", pages.logout, methods=["POST"]),
        Route(f"{c}/groups", pages.groups),
        Route(f"{c}/group", pages.group),
        Route(f"{c}/reset", wizard.reset_form, methods=["GET"]),
        Route(f"{c}/reset/preview", wizard.reset_preview, methods=["POST"]),
        Route(f"{c}/plans/{{pid}}/execute", wizard.plan_execute, methods=["POST"]),
        Route(f"{c}/snapshots", pages.snapshots),
        Route(f"{c}/snapshots/{{sid}}", pages.snapshot_diff),
        Route(f"{c}/snapshots/{{sid}}/rollback", wizard.rollback_preview, methods=["POST"]),
        Route("/backups", pages.backups),
        Route("/backups/{dest}/{bid}", pages.backup),
        Route("/checkpoints", pages.checkpoints),
        Route("/checkpoints/{idx}", pages.checkpoint),
        Route("/connectors", pages.connectors),
        Route("/mm2", pages.mm2),
        Mount("/static", app=StaticFiles(directory=str(HERE / "static")), name="static"),
    ]
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=list(settings.allowed_hosts)),
                  Middleware(Guard, dash=dash)]
    app = Starlette(routes=routes, middleware=middleware,
                    exception_handlers={404: pages.not_found, 405: pages.not_found})
    app.state.dash = dash
    return app
