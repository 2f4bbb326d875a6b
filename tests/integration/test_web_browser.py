"""The dashboard in a real browser: Debian's headless Chromium driven by Selenium, against a
uvicorn server started here on a free loopback port, talking to the real broker.

Each test saves screenshots of the pages it visits under tests/artifacts/web/ (ignored by git)
or $OFFSETKEEPER_UI_SCREENSHOTS, to be looked at.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from offsetkeeper.devbroker import free_port
from tests.kafkatools import LiveConsumer, commit, committed, create_topic, produce_n
from tests.web_support import fill_history, make_app, make_backup

pytestmark = [pytest.mark.integration, pytest.mark.slow]

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
SHOTS = Path(os.environ.get("OFFSETKEEPER_UI_SCREENSHOTS")
             or Path(__file__).resolve().parents[1] / "artifacts" / "web")

if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):  # pragma: no cover
    pytest.skip("Debian chromium and chromium-driver are not installed", allow_module_level=True)


class Server:
    """uvicorn serving an app in a thread, on a free loopback port."""

    def __init__(self, app) -> None:
        import uvicorn

        self.port = free_port()
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.05)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture
def browser(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                 f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)


def shot(driver, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    # The whole page, not only the window: resize to the document height first.
    height = driver.execute_script("return Math.max(document.body.scrollHeight, 600)")
    driver.set_window_size(1400, min(int(height) + 120, 4000))
    driver.save_screenshot(str(SHOTS / f"{name}.png"))
    driver.set_window_size(1400, 1000)


@pytest.fixture
def topic(bootstrap, unique):
    name = unique("orders")
    create_topic(bootstrap, name, 2, {"retention.ms": "-1"})
    produce_n(bootstrap, name, 2, 10)
    return name


@pytest.fixture
def group(bootstrap, unique, topic):
    g = unique("payments")
    commit(bootstrap, g, {(topic, 0): 5, (topic, 1): 5})
    return g


@pytest.fixture
def server(bootstrap, tmp_path, group, topic):
    hist = str(tmp_path / "history.db")
    fill_history(hist, group, topic, cycles=60)
    srv = Server(make_app(bootstrap, tmp_path, history_url=hist))
    yield srv
    srv.stop()


def by(driver, css: str, timeout: float = 30):
    """The element, waiting for it to appear (a click that submits a form returns early)."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(
        ec.presence_of_element_located((By.CSS_SELECTOR, css)))


def all_by(driver, css: str):
    from selenium.webdriver.common.by import By

    return driver.find_elements(By.CSS_SELECTOR, css)


def test_wizard_end_to_end(browser, server, bootstrap, group, topic):
    """Groups -> group (lag chart from the history store) -> wizard -> preview (nothing changed)
    -> execute (offsets checked with an independent client) -> rollback from the UI."""
    d = browser
    # The groups page shows 100 groups a page: filter to this test's group (the session's
    # broker holds every other test's groups too).
    d.get(f"{server.url}/c/default/groups?q={group}")
    assert group in by(d, "#groups-table").text
    shot(d, "01-groups")
    link = next(a for a in all_by(d, "#groups-table td.name a") if a.text == group)
    link.click()
    assert by(d, "#group-name").text == group
    lines = all_by(d, "#charts svg polyline.chart-line")
    assert len(lines) == 2 and len(lines[0].get_attribute("points").split()) > 10
    assert by(d, "#group-status").text in ("OK", "WARN")
    shot(d, "02-group")
    by(d, "#reset-link").click()
    assert by(d, "#f-groups").get_attribute("value") == group
    by(d, "#f-topics").send_keys(topic)
    by(d, "#kind-to-offset").click()
    assert by(d, "#v-to-offset").is_displayed() and not by(d, "#v-shift-by").is_displayed()
    by(d, "#v-to-offset").send_keys("8")
    shot(d, "03-wizard")
    by(d, "#preview-button").click()
    assert "--to-offset 8" in by(d, "#plan-target").text
    targets = [td.text for td in all_by(d, "#plan-table td.target")]
    assert targets == ["8", "8"]
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}
    shot(d, "04-plan")
    by(d, "#execute-button").click()
    assert by(d, "#report-status").text.startswith("SUCCESS")
    snapshot_id = by(d, "#snapshot-id").text
    assert committed(bootstrap, group, topic, 2) == {0: 8, 1: 8}
    shot(d, "05-report")
    by(d, "#rollback-button").click()
    assert snapshot_id in by(d, "#plan-target").text
    assert [td.text for td in all_by(d, "#plan-table td.target")] == ["5", "5"]
    assert committed(bootstrap, group, topic, 2) == {0: 8, 1: 8}
    shot(d, "06-rollback-plan")
    by(d, "#execute-button").click()
    assert by(d, "#report-status").text.startswith("SUCCESS")
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}
    shot(d, "07-rollback-report")
    d.get(f"{server.url}/c/default/snapshots")
    assert snapshot_id in by(d, "#snapshots-table").text
    shot(d, "08-snapshots")
    d.get(f"{server.url}/c/default/snapshots/{snapshot_id}")
    assert by(d, "#no-diff").is_displayed()          # rolled back: live equals the snapshot
    shot(d, "09-snapshot-diff")


def test_active_group_refused(browser, server, bootstrap, group, topic):
    d = browser
    consumer = LiveConsumer(bootstrap, group, [topic])
    try:
        d.get(f"{server.url}/c/default/group?g={group}")
        assert f"{topic}:0" in by(d, "#members-table").text        # member and its assignment
        assert by(d, ".facts .state-stable").text == "stable"
        shot(d, "10-group-with-member")
        d.get(f"{server.url}/c/default/reset?g={group}")
        by(d, "#kind-to-earliest").click()
        by(d, "#preview-button").click()
        assert "active member" in by(d, "p.refused").text
        assert not all_by(d, "#execute-button")
        shot(d, "10b-refused-active-group")
    finally:
        consumer.stop()
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}


def test_xss_in_group_name(browser, server, bootstrap, topic, unique):
    """A group named like a script is shown as text; no script runs (no alert opens)."""
    from selenium.common.exceptions import NoAlertPresentException

    d = browser
    mark = unique("xss")
    evil = f"<script>alert(1)</script>{mark}"
    commit(bootstrap, evil, {(topic, 0): 1})
    commit(bootstrap, f"[/]{mark}", {(topic, 0): 1})
    d.get(f"{server.url}/c/default/groups?q={mark}")    # this test's two groups
    names = [a.text for a in all_by(d, "#groups-table td.name a")]
    assert evil in names and any(n.startswith("[/]") for n in names)
    with pytest.raises(NoAlertPresentException):
        d.switch_to.alert.text  # noqa: B018
    shot(d, "11-xss-groups")
    next(a for a in all_by(d, "#groups-table td.name a") if a.text == evil).click()
    assert by(d, "#group-name").text == evil
    with pytest.raises(NoAlertPresentException):
        d.switch_to.alert.text  # noqa: B018
    shot(d, "12-xss-group")


def test_post_without_csrf_refused(browser, server, bootstrap, group, topic):
    """The wizard's form submitted without its CSRF field is refused; nothing changes."""
    d = browser
    d.get(f"{server.url}/c/default/reset?g={group}")
    by(d, "#kind-to-earliest").click()
    d.execute_script("document.querySelector('#reset-form input[name=csrf]').remove()")
    by(d, "#preview-button").click()
    assert "CSRF" in by(d, "#error-message").text
    shot(d, "13-csrf-refused")
    status = d.execute_async_script("""
        const done = arguments[arguments.length - 1];
        const body = new URLSearchParams({groups: arguments[0], kind: 'to-earliest',
                                          all_topics: 'on'});
        fetch('/c/default/reset/preview', {method: 'POST', body}).then(r => done(r.status));
    """, group)
    assert status == 403
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}


def test_read_only_mode(browser, bootstrap, tmp_path, group, topic):
    srv = Server(make_app(bootstrap, tmp_path, read_only=True))
    try:
        d = browser
        d.get(f"{srv.url}/c/default/group?g={group}")
        assert by(d, "#read-only-badge").is_displayed()
        assert not all_by(d, "#reset-link")
        assert "Reset offsets" not in by(d, "header").text
        shot(d, "14-read-only-group")
        d.get(f"{srv.url}/c/default/reset?g={group}")
        assert "read-only" in by(d, "#error-message").text
        shot(d, "15-read-only-reset-refused")
    finally:
        srv.stop()
    assert committed(bootstrap, group, topic, 2) == {0: 5, 1: 5}


def test_backups_page(browser, bootstrap, tmp_path):
    dest = tmp_path / "backups"
    make_backup(str(dest), bootstrap)
    srv = Server(make_app(bootstrap, tmp_path, backup_destinations=(str(dest),)))
    try:
        d = browser
        d.get(f"{srv.url}/backups")
        shot(d, "16-backups")
        by(d, ".backups-table a").click()
        assert by(d, "#validation").text == "OK"
        by(d, "#restores-table a").click()
        assert "10–15" in by(d, "#mapping-table").text
        shot(d, "17-backup-restore-mapping")
    finally:
        srv.stop()


def test_streaming_checkpoints_pages(browser, bootstrap, tmp_path, topic):
    """The checkpoints page shows each query's batch and lag (a missing checkpoint as an error
    row), and a checkpoint's page its partitions against the log; names render as text."""
    from offsetkeeper.web.checkpoints import CheckpointEntry
    from tests.streaming_support import jvm_checkpoint

    good = jvm_checkpoint(tmp_path / "orders-ck", {0: {topic: {"0": 3, "1": 4}},
                                                   1: {topic: {"0": 6, "1": 7}}}, commits=[0, 1])
    cks = (CheckpointEntry("orders-to-parquet", good),
           CheckpointEntry("<b>gone</b>", str(tmp_path / "missing")))
    srv = Server(make_app(bootstrap, tmp_path, checkpoints=cks))
    try:
        d = browser
        d.get(f"{srv.url}/checkpoints")
        rows = all_by(d, "#checkpoints-table tbody tr")
        # lag 7 with no batch running: never OK (OK is a query that caught up)
        assert "orders-to-parquet" in rows[0].text and " OK " not in f" {rows[0].text} "
        assert "STALLED" in rows[0].text or "LAGGING" in rows[0].text
        assert by(d, "#checkpoints-table .total-lag").text == "7"   # (10-6) + (10-7)
        assert "<b>gone</b>" in by(d, "#checkpoints-table").text     # shown as text
        assert "does not exist" in by(d, "tr.reason-row .error").text
        shot(d, "18-streaming-checkpoints")
        by(d, "#checkpoints-table a").click()
        assert by(d, "#checkpoint-name").text == "orders-to-parquet"
        assert by(d, "#total-lag").text == "7"
        lags = [e.text for e in all_by(d, "#partitions-table td.lag")]
        assert lags == ["4", "3"]
        assert "offsets/1 (committed)" in by(d, "#position-from").text
        assert "offsetkeeper streaming reset" in by(d, "#commands").text
        shot(d, "19-streaming-checkpoint")
    finally:
        srv.stop()


def test_groups_of_every_type(browser, bootstrap, tmp_path, tmp_path_factory, topic):
    """The groups page in a browser with a classic, a consumer-protocol, a share and a streams
    group (type and protocol columns, the type filter), and the share and streams groups'
    pages reached by their links. Screenshots: 20-groups-types, 21-share-group, 22-streams-group."""
    import uuid

    from offsetkeeper.kafka import jvm
    from tests.group_types_support import typed_groups

    if not jvm.available():
        pytest.skip("the JVM admin helper is not built (scripts/setup.sh)")
    token = f"b{uuid.uuid4().hex[:8]}"
    with typed_groups(bootstrap, token, str(tmp_path_factory.mktemp("streams-state"))) as tg:
        srv = Server(make_app(bootstrap, tmp_path))
        try:
            d = browser
            deadline = time.monotonic() + 60
            while True:
                d.get(f"{srv.url}/c/default/groups?q={token}")
                rows = {r.get_attribute("data-type") for r in
                        all_by(d, "#groups-table tbody tr[data-type]")}
                if rows == {"classic", "consumer", "share", "streams"}:
                    break
                assert time.monotonic() < deadline, rows
                time.sleep(1)
            text = by(d, "#groups-table").text
            for g in (tg.classic, tg.consumer, tg.share, tg.streams):
                assert g in text
            head = by(d, "#groups-table thead").text
            assert "type" in head and "protocol" in head
            shot(d, "20-groups-types")
            from selenium.webdriver.support.ui import Select

            Select(by(d, "#filter-type")).select_by_value("streams")
            by(d, "#group-filter button").click()
            deadline = time.monotonic() + 30
            while "type=streams" not in d.current_url:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert [a.text for a in all_by(d, "#groups-table td.name a")] == [tg.streams]
            d.get(f"{srv.url}/c/default/groups?q={token}")
            next(a for a in all_by(d, "#groups-table td.name a") if a.text == tg.share).click()
            assert by(d, "#group-name").text == tg.share
            assert by(d, "#group-type").text == "share"
            assert len(all_by(d, "#partitions-table tbody tr")) == 3
            shot(d, "21-share-group")
            d.back()
            next(a for a in all_by(d, "#groups-table td.name a") if a.text == tg.streams).click()
            assert by(d, "#group-name").text == tg.streams
            assert "0:[0,1]" in by(d, "#members-table").text
            assert tg.streams_input in by(d, "#topology-table").text
            shot(d, "22-streams-group")
        finally:
            srv.stop()
