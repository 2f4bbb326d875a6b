"""Hardening of restore and backup input (issue 8 items 8, 12, 18, 22, 23, 24; issue 9): bad
flags, tampered files and hostile names give one line and exit 2 (or StoreError, exit 1),
without a traceback and without touching anything. No broker, no Spark."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from offsetkeeper.config import Connection
from offsetkeeper.errors import StoreError, UsageError
from offsetkeeper.models import TopicPartition as TP
from offsetkeeper.restore.backup_view import load_backup_view
from offsetkeeper.restore.config import RestoreOptions, parse_partition_map, split_backup_ref
from offsetkeeper.restore.mapping import check_mapping, mapping_root_for, read_mapping, write_chunk
from offsetkeeper.restore.plan import Route, route_partitions, topics_to_create
from offsetkeeper.restore.state import (
    RestoreState,
    RestoreStatus,
    RouteState,
    load_state,
    resolve_restore,
    save_state,
)
from offsetkeeper.spark.task_failure import TaskFailure, guarded, raise_failures
from tests.cli import run_cli
from tests.restore_support import rec, write_backup

T0 = 1_700_000_000_000


@pytest.fixture
def restored(tmp_path):
    """A backup with a completed restore r1 (state + mapping written as a restore writes them)."""
    dest = str(tmp_path)
    write_backup(dest, "b", {"orders": {0: [rec(o, T0 + o, b"k", b"v") for o in range(0, 20, 2)]}},
                 groups={"g": {("orders", 0): 5}})
    st = RestoreState("r1", "b", "dr:9092", {}, [RouteState("orders", 0, "orders-dr", 0, 100, 110)],
                      status=RestoreStatus.COMPLETED, started_at_ms=T0, finished_at_ms=T0 + 61_000)
    save_state(dest, "b", st)
    write_chunk(mapping_root_for(dest, "b", "r1"), "r1", TP("orders", 0), TP("orders-dr", 0),
                list(range(0, 20, 2)), list(range(100, 110)), [T0] * 10)
    return dest


# -- flags ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["ord:0=99999999999", "ord:0_1=2", "ord:\u0660=1", "0=-1"])
def test_partition_map_refuses_out_of_range_and_non_ascii_numbers(value):
    """A partition map takes ASCII digits within Kafka's int32 partition range only."""
    with pytest.raises(UsageError, match="--partition-map"):
        parse_partition_map([value])


def test_partition_map_for_a_topic_not_in_the_backup_is_refused(restored):
    """`--partition-map nosuch:0=1` names a topic the backup does not hold: exit 2, not ignored."""
    view = load_backup_view(restored, "b")
    o = RestoreOptions(restored, "b", Connection("x:1"), partition_map={"nosuch": {0: 1}})
    with pytest.raises(UsageError, match="--partition-map names topic 'nosuch'.*it holds: orders"):
        route_partitions(view, o)


def test_a_map_creating_100001_partitions_is_refused(restored):
    """A partition map that would create a topic with more than 100,000 partitions is a typo."""
    view = load_backup_view(restored, "b")
    routes = [Route(TP("orders", 0), TP("orders", 100_000))]
    with pytest.raises(UsageError, match="100001 partitions"):
        topics_to_create(view, routes, {})
    assert topics_to_create(view, [Route(TP("orders", 0), TP("orders", 99_999))], {})[0].partitions == 100_000


def test_restore_topic_selector_takes_regex(restored):
    """Restore selects topics as backup does: NAME, GLOB or ~REGEX."""
    view = load_backup_view(restored, "b")
    o = RestoreOptions(restored, "b", Connection("x:1"), topics=("~ord[a-z]+",))
    assert [r.source for r in route_partitions(view, o)] == [TP("orders", 0)]


# -- tampered files ---------------------------------------------------------------------------

@pytest.mark.parametrize("content", [b"[]", b'{"restore_id": "r1"}', None])
def test_a_corrupt_restore_state_is_one_line(restored, content):
    """A restore state that is a list, lacks fields, or holds a string where a number belongs is
    refused with one line naming the file (StoreError), never a traceback."""
    path = f"{restored}/b/restores/r1.json"
    if content is None:
        raw = json.loads(Path(path).read_text())
        raw["routes"][0]["start_log_end"] = "100"
        content = json.dumps(raw).encode()
    Path(path).write_bytes(content)
    with pytest.raises(StoreError) as exc:
        load_state(restored, "b", "r1")
    assert "r1.json is corrupt" in exc.value.message and "\n" not in exc.value.message


def test_a_mapping_chunk_with_the_wrong_schema_is_one_line(restored):
    """A chunk without the mapping columns is refused by name, not with an Arrow traceback."""
    root = mapping_root_for(restored, "b", "r1")
    pq.write_table(pa.table({"x": [1, 2]}), f"{root}/orders/0/chunk-00000000000000000099.parquet")
    with pytest.raises(StoreError, match=r"chunk-00000000000000000099.parquet does not have the mapping "
                                         r"columns") as exc:
        read_mapping(root)
    assert "\n" not in exc.value.message


@pytest.mark.parametrize(("change", "message"), [
    ({"target_topic": "payments"}, "target_topic 'payments'"),
    ({"target_offset": [100, 101, 102, 99, 104, 105, 106, 107, 108, 109]}, "target offset 99 follows 102"),
    ({"target_offset": [i + 5 for i in range(100, 110)]}, "at or past 110"),
    ({"partition": 3}, "orders:3, which restore 'r1' did not restore"),
    ({"target_offset": [100, None, *range(102, 110)]}, "a row has no target offset"),
    ({"source_offset": [None] * 10}, "a row has no source offset"),
])
def test_a_tampered_mapping_is_refused(restored, change, message):
    """Mapping rows must follow the restore state's routes with increasing offsets inside the
    target range the restore wrote: an edited target topic or shifted offsets are refused."""
    root = mapping_root_for(restored, "b", "r1")
    path = f"{root}/orders/0/chunk-00000000000000000000.parquet"
    t = pq.read_table(path)
    for col, v in change.items():
        values = v if isinstance(v, list) else [v] * t.num_rows
        t = t.set_column(t.schema.get_field_index(col), col, pa.array(values, t.schema.field(col).type))
    pq.write_table(t, path)
    st = load_state(restored, "b", "r1")
    with pytest.raises(StoreError, match=message):
        check_mapping(read_mapping(root), st)


@pytest.mark.parametrize(("offsets", "message"), [
    ([{"topic": "orders", "partition": 0, "offset": -5}], "greater than or equal to 0"),
    ([{"topic": "orders", "partition": 0, "offset": 10**30}], "less than or equal to 9223372036854775807"),
    ([{"topic": "../x", "partition": 0, "offset": 5}], "not a valid Kafka topic name"),
    ([{"topic": "orders", "partition": 0, "offset": 5}, {"topic": "orders", "partition": 0, "offset": 6}],
     "lists orders:0 twice"),
])
def test_manifest_group_offsets_are_validated_on_load(restored, offsets, message):
    """Group offsets in a manifest are checked when it is loaded: negative, beyond int64, a topic
    that is not a topic name, a partition listed twice."""
    from offsetkeeper.backup.manifest import load_manifest

    path = f"{restored}/b/manifest.json"
    raw = json.loads(Path(path).read_text())
    raw["groups"][0]["offsets"] = offsets
    Path(path).write_text(json.dumps(raw))
    with pytest.raises(StoreError, match=message):
        load_manifest(restored, "b")


def test_a_group_listed_twice_in_the_manifest_is_refused(restored):
    from offsetkeeper.backup.manifest import load_manifest

    path = f"{restored}/b/manifest.json"
    raw = json.loads(Path(path).read_text())
    raw["groups"].append(raw["groups"][0])
    Path(path).write_text(json.dumps(raw))
    with pytest.raises(StoreError, match="group 'g' is listed twice"):
        load_manifest(restored, "b")


def test_restore_validate_expects_the_manifest_not_the_files(restored):
    """`restore validate` compares the target with the MANIFEST: a file holding its records
    twice does not change what is expected (and with a time window the file check fails)."""
    from offsetkeeper.backup.manifest import load_manifest
    from offsetkeeper.restore.validate import _backup_checksums

    entry = load_manifest(restored, "b").topic("orders").partition(0)
    path = f"{restored}/b/data/run=1/topic=orders/partition=0/part-00000.parquet"
    t = pq.read_table(path)
    pq.write_table(pa.concat_tables([t, t]), path)
    st = load_state(restored, "b", "r1")
    want, problems = _backup_checksums(restored, st)
    assert want[TP("orders", 0)] == (entry.record_count, entry.checksum) == (10, entry.checksum)
    st.fingerprint = {"from_time_ms": T0}
    want, problems = _backup_checksums(restored, st)
    assert "hold 20 records but the manifest says 10" in problems[TP("orders", 0)]


# -- paths stay inside the backup ---------------------------------------------------------------

def test_restore_ids_and_backup_ids_cannot_leave_the_backup(restored):
    """`--restore ../../x` and `DEST/..` are refused (exit 2) before any path is opened."""
    with pytest.raises(UsageError, match=r"--restore '../../x' is invalid"):
        resolve_restore(restored, "b", "../../x")
    with pytest.raises(UsageError, match=r"backup id '..' is invalid"):
        split_backup_ref(f"{restored}/b/..")


@pytest.mark.parametrize(("args", "message"), [
    (["mapping", "show", "{d}/b", "--restore", "../../x"], "--restore '../../x' is invalid"),
    (["restore", "list", "{d}/b/.."], "backup id '..' is invalid"),
    (["mapping", "lookup", "{d}/b", "--topic", "orders", "--partition", "0", "--offset", "-5"],
     "--offset -5 is negative"),
    (["restore", "run", "{d}/b", "-b", "127.0.0.1:1", "--partition-map", "orders:0=99999999999"],
     "partition 99999999999 is out of range"),
    (["backup", "run", "-b", "127.0.0.1:1", "-t", "orders", "--dest", "{d}"], "no backup id given: use --id"),
])
def test_cli_refuses_with_one_line_and_exit_2(capsys, restored, args, message):
    """Each bad input: exit 2, one line naming the value, nothing written."""
    before = sorted(p for p in Path(restored).rglob("*"))
    r = run_cli(capsys, *[a.replace("{d}", restored) for a in args])
    assert r.code == 2, r.err
    assert message in r.err and len(r.err.strip().splitlines()) == 1
    assert sorted(p for p in Path(restored).rglob("*")) == before


# -- times and listings -----------------------------------------------------------------------

def test_restore_list_and_backups_describe_show_iso_utc(capsys, restored):
    """Tables show ISO-8601 UTC; JSON keeps the epoch-ms number and adds the ISO string."""
    r = run_cli(capsys, "restore", "list", f"{restored}/b")
    assert r.code == 0 and "2023-11-14T22:13:20.000Z" in r.out and "2023-11-14T22:14:21.000Z" in r.out
    assert str(T0) not in r.out
    r = run_cli(capsys, "restore", "list", f"{restored}/b", "-o", "json")
    row = r.json()[0]
    assert (row["started_at"], row["started_at_iso"]) == (T0, "2023-11-14T22:13:20.000Z")
    r = run_cli(capsys, "backups", "describe", "b", "--dest", restored)
    assert r.code == 0 and "2023-11-14T22:13:20.000Z" in r.out and str(T0) not in r.out
    r = run_cli(capsys, "backups", "describe", "b", "--dest", restored, "-o", "json")
    p = r.json()["topics"][0]["partitions"][0]
    assert (p["first_timestamp"], p["first_timestamp_iso"]) == (T0, "2023-11-14T22:13:20.000Z")


def test_help_says_what_the_options_do(capsys):
    """`restore validate -g` checks no group unless asked; `--restore` defaults to the latest
    completed restore on mapping and validate."""
    for cmd in (["restore", "validate"], ["mapping", "show"], ["mapping", "lookup"]):
        r = run_cli(capsys, *cmd, "--help")
        assert "latest completed restore" in " ".join(r.out.split()), cmd
    r = run_cli(capsys, "restore", "validate", "--help")
    text = " ".join(r.out.split())
    assert "default: no group" in text and "every group in the backup" not in text


@pytest.mark.parametrize("args", [
    ["restore", "list", "{d}/b"], ["mapping", "show", "{d}/b"],
    ["mapping", "lookup", "{d}/b", "--topic", "orders", "--partition", "0", "--offset", "4"],
    ["backups", "list", "--dest", "{d}"], ["backups", "describe", "b", "--dest", "{d}"],
])
def test_commands_that_move_no_data_never_import_spark(restored, args):
    """restore list, mapping show|lookup, backups list|describe read Parquet/JSON with pyarrow:
    pyspark is never imported (no JVM, no 40 s start)."""
    code = ("import sys\nfrom offsetkeeper.cli.main import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
            "assert 'pyspark' not in sys.modules, 'pyspark was imported'\n")
    r = subprocess.run([sys.executable, "-c", code, *[a.replace("{d}", restored) for a in args]],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


# -- typed task failures ------------------------------------------------------------------------

def test_task_failures_travel_as_typed_values():
    """An exception inside a Spark task becomes a TaskFailure row; the driver raises the same
    error class with one sentence naming the partition (no text parsing)."""
    def task(cfg, specs):
        for s in specs:
            if s == "bad":
                raise StoreError("backup file x.parquet cannot be read: truncated", topic="t", partition=3)
            if s == "odd":
                raise ValueError("boom\nsecond line")
            yield {"ok": s}

    rows = list(guarded(task, None, iter(["a", "bad", "c"])))
    assert rows[0] == {"ok": "a"} and isinstance(rows[1], TaskFailure) and len(rows) == 2
    with pytest.raises(StoreError) as exc:
        raise_failures(rows, UsageError, suffix="; rerun")
    assert (exc.value.topic, exc.value.partition) == ("t", 3)
    assert exc.value.message == "backup file x.parquet cannot be read: truncated; rerun"
    [f] = list(guarded(task, None, iter(["odd"]), context=lambda s: f"reading {s}"))
    assert f.message == "reading odd: ValueError: boom" and f.kind == ""
    assert raise_failures([{"ok": 1}], StoreError) == [{"ok": 1}]


# -- the operations layer: one merge of file and flags ---------------------------------------------

def test_three_phase_request_loads_the_file_once_and_uses_the_config_snapshot_store(tmp_path, monkeypatch):
    """The YAML restore file is loaded once and merged with flags in the library; the snapshot
    store comes from the one resolver (the config's snapshots.store when no flag)."""
    from offsetkeeper.restore import config as rc
    from offsetkeeper.restore.three_phase import ThreePhaseRequest, build_three_phase_options

    monkeypatch.delenv("OFFSETKEEPER_SNAPSHOT_STORE", raising=False)
    cfg = tmp_path / "config.yaml"
    cfg.write_text(f"snapshots: {{store: {tmp_path}/snaps}}\n")
    f = tmp_path / "r.yaml"
    f.write_text("backup: {path: /b, id: nightly}\ntarget: {bootstrap_servers: 'dr:9092'}\n"
                 "restore: {restore_id: from-file, chunk_records: 7}\n"
                 "groups: {strategy: skip, groups: [a], offsets: live}\n")
    loads = []
    real = rc.load_restore_file
    monkeypatch.setattr(rc, "load_restore_file", lambda p: loads.append(p) or real(p))
    import offsetkeeper.restore.three_phase as tp

    monkeypatch.setattr(tp, "load_restore_file", rc.load_restore_file)
    o = build_three_phase_options(ThreePhaseRequest(
        restore=rc.RestoreRequest(file=f, config=cfg, restore_id="from-flag"), strategy="translate"))
    assert len(loads) == 1
    assert (o.restore.restore_id, o.restore.chunk_records, o.restore.backup_id) == ("from-flag", 7, "nightly")
    assert (o.strategy, o.groups, o.offsets_source) == ("translate", ("a",), "live")
    assert o.execute.snapshot_store == o.offsets_snapshot_store == f"{tmp_path}/snaps"
