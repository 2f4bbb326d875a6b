"""The snapshot store on memory:// and on the local disk (no broker)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from offsetkeeper.config import ConfigFile, SnapshotsModel
from offsetkeeper.errors import StoreError, UsageError
from offsetkeeper.models import CommittedOffset, TopicPartition, Watermarks
from offsetkeeper.snapshots.model import GroupSnapshot, Snapshot, format_time, new_snapshot_id
from offsetkeeper.snapshots.store import (
    STORE_ENV,
    SnapshotStore,
    default_store_url,
    resolve_store_url,
)


def make(offset: int = 5, when: datetime | None = None, description: str = "") -> Snapshot:
    when = when or datetime.now(UTC)
    tp = TopicPartition("orders", 0)
    return Snapshot(new_snapshot_id(when), format_time(when), "clu", "b:9092", description,
                    {"g": GroupSnapshot("empty", {tp: CommittedOffset(offset)})},
                    {tp: Watermarks(0, 10)})


@pytest.fixture(params=["memory", "local"])
def store(request, tmp_path):
    if request.param == "memory":
        return SnapshotStore(f"memory://snaps-{uuid.uuid4().hex[:8]}/dir")
    return SnapshotStore(str(tmp_path / "snaps"))


def test_save_load_round_trip(store):
    snap = make()
    assert store.save(snap) == snap.id
    assert store.load(snap.id) == snap
    assert store.load("latest") == snap


def test_list_is_newest_first_and_delete_removes(store):
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    snaps = [make(i, t0 + timedelta(seconds=i), f"n{i}") for i in (2, 0, 1)]
    for s in snaps:
        store.save(s)
    listed = store.list()
    assert [s.description for s in listed] == ["n2", "n1", "n0"]
    assert store.load("latest").description == "n2"
    assert store.delete(listed[0].id) == listed[0].id
    assert [s.description for s in store.list()] == ["n1", "n0"]
    with pytest.raises(StoreError, match=listed[0].id):
        store.delete(listed[0].id)


def test_no_temporary_files_are_left(store):
    store.save(make())
    names = store.fs.ls(store.root, detail=False)
    assert len(names) == 1 and names[0].endswith(".json")


def test_existing_id_is_not_overwritten(store):
    snap = make()
    store.save(snap)
    with pytest.raises(StoreError, match="already exists"):
        store.save(snap)


def test_missing_snapshot_names_id_and_file(store):
    with pytest.raises(StoreError) as e:
        store.load("snap-20260101T000000.000Z-abcd")
    assert e.value.exit_code == 2  # a snapshot that does not exist is bad input (issue 22 #20)
    assert "snap-20260101T000000.000Z-abcd" in e.value.message
    assert "snap-20260101T000000.000Z-abcd.json" in e.value.message


def test_empty_store(store):
    assert store.list() == []
    with pytest.raises(StoreError, match="holds no snapshots"):
        store.load("latest")


@pytest.mark.parametrize("content", [b"{not json", b"[]", b'{"schema_version": 1}',
                                     b'{"schema_version": 7, "id": "x"}'])
def test_corrupt_snapshot_names_id_and_file(store, content):
    sid = "snap-20260101T000000.000Z-abcd"
    store.fs.makedirs(store.root, exist_ok=True)
    store.fs.pipe_file(f"{store.root}/{sid}.json", content)
    with pytest.raises(StoreError, match="corrupt") as e:
        store.load(sid)
    assert f"{sid}.json" in e.value.message
    # the listing shows the broken file instead of failing
    [summary] = store.list()
    assert summary.id == sid and "corrupt" in summary.error


def test_file_holding_another_id_is_corrupt(store):
    snap = make()
    store.fs.makedirs(store.root, exist_ok=True)
    store.fs.pipe_file(f"{store.root}/snap-20260101T000000.000Z-abcd.json", snap.to_json().encode())
    with pytest.raises(StoreError, match=f"holds id {snap.id}"):
        store.load("snap-20260101T000000.000Z-abcd")


@pytest.mark.parametrize("bad", ["../etc/passwd", "a/b", "", ".hidden"])
def test_ids_that_are_not_file_names_are_usage_errors(store, bad):
    with pytest.raises(UsageError):
        store.load(bad)


def test_written_file_is_the_documented_json(tmp_path):
    store = SnapshotStore(str(tmp_path))
    snap = make(7)
    store.save(snap)
    doc = json.loads((tmp_path / f"{snap.id}.json").read_text())
    assert doc["schema_version"] == 1 and doc["groups"]["g"]["offsets"][0]["offset"] == 7


def test_resolve_store_url(monkeypatch):
    monkeypatch.delenv(STORE_ENV, raising=False)
    cfg = ConfigFile(snapshots=SnapshotsModel(store="s3://bucket/snaps"))
    assert resolve_store_url("/x", cfg) == "/x"
    assert resolve_store_url(None, cfg) == "s3://bucket/snaps"
    assert resolve_store_url(None, ConfigFile()) == default_store_url()
    assert resolve_store_url(None, None).endswith("snapshots")
    monkeypatch.setenv(STORE_ENV, "memory://env")
    assert resolve_store_url(None, cfg) == "memory://env"
    assert resolve_store_url("/x", cfg) == "/x"


def test_default_store_is_under_user_data_dir(monkeypatch):
    monkeypatch.delenv(STORE_ENV, raising=False)
    assert "offsetkeeper" in default_store_url()
    assert SnapshotStore().url == default_store_url()


def test_store_without_url_follows_the_environment(monkeypatch):
    monkeypatch.setenv(STORE_ENV, "memory://from-env")
    assert SnapshotStore().url == "memory://from-env"



@settings(max_examples=30, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8),
                       st.dictionaries(st.integers(0, 5), st.integers(0, 10**12), max_size=3),
                       max_size=3),
       st.text(max_size=30))
def test_any_snapshot_survives_the_memory_store(groups, description):
    store = SnapshotStore(f"memory://prop-{uuid.uuid4().hex[:8]}")
    snap = Snapshot(new_snapshot_id(), format_time(datetime.now(UTC)), "c", "b", description,
                    {g: GroupSnapshot("empty", {TopicPartition("t", p): CommittedOffset(o)
                                                for p, o in offs.items()})
                     for g, offs in groups.items()})
    store.save(snap)
    assert store.load(snap.id) == snap
    assert store.list()[0] == snap.summary()


def test_every_snapshots_command_has_help_with_an_example():
    from offsetkeeper.cli.snapshots import app

    names = {c.name for c in app.registered_commands}
    assert names == {"create", "list", "show", "diff", "verify", "rollback", "delete"}
    for c in app.registered_commands:
        assert "Example: offsetkeeper snapshots " + c.name in (c.callback.__doc__ or ""), c.name


@pytest.mark.parametrize("given", ["/tmp/a", "/tmp/a/", "rel", "./rel", "rel/sub/", ".", "~/x",
                                   "/", "/a//b/../c", "a:b", "x y/z"])
def test_a_local_path_is_resolved_as_fsspec_resolves_it(given, monkeypatch, tmp_path):
    """Invariant: the local-path shortcut that spares a reset importing fsspec (issue 32) names
    the same file fsspec would: absolute as fsspec makes it, no trailing '/'; URLs, file:/
    local:/data: and chained paths are left to fsspec."""
    from fsspec.core import url_to_fs

    from offsetkeeper.storage import local_path

    monkeypatch.chdir(tmp_path)
    assert local_path(given) == (url_to_fs(given)[1].rstrip("/") or "/")
    for url in ("file:/tmp/x", "local:/x", "file:///tmp/x", "memory://a/b", "simplecache::/x"):
        assert local_path(url) is None


def test_saving_to_a_local_store_does_not_import_fsspec(tmp_path):
    """Invariant: a snapshot saved to a local directory (what every reset with a snapshot does)
    is written without importing fsspec (~20-40 ms of the command, issue 32), to the same file
    and with the same bytes the store reads back through fsspec."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from tests.unit.test_snapshot_store import make\n"
        "from offsetkeeper.snapshots.store import SnapshotStore\n"
        f"s = SnapshotStore({str(tmp_path / 'snaps')!r})\n"
        "sid = s.save(make(7))\n"
        "assert 'fsspec' not in sys.modules, 'fsspec imported'\n"
        "print(sid)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    sid = out.stdout.strip()
    store = SnapshotStore(str(tmp_path / "snaps"))
    assert store.ids() == [sid]
    loaded = store.load(sid)
    assert loaded.groups["g"].offsets[TopicPartition("orders", 0)].offset == 7
    assert [p.name for p in (tmp_path / "snaps").iterdir()] == [f"{sid}.json"]
