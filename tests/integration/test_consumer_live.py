"""`offsets reset --live`: a running group built on OffsetConsumer is reset without stopping it."""

from __future__ import annotations

import threading
import time

import pytest

from cli import run_cli
from kafkatools import LiveConsumer, committed, create_topic, produce_n
from offsetkeeper.consumer import CommitPolicy, OffsetConsumer

pytestmark = pytest.mark.integration


class _App:
    """An application: consumes in its own thread with OffsetConsumer, remembers what it saw."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.seen: list[tuple[int, int]] = []
        self.c = OffsetConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                                 "session.timeout.ms": 6000, "heartbeat.interval.ms": 500},
                                [topic], policy=CommitPolicy.batch(), auto_offset_reset="earliest")
        self.t = threading.Thread(target=self._run, daemon=True)
        self.t.start()

    def _run(self) -> None:
        for m in self.c.records(0.1):
            self.seen.append((m.partition(), m.offset()))

    def close(self) -> None:
        self.c.stop()
        self.t.join(10)
        self.c.close()


def _wait(pred, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return False


@pytest.fixture
def snapstore(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFSETKEEPER_SNAPSHOT_STORE", str(tmp_path / "snaps"))
    return tmp_path / "snaps"


def test_live_reset_rewinds_a_running_consumer(bootstrap, unique, capsys, snapstore):
    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 2)
    produce_n(bootstrap, t, 2, 20)
    app = _App(bootstrap, g, t)
    try:
        assert _wait(lambda: len(app.seen) == 40 and committed(bootstrap, g, t, 2) == {0: 20, 1: 20})
        # Without --live the group is refused: it has an active member.
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-offset", "5", "--execute",
                    "-b", bootstrap)
        assert r.code == 1 and "active member" in r.err
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-offset", "5", "--live",
                    "--execute", "--live-timeout", "30", "-b", bootstrap, "-o", "json")
        assert r.code == 0, r.err
        rep = r.json()["live_report"]
        assert rep["status"] == "SUCCESS" and rep["snapshot_id"]
        assert [(p["partition"], p["status"], p["target"]) for p in rep["partitions"]] == \
            [(0, "applied", 5), (1, "applied", 5)]
        # The running consumer read from offset 5 again, and committed its progress after that.
        assert _wait(lambda: len(app.seen) == 70)
        assert app.seen[40:] and {o for _p, o in app.seen[40:]} == set(range(5, 20))
        assert _wait(lambda: committed(bootstrap, g, t, 2) == {0: 20, 1: 20})
        assert app.c.metrics().live_resets_applied == 2
        # The snapshot taken first holds the offsets from before the reset.
        from offsetkeeper.snapshots.store import SnapshotStore

        snap = SnapshotStore(str(snapstore)).load(rep["snapshot_id"])
        assert {tp.partition: c.offset for tp, c in snap.groups[g].offsets.items()} == {0: 20, 1: 20}
    finally:
        app.close()


def test_live_reset_reports_partitions_nobody_acknowledged(bootstrap, unique, capsys, snapstore):
    """A member that does not use offsetkeeper.consumer never acknowledges: exit 1, per partition."""
    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 1)
    produce_n(bootstrap, t, 1, 5)
    other = LiveConsumer(bootstrap, g, [t])
    try:
        r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-earliest", "--live",
                    "--execute", "--live-timeout", "2", "-b", bootstrap)
        assert r.code == 1
        assert "not-acknowledged" in r.out and "FAILED: 0/1" in r.err
    finally:
        other.stop()


def test_live_reset_of_a_group_without_members_is_refused(bootstrap, unique, capsys, snapstore):
    from kafkatools import commit

    t, g = unique("live"), unique("g")
    create_topic(bootstrap, t, 1)
    commit(bootstrap, g, {(t, 0): 0})
    r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", t, "--to-latest", "--live", "--execute",
                "-b", bootstrap)
    assert r.code == 1 and "no active members" in r.err
