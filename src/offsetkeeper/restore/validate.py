"""`restore validate`: prove that the target holds what the backup holds, and that translated
group offsets point at the right records.

Data: per route, the record count and checksum (backup/checksum.py: sum of
xxhash64(key, value, headers), x-kafka-backup-* headers stripped on the target side) that the
backup MANIFEST gives for the partition, against the target partition's records in
[log end before the restore, log end after it). With a time window the manifest has no count
for the window: the selected records are counted from the files with pyarrow, every file checked
against the manifest's counts, ranges and checksums as it is read. The target is read in plain
Spark tasks (one per target partition, confluent-kafka), whose failures come back as typed
values. The target must be the restore's target cluster.

Groups: the source offsets that were translated (`offsets_source`: the backup's, the live
source's, or a snapshot's — or exactly the `committed` dict three-phase used) are translated
again; for each, the group's committed offset on the target must equal it,
and the record at that offset must carry the x-kafka-backup-offset header (or, without headers,
the mapping entry) of the first restored source record at or after the source commit; a
translated log end must be the target log end recorded after the restore.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from offsetkeeper.config import Connection
from offsetkeeper.errors import OffsetkeeperError, StoreError, UsageError
from offsetkeeper.kafka.ports import ClusterPort
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.resume import OFFSET_HEADER
from offsetkeeper.restore.state import RestoreState
from offsetkeeper.restore.translate import TranslatedOffset, load_restore_mappings, translate_groups

HEADER_PREFIX = "x-kafka-backup-"


@dataclass
class ValidationReport:
    backup_id: str
    restore_id: str
    partitions: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    offsets_source: str = "backup"   # where the checked group offsets came from

    @property
    def ok(self) -> bool:
        return all(r["ok"] for r in self.partitions) and all(r["ok"] for r in self.groups)

    @property
    def mismatches(self) -> int:
        return sum(not r["ok"] for r in self.partitions) + sum(not r["ok"] for r in self.groups)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "mismatches": self.mismatches}


def _backup_checksums(destination: str, state: RestoreState
                      ) -> tuple[dict[TopicPartition, tuple[int, str]], dict[TopicPartition, str]]:
    """Expected count and checksum per restored source partition, from the manifest (a time
    window: from the files, checked against the manifest); and the problems found per partition."""
    from offsetkeeper.backup.manifest import load_manifest
    from offsetkeeper.backup.read import Selection, partition_segments, selection_stats
    from offsetkeeper.restore.paths import backup_root

    fp = state.fingerprint
    m = load_manifest(destination, state.backup_id)
    lo, hi = fp.get("from_time_ms"), fp.get("to_time_ms")
    out: dict[TopicPartition, tuple[int, str]] = {}
    problems: dict[TopicPartition, str] = {}
    for r in state.routes:
        t = m.topic(r.source_topic)
        entry = t.partition(r.source_partition) if t is not None else None
        if entry is None:
            problems[r.source] = "the partition is not in the backup's manifest"
            continue
        if lo is None and hi is None:
            out[r.source] = (entry.record_count, entry.checksum)
            continue
        segs = partition_segments(backup_root(destination, state.backup_id), m, r.source_topic,
                                  r.source_partition)
        try:
            st = selection_stats(segs, Selection(-1, lo, hi), checksum=True)
        except StoreError as exc:
            problems[r.source] = exc.message
            continue
        out[r.source] = (st.records, st.checksum)
    return out, problems


def check_target_cluster(admin: ClusterPort, state: RestoreState, target: Connection) -> None:
    """Refuse (UsageError) to validate a restore against a cluster it did not write to: other
    bootstrap servers need the same recorded cluster id, and every target partition must exist."""
    def servers(text: str) -> set[str]:
        return {x.strip().lower() for x in text.split(",") if x.strip()}

    if servers(state.target_cluster) != servers(target.bootstrap_servers):
        try:
            cid = admin.cluster_id()
        except OffsetkeeperError:
            cid = ""
        if not (state.target_cluster_id and cid == state.target_cluster_id):
            raise UsageError(f"restore '{state.restore_id}' wrote to {state.target_cluster}, not to "
                             f"{target.bootstrap_servers}; validate it against its target "
                             f"(-b {state.target_cluster})")
    existing = admin.topic_partitions()
    for r in state.routes:
        if r.target_partition not in existing.get(r.target_topic, []):
            raise UsageError(f"{r.target} (written by restore '{state.restore_id}') does not exist on "
                             f"{target.bootstrap_servers}; is this the restore's target cluster?",
                             topic=r.target_topic, partition=r.target_partition)


def _without_restore_headers(batch):
    """The batch's key, value and headers with the x-kafka-backup-* headers removed (what the
    backup's checksum saw)."""
    import pyarrow as pa

    hdr = batch.column("headers")
    if len(hdr.flatten()):
        rows = hdr.to_pylist()
        hdr = pa.array([[h for h in r if not (h["key"] or "").startswith(HEADER_PREFIX)] if r is not None else None
                        for r in rows], hdr.type)
    return pa.RecordBatch.from_arrays([batch.column("key"), batch.column("value"), hdr],
                                      names=["key", "value", "headers"])


def target_checksum_task(client: dict, specs) -> list[dict[str, Any]]:
    """Spark task over JSON specs `[topic, partition, start, end]`: read the target records in
    [start, end) and return their count and checksum (restore headers stripped). Run under
    spark.task_failure.guarded: a failure comes back as a typed TaskFailure."""
    from offsetkeeper.backup import checksum as ck
    from offsetkeeper.records.ranges import OffsetRange
    from offsetkeeper.records.read import RangeStats, ReadOptions, read_batches

    opts = ReadOptions(kafka={**client, "isolation.level": "read_uncommitted"})
    out = []
    for raw in specs:
        t, p, start, end = json.loads(raw)
        total, n = 0, 0
        for b in read_batches(opts, OffsetRange(t, p, start, end), RangeStats()):
            total += ck.batch_checksum(_without_restore_headers(b))
            n += b.num_rows
        out.append({"topic": t, "partition": p, "records": n, "checksum": ck.to_hex(total)})
    return out


def _spec_context(spec: str) -> str:
    t, p, start, end = json.loads(spec)
    return f"reading {t}:{p} [{start}, {end}) of the target"


def _target_checksums(spark, target: Connection, state: RestoreState) -> dict[TopicPartition, tuple[int, str]]:
    """Count and checksum of what the restore wrote to each target partition (between the log
    ends recorded before and after), read in Spark tasks; a task failure raises its typed error."""
    from functools import partial

    from offsetkeeper.errors import KafkaOperationError
    from offsetkeeper.spark.task_failure import guarded, raise_failures

    specs = [json.dumps([r.target_topic, r.target_partition, r.start_log_end, r.end_log_end])
             for r in state.routes if (r.end_log_end or 0) > r.start_log_end]
    if not specs:
        return {}
    from offsetkeeper.spark.tasks import run_tasks

    rows = run_tasks(spark, partial(guarded, target_checksum_task, target.client_config(),
                                    context=_spec_context), specs)
    rows = raise_failures(rows, KafkaOperationError, suffix=f" (validating restore {state.restore_id})")
    return {TopicPartition(r["topic"], r["partition"]): (r["records"], r["checksum"]) for r in rows}


def _record_at(conn: Connection, tp: TopicPartition, offset: int):
    from offsetkeeper.restore.resume import read_target_tail

    msgs = read_target_tail(conn.client_config(), tp, offset)
    return msgs[0] if msgs and msgs[0].offset() == offset else None


def check_groups(target: Connection, rows: list[TranslatedOffset], state: RestoreState,
                 mappings) -> list[dict[str, Any]]:
    """Committed offsets on the target vs the translation, and the record they point at."""
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.kafka.ports import unwrap_each

    out = []
    with KafkaAdmin(target) as admin:
        committed = unwrap_each(admin.committed_offsets_each({r.group for r in rows}))
    ends = state.log_ends()
    for r in rows:
        c = committed.get(r.group, {}).get(r.target)
        actual = c.offset if c is not None else None
        found: int | None = None
        if r.source_record is None:
            ok_record = r.target_offset == ends.get(r.target)
            pointed = "log end"
        else:
            msg = _record_at(target, r.target, r.target_offset)
            hdr = dict(msg.headers() or []).get(OFFSET_HEADER) if msg is not None else None
            if hdr is not None:
                found = int(hdr)
            else:
                m = mappings.get(r.source)
                idx = m.target_offsets.index(r.target_offset) if m and r.target_offset in m.target_offsets else None
                found = m.source_offsets[idx] if idx is not None else None
            ok_record = found == r.source_record
            pointed = f"source offset {found}"
        row = {**r.to_dict(), "committed_on_target": actual, "record": pointed,
               "ok": actual == r.target_offset and ok_record}
        out.append(row)
    return out


def validate_restore(destination: str, backup_id: str, restore_id: str | None, target: Connection,
                     *, groups: list[str] | None = None, check_group_offsets: bool = False,
                     offsets_source: str = "backup", committed=None, source_connection=None,
                     snapshot_store: str | None = None, spark=None, master: str | None = None,
                     spark_conf=None) -> ValidationReport:
    """Compare the target with the backup manifest (counts, checksums) and, when asked (a group
    list, or `check_group_offsets` for every group), the committed group offsets against the
    translation of `committed` or of the offsets read from `offsets_source`."""
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.restore.translate import check_offsets_source

    check_offsets_source(offsets_source)
    state, mappings = load_restore_mappings(destination, backup_id, restore_id)
    with KafkaAdmin(target) as admin:
        check_target_cluster(admin, state, target)
    report = ValidationReport(backup_id, state.restore_id)
    report.offsets_source = "given" if committed is not None else offsets_source
    want, problems = _backup_checksums(destination, state)
    if spark is None:
        from offsetkeeper.spark.session import get_spark

        spark = get_spark(master, spark_conf, app_name=f"offsetkeeper-validate-{state.restore_id}")
    got = _target_checksums(spark, target, state)
    for r in state.routes:
        bn, bc = want.get(r.source, (0, "0" * 16))
        tn, tc = got.get(r.target, (0, "0" * 16))
        mapped = mappings[r.source].count if r.source in mappings else 0
        row = {
            "topic": r.source_topic, "partition": r.source_partition,
            "target_topic": r.target_topic, "target_partition": r.target_partition,
            "backup_records": bn, "target_records": tn, "mapped_records": mapped,
            "backup_checksum": bc, "target_checksum": tc,
            "ok": bn == tn == mapped and bc == tc and r.source not in problems
            and state.status == "completed"}
        if r.source in problems:
            row["problem"] = problems[r.source]
        report.partitions.append(row)
    if check_group_offsets or groups:
        _, rows = translate_groups(destination, backup_id, state.restore_id, groups,
                                   source=offsets_source, committed=committed,
                                   source_connection=source_connection, snapshot_store=snapshot_store)
        report.groups = check_groups(target, rows, state, mappings)
    return report
