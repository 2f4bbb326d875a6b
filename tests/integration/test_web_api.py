"""The dashboard's HTTP API against the real broker: every endpoint's status codes, the guards
(authentication, CSRF, read-only, loopback Host), names as data, secrets never returned, and the
reset flow (preview -> execute -> rollback) checked with an independent client."""

from __future__ import annotations

import base64
import re
import warnings

import pytest

from offsetkeeper.config import ClusterModel, ConfigFile
from offsetkeeper.ops.reset import ExecuteOptions
from offsetkeeper.web.app import UiSettings, create_app
from offsetkeeper.web.clusters import Clusters
from tests.kafkatools import LiveConsumer, commit, committed, create_topic, produce_n
from tests.web_support import confirm_data, csrf_of, fill_history, make_app, make_backup

warnings.filterwarnings("ignore", message=".*httpx.*", category=DeprecationWarning)
from starlette.testclient import TestClient  # noqa: E402

pytestmark = pytest.mark.integration
BASE_MS = 1_700_000_000_000
PLAN_RE = re.compile(r"/plans/([A-Za-z0-9_-]+)/execute")
SNAP_RE = re.compile(r'id="snapshot-id">([^<]+)<')


@pytest.fixture
def topic(bootstrap, unique):
    name = unique("orders")
    create_topic(bootstrap, name, 2, {"retention.ms": "-1"})
    produce_n(bootstrap, name, 2, 10, timestamp_ms=lambda p, i: BASE_MS + i * 1000)
    return name


@pytest.fixture
def group(bootstrap, unique, topic):
    g = unique("grp")
    commit(bootstrap, g, {(topic, 0): 5, (topic, 1): 5})
    return g


def client(app) -> TestClient:
    return TestClient(app, base_url="http://127.0.0.1")


@pytest.fixture
def web(bootstrap, tmp_path):
    hist = str(tmp_path / "history.db")
    return client(make_app(bootstrap, tmp_path, history_url=hist)), hist


def csrf(c: TestClient) -> str:
    return csrf_of(c.get("/c/default/snapshots").text)


def preview(c: TestClient, group: str, topic: str, kind: str, value: str | None = None,
            **extra) -> tuple[int, str]:
    data = {"csrf": csrf(c), "groups": group, "topics": topic, "kind": kind, **extra}
    if value is not None:
        data[f"value_{kind}"] = value
    r = c.post("/c/default/reset/preview", data=data)
    return r.status_code, r.text


def test_pages_and_status_codes(web, group, topic):
    """Every GET endpoint: 200 for good input, 400/404 with a message for bad input."""
    c, hist = web
    fill_history(hist, group, topic)
    assert c.get("/", follow_redirects=False).status_code == 303
    assert c.get("/healthz").json() == {"ok": True, "read_only": False}
    for path in ("/c/default/groups", "/c/default/snapshots", "/backups", "/login",
                 f"/c/default/reset?g={group}"):
        r = c.get(path)
        assert r.status_code == 200, (path, r.text[-1500:])
        assert r.headers["content-type"].startswith("text/html")
    r = c.get("/c/default/group", params={"g": group, "range": "24h"})
    assert r.status_code == 200 and 'class="chart-line"' in r.text
    j = c.get("/c/default/group", params={"g": group, "format": "json"}).json()
    assert j["group"]["group"] == group and len(j["series"]["lag"]) == 40
    assert {p["committed"] for p in j["group"]["partitions"]} == {5}
    rows = c.get("/c/default/groups", params={"format": "json", "q": group}).json()["groups"]
    mine = next(r for r in rows if r["group"] == group)
    assert mine["lag"] == 10 and mine["status"] in ("OK", "WARN") and mine["spark"]
    assert c.get("/static/style.css").status_code == 200
    assert c.get("/static/app.js").headers["content-type"].startswith(("text/javascript",
                                                                       "application/javascript"))
    # bad input
    assert c.get("/c/nosuch/groups").status_code == 404
    assert c.get("/c/default/group").status_code == 400
    assert c.get("/c/default/group", params={"g": group, "range": "5y"}).status_code == 400
    r = c.get("/c/default/group", params={"g": "no-such-group-xyz", "format": "json"})
    assert r.status_code == 404 and "no-such-group-xyz" in r.json()["error"]
    assert c.get("/nowhere").status_code == 404
    assert c.get("/c/default/snapshots/nosuch").status_code in (400, 404)
    assert c.get("/backups/0/x").status_code == 400          # no destination configured
    assert c.get("/c/default/reset/preview").status_code == 405
    assert c.get("/api/csrf").json()["csrf"] == csrf(c)


def test_security_headers_and_cookie(web):
    c, _ = web
    r = c.get("/c/default/groups")
    csp = r.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie


def test_host_header_must_be_loopback(bootstrap, tmp_path):
    """DNS rebinding: a loopback-bound dashboard answers only to loopback host names."""
    c = TestClient(make_app(bootstrap, tmp_path), base_url="http://evil.example")
    assert c.get("/healthz").status_code == 400


def test_post_without_csrf_refused(web, group, topic):
    """Every state-changing endpoint refuses a POST without (or with a wrong) CSRF token."""
    c, _ = web
    data = {"groups": group, "topics": topic, "kind": "to-earliest"}
    assert c.post("/c/default/reset/preview", data=data).status_code == 403
    assert c.post("/c/default/reset/preview", data={**data, "csrf": "x" * 64}).status_code == 403
    other = TestClient(c.app, base_url="http://127.0.0.1")     # another session's token
    assert other.post("/c/default/reset/preview",
                      data={**data, "csrf": csrf(c)}).status_code == 403
    _code, html = preview(c, group, topic, "to-earliest")
    pid = PLAN_RE.search(html).group(1)
    assert c.post(f"/c/default/plans/{pid}/execute").status_code == 403
    assert c.post("/c/default/snapshots/x/rollback").status_code == 403
    assert c.post("/logout").status_code == 403
    assert committed(bootstrap_of(c), group, topic, 2) == {0: 5, 1: 5}


def bootstrap_of(c: TestClient) -> str:
    return c.app.state.dash.clusters._conns["default"].bootstrap_servers


def test_reset_preview_execute_rollback(web, group, topic, bootstrap):
    """The wizard's API: the preview changes nothing; execute applies exactly the previewed
    plan once; the report's snapshot rolls it back through a previewed rollback plan."""
    c, _ = web
    code, html = preview(c, group, topic, "to-offset", "8")
    assert code == 200 and "nothing has changed yet" in html
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}
    pid = PLAN_RE.search(html).group(1)
    tok = csrf(c)
    wrong = c.post(f"/c/default/plans/{pid}/execute", data={"csrf": tok, "fingerprint": "0" * 16})
    assert wrong.status_code == 400 and "is not the plan" in wrong.text  # the plan stays
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}
    r = c.post(f"/c/default/plans/{pid}/execute", data=confirm_data(html, tok))
    assert r.status_code == 200 and "SUCCESS" in r.text
    assert committed(bootstrap, group, topic, 2) == {0: 8, 1: 8}
    snap = SNAP_RE.search(r.text).group(1)
    again = c.post(f"/c/default/plans/{pid}/execute", data=confirm_data(html, tok))
    assert again.status_code == 400 and "already executed" in again.text
    d = c.get(f"/c/default/snapshots/{snap}", params={"format": "json"}).json()
    assert {(x["before"], x["after"]) for x in d["diff"]} == {(5, 8)}
    r = c.post(f"/c/default/snapshots/{snap}/rollback", data={"csrf": tok})
    assert r.status_code == 200 and "Rollback plan" in r.text
    assert committed(bootstrap, group, topic, 2) == {0: 8, 1: 8}
    rpid = PLAN_RE.search(r.text).group(1)
    r = c.post(f"/c/default/plans/{rpid}/execute", data=confirm_data(r.text, tok),
               headers={"accept": "application/json"})
    assert r.status_code == 200 and r.json()["report"]["status"] == "SUCCESS"
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}


@pytest.mark.parametrize("kind,value,expect", [
    ("to-earliest", None, {0: 0, 1: 0}),
    ("to-latest", None, {0: 10, 1: 10}),
    ("shift-by", "-2", {0: 3, 1: 3}),
    ("to-datetime", "2023-11-14T22:13:27", {0: 7, 1: 7}),   # BASE_MS + 7 s, datetime-local
    ("to-offset", "99", {0: 10, 1: 10}),                     # clamped, with a note
])
def test_targets(web, group, topic, bootstrap, kind, value, expect):
    c, _ = web
    code, html = preview(c, group, topic, kind, value)
    assert code == 200, html
    if kind == "to-offset":
        assert "clamped to log end" in html
    r = c.post(f"/c/default/plans/{PLAN_RE.search(html).group(1)}/execute",
               data=confirm_data(html, csrf(c)))
    assert r.status_code == 200
    assert committed(bootstrap, group, topic, 2) == expect


def test_from_group_and_from_file(web, group, topic, bootstrap, unique):
    c, _ = web
    src = unique("src")
    commit(bootstrap, src, {(topic, 0): 2, (topic, 1): 9})
    code, html = preview(c, group, topic, "from-group", src)
    assert code == 200
    c.post(f"/c/default/plans/{PLAN_RE.search(html).group(1)}/execute",
           data=confirm_data(html, csrf(c)))
    assert committed(bootstrap, group, topic, 2) == {0: 2, 1: 9}
    r = c.post("/c/default/reset/preview",
               data={"csrf": csrf(c), "groups": group, "topics": topic, "kind": "from-file"},
               files={"value_from-file": ("o.csv", f"{topic},0,4\n{topic},1,6\n".encode())})
    assert r.status_code == 200
    c.post(f"/c/default/plans/{PLAN_RE.search(r.text).group(1)}/execute",
           data=confirm_data(r.text, csrf(c)))
    assert committed(bootstrap, group, topic, 2) == {0: 4, 1: 6}


def test_bad_wizard_input_is_400(web, group, topic):
    c, _ = web
    assert preview(c, group, topic, "to-nowhere")[0] == 400
    assert preview(c, group, topic, "to-offset", "abc")[0] == 400
    assert preview(c, group, topic, "to-offset", "")[0] == 400
    assert preview(c, group, "no-such-topic-zz", "to-earliest")[0] == 400
    assert preview(c, "", topic, "to-earliest")[0] == 400


def test_active_group_refused(web, group, topic, bootstrap):
    """A group with members is refused in the preview (no execute button), and a plan previewed
    while the group was empty is refused at execute time once a consumer has joined."""
    c, _ = web
    _code, html = preview(c, group, topic, "to-earliest")
    pid = PLAN_RE.search(html).group(1)
    consumer = LiveConsumer(bootstrap, group, [topic])
    try:
        r = c.post(f"/c/default/plans/{pid}/execute", data=confirm_data(html, csrf(c)))
        assert r.status_code == 200 and "refused" in r.text
        _code, html = preview(c, group, topic, "to-earliest")
        assert "REFUSED" in html and "active member" in html
        assert PLAN_RE.search(html) is None
    finally:
        consumer.stop()
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}


def test_moved_offsets_refused_at_execute(web, group, topic, bootstrap):
    """Another writer moved the offsets between preview and confirmation: the executor refuses."""
    c, _ = web
    _code, html = preview(c, group, topic, "to-earliest")
    commit(bootstrap, group, {(topic, 0): 7, (topic, 1): 7})
    r = c.post(f"/c/default/plans/{PLAN_RE.search(html).group(1)}/execute",
               data=confirm_data(html, csrf(c)), headers={"accept": "application/json"})
    assert r.json()["report"]["status"] != "SUCCESS"
    assert "changed since planning" in r.text
    assert committed(bootstrap, group, topic, 2) == {0: 7, 1: 7}


def test_read_only_hides_and_refuses(bootstrap, tmp_path, group, topic):
    c = client(make_app(bootstrap, tmp_path, read_only=True))
    page = c.get("/c/default/groups").text
    assert "read-only" in page and "Reset offsets" not in page
    g = c.get("/c/default/group", params={"g": group}).text
    assert "reset-link" not in g
    assert c.get(f"/c/default/reset?g={group}").status_code == 403
    tok = csrf(c)
    data = {"csrf": tok, "groups": group, "topics": topic, "kind": "to-earliest"}
    r = c.post("/c/default/reset/preview", data=data)
    assert r.status_code == 403 and "read-only" in r.text
    assert c.post("/c/default/plans/abc/execute", data={"csrf": tok}).status_code == 403
    assert c.post("/c/default/snapshots/x/rollback", data={"csrf": tok}).status_code == 403
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}


def test_token_auth(bootstrap, tmp_path, group):
    """With a token: pages redirect to /login, the API answers 401; Bearer or the login cookie
    let a user in; HTTP basic is refused over plain HTTP; the token never comes back."""
    token = "tok-Secret-123"
    c = client(make_app(bootstrap, tmp_path, token=token))
    r = c.get("/c/default/groups", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login")
    assert c.get("/c/default/groups?format=json").status_code == 401
    assert c.get("/healthz").status_code == 200
    assert c.get("/c/default/groups", headers={"Authorization": "Bearer nope"},
                 follow_redirects=False).status_code == 303
    assert c.get("/c/default/groups?format=json",
                 headers={"Authorization": f"Bearer {token}"}).status_code == 200
    basic = base64.b64encode(f"ops:{token}".encode()).decode()
    assert c.get("/c/default/groups?format=json",
                 headers={"Authorization": f"Basic {basic}"}).status_code == 401
    login = c.get("/login")
    tok = csrf_of(login.text)
    assert c.post("/login", data={"csrf": tok, "token": "wrong"}).status_code == 401
    assert c.post("/login", data={"token": token}).status_code == 403          # no CSRF
    r = c.post("/login", data={"csrf": tok, "token": token, "next": "//evil.example/"},
               follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/"
    page = c.get("/c/default/groups", params={"q": group})
    assert page.status_code == 200 and group in page.text and token not in page.text
    c.post("/logout", data={"csrf": csrf_of(page.text)})
    assert c.get("/c/default/groups?format=json").status_code == 401
    tls = client(make_app(bootstrap, tmp_path, token=token, tls=True))
    assert tls.get("/c/default/groups?format=json",
                   headers={"Authorization": f"Basic {basic}"}).status_code == 200


def test_names_are_data(web, bootstrap, unique, topic):
    """A group called <script>… or [/] is shown as text in every page and plan."""
    c, _ = web
    evil = f"<script>alert(1)</script>{unique('x')}"
    odd = f"[/]{unique('y')}"
    for g in (evil, odd):
        commit(bootstrap, g, {(topic, 0): 1})
    page = c.get("/c/default/groups", params={"q": evil}).text
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert odd in c.get("/c/default/groups", params={"q": odd}).text
    gp = c.get("/c/default/group", params={"g": evil}).text
    assert "<script>alert(1)" not in gp and "&lt;script&gt;" in gp
    code, html = preview(c, evil, topic, "to-earliest")
    assert code == 200 and "<script>alert(1)" not in html


def test_secrets_never_returned(bootstrap, tmp_path, group):
    secret = "sasl-S3cret-pw"
    cfg = ConfigFile(clusters={"prod": ClusterModel(bootstrap_servers=bootstrap, properties={
        "sasl.username": "ops", "sasl.password": secret})})
    app = create_app(UiSettings(execute=ExecuteOptions(snapshot_store=str(tmp_path / "s")), token="tkn-1234",
                                allowed_hosts=("127.0.0.1",)), Clusters(cfg))
    c = client(app)
    h = {"Authorization": "Bearer tkn-1234"}
    for path in ("/c/prod/groups", "/c/prod/groups?format=json", "/c/prod/snapshots",
                 f"/c/prod/group?g={group}", "/c/prod/reset", "/backups", "/healthz"):
        text = c.get(path, headers=h).text
        assert secret not in text and "tkn-1234" not in text, path
    assert secret not in repr(app.state.dash.settings) + repr(app.state.dash.clusters._conns)


def test_backups_pages(web, bootstrap, tmp_path):
    """Backups are listed from the configured destinations only, with the quick validation."""
    from offsetkeeper.backup.manifest import Manifest, SourceInfo, now_iso, save_manifest

    dest = tmp_path / "backups"
    dest.mkdir()
    m = Manifest(backup_id="nightly-1", created_at=now_iso(), updated_at=now_iso(),
                 source=SourceInfo(bootstrap_servers=bootstrap))
    save_manifest(str(dest), m)
    c = client(make_app(bootstrap, tmp_path, backup_destinations=(str(dest),)))
    j = c.get("/backups?format=json").json()
    assert [b["backup_id"] for b in j["destinations"][0]["backups"]] == ["nightly-1"]
    r = c.get("/backups/0/nightly-1")
    assert r.status_code == 200 and 'id="validation">OK' in r.text
    assert c.get("/backups/1/nightly-1").status_code == 400
    assert c.get("/backups/0/..%2F..%2Fetc").status_code in (400, 404)
    assert c.get("/backups/0/nightly-1?restore=nope").status_code == 400
    assert c.get("/backups/0/nightly-1?restore=..%2Fx").status_code == 400


def test_backup_restore_mapping_summary(bootstrap, tmp_path):
    """A restore of a backup: its status in the list, and the mapping summary read with pyarrow
    (no Spark): per source partition, first/last source and target offsets."""
    dest = str(tmp_path / "backups")
    make_backup(dest, bootstrap)
    c = client(make_app(bootstrap, tmp_path, backup_destinations=(dest,)))
    page = c.get("/backups/0/b1").text
    assert "dr-1" in page and "completed" in page
    j = c.get("/backups/0/b1", params={"restore": "dr-1", "format": "json"}).json()
    assert j["mapping"]["status"] == "completed"
    row = j["mapping"]["rows"][0]
    assert (row["records"], row["source_first"], row["source_last"], row["target_first"],
            row["target_last"], row["target_log_end"]) == (3, 10, 15, 4, 6, 7)


def test_to_history_target(web, group, topic, bootstrap):
    """--to-history from the wizard: the offsets the group had at a time, from the store."""
    from datetime import UTC, datetime

    from offsetkeeper.history.model import Cycle, Sample
    from offsetkeeper.history.store import open_store

    c, hist = web
    base = int(datetime.now(UTC).timestamp() * 1000) - 600_000
    with open_store(hist) as st:
        for n in range(10):
            ts = base + n * 60_000
            st.write([Sample(ts=ts, group=group, topic=topic, partition=p, committed=n,
                             log_start=0, log_end=10) for p in range(2)],
                     Cycle(ts, 60_000, 1, 2, 1))
    assert "kind-to-history" in c.get(f"/c/default/reset?g={group}").text
    when = datetime.fromtimestamp((base + 4 * 60_000 + 1000) / 1000, UTC)
    code, html = preview(c, group, topic, "to-history", when.strftime("%Y-%m-%dT%H:%M:%S"))
    assert code == 200, html
    assert "history sample of" in html
    c.post(f"/c/default/plans/{PLAN_RE.search(html).group(1)}/execute",
           data=confirm_data(html, csrf(c)))
    assert committed(bootstrap, group, topic, 2) == {0: 4, 1: 4}


def test_to_history_hidden_without_store(bootstrap, tmp_path, group):
    c = client(make_app(bootstrap, tmp_path))
    assert "kind-to-history" not in c.get(f"/c/default/reset?g={group}").text


def test_groups_page_with_a_connect_worker_on_the_cluster(connect_worker, web, group):
    """Regression (a CI run of 2026-11-27): a Kafka Connect worker's coordination group
    (protocol type `connect`) on the cluster made the groups page answer 502 (a consumer-group
    describe of it fails the request); it is shown as listed beside the consumer groups."""
    c, _ = web
    r = c.get("/c/default/groups", params={"format": "json"})
    assert r.status_code == 200, r.text[-1500:]
    # the shared cluster holds other tests' groups too: ask for these two by name
    for name in (connect_worker.group_id, group):
        r = c.get("/c/default/groups", params={"format": "json", "q": name})
        assert r.status_code == 200, r.text[-1500:]
        rows = {g["group"]: g for g in r.json()["groups"]}
        assert name in rows, rows
    r = c.get("/c/default/groups", params={"format": "json", "q": connect_worker.group_id})
    assert r.json()["groups"][0]["protocol"] == "connect"


def test_group_page_reason_and_lag_come_from_the_same_sample(web, group, topic):
    """Invariant (issue 31 item 13b: the reason said "lag 328" beside a table saying 341):
    every lag the group page shows is labelled with the reading it comes from. The status,
    its reason and the "lag at sample" column come from the last history sample (and agree);
    "lag now" is the live read, timed; the two are never mixed in one column."""
    import html as htmllib

    from offsetkeeper.history.model import Cycle, Sample
    from offsetkeeper.history.store import open_store
    from offsetkeeper.times import iso_ms

    c, hist = web
    last = int(__import__("time").time() * 1000) - 60_000
    with open_store(hist) as st:  # the group sat at 3 of 10 for ten samples: lag 7
        for n in range(10):
            ts = last - (9 - n) * 60_000
            st.write([Sample(ts=ts, group=group, topic=topic, partition=p, committed=3,
                             log_start=0, log_end=10, state="empty", members=0)
                      for p in range(2)], Cycle(ts, 60_000, 1, 2, 1))
    data = c.get(f"/c/default/group?g={group}&format=json").json()["group"]
    assert [(p["lag"], p["sample_lag"]) for p in data["partitions"]] == [(5, 7), (5, 7)]
    assert data["history"]["last_sample_ms"] == last and data["read_at_ms"] > last
    assert "lag 7" in data["history"]["reason"] and "lag 5" not in data["history"]["reason"]

    page = c.get(f"/c/default/group?g={group}").text
    assert re.findall(r'class="num live-lag">(\d+)<', page) == ["5", "5"]
    assert re.findall(r'class="num sample-lag">(\d+)<', page) == ["7", "7"]
    assert f'<span id="sample-time">{iso_ms(last)}</span>' in page
    assert 'total lag now <b id="total-lag">10</b>' in page and 'id="read-at">(read ' in page
    reasons = [htmllib.unescape(r) for r in re.findall(r'<td colspan="9" class="reason">([^<]+)<', page)]
    assert len(reasons) == 2 and all(r.startswith(f"at the last sample ({iso_ms(last)}): ")
                                     and "lag 7" in r for r in reasons), reasons
