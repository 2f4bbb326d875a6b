"""`offsetkeeper ui` refuses unsafe or malformed settings before serving anything (exit 2)."""

from __future__ import annotations

import pytest

from tests.cli import run_cli


@pytest.mark.parametrize("args,message", [
    (["--listen", "0.0.0.0:8080"], "not a loopback address: configure a token"),
    (["--listen", "10.0.0.5:80"], "not a loopback address"),
    (["--listen", "nonsense"], "is not HOST:PORT"),
    (["--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
])
def test_ui_refuses_bad_settings(capsys, monkeypatch, args, message):
    monkeypatch.delenv("OFFSETKEEPER_UI_TOKEN", raising=False)
    monkeypatch.delenv("OFFSETKEEPER_CONFIG", raising=False)
    r = run_cli(capsys, "ui", "-b", "127.0.0.1:1", *args)
    assert r.code == 2 and message in r.err


def test_ui_token_from_environment_allows_other_addresses(monkeypatch, tmp_path):
    """With $OFFSETKEEPER_UI_TOKEN a non-loopback address is accepted (and Host is not pinned)."""
    from offsetkeeper.web.server import ServeOptions, build

    monkeypatch.setenv("OFFSETKEEPER_UI_TOKEN", "t0ken-xyz")
    monkeypatch.setenv("OFFSETKEEPER_HISTORY_STORE", str(tmp_path / "history.db"))
    app, host, port = build(ServeOptions(listen="0.0.0.0:9999", bootstrap="127.0.0.1:1"))
    s = app.state.dash.settings
    assert (host, port) == ("0.0.0.0", 9999) and s.token == "t0ken-xyz"
    assert s.allowed_hosts == ("*",) and "t0ken-xyz" not in repr(s)


def test_ui_checkpoints_from_config_and_flags(tmp_path, monkeypatch, capsys):
    """ui.checkpoints in the config come first, then each --checkpoint; a checkpoint on a
    cluster that is not configured, or a name given twice, is refused before serving (exit 2)."""
    from offsetkeeper.web.checkpoints import CheckpointEntry
    from offsetkeeper.web.server import ServeOptions, build

    monkeypatch.delenv("OFFSETKEEPER_UI_TOKEN", raising=False)
    monkeypatch.setenv("OFFSETKEEPER_HISTORY_STORE", str(tmp_path / "history.db"))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("clusters:\n  prod: {bootstrap_servers: '127.0.0.1:1'}\n"
                   "ui:\n  checkpoints:\n    - {name: orders-job, path: /chk/orders, cluster: prod}\n"
                   "    - {path: '/chk/x''s <job>', source: 1}\n")
    app, _, _ = build(ServeOptions(config_path=cfg, checkpoints=("pay=/chk/payments",)))
    assert app.state.dash.settings.checkpoints == (
        CheckpointEntry("orders-job", "/chk/orders", "prod"),
        CheckpointEntry("x's <job>", "/chk/x's <job>", None, 1),
        CheckpointEntry("pay", "/chk/payments"))
    r = run_cli(capsys, "ui", "--config", str(cfg), "--checkpoint", "/other/orders-job")
    assert r.code == 2 and "'orders-job' is given twice" in r.err
    bad = tmp_path / "bad.yaml"
    bad.write_text("clusters:\n  prod: {bootstrap_servers: '127.0.0.1:1'}\n"
                   "ui:\n  checkpoints: [{path: /chk/a, cluster: dr}]\n")
    r = run_cli(capsys, "ui", "--config", str(bad))
    assert r.code == 2 and "cluster 'dr' is not configured" in r.err
    bad.write_text("ui:\n  checkpoints: [{name: a}]\n")
    r = run_cli(capsys, "ui", "--config", str(bad), "-b", "127.0.0.1:1")
    assert r.code == 2 and "path" in r.err


def test_ui_builds_its_execute_options_once_and_every_page_uses_them(tmp_path, monkeypatch):
    """Invariant: `ui`'s snapshot flags become the dashboard's one ExecuteOptions at start
    (`UiSettings.execute`, what its resets and rollbacks execute with), and the snapshots page
    reads the store those options name — here the config file's `snapshots.store`."""
    from starlette.testclient import TestClient

    from offsetkeeper.ops import ExecuteOptions
    from offsetkeeper.snapshots.model import GroupSnapshot, Snapshot
    from offsetkeeper.snapshots.store import SnapshotStore
    from offsetkeeper.web.server import ServeOptions, build

    monkeypatch.delenv("OFFSETKEEPER_UI_TOKEN", raising=False)
    monkeypatch.delenv("OFFSETKEEPER_SNAPSHOT_STORE", raising=False)
    monkeypatch.setenv("OFFSETKEEPER_HISTORY_STORE", str(tmp_path / "history.db"))
    store = tmp_path / "snaps"
    cfg = tmp_path / "c.yaml"
    cfg.write_text("clusters:\n  prod: {bootstrap_servers: '127.0.0.1:1'}\n"
                   f"snapshots:\n  store: '{store}'\n")
    sid = SnapshotStore(str(store)).save(Snapshot(
        "snap-20261121T194501.123Z-1a2b", "2026-11-21T19:45:01.123Z", "c", "127.0.0.1:1",
        "before reset", {"g": GroupSnapshot("empty")}))
    app, _, _ = build(ServeOptions(config_path=cfg))
    assert app.state.dash.settings.execute == ExecuteOptions(config_path=cfg)
    page = TestClient(app, base_url="http://127.0.0.1").get("/c/prod/snapshots?format=json")
    assert page.status_code == 200
    assert [s["id"] for s in page.json()["snapshots"]] == [sid]
