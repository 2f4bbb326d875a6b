"""`backups validate`: quick and deep validation catch corrupted files, missing files and a
tampered manifest, name where, and exit non-zero."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli import run_cli
from kafkatools import create_topic, produce_n
from offsetkeeper.backup.config import BackupConfig
from offsetkeeper.backup.run import run_backup
from offsetkeeper.backup.validate import validate_backup

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@pytest.fixture
def backup(spark, bootstrap, conn, unique, tmp_path_factory):
    """A fresh backup of a 2-partition topic; returns (dest, manifest path, topic)."""
    topic = unique("val")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 30)
    dest = tmp_path_factory.mktemp("val")
    run_backup(BackupConfig(connection=conn, include=(topic,), destination=str(dest),
                            backup_id="b"), spark=spark)
    return dest, dest / "b" / "manifest.json", topic


def _file(dest: Path, topic: str, partition: int) -> Path:
    (f,) = (dest / "b" / "data" / "run=1" / f"topic={topic}" / f"partition={partition}").glob("*.parquet")
    return f


def test_valid_backup_passes_quick_and_deep(backup, spark, capsys):
    dest, _, _ = backup
    rep = validate_backup(str(dest), "b", deep=True, spark=spark)
    assert rep.ok and rep.records_checked == 60 and rep.files_checked == 2
    r = run_cli(capsys, "backups", "validate", "b", "--dest", dest)
    assert r.code == 0 and "is valid" in r.err


def test_corrupted_parquet_file_is_named(backup, spark, capsys):
    dest, _, topic = backup
    f = _file(dest, topic, 1)
    data = bytearray(f.read_bytes())
    mid = len(data) // 2
    data[mid - 40: mid + 40] = b"\xde\xad" * 40  # corrupt the data pages, keep the footer
    f.write_bytes(bytes(data))
    rep = validate_backup(str(dest), "b", deep=True, spark=spark)
    assert not rep.ok
    assert any(f.name in p.where or f"{topic}:1 run 1" in p.where for p in rep.problems), rep.problems
    assert quick_ok(dest)  # the quick check only looks at presence
    f.write_bytes(bytes(data[: len(data) // 3]))  # truncated: the footer is gone
    rep = validate_backup(str(dest), "b", deep=True, spark=spark)
    assert [p.where for p in rep.problems] == [str(f.relative_to(dest / "b"))]
    assert "not a readable Parquet file" in rep.problems[0].message
    r = run_cli(capsys, "backups", "validate", "b", "--dest", dest, "--deep", "-o", "json")
    assert r.code == 1 and "failed validation" in r.err and f.name in r.err
    assert r.json()["ok"] is False


def quick_ok(dest) -> bool:
    return validate_backup(str(dest), "b").ok


def test_missing_file_fails_quick_validation(backup, capsys):
    dest, _, topic = backup
    f = _file(dest, topic, 0)
    f.unlink()
    r = run_cli(capsys, "backups", "validate", "b", "--dest", dest)
    assert r.code == 1 and "file is missing" in r.out + r.err and f.name in r.err


def test_tampered_manifest_is_detected(backup, spark, capsys):
    dest, manifest, topic = backup
    raw = json.loads(manifest.read_text())
    seg = raw["topics"][0]["partitions"][0]["segments"][0]
    seg["checksum"] = "0123456789abcdef"  # totals left alone: the quick check sees the mismatch
    manifest.write_text(json.dumps(raw))
    r = run_cli(capsys, "backups", "validate", "b", "--dest", dest)
    assert r.code == 1 and f"{topic}:0" in r.err and "checksum differs" in r.err
    raw["topics"][0]["partitions"][0]["checksum"] = "0123456789abcdef"  # consistent tampering
    manifest.write_text(json.dumps(raw))
    assert quick_ok(dest)
    rep = validate_backup(str(dest), "b", deep=True, spark=spark)
    assert [str(p) for p in rep.problems] == [
        f"{topic}:0 run 1: checksum mismatch: manifest 0123456789abcdef, files "
        f"{rep.problems[0].message.split()[-1]}"]
    seg["record_count"] = 31
    raw["topics"][0]["partitions"][0]["record_count"] = 31
    manifest.write_text(json.dumps(raw))
    rep = validate_backup(str(dest), "b", deep=True, spark=spark)
    assert any("manifest says 31 records, the files hold 30" in str(p) for p in rep.problems)
    manifest.write_text("{ not json")
    r = run_cli(capsys, "backups", "validate", "b", "--dest", dest)
    assert r.code == 1 and "is not valid JSON" in r.err
