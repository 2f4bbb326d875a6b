"""Helpers for the dashboard tests: an app on the test broker, a filled history store, CSRF."""

from __future__ import annotations

import re
import time

from offsetkeeper.config import ConfigFile
from offsetkeeper.history.model import Cycle, Sample
from offsetkeeper.history.store import open_store
from offsetkeeper.ops.history_view import open_history
from offsetkeeper.ops.reset import ExecuteOptions
from offsetkeeper.web.app import UiSettings, create_app
from offsetkeeper.web.clusters import Clusters

CSRF_RE = re.compile(r'name="csrf(?:-token)?" (?:value|content)="([^"]+)"')


def csrf_of(html: str) -> str:
    m = CSRF_RE.search(html)
    assert m, "page has no CSRF field"
    return m.group(1)


FINGERPRINT_RE = re.compile(r'name="fingerprint" value="([0-9a-f]+)"')


def confirm_data(plan_html: str, csrf: str) -> dict[str, str]:
    """The confirmation form of a plan page: the CSRF token and the plan's fingerprint."""
    m = FINGERPRINT_RE.search(plan_html)
    assert m, "plan page has no fingerprint field"
    return {"csrf": csrf, "fingerprint": m.group(1)}


def fill_history(url: str, group: str, topic: str, *, partitions: int = 2, cycles: int = 40,
                 interval_ms: int = 60_000, now_ms: int | None = None) -> None:
    """Write `cycles` samples per partition through the store's write API: lag grows, then
    shrinks (a visible curve), time lag follows the lag."""
    now = now_ms or int(time.time() * 1000)
    with open_store(url) as st:
        for c in range(cycles):
            ts = now - (cycles - 1 - c) * interval_ms
            lag = 10 * c if c < cycles // 2 else 10 * (cycles - c)
            samples = [Sample(ts=ts, group=group, topic=topic, partition=p, committed=1000 + 50 * c,
                              log_start=0, log_end=1000 + 50 * c + lag, state="stable", members=1,
                              consumer_id="c-1", time_lag_ms=lag * 100)
                       for p in range(partitions)]
            st.write(samples, Cycle(ts, interval_ms, 1, partitions, 5))


def make_app(bootstrap: str, tmp_path, *, history_url: str | None = None,
             snapshot_store: str | None = None, **settings):
    """The dashboard app on the test broker with a snapshot store (default: in tmp_path)."""
    kw = {"allowed_hosts": ("127.0.0.1", "localhost"), **settings}
    store = snapshot_store or str(tmp_path / "snapshots")
    s = UiSettings(history_store=history_url, execute=ExecuteOptions(snapshot_store=store), **kw)
    return create_app(s, Clusters(ConfigFile(), bootstrap=bootstrap), open_history(history_url))


def make_backup(dest: str, bootstrap: str, backup_id: str = "b1", *, restore: bool = True) -> None:
    """A backup manifest (no data files) and, with `restore`, a completed restore `dr-1` whose
    mapping took source offsets 10, 12, 15 (compacted: not contiguous) to target 4, 5, 6."""
    from offsetkeeper.backup.manifest import Manifest, SourceInfo, now_iso, save_manifest
    from offsetkeeper.models import TopicPartition
    from offsetkeeper.restore.mapping import mapping_root_for, write_chunk
    from offsetkeeper.restore.state import RestoreState, RouteState, save_state

    save_manifest(dest, Manifest(backup_id=backup_id, created_at=now_iso(), updated_at=now_iso(),
                                 source=SourceInfo(bootstrap_servers=bootstrap)))
    if not restore:
        return
    save_state(dest, backup_id, RestoreState(
        restore_id="dr-1", backup_id=backup_id, target_cluster="dr:9092", fingerprint={},
        status="completed", routes=[RouteState("orders", 0, "orders", 0, 0, 7)]))
    write_chunk(mapping_root_for(dest, backup_id, "dr-1"), "dr-1", TopicPartition("orders", 0),
                TopicPartition("orders", 0), [10, 12, 15], [4, 5, 6], [1, 2, 3])
