"""Benchmark: offsetkeeper backup vs kcat consuming the same topic, in the same run.

    .venv/bin/python bench/backup.py [--mb-per-partition 25] [--partitions 8] [--value-bytes 1000]
                                     [--bootstrap HOST:PORT] [--master local[*]]

Creates a topic of PARTITIONS x MB records (random, incompressible values), then measures:
- kcat: ``kcat -C -e -f '%o %k %s\\n'`` of the whole topic to a file (the yardstick);
- backup_e2e: ``offsetkeeper backup run`` as a fresh process (Python + Spark session start);
- backup_no_session: ``run_backup`` in an already started session (includes the first data
  source job's warm-up);
- backup_warm: further ``run_backup`` runs (new backup ids) in the same session, best of
  ``--repeat``.
Prints JSON: records/s, MB/s, ratios to kcat, peak memory (RSS of the process tree).
Goal: backup throughput without session start >= 0.7x kcat; peak memory (--memory-mb-per-partition:
1x and 4x the data, new session) does not grow with the data. The memory check also runs one
backup task of one partition (1x, 4x) in a fresh process without Spark and prints its peak RSS,
the Python heap's peak (tracemalloc) and the Arrow pool's peak — the parts the task controls —
with the backup's consumer settings and with small fetch limits (`SMALL_FETCH`), to show what the
development broker's whole-partition fetch responses add. ``--memory-only`` runs just that.
Session start is reported with its parts (`spark_session_start_parts`: the JVM session and
Spark's Python workers, started before the first job). Temporary data is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from fill import fill_topic  # bench/ is on sys.path when run as a script
from memory import PeakMemory


def run_kcat(bootstrap: str, topic: str, out: Path) -> dict:
    # one fetch may carry every partition: allow large responses (the dev broker ignores limits)
    cmd = ["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
           "-X", "receive.message.max.bytes=1000000000",
           "-f", "%o %k %s\n"]
    t = time.monotonic()
    with out.open("wb") as f:
        proc = subprocess.Popen(cmd, stdout=f)
        with PeakMemory(proc.pid) as mem:
            proc.wait()
    secs = time.monotonic() - t
    assert proc.returncode == 0, "kcat failed"
    return {"seconds": secs, "peak_rss_mb": mem.peak / 2**20, "output_mb": out.stat().st_size / 2**20}


def run_e2e(bootstrap: str, topic: str, dest: str, master: str) -> dict:
    exe = Path(sys.executable).parent / "offsetkeeper"
    cmd = [str(exe), "backup", "run", "-b", bootstrap, "-t", topic, "--dest", dest,
           "--id", "e2e", "--master", master, "-o", "json"]
    t = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    with PeakMemory(proc.pid) as mem:
        out, _ = proc.communicate()
    secs = time.monotonic() - t
    assert proc.returncode == 0, "offsetkeeper backup run failed"
    return {"seconds": secs, "peak_rss_mb": mem.peak / 2**20, "summary": json.loads(out)}


def memory_check(bootstrap: str, tmp: Path, args) -> dict:
    """Peak RSS of a backup of each scale of the data per partition (1x and 4x unless
    --memory-scales), each in its own new Spark session (new Python workers: a worker reused
    from a smaller backup would carry its heap into the bigger one's figure), the whole process
    tree and Spark's Python workers alone."""
    from offsetkeeper.backup.config import BackupConfig
    from offsetkeeper.backup.run import run_backup
    from offsetkeeper.config import Connection
    from offsetkeeper.spark.session import get_spark

    topics = {}
    for scale in args.memory_scales:
        topics[scale] = f"bench-mem{scale}-{uuid.uuid4().hex[:6]}"
        fill_topic(bootstrap, topics[scale], args.memory_partitions,
                   args.memory_mb_per_partition * scale, args.value_bytes)
    out = {}
    for scale in args.memory_scales:
        spark = get_spark(args.master)
        try:
            cfg = BackupConfig(connection=Connection(bootstrap), include=(topics[scale],),
                               destination=str(tmp / "backups"), backup_id=f"mem-{scale}x")
            with PeakMemory(os.getpid()) as mem:
                r = run_backup(cfg, spark=spark)
            out[f"{scale}x"] = {"mb": round(r.bytes_written / 2**20, 1),
                                "peak_rss_mb_tree": round(mem.peak / 2**20, 1),
                                "peak_rss_mb_python_workers": round(mem.peak_python / 2**20, 1)}
        finally:
            spark.stop()
    return out


# Consumer settings that bound a consumer's fetched data on Apache Kafka (librdkafka
# CONFIGURATION.md); the development broker answers a fetch with the rest of the partition anyway.
SMALL_FETCH = {"fetch.message.max.bytes": "1048576", "fetch.max.bytes": "1048576",
               "queued.max.messages.kbytes": "1024"}


def task_memory(bootstrap: str, topic: str, end: int, run_dir: str, extra: dict) -> dict:
    """(Runs in a fresh process.) One backup task of partition 0 of `topic`, in this process
    without Spark: peak RSS, the Python heap's peak (tracemalloc) and the Arrow pool's peak —
    the parts the task controls — and what is left, librdkafka's fetch buffers."""
    import resource
    import tracemalloc

    import pyarrow as pa

    from offsetkeeper.backup.task import BackupTaskConfig, backup_task
    from offsetkeeper.spark.kafka.options import parse_options

    opts = {"kafka.bootstrap.servers": bootstrap, "kafka.isolation.level": "read_committed",
            "kafka.queued.max.messages.kbytes": "16384", "assign": "{}",
            **{f"kafka.{k}": v for k, v in extra.items()}}
    cfg = BackupTaskConfig(read=parse_options(opts).reading(), run_dir=run_dir)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    rows = list(backup_task(cfg, iter([json.dumps([topic, 0, 0, end])])))
    py_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    arrow_peak = pa.default_memory_pool().max_memory()
    mb = 2**20
    return {"records": rows[0]["records"], "peak_rss_mb": round(peak / mb, 1),
            "rss_before_mb": round(base / mb, 1), "python_heap_peak_mb": round(py_peak / mb, 1),
            "arrow_pool_peak_mb": round(arrow_peak / mb, 1),
            "rest_mb (librdkafka fetch buffers, allocator)":
                round((peak - base - py_peak - arrow_peak) / mb, 1)}


def task_memory_check(bootstrap: str, tmp: Path, args) -> dict:
    """`task_memory` of one partition of 1x and 4x the data, each in a fresh process, with the
    backup's consumer settings and with small fetch limits (`SMALL_FETCH`)."""
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.models import TopicPartition

    out = {}
    for scale in (1, 4):
        topic = f"bench-tmem{scale}-{uuid.uuid4().hex[:6]}"
        fill_topic(bootstrap, topic, 1, args.memory_mb_per_partition * scale, args.value_bytes)
        with KafkaAdmin(Connection(bootstrap)) as admin:
            end = admin.watermarks([TopicPartition(topic, 0)])[TopicPartition(topic, 0)].high
        for name, extra in (("backup_settings", {}), ("small_fetch_limits", SMALL_FETCH)):
            spec = json.dumps([bootstrap, topic, end, str(tmp / f"tmem-{scale}-{name}"), extra])
            proc = subprocess.run([sys.executable, __file__, "--task-memory", spec],
                                  capture_output=True, text=True, check=True)
            out[f"{scale}x_{name}"] = json.loads(proc.stdout)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb-per-partition", type=float, default=25)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--value-bytes", type=int, default=1000)
    ap.add_argument("--bootstrap", default=os.environ.get("OFFSETKEEPER_TEST_BOOTSTRAP"))
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--repeat", type=int, default=2, help="warm runs (the best one is reported)")
    ap.add_argument("--memory-mb-per-partition", type=float, default=16,
                    help="the 1x size of the memory check (then 4x); 0 skips it")
    ap.add_argument("--memory-partitions", type=int, default=2)
    ap.add_argument("--memory-scales", type=lambda v: [int(x) for x in v.split(",")], default=[1, 4],
                    help="multiples of the 1x size to measure, each in a new Spark session (default 1,4)")
    ap.add_argument("--memory-only", action="store_true", help="only the memory checks")
    ap.add_argument("--task-memory", help=argparse.SUPPRESS)  # internal: one task_memory run
    args = ap.parse_args()
    if args.task_memory:
        print(json.dumps(task_memory(*json.loads(args.task_memory))))
        return

    from offsetkeeper import devbroker

    tmp = Path(tempfile.mkdtemp(prefix="okbench-"))
    started_broker = None
    bootstrap = args.bootstrap
    if not bootstrap:
        started_broker = tmp / "broker"
        bootstrap = devbroker.start(devbroker.free_port(), started_broker, tied=True).bootstrap
    try:
        if args.memory_only:
            mem_out = memory_check(bootstrap, tmp, args)
            mem_out["one_task_in_process"] = task_memory_check(bootstrap, tmp, args)
            print(json.dumps({"memory_check": mem_out, "load_average_1m": round(os.getloadavg()[0], 2)},
                             indent=2))
            return
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        t = time.monotonic()
        records, nbytes = fill_topic(bootstrap, topic, args.partitions, args.mb_per_partition,
                                  args.value_bytes)
        produce_s = time.monotonic() - t
        mb = nbytes / 2**20

        kcat = run_kcat(bootstrap, topic, tmp / "kcat.out")
        e2e = run_e2e(bootstrap, topic, str(tmp / "backups"), args.master)

        from offsetkeeper.backup.config import BackupConfig
        from offsetkeeper.backup.run import run_backup
        from offsetkeeper.config import Connection
        from offsetkeeper.spark.session import get_spark

        t = time.monotonic()
        started: dict[str, float] = {}  # the JVM session and Spark's Python workers, apart
        spark = get_spark(args.master, timings=started)
        session_s = time.monotonic() - t
        session_parts = {k: round(v, 2) for k, v in started.items()}
        results: dict[str, list] = {"no_session": [], "warm": []}
        timings = {}
        with PeakMemory(os.getpid()) as mem:
            for i, name in enumerate(["no_session"] + ["warm"] * args.repeat):
                cfg = BackupConfig(connection=Connection(bootstrap), include=(topic,),
                                   destination=str(tmp / "backups"), backup_id=f"{name}-{i}")
                t = time.monotonic()
                r = run_backup(cfg, spark=spark)
                results[name].append(time.monotonic() - t)
                timings[f"{name}-{i}"] = r.summary()["timings"]
                assert r.records == records, (r.records, records)
        spark.stop()
        memory = memory_check(bootstrap, tmp, args) if args.memory_mb_per_partition else None
        if memory is not None:
            memory["one_task_in_process"] = task_memory_check(bootstrap, tmp, args)

        def rate(secs: float) -> dict:
            return {"seconds": round(secs, 2), "records_per_s": round(records / secs),
                    "mb_per_s": round(mb / secs, 1)}

        out = {
            "topic": {"partitions": args.partitions, "records": records, "mb": round(mb, 1),
                      "value_bytes": args.value_bytes, "produce_seconds": round(produce_s, 1)},
            "master": args.master,
            "kcat": {**rate(kcat["seconds"]), "peak_rss_mb": round(kcat["peak_rss_mb"], 1)},
            "backup_e2e": {**rate(e2e["seconds"]), "peak_rss_mb": round(e2e["peak_rss_mb"], 1),
                           "bytes_written_mb": round(e2e["summary"]["bytes_written"] / 2**20, 1)},
            "spark_session_start_seconds": round(session_s, 2),
            "spark_session_start_parts": session_parts,
            "backup_no_session": rate(results["no_session"][0]),
            "backup_warm": {**rate(min(results["warm"])),
                            "all_seconds": [round(x, 2) for x in results["warm"]]},
            "phase_seconds": {"e2e": e2e["summary"]["timings"], **timings},
            "peak_rss_mb_in_process_backups": round(mem.peak / 2**20, 1),
            "ratio_e2e_vs_kcat": round(kcat["seconds"] / e2e["seconds"], 3),
            "ratio_no_session_vs_kcat": round(kcat["seconds"] / results["no_session"][0], 3),
            "ratio_warm_vs_kcat": round(kcat["seconds"] / min(results["warm"]), 3),
            "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
            "memory_check": memory,
            "goal": "backup throughput without session start >= 0.7x kcat",
        }
        out["goal_met"] = out["ratio_no_session_vs_kcat"] >= 0.7
        print(json.dumps(out, indent=2))
    finally:
        if started_broker:
            devbroker.stop(started_broker)
        shutil.rmtree(tmp, ignore_errors=True)  # the topic copies and backups (GBs)


if __name__ == "__main__":
    main()
