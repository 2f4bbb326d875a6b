"""The output contract (issue 21), one test per rule over every command of the Typer app.

Commands that can run without a cluster run here on small fixtures (a history store, a commit
history, a backup with a restore, a snapshot store, a Spark checkpoint); the ones that need a
broker or Spark are listed in NEEDS_CLUSTER and checked the same way in
tests/integration/test_output_contract.py. A new command with --output must join one of them.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import offsetkeeper
from offsetkeeper.cli.common import Duration
from offsetkeeper.cli.main import command
from offsetkeeper.history.model import Cycle, Position, Sample
from offsetkeeper.history.store import open_store
from offsetkeeper.restore.mapping import mapping_root_for, write_chunk
from offsetkeeper.restore.state import RestoreState, RestoreStatus, RouteState, save_state
from offsetkeeper.snapshots.store import SnapshotStore
from offsetkeeper.times import iso_ms, parse_duration_ms
from streaming_support import jvm_checkpoint
from tests.cli import run_cli
from tests.restore_support import rec, write_backup
from tests.unit.test_offsetlog_coordinator import (
    TOPIC_ID,
    _current,
    _epoch,
    _gone,
    _history,
    _member,
)
from tests.unit.test_offsetlog_history import _write as write_commit_history
from tests.unit.test_snapshot_store import make as make_snapshot

NAME = "[a/b]"  # a valid group and topic name that is also Rich markup
T0 = 1_700_000_000_000
ISO_TEXT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


def walk(cmd, path=()):
    subs = getattr(cmd, "commands", None)
    if subs:
        for name, sub in subs.items():
            yield from walk(sub, (*path, name))
    else:
        yield path, cmd


def _options(cmd):
    return [p for p in cmd.params if p.param_type_name == "option"]


def _parser(param):
    runtime = param.get_runtime_param() if hasattr(param, "get_runtime_param") else None
    return getattr(getattr(runtime, "parameter_info", None), "parser", None)


def _with_output():
    return {" ".join(path) for path, cmd in walk(command())
            if any("--output" in p.opts for p in _options(cmd))}


# -- fixtures: everything the offline commands read -------------------------------------------

@pytest.fixture
def world(tmp_path, monkeypatch):
    db = str(tmp_path / "h.db")
    with open_store(db) as s:
        for i in range(3):
            ts = T0 + 1000 * i
            s.write([Sample(ts, NAME, NAME, 0, 5, 0, 9 + i)], Cycle(ts, 1000, 1, 1, 1))
            s.write_positions([Position(ts, "http://w:8083", NAME, '{"filename":"/x"}',
                                        f'{{"position":{5 + i}}}')])
    commits = tmp_path / "commits"
    commits.mkdir()
    write_commit_history(commits, [
        {"group": NAME, "topic": NAME, "partition": 0, "offset": 5, "commit_timestamp": T0},
        {"group": NAME, "topic": NAME, "partition": 0, "offset": 9, "commit_timestamp": T0 + 2000}])
    members = tmp_path / "members"
    members.mkdir()
    from offsetkeeper.offsetlog.coordinator import uuid_str

    _history(members, [(T0, _member(NAME, "m1", ["orders"])), (T0, _epoch(NAME, 1)),
                       (T0 + 1, _current(NAME, "m1", 1, 0, [0])),
                       (T0 + 9000, _gone(_member(NAME, "m1", []))), (T0 + 9000, _epoch(NAME, 2))],
             {uuid_str(TOPIC_ID): "orders"})
    dest = str(tmp_path / "backups")
    write_backup(dest, "b", {"orders": {0: [rec(o, T0 + o, b"k", b"v") for o in range(0, 20, 2)]}},
                 groups={NAME: {("orders", 0): 5}})
    save_state(dest, "b", RestoreState("r1", "b", "dr:9092", {}, [RouteState("orders", 0, "dr", 0, 100, 110)],
                                       status=RestoreStatus.COMPLETED, started_at_ms=T0,
                                       finished_at_ms=T0 + 61_000))
    from offsetkeeper.models import TopicPartition as TP

    write_chunk(mapping_root_for(dest, "b", "r1"), "r1", TP("orders", 0), TP("dr", 0),
                list(range(0, 20, 2)), list(range(100, 110)), [T0] * 10)
    snaps = str(tmp_path / "snaps")
    snap = make_snapshot()
    SnapshotStore(snaps).save(snap)
    ck = jvm_checkpoint(tmp_path / "ck", {0: {NAME: {"0": 10}}, 1: {NAME: {"0": 23}}}, commits=[0])
    from offsetkeeper.consumer.live_auth import generate_key

    generate_key(tmp_path / "op.key")
    return {"db": db, "commits": str(commits), "members": str(members), "dest": dest, "snaps": snaps,
            "snap": snap.id, "ck": ck, "key": str(tmp_path / "op.key"),
            "newkey": str(tmp_path / "new.key")}


OFFLINE = {
    "history show": ["history", "show", NAME, "--since", "P5000D", "--store", "{db}"],
    "history at": ["history", "at", NAME, "--time", "now", "--store", "{db}"],
    "history positions": ["history", "positions", NAME, "--since", "P5000D", "--store", "{db}"],
    "lag status": ["lag", "status", NAME, "--window", "2", "--store", "{db}"],
    "commits show": ["commits", "show", NAME, "-H", "{commits}"],
    "commits at": ["commits", "at", NAME, "-H", "{commits}", "--time", "2030-01-01T00:00:00Z"],
    "snapshots list": ["snapshots", "list", "--store", "{snaps}"],
    "snapshots show": ["snapshots", "show", "{snap}", "--store", "{snaps}"],
    "backups list": ["backups", "list", "--dest", "{dest}"],
    "backups describe": ["backups", "describe", "b", "--dest", "{dest}"],
    "restore list": ["restore", "list", "{dest}/b"],
    "mapping show": ["mapping", "show", "{dest}/b", "--restore", "r1"],
    "mapping lookup": ["mapping", "lookup", "{dest}/b", "--restore", "r1", "--topic", "orders",
                       "--partition", "0", "--offset", "4"],
    "streaming show": ["streaming", "show", "{ck}"],
    "live-key public": ["live-key", "public", "{key}"],
    "live-key generate": ["live-key", "generate", "--out", "{newkey}"],
}
# Commands with --output that need a broker, ZooKeeper or Spark: tests/integration/test_output_contract.py.
NEEDS_CLUSTER = {
    "groups list", "groups describe", "groups delete", "offsets show", "offsets reset",
    "offsets delete", "snapshots create", "snapshots diff", "snapshots verify",
    "snapshots rollback", "backup run", "backups validate", "restore run", "restore validate",
    "restore three-phase", "streaming lag", "streaming reset", "streaming rollback",
    "streaming commit-to-group", "commits scan", "commits generations", "commits rate",
    "commits rewinds", "commits topics", "commits expired", "commits rebalances",
    "lab delivery", "dev-broker start", "dev-broker stop", "dev-broker status", "zk export",
    "spark-server start", "spark-server status", "spark-server stop",
    "share-groups list", "share-groups describe", "share-groups reset-offsets",
    "share-groups delete-offsets", "streams-groups list", "streams-groups describe",
    "streams-groups reset-offsets", "history report", "history export",
    # a Connect worker or MirrorMaker 2 (tests/integration/test_connect_offsets.py and
    # test_mm2_failover.py check their JSON with _check_times)
    "connect list", "connect show", "connect offsets import", "connect reset", "connect rollback",
    "dev-broker connect start", "dev-broker connect status", "dev-broker connect stop",
    "dev-broker mm2 start", "dev-broker mm2 stop", "mm2 status",
}


# More invocations (other views of the same data; `commits generations` without --members also
# reads the classic groups table, which a scan writes with Spark).
VARIANTS = {
    "commits generations --members": ["commits", "generations", NAME, "-H", "{members}", "--members"],
    "lag status --partitions": ["lag", "status", NAME, "--window", "2", "--partitions", "--store", "{db}"],
}


def _run(capsys, world, key, *extra):
    args = [a.format(**world) for a in {**OFFLINE, **VARIANTS}[key]]
    return run_cli(capsys, *args, *extra)


def test_every_command_with_output_is_covered():
    """Invariant: every command that renders data is checked by the rule tests below."""
    offered = _with_output()
    assert offered == set(OFFLINE) | NEEDS_CLUSTER, sorted(offered ^ (set(OFFLINE) | NEEDS_CLUSTER))


def _check_times(node, where=""):
    """Every ISO time string sits under `<key>_iso` beside `<key>` holding the same epoch ms."""
    problems = []
    if isinstance(node, list):
        for i, v in enumerate(node):
            problems += _check_times(v, f"{where}[{i}]")
    elif isinstance(node, dict):
        for k, v in node.items():
            if k.endswith("_iso"):
                base = k[:-4]
                if base not in node:
                    problems.append(f"{where}.{k}: no {base} beside it")
                elif iso_ms(node[base]) != v:
                    problems.append(f"{where}.{k}: {v!r} is not the time of {base}={node[base]!r}")
            elif isinstance(v, str) and ISO_TEXT.match(v):
                problems.append(f"{where}.{k}: ISO text {v!r} without epoch ms (expected {k}=ms, {k}_iso)")
            else:
                problems += _check_times(v, f"{where}.{k}")
    return problems


@pytest.mark.parametrize("key", sorted({**OFFLINE, **VARIANTS}))
def test_json_keeps_epoch_ms_and_adds_iso(capsys, world, key):
    """Rule: JSON keeps epoch milliseconds and adds `<column>_iso` (never ISO text alone)."""
    r = _run(capsys, world, key, "-o", "json")
    assert r.code in (0, 1), r.err
    assert _check_times(r.json()) == []


@pytest.mark.parametrize("key", sorted({**OFFLINE, **VARIANTS}))
def test_tables_show_words_and_names_once_escaped(capsys, world, key):
    """Rules: tables show words, not Python (no True/False, no `1 runs`), and names exactly as
    written — `[a/b]` never shows as `\\[a/b]`."""
    r = _run(capsys, world, key)
    assert r.code in (0, 1), r.err
    text = r.out + r.err
    assert not re.search(r"\b(True|False|None)\b", r.out), r.out
    assert not re.search(r"(?<![\d.])1 [a-z]+s\b(?! (ago|old))", text), text
    assert "\\[" not in text, text
    if key.split()[0] in ("history", "lag", "commits", "streaming") and "--members" not in key:
        assert NAME in r.out, r.out


def test_tables_lengths_rates_and_verdict(capsys, world):
    """Rules: human time lags in tables (exact seconds in JSON), units on rates, empty columns
    dropped, long reasons shortened in the table (whole in JSON), the verdict printed last."""
    r = _run(capsys, world, "lag status", "--partitions")
    header = r.out.splitlines()[0].split()
    assert "TIME-LAG" in header and "LSO" not in header  # LSO is empty in every row: dropped
    assert "…" in r.out and r.err.strip().splitlines()[-1] == "1 group: 1 ERR; exit 1 (--fail-on err)"
    j = _run(capsys, world, "lag status", "-o", "json").json()[0]
    assert j["partitions"][0]["time_lag_s"] == 0.0 and "…" not in j["reason"]
    r = _run(capsys, world, "history show")
    assert "0/s" in r.out and "RATE" in r.out
    r = _run(capsys, world, "history at")
    assert re.search(r"\b\d+(\.\d)?d\b", r.out)  # the sample's age, in days


# -- one duration grammar -----------------------------------------------------------------------

DURATION_NAMES = {"--by-duration", "--interval", "--retain", "--deadline", "--live-timeout",
                  "--alive-window"}


def _duration_options():
    for path, cmd in walk(command()):
        for p in _options(cmd):
            if isinstance(_parser(p), Duration):
                yield path, p


def test_every_duration_option_takes_the_one_grammar(capsys):
    """Rule: wherever a duration is taken, `2h`, `1d2h`, `500ms` and ISO-8601 `PT2H`, `P1DT2H`
    mean the same, and a bad one is one line naming the value and the forms, exit 2."""
    found = {p.opts[0] for _, p in _duration_options()}
    assert found >= DURATION_NAMES
    for path, cmd in walk(command()):
        for p in _options(cmd):
            looks = (p.opts[0] in DURATION_NAMES or "SECONDS" in (p.metavar or "")
                     or re.search(r"\bduration\b(?! ago)|\bseconds\b", (p.help or "").lower()))
            if looks:
                assert isinstance(_parser(p), Duration), f"{' '.join(path)} {p.opts[0]}"
    for path, p in _duration_options():
        parse = _parser(p)
        short, iso = parse("1m30s"), parse("PT1M30S")
        if isinstance(short, str):
            assert parse_duration_ms(short) == parse_duration_ms(iso) == 90_000
        else:
            assert short == iso == 90.0
        r = run_cli(capsys, *path, p.opts[0], "2 hours")
        assert r.code == 2, (path, p.opts, r.err)
        line = r.err.strip()
        assert "\n" not in line and f"{p.opts[0]} '2 hours' is not a duration" in line, line
        assert "2h" in line and "PT2H" in line


def test_by_duration_takes_the_short_form_like_since_and_interval(capsys):
    """Regression: `--by-duration 2h` was refused while `--since 6h` and `--interval 30s` worked."""
    for args in (["offsets", "reset", "-g", "g", "-t", "t", "--by-duration", "2h"],
                 ["streaming", "reset", "/nonexistent", "--by-duration", "1d2h"]):
        r = run_cli(capsys, *args)
        assert "is not a duration" not in r.err, r.err


# -- one formatter, one version -----------------------------------------------------------------

SRC = Path(offsetkeeper.__file__).parent
ID_FORMATS = {"snap-%Y%m%dT%H%M%S.", "%Y%m%dT%H%M%SZ", "%Y%m%dT%H%M%S%fZ", "%Y-%m-%d", "%H:%M",
              "%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"}


def test_one_iso_time_formatter():
    """Rule: times are formatted by offsetkeeper.times only (no isoformat()/strftime ISO
    elsewhere: they disagreed on `Z` vs `+00:00`, milliseconds and overflow)."""
    problems = []
    for path in SRC.rglob("*.py"):
        if path.name == "times.py" and path.parent == SRC:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                name = node.func.attr
                if name == "isoformat" and path.name != "parse.py":
                    problems.append(f"{path.relative_to(SRC)}:{node.lineno} isoformat()")
                if name == "strftime" and node.args and isinstance(node.args[0], ast.Constant) \
                        and node.args[0].value not in ID_FORMATS:
                    problems.append(f"{path.relative_to(SRC)}:{node.lineno} strftime({node.args[0].value!r})")
    assert problems == []


def test_version(capsys):
    """Rule: `offsetkeeper --version` prints the version and exits 0."""
    r = run_cli(capsys, "--version")
    assert r.code == 0 and r.out == f"offsetkeeper {offsetkeeper.__version__}\n"


def test_one_listen_address_parser(capsys):
    """Rule: every --listen/--exporter address is read by offsetkeeper.netaddr.parse_listen
    (the dashboard and the exporter had one each, disagreeing on `:PORT`)."""
    from offsetkeeper.history import exporter
    from offsetkeeper.netaddr import parse_listen
    from offsetkeeper.web import security

    assert security.parse_listen is parse_listen and exporter.parse_listen is parse_listen
    for args in (["exporter", "--listen", ":9308"], ["history", "record", "-g", "g", "--exporter", ":9308"]):
        r = run_cli(capsys, *args)
        assert r.code == 2 and "':9308' is not HOST:PORT" in r.err, r.err


def test_only_times_are_time_columns():
    """Regression: `offset_at_time` is an offset; it got an `_iso` companion when every
    `*_time` column was taken for epoch milliseconds."""
    from offsetkeeper.cli.output import time_columns_of

    assert time_columns_of(["offset_at_time", "time_lag_s", "sample_time", "created_at", "time",
                            "open_txn_since", "first_timestamp"]) == [
        "sample_time", "created_at", "time", "open_txn_since", "first_timestamp"]


def test_one_rendering_path_for_names():
    """Rule: names reach the terminal through cli/output.py only (`render_rows` for tables,
    `say` for lines), which shows them literally: no command escapes Rich markup itself or prints
    an f-string as markup — the two ways a name ended up escaped twice (`\\[a/b]`) or parsed."""
    problems = []
    for path in sorted((SRC / "cli").glob("*.py")):
        if path.name in ("output.py", "progress.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in ("escape", "safe"):
                problems.append(f"cli/{path.name}:{node.lineno} {name}()")
            if name == "print" and node.args and isinstance(node.args[0], ast.JoinedStr):
                problems.append(f"cli/{path.name}:{node.lineno} print(f-string) parses markup")
    assert problems == []
