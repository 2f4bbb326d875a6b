"""Profile the backup and restore tasks in one process, without Spark.

    .venv/bin/python bench/profile_tasks.py [--mb-per-partition 10] [--partitions 4]
                                            [--bootstrap HOST:PORT] [--top 25] [--out DIR]

Starts a development broker (unless --bootstrap is given), fills a topic, then runs
`backup.task.backup_task` over every partition and `restore.produce.restore_task` over the
backup it wrote (to a new topic on the same broker), both in this process under cProfile, one
task after the other (what one Spark Python worker does). Prints JSON: seconds and records/s per
phase and the top functions by own time; writes the .pstats files to --out for snakeviz/pstats.
Spark is left out on purpose: this shows where the Python time of a task goes.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import time
import uuid
from pathlib import Path

from fill import fill_topic, workspace  # bench/ is on sys.path when run as a script


def _top(prof: cProfile.Profile, n: int) -> list[dict]:
    st = pstats.Stats(prof, stream=io.StringIO())
    rows = []
    for (file, line, fn), (_cc, nc, tt, ct, _callers) in st.stats.items():
        rows.append({"function": f"{Path(file).name}:{line}({fn})", "calls": nc,
                     "own_s": round(tt, 3), "cum_s": round(ct, 3)})
    rows.sort(key=lambda r: -r["own_s"])
    return rows[:n]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb-per-partition", type=float, default=10)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--value-bytes", type=int, default=1000)
    ap.add_argument("--bootstrap", default=None)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--out", default=None, help="directory for backup.pstats / restore.pstats")
    ap.add_argument("--tasks", type=int, default=2, help="backup and restore tasks (run one after another)")
    ap.add_argument("--parallel", action="store_true",
                    help="ranges/routes of a task in parallel threads, as in production (cProfile "
                         "then sees only the main thread waiting)")
    ap.add_argument("--no-headers", action="store_true", help="restore without offset headers")
    args = ap.parse_args()

    from offsetkeeper.backup.task import BackupTaskConfig, backup_task
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.models import TopicPartition
    from offsetkeeper.restore.produce import restore_task
    from offsetkeeper.restore.resume import WriterConfig
    from offsetkeeper.spark.kafka.options import parse_options

    if not args.parallel:  # one thread, so that cProfile sees the work
        from offsetkeeper.backup import task as backup_task_module
        from offsetkeeper.restore import produce

        backup_task_module.RANGES_IN_PARALLEL = 1
        produce.ROUTES_IN_PARALLEL = 1
    with workspace("okprof-", args.bootstrap, keep=("pstats",)) as (tmp, bootstrap):
        out_dir = Path(args.out) if args.out else tmp / "pstats"
        out_dir.mkdir(parents=True, exist_ok=True)
        topic = f"prof-{uuid.uuid4().hex[:8]}"
        records, _nbytes = fill_topic(bootstrap, topic, args.partitions, args.mb_per_partition,
                                      args.value_bytes)
        conn = Connection(bootstrap)
        with KafkaAdmin(conn) as admin:
            tps = [TopicPartition(topic, p) for p in range(args.partitions)]
            ends = admin.watermarks(tps)
        run_dir = str(tmp / "backup" / "data" / "run=1")
        opts = {f"kafka.{k}": v for k, v in conn.client_config().items()}
        opts["kafka.isolation.level"] = "read_committed"
        opts["assign"] = "{}"
        bcfg = BackupTaskConfig(read=parse_options(opts).reading(), run_dir=run_dir)
        specs = [json.dumps([[topic, p, 0, ends[TopicPartition(topic, p)].high]
                             for p in range(i, args.partitions, args.tasks)])
                 for i in range(args.tasks)]

        prof = cProfile.Profile()
        t = time.monotonic()
        prof.enable()
        reports = list(backup_task(bcfg, iter(specs)))
        prof.disable()
        backup_s = time.monotonic() - t
        prof.dump_stats(out_dir / "backup.pstats")
        backup_top = _top(prof, args.top)
        assert sum(r["records"] for r in reports) == records

        target = f"{topic}-restored"
        with KafkaAdmin(conn) as admin:
            admin.create_topic(target, args.partitions, replication_factor=-1)
            starts = admin.watermarks([TopicPartition(target, p) for p in range(args.partitions)])
        from offsetkeeper.backup.task import partition_dir

        rcfg = WriterConfig(
            restore_id="prof", mapping_root=str(tmp / "mapping"), producer_conf=conn.client_config(),
            consumer_conf=conn.client_config(), offset_headers=not args.no_headers,
            chunk_records=50_000,
            start_log_ends={f"{tp.topic}:{tp.partition}": w.high for tp, w in starts.items()})
        routes = []
        for r in reports:
            d = partition_dir(run_dir, topic, r["partition"])
            routes.append({"source_topic": topic, "source_partition": r["partition"],
                           "target_topic": target, "target_partition": r["partition"],
                           "files": [f"{d}/{f}" for f in r["files"]], "resume_after": -1})
        # routes per task as run_restore makes them on a 2-core local[*]
        rspecs = [json.dumps(routes[i::args.tasks]) for i in range(args.tasks)]
        prof = cProfile.Profile()
        t = time.monotonic()
        prof.enable()
        summaries = list(restore_task(rcfg, iter(rspecs)))
        prof.disable()
        restore_s = time.monotonic() - t
        prof.dump_stats(out_dir / "restore.pstats")
        assert sum(s["records"] for s in summaries) == records, summaries

        print(json.dumps({
            "records": records, "partitions": args.partitions,
            "backup": {"seconds": round(backup_s, 2), "records_per_s": round(records / backup_s)},
            "restore": {"seconds": round(restore_s, 2), "records_per_s": round(records / restore_s),
                        "mapping": sorted({s.get("mapping", "delivery-reports") for s in summaries})},
            "backup_top_own_time": backup_top,
            "restore_top_own_time": _top(prof, args.top),
            "pstats": str(out_dir), "load_average_1m": round(os.getloadavg()[0], 2),
        }, indent=1))


if __name__ == "__main__":
    main()
