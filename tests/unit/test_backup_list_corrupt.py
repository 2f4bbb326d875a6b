"""`backups list` (library, command line, dashboard) shows a backup whose manifest cannot be
read as a row with the error, instead of hiding it."""

from __future__ import annotations

import json

import pytest

from offsetkeeper.backup.manifest import Manifest, SourceInfo, list_backups, save_manifest
from tests.cli import run_cli


@pytest.fixture
def dest(tmp_path):
    """good (a valid manifest), broken (not JSON), future (format_version 99)."""
    save_manifest(str(tmp_path), Manifest(backup_id="good", created_at="x", updated_at="y",
                                          source=SourceInfo(bootstrap_servers="h:1")))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "manifest.json").write_text('{"format_version": 1, "backup_')
    (tmp_path / "future").mkdir()
    (tmp_path / "future" / "manifest.json").write_text(json.dumps({"format_version": 99}))
    (tmp_path / "not-a-backup").mkdir()  # no manifest at all: not a backup, not listed
    return tmp_path


def test_the_library_lists_unreadable_manifests_with_their_error(dest):
    """Invariant: every directory holding a manifest.json is listed, by id; an unreadable one
    has no manifest and an error saying why (it is a backup someone may count on)."""
    entries = {e.backup_id: e for e in list_backups(str(dest))}
    assert sorted(entries) == ["broken", "future", "good"]
    assert entries["good"].manifest is not None and entries["good"].error is None
    assert entries["broken"].manifest is None and "not valid JSON" in entries["broken"].error
    assert "format_version 99" in entries["future"].error


def test_the_command_shows_them_as_rows_with_the_error(dest, capsys):
    """Invariant: `backups list` exits 0, prints a row per backup (the unreadable ones with an
    error column) and one warning line on stderr."""
    r = run_cli(capsys, "backups", "list", "--dest", str(dest), "-o", "json")
    assert r.code == 0
    rows = {row["backup_id"]: row for row in r.json()}
    assert sorted(rows) == ["broken", "future", "good"]
    assert rows["good"]["error"] is None and rows["good"]["runs"] == 0
    assert "not valid JSON" in rows["broken"]["error"] and rows["broken"]["runs"] is None
    assert "2 backup(s) with an unreadable manifest" in r.err


def test_the_dashboard_shows_them_with_the_error(dest):
    """Invariant: the dashboard's backup list has a line per backup, the unreadable ones with
    their error (rendered as an error row, not a link)."""
    from offsetkeeper.web.backups import list_destination

    lines = {b.backup_id: b for b in list_destination(str(dest))}
    assert sorted(lines) == ["broken", "future", "good"]
    assert lines["good"].error is None and lines["good"].source == "h:1"
    assert "format_version 99" in lines["future"].error


def test_the_dashboard_page_renders_the_error_row(dest, tmp_path_factory):
    """Invariant: the backups page renders an unreadable backup as a row with its error (and
    the readable one as a link); the page's JSON carries the error too."""
    from starlette.testclient import TestClient

    from tests.web_support import make_app

    app = make_app("127.0.0.1:1", tmp_path_factory.mktemp("ui"), backup_destinations=(str(dest),))
    with TestClient(app, base_url="http://127.0.0.1") as client:
        html = client.get("/backups").text
        data = client.get("/backups", headers={"accept": "application/json"}).json()
    assert "unreadable manifest:" in html and "not valid JSON" in html
    assert 'href="/backups/0/good"' in html and 'href="/backups/0/broken"' not in html
    errors = {b["backup_id"]: b["error"] for b in data["destinations"][0]["backups"]}
    assert errors["good"] is None and "format_version 99" in errors["future"]
