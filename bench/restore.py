"""Benchmark: offsetkeeper restore vs kcat producing the same records from a file, same run.

    .venv/bin/python bench/restore.py [--mb-per-partition 5] [--partitions 4] [--value-bytes 1000]
                                      [--source HOST:PORT] [--target HOST:PORT] [--master local[*]]

Starts two development brokers (unless --source/--target are given), creates a topic of
PARTITIONS x MB records with printable random values (so kcat can read them from a
tab/newline-delimited file), backs it up with run_backup, then measures on the target broker:
- kcat: ``kcat -P -K '\\t'`` of a file holding the same keys and values (idempotent, acks=all),
  the yardstick;
- restore: ``run_restore`` in an already started Spark session (offset headers on, mapping
  written) — the restore itself, without Spark session start;
- restore_warm: a second restore (new restore id, new target topic) in the same session;
- restore_e2e (--e2e): ``offsetkeeper restore run`` as a fresh process (Python + Spark start).
Also the CPU seconds each side used (kcat, Spark driver / JVM / Python workers, target broker).
Each phase starts on an idle target broker holding the same data (the topic of the phase before
is deleted, see `settle`); kcat runs again at the end as a check on the yardstick's own spread.
Prints JSON: records/s, MB/s (key + value bytes), and ratios to kcat. Goal: restore >= 0.5x kcat.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from fill import fill_topic  # bench/ is on sys.path when run as a script
from memory import PeakMemory, proc_stats


def _value(n: int) -> bytes:
    return base64.b64encode(os.urandom(n * 3 // 4 + 3))[:n]


def _cpu_by_kind(root: int) -> dict[str, float]:
    """CPU seconds (user + system, finished children included) so far of the processes below
    `root` by kind — Spark's JVM, its Python workers — and of `root` itself (the driver)."""
    tck = os.sysconf("SC_CLK_TCK")
    stats: dict[int, tuple[int, str, float, float]] = {}
    for pid, comm, x in proc_stats():
        own = (int(x[11]) + int(x[12])) / tck
        stats[pid] = (int(x[1]), comm, own, own + (int(x[13]) + int(x[14])) / tck)
    out = {"driver": stats.get(root, (0, "", 0.0, 0.0))[2], "jvm": 0.0, "python_workers": 0.0}
    todo = [p for p, v in stats.items() if v[0] == root]
    while todo:
        p = todo.pop()
        _ppid, comm, own, total = stats[p]
        if comm.startswith("java"):
            out["jvm"] += own  # its children are the Python workers, counted below
        elif comm.startswith(("python", "pyspark")):
            out["python_workers"] += total
        todo.extend(q for q, v in stats.items() if v[0] == p)
    return out


def _pid_cpu(pid: int | None) -> float:
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            x = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(x[11]) + int(x[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """CPU seconds used during a block: Spark driver, JVM and Python workers (below this
    process) and the target broker; a yardstick on the machine's load, which wall time is not."""

    def __init__(self, broker_pid: int | None) -> None:
        self.broker_pid = broker_pid

    def __enter__(self) -> CpuMeter:
        self.t0, self.b0, self.c0 = _cpu_by_kind(os.getpid()), _pid_cpu(self.broker_pid), _children_cpu()
        return self

    def __exit__(self, *exc: object) -> None:
        t1 = _cpu_by_kind(os.getpid())
        self.result = {k: round(t1[k] - self.t0[k], 2) for k in t1}
        self.result["kcat"] = round(_children_cpu() - self.c0, 2)  # waited-for children: kcat
        self.result["broker"] = round(_pid_cpu(self.broker_pid) - self.b0, 2)


def _python_workers() -> list[int]:
    """Pids of the Python processes below this one (Spark's Python daemon and workers)."""
    import psutil

    return [c.pid for c in psutil.Process().children(recursive=True)
            if "python" in (c.name() or "").lower()]


def _children_cpu() -> float:
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def settle(bootstrap: str, broker_pid: int | None, delete: str | None = None) -> None:
    """Delete `delete` (a topic measured before) and wait until the target broker is idle.

    The development broker rewrites its whole state file after changes: 1-2 CPU seconds after
    each 200 MB written, more the more it holds, on a 2-core machine. Without this, that work
    of the previous phase (kcat's) lands on the next measured phase (the restore), and every
    phase finds a bigger broker than the one before."""
    if delete:
        from confluent_kafka.admin import AdminClient

        admin = AdminClient({"bootstrap.servers": bootstrap})  # kept alive until the result
        for f in admin.delete_topics([delete]).values():
            f.result(30)
    if broker_pid is None:
        time.sleep(2)
        return
    deadline, quiet, last = time.monotonic() + 60, 0, _pid_cpu(broker_pid)
    while quiet < 3 and time.monotonic() < deadline:
        time.sleep(0.5)
        now = _pid_cpu(broker_pid)
        quiet = quiet + 1 if now - last < 0.05 else 0
        last = now


def run_kcat(bootstrap: str, topic: str, partitions: int, file: Path) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    time.sleep(1)
    cmd = ["kcat", "-P", "-b", bootstrap, "-t", topic, "-K", "\t", "-q",
           "-X", "enable.idempotence=true", "-X", "acks=all", "-X", "linger.ms=20",
           "-X", "batch.size=1000000", "-l", str(file)]
    t = time.monotonic()
    subprocess.run(cmd, check=True)
    secs = time.monotonic() - t
    from confluent_kafka import Consumer
    from confluent_kafka import TopicPartition as TP

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check"})
    n = sum(c.get_watermark_offsets(TP(topic, p), timeout=10)[1] for p in range(partitions))
    c.close()
    return secs, n


def memory_check(source: str, target: str, tmp: Path, args) -> dict:
    """Peak RSS of a restore of each scale of the data per partition (1x and 4x unless
    --memory-scales), each in its own new Spark session (new Python workers: a worker reused
    from a smaller restore would carry its heap into the bigger one's figure), the whole process
    tree and Spark's Python workers alone."""
    from offsetkeeper.backup.config import BackupConfig
    from offsetkeeper.backup.run import run_backup
    from offsetkeeper.config import Connection
    from offsetkeeper.restore.config import RestoreOptions
    from offsetkeeper.restore.run import run_restore
    from offsetkeeper.spark.session import get_spark

    dest = str(tmp / "mem-backups")
    topics = {}
    spark = get_spark(args.master)
    for scale in args.memory_scales:
        topics[scale] = f"bench-mem{scale}-{uuid.uuid4().hex[:6]}"
        fill_topic(source, topics[scale], args.memory_partitions, args.memory_mb_per_partition * scale,
                   args.value_bytes, make_value=_value)
        run_backup(BackupConfig(connection=Connection(source), include=(topics[scale],),
                                destination=dest, backup_id=f"mem{scale}"), spark=spark)
    spark.stop()
    out = {}
    for scale in args.memory_scales:
        spark = get_spark(args.master)
        try:
            with PeakMemory(os.getpid()) as mem:
                res = run_restore(RestoreOptions(dest, f"mem{scale}", Connection(target),
                                                 restore_id=f"mem{scale}", master=args.master),
                                  spark=spark)
            out[f"{scale}x"] = {"records": res.records, "mb": round(res.bytes / 2**20, 1),
                                "peak_rss_mb_tree": round(mem.peak / 2**20, 1),
                                "peak_rss_mb_python_workers": round(mem.peak_python / 2**20, 1)}
        finally:
            spark.stop()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb-per-partition", type=float, default=5)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--value-bytes", type=int, default=1000)
    ap.add_argument("--source", default=None)
    ap.add_argument("--target", default=None)
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--e2e", action="store_true", help="also time the CLI as a fresh process")
    ap.add_argument("--memory-mb-per-partition", type=float, default=16,
                    help="the 1x size of the memory check (then 4x); 0 skips it")
    ap.add_argument("--memory-partitions", type=int, default=2)
    ap.add_argument("--memory-scales", type=lambda v: [int(x) for x in v.split(",")], default=[1, 4],
                    help="multiples of the 1x size to measure, each in a new Spark session (default 1,4)")
    args = ap.parse_args()

    from offsetkeeper import devbroker

    tmp = Path(tempfile.mkdtemp(prefix="ok-bench-restore-"))
    started: list[Path] = []
    pids: dict[str, int | None] = {}

    def broker(given: str | None, name: str) -> str:
        if given:
            pids[name] = None
            return given
        d = tmp / name
        started.append(d)
        st = devbroker.start(devbroker.free_port(), d, tied=True)
        pids[name] = st.pid
        return st.bootstrap

    try:
        source, target = broker(args.source, "src-broker"), broker(args.target, "dst-broker")
        topic = f"bench-restore-{uuid.uuid4().hex[:6]}"
        file = tmp / "records.tsv"
        records, nbytes = fill_topic(source, topic, args.partitions, args.mb_per_partition,
                                         args.value_bytes, make_value=_value, copy_to=file)

        from offsetkeeper.backup.config import BackupConfig
        from offsetkeeper.backup.run import run_backup
        from offsetkeeper.config import Connection
        from offsetkeeper.restore.config import RestoreOptions
        from offsetkeeper.restore.run import run_restore
        from offsetkeeper.spark.session import get_spark

        spark = get_spark(args.master)
        dest = str(tmp / "backups")
        run_backup(BackupConfig(connection=Connection(source), include=(topic,), destination=dest,
                                backup_id="bench", master=args.master), spark=spark)

        dst_pid = pids["dst-broker"]
        # the source broker too: it is still writing its state after the fill and the backup
        # (measured: the first kcat run took 0.89 s instead of 0.40-0.53 s without this)
        settle(source, pids["src-broker"])
        settle(target, dst_pid)
        with CpuMeter(dst_pid) as kcat_cpu:
            kcat_s, kcat_n = run_kcat(target, f"{topic}-kcat", args.partitions, file)
        assert kcat_n == records, f"kcat produced {kcat_n} of {records} records"
        settle(target, dst_pid, f"{topic}-kcat")
        # Spark stops Python workers idle for a minute, and the settling and kcat above can take
        # longer: start them again, as `offsetkeeper restore run` has them started with its session
        # (session start is reported apart, see small_jobs.py)
        from offsetkeeper.spark.session import start_python_workers

        workers_before = _python_workers()
        workers_start_s = start_python_workers(spark)
        workers_started = sorted(set(_python_workers()) - set(workers_before))
        t = time.monotonic()
        with CpuMeter(pids["dst-broker"]) as restore_cpu:
            res = run_restore(RestoreOptions(dest, "bench", Connection(target), restore_id="r1",
                                             rename={topic: f"{topic}-restored"}, master=args.master),
                              spark=spark)
        restore_s = time.monotonic() - t
        assert res.records == records, (res.records, records)
        settle(target, dst_pid, f"{topic}-restored")
        t = time.monotonic()
        with CpuMeter(pids["dst-broker"]) as warm_cpu:
            run_restore(RestoreOptions(dest, "bench", Connection(target), restore_id="r1-warm",
                                       rename={topic: f"{topic}-warm"}, master=args.master), spark=spark)
        warm_s = time.monotonic() - t
        settle(target, dst_pid, f"{topic}-warm")
        kcat_again_s, _ = run_kcat(target, f"{topic}-kcat2", args.partitions, file)

        def rate(secs: float) -> dict:
            return {"seconds": round(secs, 3), "records_per_s": round(records / secs),
                    "mb_per_s": round(nbytes / 2**20 / secs, 2)}

        out = {"records": records, "mb": round(nbytes / 2**20, 2), "partitions": args.partitions,
               "value_bytes": args.value_bytes, "master": args.master,
               "kcat": rate(kcat_s), "kcat_again_after_the_restores": rate(kcat_again_s),
               "restore": rate(restore_s),
               "python_workers_restarted_before_the_restore": {"count": len(workers_started),
                                                              "seconds": round(workers_start_s, 3)},
               "ratio_restore_to_kcat": round(kcat_s / restore_s, 3),
               "restore_task_seconds": sorted(r.get("seconds") or 0 for r in res.partitions),
               "restore_warm": rate(warm_s), "ratio_restore_warm_to_kcat": round(kcat_s / warm_s, 3),
               # CPU seconds of each side (the brokers' included): what the machine's load
               # does not change much, unlike wall time
               "cpu_seconds": {"kcat": {"kcat": kcat_cpu.result["kcat"], "broker": kcat_cpu.result["broker"]},
                               "restore": {k: v for k, v in restore_cpu.result.items() if k != "kcat"},
                               "restore_warm": {k: v for k, v in warm_cpu.result.items() if k != "kcat"}}}
        if args.e2e:
            exe = Path(sys.executable).parent / "offsetkeeper"
            t = time.monotonic()
            subprocess.run([str(exe), "restore", "run", f"{dest}/bench", "-b", target, "--restore-id", "r2",
                            "--rename", f"{topic}={topic}-e2e", "--master", args.master, "-o", "json"],
                           check=True, stdout=subprocess.DEVNULL)
            e2e = time.monotonic() - t
            out["restore_e2e"] = rate(e2e)
            out["ratio_restore_e2e_to_kcat"] = round(kcat_s / e2e, 3)
        spark.stop()
        if args.memory_mb_per_partition:
            out["memory_check"] = memory_check(source, target, tmp, args)
        out["goal"] = ">= 0.5x kcat (restore without Spark session start)"
        out["goal_met"] = out["ratio_restore_to_kcat"] >= 0.5
        out["load_average_1m"] = round(os.getloadavg()[0], 2)
        print(json.dumps(out, indent=2))
    finally:
        for d in started:
            devbroker.stop(d)
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)  # brokers' logs and backups: GBs per run


if __name__ == "__main__":
    main()
