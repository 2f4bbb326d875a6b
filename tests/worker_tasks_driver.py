"""Runs a backup task and then a restore task in this fresh process, as one Spark Python worker
would, and prints JSON: records backed up and restored, and whether pandas got imported.

    python -m tests.worker_tasks_driver BOOTSTRAP TOPIC PARTITIONS WORKDIR

Used by tests/integration/test_worker_imports.py; a separate process because the test process
has pandas imported already (pyspark)."""

from __future__ import annotations

import json
import sys


def main(bootstrap: str, topic: str, partitions: int, workdir: str) -> None:
    from offsetkeeper.backup.task import BackupTaskConfig, backup_task, partition_dir
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.models import TopicPartition
    from offsetkeeper.records.read import ReadOptions
    from offsetkeeper.restore.produce import restore_task
    from offsetkeeper.restore.resume import WriterConfig

    conn = Connection(bootstrap)
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    with KafkaAdmin(conn) as admin:
        ends = admin.watermarks(tps)
    read = ReadOptions(kafka={**conn.client_config(), "isolation.level": "read_committed"})
    run_dir = f"{workdir}/backup/data/run=1"
    spec = json.dumps([[topic, p, 0, ends[TopicPartition(topic, p)].high] for p in range(partitions)])
    reports = list(backup_task(BackupTaskConfig(read=read, run_dir=run_dir), iter([spec])))

    target = f"{topic}-restored"
    with KafkaAdmin(conn) as admin:
        admin.create_topic(target, partitions, configs={"retention.ms": "-1"})
        starts = admin.watermarks([TopicPartition(target, p) for p in range(partitions)])
    cfg = WriterConfig(restore_id="imports", mapping_root=f"{workdir}/mapping",
                       producer_conf=conn.client_config(), consumer_conf=conn.client_config(),
                       offset_headers=True, chunk_records=50,
                       start_log_ends={f"{tp.topic}:{tp.partition}": w.high for tp, w in starts.items()})
    routes = [{"source_topic": topic, "source_partition": r["partition"], "target_topic": target,
               "target_partition": r["partition"], "resume_after": -1,
               "files": [f"{partition_dir(run_dir, topic, r['partition'])}/{f}" for f in r["files"]]}
              for r in reports]
    summaries = list(restore_task(cfg, iter([json.dumps(routes)])))
    print(json.dumps({"backed_up": sum(r["records"] for r in reports),
                      "restored": sum(s["records"] for s in summaries),
                      "pandas_imported": "pandas" in sys.modules}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4])
