"""Regression tests for the dashboard items of issue 22, "Hardening, round two", that need no
broker: the bounded, CSRF-first form reading (item 11), the one history store rule shared by
`history record` and `ui` (item 15), chart ticks and duration units (item 22)."""

from __future__ import annotations

import asyncio
import re
import warnings

import pytest

from tests.web_support import csrf_of, make_app

warnings.filterwarnings("ignore", message=".*httpx.*", category=DeprecationWarning)
from starlette.testclient import TestClient  # noqa: E402

MB = 1024 * 1024
PREVIEW = "/c/default/reset/preview"


def _app(tmp_path):
    # A cluster nobody listens on: every request here is decided before the cluster is asked.
    app = make_app("127.0.0.1:1", tmp_path)
    c = TestClient(app, base_url="http://127.0.0.1")
    token = csrf_of(c.get("/login").text)
    return app, c.cookies.get("offsetkeeper_session"), token


def _post(app, cookie: str, token: str, *, file_mb: int, length: bool,
          path: str = PREVIEW) -> tuple[int, int]:
    """POST a multipart form (csrf, kind, then a file of `file_mb` MB) straight to the ASGI
    app, 1 MB per receive; returns (status, MB the app pulled from the client)."""
    head = (b'--B\r\nContent-Disposition: form-data; name="csrf"\r\n\r\n' + token.encode()
            + b'\r\n--B\r\nContent-Disposition: form-data; name="kind"\r\n\r\nfrom-file\r\n'
            b'--B\r\nContent-Disposition: form-data; name="value_from-file"; '
            b'filename="big.csv"\r\n\r\n')
    tail = b"\r\n--B--\r\n"
    chunks = iter([head, *(b"7" * MB for _ in range(file_mb)), tail])
    pulled = 0

    async def receive():
        nonlocal pulled
        chunk = next(chunks, None)
        if chunk is None:
            return {"type": "http.disconnect"}
        pulled += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": True}

    sent = []

    async def send(message):
        sent.append(message)

    headers = [(b"host", b"127.0.0.1"), (b"content-type", b"multipart/form-data; boundary=B"),
               (b"cookie", f"offsetkeeper_session={cookie}".encode())]
    if length:
        headers.append((b"content-length", str(len(head) + file_mb * MB + len(tail)).encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
             "root_path": "", "headers": headers, "server": ("127.0.0.1", 80),
             "client": ("127.0.0.1", 50000)}
    asyncio.run(app(scope, receive, send))
    return sent[0]["status"], pulled // MB


def test_upload_checked_for_csrf_first_and_bounded_while_streaming(tmp_path):
    """Invariant: a wizard upload is refused before its body is read when its CSRF token is
    wrong (403) or its declared length is over the limit (413); without a declared length it
    is refused (413) as soon as the stream passes the 20 MB limit, not after reading 300 MB.
    A good token and a small file pass the check (the request goes on to the cluster)."""
    app, cookie, token = _app(tmp_path)
    assert _post(app, cookie, "forged", file_mb=300, length=True) == (413, 0)
    assert _post(app, cookie, "forged", file_mb=300, length=False) == (403, 0)
    status, pulled = _post(app, cookie, token, file_mb=300, length=False)
    assert status == 413 and pulled <= 21
    status, pulled = _post(app, cookie, token, file_mb=300, length=True)
    assert (status, pulled) == (413, 0)
    status, pulled = _post(app, cookie, token, file_mb=25, length=False)
    assert status == 413 and pulled <= 21
    # Forms without a file (login, logout, execute, rollback) are bounded at 1 MB.
    status, pulled = _post(app, cookie, token, file_mb=300, length=False, path="/logout")
    assert status == 413 and pulled <= 2
    status, _ = _post(app, cookie, token, file_mb=1, length=True)
    assert status not in (403, 413)


def test_form_csrf_from_header_or_field(tmp_path):
    """Invariant: a POST passes the CSRF check with the token in the X-CSRF-Token header or
    the csrf field (urlencoded or multipart), and not without one or with a forged one."""
    app, _, _ = _app(tmp_path)
    c = TestClient(app, base_url="http://127.0.0.1")
    token = csrf_of(c.get("/login").text)
    # POST /login without a configured token redirects (303) once the CSRF check passed.
    assert c.post("/login", data={"csrf": token}, follow_redirects=False).status_code == 303
    assert c.post("/login", headers={"X-CSRF-Token": token},
                  follow_redirects=False).status_code == 303
    assert c.post("/login", files={"csrf": (None, token)},
                  follow_redirects=False).status_code == 303
    assert c.post("/login", data={"csrf": "x"}).status_code == 403
    assert c.post("/login").status_code == 403
    assert c.post("/login", headers={"X-CSRF-Token": "x"}, data={"csrf": token}).status_code \
        == 403


def test_ui_and_history_record_share_one_store(tmp_path, monkeypatch):
    """Invariant: `offsetkeeper ui` without --history-store opens the store `history record`
    writes: $OFFSETKEEPER_HISTORY_STORE when set (over the config's ui.history_store), else
    the same default file; the flag still wins."""
    from offsetkeeper.history.store import default_store_url, resolve_store_url
    from offsetkeeper.web.server import ServeOptions, build

    monkeypatch.delenv("OFFSETKEEPER_UI_TOKEN", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("OFFSETKEEPER_HISTORY_STORE", raising=False)
    cfg = tmp_path / "c.yaml"
    cfg.write_text("ui: {history_store: " + str(tmp_path / "configured.db") + "}\n")

    def store(**kw) -> str | None:
        app, _, _ = build(ServeOptions(bootstrap="127.0.0.1:1", **kw))
        app.state.dash.history.close()
        return app.state.dash.settings.history_store

    assert store() == default_store_url() == resolve_store_url(None)
    assert default_store_url().startswith(str(tmp_path / "xdg"))
    assert store(config_path=cfg) == str(tmp_path / "configured.db")
    monkeypatch.setenv("OFFSETKEEPER_HISTORY_STORE", str(tmp_path / "env.db"))
    assert store() == resolve_store_url(None) == str(tmp_path / "env.db")
    assert store(config_path=cfg) == str(tmp_path / "env.db")
    assert store(history_store=str(tmp_path / "flag.db")) == str(tmp_path / "flag.db")


def _value_ticks(svg: str) -> list[str]:
    ticks = re.findall(r'text-anchor="end" class="chart-axis">([^<]+)<', svg)
    return [t for t in ticks if not re.fullmatch(r"\d\d:\d\d", t)]   # not the time axis


@pytest.mark.parametrize("vmax", [0, 1, 3, 7, 99, 1514.5, 3029, 123_456, 9_999_999])
def test_chart_value_ticks_are_whole_numbers(vmax):
    """Invariant: offset and lag charts label their value axis with whole numbers (no
    `1514.5`), and the axis reaches the largest value."""
    from offsetkeeper.web.svg import time_chart

    svg = str(time_chart([(0, 0.0), (60_000, float(vmax))], title="lag", unit="records"))
    ticks = _value_ticks(svg)
    assert len(ticks) == 3 and all(re.fullmatch(r"\d+(k|\.\dM|M)?", t) for t in ticks), ticks


@pytest.mark.parametrize("seconds,expected", [(45, "45s"), (150, "2.5m"), (120, "2m"),
                                              (5400, "1.5h"), (3 * 86400, "3d"), (None, "-")])
def test_one_human_duration_unit(seconds, expected):
    """Invariant: time lag reads the same on the page header and on the chart's axis."""
    from offsetkeeper.web.svg import human_duration, time_chart

    assert human_duration(seconds) == expected
    if seconds:
        svg = str(time_chart([(0, 0.0), (60_000, float(seconds))], title="t", unit="duration"))
        ticks = _value_ticks(svg)
        assert len(ticks) == 3 and all(re.fullmatch(r"\d+(\.\d)?[smhd]", t) for t in ticks), ticks
        assert "(duration)" not in svg and "seconds" not in svg


@pytest.mark.parametrize("typed,expected", [("2026-11-20T09:40", "2026-11-20T09:40:00Z"),
                                            ("2026-11-20 21:40:05", "2026-11-20T21:40:05Z"),
                                            ("2026-11-20T09:40:00Z", "2026-11-20T09:40:00Z")])
def test_time_field_is_iso_utc(typed, expected):
    """Invariant: the wizard's time field reads ISO 8601 with a 24-hour clock as UTC."""
    from offsetkeeper.web.timefield import datetime_local_to_iso

    assert datetime_local_to_iso(typed) == expected


def test_typed_listing_is_reused_for_its_ttl_per_cluster():
    """Invariant: the groups page's typed listing (one Java admin call) is fetched once per
    cluster within LISTING_TTL_S and again after it; clusters never share an entry."""
    from offsetkeeper.ops.group_pages import ListingCache

    now = [100.0]
    cache = ListingCache(ttl_s=10.0, clock=lambda: now[0])
    calls: list[str] = []

    def fetch(name):
        return lambda: calls.append(name) or (name, len(calls))

    assert cache.get("a", fetch("a")) == ("a", 1)
    now[0] += 9.9
    assert cache.get("a", fetch("a")) == ("a", 1)
    assert cache.get("b", fetch("b")) == ("b", 2)
    now[0] += 0.2
    assert cache.get("a", fetch("a")) == ("a", 3)
    assert calls == ["a", "b", "a"]
