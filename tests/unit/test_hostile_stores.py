"""Snapshot stores and backup manifests are input (issue 31, items F, H, I): files others can
put there — a FIFO, a symlink to /dev/zero, a huge file, a manifest pointing outside its backup,
numbers beyond Kafka's, deep nesting, a partition listed twice — are refused one by one with a
clear message; a listing shows them as errors and goes on."""

from __future__ import annotations

import json
import os

import pytest

from offsetkeeper.backup.manifest import (
    Manifest,
    SourceInfo,
    list_backups,
    load_manifest,
    parse_manifest,
    save_manifest,
)
from offsetkeeper.errors import StoreError
from offsetkeeper.snapshots.model import Snapshot, SnapshotFormatError
from offsetkeeper.snapshots.store import SnapshotStore
from tests.cli import run_cli

SID = "snap-20261121T194501.123Z-1a2b"


def _snapshot_doc(offsets=None, sid=SID) -> dict:
    return {"schema_version": 2, "id": sid, "created_at": "2026-11-21T19:45:01.123Z",
            "cluster_id": "c", "bootstrap_servers": "h:1", "description": "d", "partitions": [],
            "groups": {"g": {"state": "empty", "offsets": offsets if offsets is not None else
                             [{"topic": "t", "partition": 0, "offset": 100}]}}}


def test_a_snapshot_listing_one_partition_twice_is_refused():
    """Invariant (issue 31 I): a snapshot naming a partition twice is corrupt (which offset
    would a rollback restore?), as a CSV plan naming one twice is; never "the last one wins"."""
    doc = _snapshot_doc([{"topic": "t", "partition": 0, "offset": 100},
                         {"topic": "t", "partition": 0, "offset": 1}])
    with pytest.raises(SnapshotFormatError, match="lists t:0 twice"):
        Snapshot.from_json(json.dumps(doc))
    text = json.dumps(_snapshot_doc()).replace('"groups": {', '"groups": {"g": {}, ', 1)
    with pytest.raises(SnapshotFormatError, match="appears twice"):
        Snapshot.from_json(text)
    assert Snapshot.from_json(json.dumps(_snapshot_doc())).groups["g"].offsets


@pytest.fixture
def store(tmp_path):
    root = tmp_path / "snaps"
    root.mkdir()
    (root / f"{SID}.json").write_text(json.dumps(_snapshot_doc()))
    return root


@pytest.mark.parametrize("kind", ["fifo", "devzero", "outside", "huge", "dir"])
def test_store_files_are_regular_files_inside_the_store_and_size_capped(store, tmp_path, kind,
                                                                        monkeypatch):
    """Invariant (issue 31 F): a snapshot store reads only regular files of at most 64 MiB
    inside it: a FIFO answers at once (never hangs the reader), a symlink (to /dev/zero, or to
    a file outside) and a directory are refused unread, an oversized file is refused by its
    size; `snapshots list` lists each as an error row and the good snapshot beside it."""
    from offsetkeeper.snapshots import store as store_mod

    bad = store / "snap-20261121T194501.124Z-ffff.json"
    if kind == "fifo":
        os.mkfifo(bad)
    elif kind == "devzero":
        bad.symlink_to("/dev/zero")
    elif kind == "outside":
        elsewhere = tmp_path / "elsewhere.json"
        elsewhere.write_text(json.dumps(_snapshot_doc(sid=bad.stem)))
        bad.symlink_to(elsewhere)
    elif kind == "dir":
        bad.mkdir()
    else:
        monkeypatch.setattr(store_mod, "MAX_SNAPSHOT_BYTES", 4096)
        bad.write_text(json.dumps(_snapshot_doc(sid=bad.stem)) + " " * 5000)
    rows = {s.id: s for s in SnapshotStore(str(store)).list()}
    assert rows[SID].error is None
    err = rows[bad.stem].error
    assert err and bad.stem in err
    assert any(w in err for w in ("not a regular file", "symbolic link", "bytes; larger than")), err
    with pytest.raises(StoreError):
        SnapshotStore(str(store)).load(bad.stem)


def test_snapshots_list_on_a_fifo_answers(store, capsys):
    """Invariant (issue 31 F): `snapshots list` over a store holding a FIFO exits with the list
    (the FIFO an error row), never hangs."""
    os.mkfifo(store / "snap-20261121T194501.125Z-0000.json")
    r = run_cli(capsys, "snapshots", "list", "--store", str(store), "-o", "json")
    assert r.code in (0, 1), r.err
    assert "Traceback" not in r.err and SID in r.out


def _manifest(**over) -> dict:
    m = Manifest(backup_id="b1", created_at="x", updated_at="y",
                 source=SourceInfo(bootstrap_servers="h:1"))
    doc = json.loads(m.model_dump_json())
    doc["topics"] = [{"name": "orders", "partition_count": 1, "partitions": [{
        "partition": 0, "start_offset": 0, "end_offset": 10, "record_count": 10,
        "segments": [{"run": 1, "start_offset": 0, "end_offset": 10, "record_count": 10,
                      "files": ["data/run=1/topic=orders/partition=0/part-00000.parquet"]}]}]}]
    for path, value in over.items():
        node = doc
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[int(k)] if k.isdigit() else node[k]
        node[keys[-1]] = value
    return doc


SEG = "topics.0.partitions.0.segments.0"


@pytest.mark.parametrize("path, value, words", [
    (f"{SEG}.files", ["../../other/b1/data/run=1/part-0.parquet"], "inside the backup"),
    (f"{SEG}.files", ["/etc/passwd"], "inside the backup"),
    (f"{SEG}.files", ["data/../../x.parquet"], "inside the backup"),
    (f"{SEG}.files", ["s3://bucket/elsewhere.parquet"], "inside the backup"),
    (f"{SEG}.start_offset", -10, "greater than or equal to 0"),
    (f"{SEG}.end_offset", 2**63 + 5, "less than or equal to"),
    ("topics.0.partitions.0.start_offset", -1, "greater than or equal to 0"),
    ("topics.0.partition_count", 10**12, "less than or equal to 1000000"),
    ("topics.0.partitions.0.partition", 2**31, "less than or equal to"),
    ("backup_id", "../../x", "backup id"),
])
def test_a_manifest_is_validated_as_input(path, value, words):
    """Invariant (issue 31 H): a manifest's segment files stay inside its backup's data/
    directory, offsets are 0 <= n < 2^63, partition counts are bounded and the backup id is a
    safe name; anything else is one StoreError naming the field."""
    assert parse_manifest(json.dumps(_manifest())).topics[0].partitions[0].segments
    with pytest.raises(StoreError, match=words):
        parse_manifest(json.dumps(_manifest(**{path: value})))


def test_a_deeply_nested_manifest_is_refused_before_parsing_and_listing_goes_on(tmp_path, capsys):
    """Invariant (issue 31 H): a manifest nested 100,000 deep is refused by its depth (no
    RecursionError), a FIFO manifest answers at once, and `backups list` still lists every
    backup of the destination, the bad ones as error rows."""
    save_manifest(str(tmp_path), Manifest(backup_id="good", created_at="x", updated_at="y",
                                          source=SourceInfo(bootstrap_servers="h:1")))
    (tmp_path / "deep").mkdir()
    (tmp_path / "deep" / "manifest.json").write_text(
        '{"format_version": 1, "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / "fifo").mkdir()
    os.mkfifo(tmp_path / "fifo" / "manifest.json")
    with pytest.raises(StoreError, match="nests deeper"):
        load_manifest(str(tmp_path), "deep")
    entries = {e.backup_id: e for e in list_backups(str(tmp_path))}
    assert entries["good"].error is None
    assert "nests deeper" in entries["deep"].error
    assert "not a regular file" in entries["fifo"].error
    r = run_cli(capsys, "backups", "list", "--dest", str(tmp_path), "-o", "json")
    assert r.code == 0 and "Traceback" not in r.err
    assert sorted(row["backup_id"] for row in r.json()) == ["deep", "fifo", "good"]
