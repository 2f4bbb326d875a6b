"""History commands over a real SQLite store (no broker needed): names are data, exit codes."""

from __future__ import annotations

import csv
import io

import pytest

from offsetkeeper.history.model import Cycle, Sample
from offsetkeeper.history.store import open_store
from tests.cli import run_cli

NAME = "we'ird\n<script>[/]x[bold]"
T0 = 1_780_000_000_000  # months before the tests run


@pytest.fixture
def db(tmp_path):
    path = str(tmp_path / "h.db")
    with open_store(path) as s:
        for i in range(3):
            ts = T0 + 1000 * i
            s.write([Sample(ts, NAME, "t[/]", 0, 5, 0, 9 + i)], Cycle(ts, 1000, 1, 1, 1))
    return path


def test_names_with_markup_and_newlines_render(capsys, db):
    """Invariant: group/topic names holding Rich markup or newlines never break a table and
    reach CSV/JSON unchanged."""
    for args in (["history", "show", NAME, "--since", "1000d"],
                 ["history", "at", NAME, "--time", "now"],
                 ["lag", "status", NAME, "--window", "2"],
                 ["lag", "status", "--all-groups", "--window", "2", "--partitions"]):
        r = run_cli(capsys, *args, "--store", db)
        assert r.code in (0, 1) and "Traceback" not in r.err, (args, r.err)
        assert "[/]" in r.out and "\\[/]" not in r.out  # shown literally, escaped exactly once
    r = run_cli(capsys, "history", "show", NAME, "--since", "1000d", "--store", db, "-o", "csv")
    rows = list(csv.reader(io.StringIO(r.out)))
    assert rows[0][:3] == ["time", "time_iso", "topic"] and rows[1][2] == "t[/]" and len(rows) == 4
    r = run_cli(capsys, "lag", "status", NAME, "--window", "2", "--store", db, "-o", "json")
    assert r.json()[0]["group"] == NAME


def test_stopped_group_is_err_and_exit_1(capsys, db):
    r = run_cli(capsys, "lag", "status", NAME, "--window", "3", "--store", db, "-o", "json")
    assert r.code == 1 and r.json()[0]["partitions"][0]["status"] == "STOP"
    # samples from months ago: the verdict says they are stale
    assert "is the sampler running?" in r.json()[0]["reason"]
    r = run_cli(capsys, "lag", "status", NAME, "--window", "3", "--allowed-lag", "100", "--store", db)
    assert r.code == 0


def test_empty_store_and_unknown_group_are_usage_errors(capsys, tmp_path, db):
    empty = str(tmp_path / "empty.db")
    r = run_cli(capsys, "lag", "status", "--all-groups", "--store", empty)
    assert r.code == 2 and "no samples yet" in r.err
    r = run_cli(capsys, "history", "show", "nobody", "--store", db)
    assert r.code == 2 and "has no samples of group 'nobody'" in r.err
    r = run_cli(capsys, "history", "show", NAME, "--since", "1h", "--store", db)
    assert r.code == 2 and "no samples of group" in r.err
    r = run_cli(capsys, "history", "show", NAME, "--since", "1h", "--until", "2h", "--store", db)
    assert r.code == 2 and "is after --until" in r.err


def test_reads_of_a_missing_store_create_nothing(capsys, tmp_path, monkeypatch):
    """Invariant (issue 31 item 12): a read has no side effects: `lag status`, `history show`,
    `history at` and `history plot` with no store (the default SQLite file) or a --store file
    that does not exist create no file and no directory; they say the store does not exist
    (exit 2)."""
    monkeypatch.delenv("OFFSETKEEPER_HISTORY_STORE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    missing = tmp_path / "sub" / "h.db"
    for args in (("lag", "status", "--all-groups"), ("history", "show", "g"),
                 ("history", "at", "g", "--time", "now"),
                 ("history", "plot", "g", "--out", str(tmp_path / "p.png"))):
        for store in ((), ("--store", str(missing))):
            r = run_cli(capsys, *args, *store)
            assert r.code == 2 and "does not exist" in r.err, (args, store, r)
    assert sorted(p.name for p in tmp_path.iterdir()) == [], list(tmp_path.rglob("*"))


def test_plot_names_with_dollars(tmp_path, capsys):
    """Invariant: `$` in names is not read as matplotlib math (which would fail to render)."""
    path = str(tmp_path / "h.db")
    with open_store(path) as s:
        for i in range(3):
            s.write([Sample(T0 + 1000 * i, "pay$ments$", "or$ders", 0, 5, 0, 9 + i)])
    r = run_cli(capsys, "history", "plot", "pay$ments$", "--since", "1000d",
                "--out", str(tmp_path / "p.png"), "--store", path)
    assert r.code == 0, r.err
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"
