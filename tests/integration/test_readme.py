"""The README's command blocks run as written against brokers this test starts, and their
outcomes are checked with an independent client — so the README cannot drift from the program.

Only the bootstrap address (and, for backup/restore, the backup directory and the DR address)
is substituted; the topics and groups the README assumes (`orders`, `payments`) are created
first. A README command that no expectation here knows fails the test: a new example needs a
check.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kafkatools import commit, committed, create_topic, produce
from offsetkeeper import devbroker
from tests.cli import Result, run_cli

README = Path(__file__).resolve().parents[2] / "README.md"
SECTIONS = ["Inspecting groups and offsets", "Resetting offsets", "Snapshots and rollback"]
SPARK_SECTIONS = ["Topic backup (Spark)", "Restore with an exact offset mapping"]
T0 = int(datetime(2026, 11, 20, 9, 0, tzinfo=UTC).timestamp() * 1000)
MINUTE = 60_000


def readme_commands(sections: list[str]) -> list[tuple[str, str]]:
    """(section, command line) of every `offsetkeeper ...` line in the fenced blocks of the
    named `##` sections, in README order."""
    out, section, fenced = [], None, False
    for line in README.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        elif line.startswith("```"):
            fenced = not fenced
        elif fenced and section in sections and line.strip().startswith("offsetkeeper "):
            out.append((section, line.strip()))
    return out


@pytest.fixture(scope="module")
def readme_broker(tmp_path_factory):
    """A broker of our own: `--all-groups` in the README then means the README's groups only."""
    data = tmp_path_factory.mktemp("readme-broker")
    st = devbroker.start(devbroker.free_port(), data, tied=True)
    try:
        yield st.bootstrap
    finally:
        devbroker.stop(data)


@pytest.fixture
def world(readme_broker, monkeypatch, tmp_path):
    """Topic `orders` (2 partitions, one record a minute from 09:00 UTC on 2026-11-20) and
    group `payments` committed at 50 / 55."""
    bootstrap = readme_broker
    create_topic(bootstrap, "orders", partitions=2, config={"retention.ms": "-1"})
    produce(bootstrap, "orders", ((p, b"k", f"v{i}".encode(), None, T0 + i * MINUTE)
                                  for p in range(2) for i in range(60)))
    commit(bootstrap, "payments", {("orders", 0): 50, ("orders", 1): 55})
    (tmp_path / "none.yaml").write_text("{}\n")
    monkeypatch.setenv("OFFSETKEEPER_CONFIG", str(tmp_path / "none.yaml"))
    monkeypatch.setenv("OFFSETKEEPER_BOOTSTRAP_SERVER", bootstrap)
    monkeypatch.setenv("OFFSETKEEPER_SNAPSHOT_STORE", str(tmp_path / "snapshots"))
    return bootstrap


@dataclass
class Expect:
    """What a README command must do: exit code and a check of output and cluster."""

    pattern: str
    check: Callable[[Result, str], object] = lambda r, b: True  # truthy when the outcome is right
    code: int = 0


def _payments(bootstrap: str) -> dict[int, int]:
    return committed(bootstrap, "payments", "orders", 2)


def _offsets_at_0940(r: Result, b: str) -> bool:
    rows = [line.split() for line in r.out.splitlines() if line.startswith("orders")]
    assert [row[-1] for row in rows] == ["40", "40"], r.out
    return True


def _unchanged(r: Result, b: str) -> bool:
    return "dry run" in r.out and _payments(b) == {0: 50, 1: 55}


def _reset_to_0940(r: Result, b: str) -> bool:
    assert "snapshot taken before the change: snap-" in r.err
    return _payments(b) == {0: 40, 1: 40}


def _bulk_to_latest(r: Result, b: str) -> bool:
    assert json.loads(r.out)["report"]["status"] == "SUCCESS"
    return _payments(b) == {0: 60, 1: 60}


EXPECTATIONS = [
    Expect("groups list --state stable,empty", lambda r, b: re.search(r"^payments\s+empty", r.out, re.M)),
    Expect("groups describe payments --members",
           lambda r, b: "has no active members" in r.err),
    Expect("groups describe payments",
           lambda r, b: re.search(r"^payments\s+orders\s+0\s+50\s+0\s+60\s+10\b", r.out, re.M)),
    Expect("groups describe --all-groups --state", lambda r, b: "payments" in r.out),
    Expect("offsets show --topic orders:0,1 --at 2026-11-20T09:40:00Z", _offsets_at_0940),
    Expect("--to-datetime 2026-11-20T09:40:00Z --execute", _reset_to_0940),
    Expect("--to-datetime 2026-11-20T09:40:00Z", _unchanged),
    Expect("--group-pattern 'pay*' --topic orders --to-earliest --summary",
           lambda r, b: "dry run" in r.out
           and re.search(r"^payments\s+empty\s+2\s+2\s+2\s+0\s+\d+\s+0", r.out, re.M)),
    Expect("--all-groups --all-topics --to-latest --execute", _bulk_to_latest),
    Expect("snapshots create -g payments", lambda r, b: "saved: 1 group, 2 partitions" in r.out),
    Expect("snapshots list", lambda r, b: "payments" not in r.err and "snap-" in r.out),
    Expect("snapshots verify latest", lambda r, b: "match snapshot" in r.out),
    Expect("snapshots diff latest --live", lambda r, b: "no differences" in r.out),
    Expect("snapshots rollback latest --execute", lambda r, b: _payments(b) == {0: 60, 1: 60}),
]


def _expectation(command: str) -> Expect:
    for e in EXPECTATIONS:  # most specific patterns first in the list
        if e.pattern in command:
            return e
    raise AssertionError(f"README command without an expectation in this test: {command}")


def test_readme_covers_the_offsets_sections():
    """Invariant: the README still shows inspection, reset and snapshot examples."""
    commands = [c for _, c in readme_commands(SECTIONS)]
    assert len(commands) >= 10, commands
    for c in commands:
        _expectation(c)


def test_readme_offsets_commands_run_as_written(capsys, world):
    """Invariant: every inspection, reset and snapshot command of the README runs as written
    (bootstrap address from the environment) and does what the README says."""
    for section, line in readme_commands(SECTIONS):
        args = shlex.split(line, comments=True)[1:]
        r = run_cli(capsys, *args)
        e = _expectation(line)
        assert r.code == e.code, f"[{section}] {line}\nexit {r.code}\n{r.out}\n{r.err}"
        assert e.check(r, world), f"[{section}] {line}\n{r.out}\n{r.err}"
        assert "Traceback" not in r.err


def test_readme_config_example_loads(tmp_path, monkeypatch):
    """Invariant: the README's config file example is a valid config file."""
    from offsetkeeper.config import load_config_file

    text = README.read_text()
    block = re.search(r"```yaml\n(# ~/.config/offsetkeeper/config.yaml\n.*?)```", text, re.S)
    assert block, "README lost its config example"
    p = tmp_path / "config.yaml"
    p.write_text(block.group(1))
    cfg = load_config_file(p)
    assert cfg.default_cluster == "prod" and set(cfg.clusters) == {"prod", "dr"}


# -- backup / restore / three-phase (Spark) ---------------------------------------------------

def _watermark_total(bootstrap: str, topic: str, partitions: int) -> int:
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as CkTP

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "readme-check"})
    try:
        return sum(c.get_watermark_offsets(CkTP(topic, p), timeout=10)[1] for p in range(partitions))
    finally:
        c.close()


SPARK_EXPECTATIONS = [
    Expect("backup run -b", lambda r, b: True),
    Expect("backup run -f backup.yaml", lambda r, b: True),
    Expect("backups list", lambda r, b: "nightly" in r.out),
    Expect("backups describe nightly", lambda r, b: "orders" in r.out),
    Expect("backups validate nightly", lambda r, b: True),
    Expect("restore run", lambda r, b: _watermark_total(b, "orders", 2) >= 120),
    Expect("mapping show", lambda r, b: True),
    Expect("--from-mapping", lambda r, b: committed(b, "payments", "orders", 2) == {0: 50, 1: 55}),
    Expect("restore validate", lambda r, b: "payments" in r.out),
    Expect("restore three-phase", lambda r, b: True),
]


@pytest.mark.spark
@pytest.mark.slow
def test_readme_backup_restore_commands_run_as_written(capsys, tmp_path, monkeypatch, spark):
    """Invariant: the README's backup, restore, mapping and three-phase commands run as written
    (addresses, the backup directory and the Spark master substituted) and a restored DR
    cluster gets the records and the translated `payments` offsets."""
    prod_dir, dr_dir, dr2_dir = tmp_path / "prod", tmp_path / "dr", tmp_path / "dr2"
    prod = devbroker.start(devbroker.free_port(), prod_dir, tied=True).bootstrap
    dr = devbroker.start(devbroker.free_port(), dr_dir, tied=True).bootstrap
    dr2 = devbroker.start(devbroker.free_port(), dr2_dir, tied=True).bootstrap
    try:
        create_topic(prod, "orders", partitions=2, config={"retention.ms": "-1"})
        produce(prod, "orders", ((p, b"k", f"v{i}".encode(), None, T0 + i * MINUTE)
                                 for p in range(2) for i in range(60)))
        commit(prod, "payments", {("orders", 0): 50, ("orders", 1): 55})
        backups = tmp_path / "backups"
        monkeypatch.chdir(tmp_path)
        (tmp_path / "none.yaml").write_text("{}\n")
        monkeypatch.setenv("OFFSETKEEPER_CONFIG", str(tmp_path / "none.yaml"))
        monkeypatch.setenv("OFFSETKEEPER_SNAPSHOT_STORE", str(tmp_path / "snapshots"))
        (tmp_path / "backup.yaml").write_text(
            f"source: {{bootstrap_servers: '{prod}'}}\ntopics: {{include: [orders]}}\n"
            f"destination: '{backups}'\nbackup_id: nightly\n")
        subst = {"localhost:9092": prod, "dr-kafka:9092": dr, "dr2-kafka:9092": dr2,
                 "/backups": str(backups),
                 "spark://host:7077": "local[2]"}
        commands = readme_commands(SPARK_SECTIONS)
        assert len(commands) >= 8, commands
        for section, line in commands:
            e = next((x for x in SPARK_EXPECTATIONS if x.pattern in line), None)
            assert e is not None, f"README command without an expectation in this test: {line}"
            text = line
            for a, b in subst.items():
                text = text.replace(a, b)
            r = run_cli(capsys, *shlex.split(text, comments=True)[1:])
            assert r.code == e.code, f"[{section}] {text}\nexit {r.code}\n{r.out}\n{r.err}"
            assert e.check(r, dr), f"[{section}] {text}\n{r.out}\n{r.err}"
        # the three-phase example went to a second DR cluster: every record and the group
        assert _watermark_total(dr2, "orders", 2) >= 120
        assert committed(dr2, "payments", "orders", 2) == {0: 50, 1: 55}
    finally:
        for d in (prod_dir, dr_dir, dr2_dir):
            devbroker.stop(d)
