"""Restore hardening against real brokers and Spark (issue 8 items 7, 8, 12, 13, 14, 22; issue 9
three-phase correctness and progress). Each CLI test asserts exit code and message, then checks
the cluster and the disk with an independent client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from confluent_kafka.admin import AdminClient

from offsetkeeper.backup.manifest import load_manifest
from offsetkeeper.restore.state import RestoreStatus, load_state
from tests.cli import run_cli
from tests.kafkatools import commit, committed, create_topic, produce
from tests.restore_support import FILE_SCHEMA, consume_all, rec, write_backup

pytestmark = [pytest.mark.integration, pytest.mark.spark]

T0 = 1_700_000_000_000


def topics_on(bootstrap: str) -> set[str]:
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics)


def records(n: int, p: int = 0) -> list[dict]:
    return [rec(o, T0 + o, f"k{o}".encode(), f"v{p}-{o}".encode()) for o in range(n)]


@pytest.fixture
def small(tmp_path, unique):
    topic = unique("src")
    write_backup(str(tmp_path), "b", {topic: {0: records(30), 1: records(20, 1)}},
                 configs={topic: {"retention.ms": "-1"}}, groups={unique("g"): {(topic, 0): 4}})
    return str(tmp_path), topic


def cli_subprocess(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    """The real `offsetkeeper` process: its stderr is everything a user's terminal shows
    (including what the JVM writes), not only what Python prints."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", *args], capture_output=True,
                          text=True, timeout=timeout, env=env)


def test_a_new_restore_refuses_a_non_empty_target(capsys, small, dr_bootstrap, unique):
    """A new restore id never appends a second copy after records already in a target
    partition: exit 2, the partitions named, nothing written; --allow-non-empty-target proceeds."""
    dest, topic = small
    target = unique("dst")
    create_topic(dr_bootstrap, target, 2, {"retention.ms": "-1"})  # old timestamps must stay
    produce(dr_bootstrap, target, [(0, b"a", b"earlier"), (0, b"b", b"earlier")])
    r = run_cli(capsys, "restore", "run", f"{dest}/b", "-b", dr_bootstrap, "--rename", f"{topic}={target}",
                "--restore-id", "n1")
    assert r.code == 2, r.err
    assert f"{target}:0 (offsets 0..1)" in r.err and "--allow-non-empty-target" in r.err
    assert f"{target}:1" not in r.err  # empty partitions are fine
    assert {p: len(m) for p, m in consume_all(dr_bootstrap, target, [0, 1]).items()} == {0: 2, 1: 0}
    assert not Path(dest, "b", "restores", "n1.json").exists()
    assert not Path(dest, "b", "mappings", "n1").exists()

    r = run_cli(capsys, "restore", "run", f"{dest}/b", "-b", dr_bootstrap, "--rename", f"{topic}={target}",
                "--restore-id", "n1", "--allow-non-empty-target", "-o", "json")
    assert r.code == 0, r.err
    assert {p: len(m) for p, m in consume_all(dr_bootstrap, target, [0, 1]).items()} == {0: 32, 1: 20}


def test_bad_producer_properties_are_found_before_anything_is_created(capsys, small, dr_bootstrap, unique):
    """An unknown or invalid producer property is a one-line error (exit 2) before any topic or
    restore state exists; secret values are not echoed."""
    dest, topic = small
    target = unique("dst")
    for prop in ("bogus.property=1", "acks=sometimes"):
        r = run_cli(capsys, "restore", "run", f"{dest}/b", "-b", dr_bootstrap, "--rename",
                    f"{topic}={target}", "--restore-id", "p1", "--producer-property", prop,
                    "--producer-property", "sasl.password=TopSecret99")
        assert r.code == 2, r.err
        assert prop.split("=")[0] in r.err and "TopSecret99" not in r.err
        assert len(r.err.strip().splitlines()) == 1
    assert target not in topics_on(dr_bootstrap)
    assert not Path(dest, "b", "restores").exists()


def test_a_tampered_file_is_refused_before_anything_is_written(capsys, small, dr_bootstrap, unique):
    """A backup file holding its offsets twice is refused (exit 1, the file named) before a
    topic is created or a record written."""
    dest, topic = small
    target = unique("dst")
    path = Path(dest, "b", "data", "run=1", f"topic={topic}", "partition=0", "part-00000.parquet")
    pq.write_table(pa.Table.from_pylist(records(30) + records(30), schema=FILE_SCHEMA), path)
    r = run_cli(capsys, "restore", "run", f"{dest}/b", "-b", dr_bootstrap, "--rename", f"{topic}={target}",
                "--restore-id", "t1")
    assert r.code == 1, r.err
    assert "hold 60 records but the manifest says 30" in r.err
    assert target not in topics_on(dr_bootstrap)
    assert not Path(dest, "b", "restores").exists()


def test_a_task_failure_is_one_sentence_and_leaves_the_state_failed(small, dr_bootstrap, unique):
    """A failure inside a Spark task (an edited record: the footer is fine, the checksum is not)
    reaches the user as one sentence naming the partition and the cause — no traceback, no JVM
    log lines — and the restore state says failed, with the reason."""
    dest, topic = small
    target = unique("dst")
    path = Path(dest, "b", "data", "run=1", f"topic={topic}", "partition=1", "part-00000.parquet")
    edited = records(20, 1)
    edited[7]["value"] = b"edited after the backup"
    pq.write_table(pa.Table.from_pylist(edited, schema=FILE_SCHEMA), path)
    r = cli_subprocess("restore", "run", f"{dest}/b", "-b", dr_bootstrap, "--rename", f"{topic}={target}",
                       "--restore-id", "f1")
    assert r.returncode == 1, r.stderr
    err = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(err) == 1, r.stderr
    assert f"{topic}:1 run 1 do not match the manifest's checksum" in err[0]
    assert "--restore-id f1" in err[0] and "Traceback" not in r.stderr
    st = load_state(dest, "b", "f1")
    assert st.status is RestoreStatus.FAILED and "checksum" in st.error


def test_restore_dry_run_needs_no_spark(small, dr_bootstrap, unique):
    """`restore run --dry-run` counts with pyarrow: the process never imports pyspark."""
    dest, topic = small
    code = ("import sys\nfrom offsetkeeper.cli.main import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "assert 'pyspark' not in sys.modules, 'pyspark was imported'\n")
    r = subprocess.run([sys.executable, "-c", code, "restore", "run", f"{dest}/b", "-b", dr_bootstrap,
                        "--rename", f"{topic}={unique('dst')}", "--from-time", str(T0 + 10), "--dry-run",
                        "-o", "json"], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert r.returncode == 0, r.stderr
    import json

    d = json.loads(r.stdout)
    assert d["dry_run"] and d["records"] == 20 + 10


def test_validate_refuses_a_cluster_that_is_not_the_restore_target(capsys, small, bootstrap, dr_bootstrap,
                                                                   spark, unique):
    """`restore validate` against another cluster is a one-line error (exit 2), not a traceback."""
    from offsetkeeper.config import Connection
    from offsetkeeper.restore.config import RestoreOptions
    from offsetkeeper.restore.run import run_restore

    dest, topic = small
    target = unique("dst")
    run_restore(RestoreOptions(dest, "b", Connection(dr_bootstrap), restore_id="v1",
                               rename={topic: target}), spark=spark)
    r = run_cli(capsys, "restore", "validate", f"{dest}/b", "--restore", "v1", "-b", bootstrap)
    assert r.code == 2, r.out + r.err
    assert "restore 'v1'" in r.err and len(r.err.strip().splitlines()) == 1
    r = run_cli(capsys, "restore", "validate", f"{dest}/b", "--restore", "v1", "-b", dr_bootstrap, "-o", "json")
    assert r.code == 0 and r.json()["ok"], r.out + r.err


def test_three_phase_live_offsets_are_read_once_and_validated_as_used(capsys, tmp_path, bootstrap, dr_bootstrap,
                                                                      spark, unique, monkeypatch):
    """With --group-offsets live the source is read once: the reported translation is what is
    committed, and validation checks against those offsets (not the backup's). `restore
    validate` takes the same source (`live`, `snapshot:ID`); against the backup's captured
    offsets the commit is a mismatch. Restore reports progress events."""
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.progress import ProgressEvent
    from offsetkeeper.reset.options import ExecuteOptions
    from offsetkeeper.restore import translate
    from offsetkeeper.restore.config import RestoreOptions
    from offsetkeeper.restore.three_phase import ThreePhaseOptions, run_three_phase
    from offsetkeeper.snapshots.capture import take_snapshot
    from offsetkeeper.snapshots.store import SnapshotStore

    topic, target, group = unique("live"), unique("live-dr"), unique("g")
    dest = str(tmp_path)
    write_backup(dest, "b", {topic: {0: records(30)}}, configs={topic: {"retention.ms": "-1"}},
                 groups={group: {(topic, 0): 4}})
    create_topic(bootstrap, topic, 1)
    commit(bootstrap, group, {(topic, 0): 17})  # the live source moved on since the backup
    reads = []
    real = translate.committed_from_cluster
    monkeypatch.setattr(translate, "committed_from_cluster", lambda c, t: reads.append(t) or real(c, t))
    events: list[ProgressEvent] = []
    rep = run_three_phase(ThreePhaseOptions(
        restore=RestoreOptions(dest, "b", Connection(dr_bootstrap), restore_id="l1", rename={topic: target}),
        groups=(group,), offsets_source="live", source=Connection(bootstrap),
        execute=ExecuteOptions(snapshot=False)),
        spark=spark, progress=events.append)
    assert rep.ok, rep.to_dict()
    assert len(reads) == 1
    got = consume_all(dr_bootstrap, target, [0])[0]
    assert [t["target_offset"] for t in rep.translation] == [got[17].offset()]
    assert committed(dr_bootstrap, group, target, 1) == {0: got[17].offset()}
    assert rep.validation["offsets_source"] == "live" and rep.validation["groups"][0]["ok"]
    restore_events = [e for e in events if e.task == "restore l1"]
    assert restore_events and restore_events[-1].done == 30 and restore_events[-1].unit == "records"

    r = run_cli(capsys, "restore", "validate", f"{dest}/b", "-b", dr_bootstrap, "--group", group, "-o", "json")
    assert r.code == 1 and "mismatch" in r.err  # the backup's offset 4 was not what was committed
    r = run_cli(capsys, "restore", "validate", f"{dest}/b", "-b", dr_bootstrap, "--group", group,
                "--group-offsets", "live", "--source-bootstrap-server", bootstrap, "-o", "json")
    assert r.code == 0, r.out + r.err
    assert r.json()["offsets_source"] == "live" and r.json()["groups"][0]["committed"] == 17
    store = str(tmp_path / "snaps")
    with KafkaAdmin(Connection(bootstrap)) as admin:
        snap = SnapshotStore(store).save(take_snapshot(admin, [group], description="source"))
    snap_id = snap.rsplit("/", 1)[-1].removesuffix(".json")
    r = run_cli(capsys, "restore", "validate", f"{dest}/b", "-b", dr_bootstrap, "--group", group,
                "--group-offsets", f"snapshot:{snap_id}", "--snapshot-store", store, "-o", "json")
    assert r.code == 0, r.out + r.err
    assert r.json()["offsets_source"] == f"snapshot:{snap_id}"


def test_offsets_reset_from_a_tampered_mapping_commits_nothing(capsys, small, dr_bootstrap, spark, unique):
    """`offsets reset --from-mapping` refuses a mapping whose chunk was edited (target topic, or
    shifted target offsets): exit non-zero with the partition named, and no group offset is
    committed (checked with an independent consumer)."""
    from offsetkeeper.config import Connection
    from offsetkeeper.restore.config import RestoreOptions
    from offsetkeeper.restore.mapping import mapping_root_for
    from offsetkeeper.restore.run import run_restore

    dest, topic = small
    target = unique("dst")
    run_restore(RestoreOptions(dest, "b", Connection(dr_bootstrap), restore_id="m1",
                               rename={topic: target}), spark=spark)
    group = next(iter(load_manifest(dest, "b").group_offsets()))
    chunk = next(Path(mapping_root_for(dest, "b", "m1"), topic, "0").glob("chunk-*.parquet"))
    original = pq.read_table(chunk)
    for col, values in (("target_topic", ["payments"] * original.num_rows),
                        ("target_offset", [o + 7 for o in original.column("target_offset").to_pylist()])):
        t = original.set_column(original.schema.get_field_index(col), col,
                                pa.array(values, original.schema.field(col).type))
        pq.write_table(t, chunk)
        r = run_cli(capsys, "offsets", "reset", "-b", dr_bootstrap, "--from-mapping", f"{dest}/b:m1",
                    "--group", group, "--execute", "--no-snapshot")
        assert r.code != 0, r.out + r.err
        assert f"the mapping of {topic}:0 is corrupt" in r.err and len(r.err.strip().splitlines()) == 1
        assert committed(dr_bootstrap, group, target, 2) == {0: -1001, 1: -1001}
    pq.write_table(original, chunk)
    r = run_cli(capsys, "offsets", "reset", "-b", dr_bootstrap, "--from-mapping", f"{dest}/b:m1",
                "--group", group, "--execute", "--no-snapshot")
    assert r.code == 0, r.out + r.err
    assert committed(dr_bootstrap, group, target, 2)[0] == 4  # source offset 4 -> target offset 4


def test_backup_reports_progress_events(tmp_path, bootstrap, spark, unique):
    """A backup reports offsetkeeper.progress events (partitions done of total) ending at done."""
    from offsetkeeper.ops.backup import BackupRequest, run_backup
    from tests.kafkatools import produce_n

    topic = unique("prog")
    create_topic(bootstrap, topic, 3, {"retention.ms": "-1"})
    produce_n(bootstrap, topic, 3, 10)
    events = []
    res = run_backup(BackupRequest(bootstrap_server=bootstrap, include=(topic,), destination=str(tmp_path),
                                   backup_id="p1"), progress=events.append, spark=spark)
    assert res.records == 30
    assert {e.task for e in events} == {"backup p1"} and {e.unit for e in events} == {"partitions"}
    assert (events[-1].done, events[-1].total) == (3, 3) and "30 records" in events[-1].message
