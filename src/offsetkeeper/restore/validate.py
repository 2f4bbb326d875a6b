"""`restore validate`: prove that the target holds what the backup holds, and that translated
group offsets point at the right records.

Data: per route, the record count and checksum (backup/checksum.py: sum of
xxhash64(key, value, headers), x-kafka-backup-* headers stripped on the target side) of the
backup rows the restore selected, against the target partition's records in
[log end before the restore, log end after it). Computed in Spark; the target is read with the
offsetkeeper-kafka data source.

Groups: for each translated offset, the group's committed offset on the target must equal it,
and the record at that offset must carry the x-kafka-backup-offset header (or, without headers,
the mapping entry) of the first restored source record at or after the source commit; a
translated log end must be the target log end recorded after the restore.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from offsetkeeper.config import Connection
from offsetkeeper.models import TopicPartition
from offsetkeeper.restore.state import RestoreState
from offsetkeeper.restore.translate import TranslatedOffset, load_restore_mappings, translate_groups
from offsetkeeper.restore.writer import OFFSET_HEADER

HEADER_PREFIX = "x-kafka-backup-"


@dataclass
class ValidationReport:
    backup_id: str
    restore_id: str
    partitions: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r["ok"] for r in self.partitions) and all(r["ok"] for r in self.groups)

    @property
    def mismatches(self) -> int:
        return sum(not r["ok"] for r in self.partitions) + sum(not r["ok"] for r in self.groups)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok, "mismatches": self.mismatches}


def _backup_checksums(spark, destination: str, state: RestoreState) -> dict[TopicPartition, tuple[int, str]]:
    from pyspark.sql import functions as F

    from offsetkeeper.backup.checksum import record_checksums
    from offsetkeeper.backup.manifest import read_backup_records

    fp = state.fingerprint
    df = read_backup_records(spark, destination, state.backup_id)
    sel = F.lit(False)
    for r in state.routes:
        sel = sel | ((F.col("topic") == r.source_topic) & (F.col("partition") == r.source_partition))
    df = df.where(sel)
    if fp.get("from_time_ms") is not None:
        df = df.where(F.col("timestamp") >= F.lit(fp["from_time_ms"]))
    if fp.get("to_time_ms") is not None:
        df = df.where(F.col("timestamp") < F.lit(fp["to_time_ms"]))
    return {TopicPartition(t, p): v for (t, p), v in record_checksums(df).items()}


def _target_checksums(spark, target: Connection, state: RestoreState) -> dict[TopicPartition, tuple[int, str]]:
    from offsetkeeper.backup.checksum import record_checksums
    from offsetkeeper.spark.kafka import register

    routes = [r for r in state.routes if (r.end_log_end or 0) > r.start_log_end]
    if not routes:
        return {}
    assign: dict[str, list[int]] = {}
    start: dict[str, dict[str, int]] = {}
    end: dict[str, dict[str, int]] = {}
    for r in routes:
        assign.setdefault(r.target_topic, []).append(r.target_partition)
        start.setdefault(r.target_topic, {})[str(r.target_partition)] = r.start_log_end
        end.setdefault(r.target_topic, {})[str(r.target_partition)] = r.end_log_end
    register(spark)
    reader = (spark.read.format("offsetkeeper-kafka")
              .option("assign", json.dumps(assign))
              .option("startingOffsets", json.dumps(start))
              .option("endingOffsets", json.dumps(end))
              .option("kafka.isolation.level", "read_uncommitted"))
    for k, v in target.client_config().items():
        reader = reader.option(f"kafka.{k}", v)
    df = reader.load()
    return {TopicPartition(t, p): v for (t, p), v in
            record_checksums(df, strip_header_prefix=HEADER_PREFIX).items()}


def _record_at(conn: Connection, tp: TopicPartition, offset: int):
    from offsetkeeper.restore.writer import read_target_tail

    msgs = read_target_tail(conn.client_config(), tp, offset)
    return msgs[0] if msgs and msgs[0].offset() == offset else None


def check_groups(target: Connection, rows: list[TranslatedOffset], state: RestoreState,
                 mappings) -> list[dict[str, Any]]:
    """Committed offsets on the target vs the translation, and the record they point at."""
    from offsetkeeper.kafka.admin import KafkaAdmin

    out = []
    with KafkaAdmin(target) as admin:
        committed = admin.committed_offsets_many({r.group for r in rows})
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
                     spark=None, master: str | None = None, spark_conf=None) -> ValidationReport:
    """Compare the target with the backup (counts, checksums) and, when asked, group offsets."""
    state, mappings = load_restore_mappings(destination, backup_id, restore_id)
    report = ValidationReport(backup_id, state.restore_id)
    if spark is None:
        from offsetkeeper.spark.session import get_spark

        spark = get_spark(master, spark_conf, app_name=f"offsetkeeper-validate-{state.restore_id}")
    want = _backup_checksums(spark, destination, state)
    got = _target_checksums(spark, target, state)
    for r in state.routes:
        bn, bc = want.get(r.source, (0, "0" * 16))
        tn, tc = got.get(r.target, (0, "0" * 16))
        mapped = mappings[r.source].count if r.source in mappings else 0
        report.partitions.append({
            "topic": r.source_topic, "partition": r.source_partition,
            "target_topic": r.target_topic, "target_partition": r.target_partition,
            "backup_records": bn, "target_records": tn, "mapped_records": mapped,
            "backup_checksum": bc, "target_checksum": tc,
            "ok": bn == tn == mapped and bc == tc and state.status == "completed"})
    if check_group_offsets or groups:
        _, rows = translate_groups(destination, backup_id, state.restore_id, groups)
        report.groups = check_groups(target, rows, state, mappings)
    return report
