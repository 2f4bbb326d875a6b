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
Goal: backup throughput without session start >= 0.5x kcat.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from fill import fill_topic  # bench/ is on sys.path when run as a script


def _tree_rss(pid: int) -> int:
    """RSS in bytes of a process and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                parts = f.read().rsplit(")", 1)[1].split()
            ppid, pages = int(parts[1]), int(parts[21])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
        rss[int(d)] = pages * os.sysconf("SC_PAGE_SIZE")
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += rss.get(p, 0)
        todo.extend(children.get(p, []))
    return total


class PeakMemory:
    """Samples the RSS of a process tree every 0.2 s in a thread."""

    def __init__(self, pid: int, *, exclude_self_baseline: bool = False) -> None:
        self.pid = pid
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss(self.pid))
            self._stop.wait(0.2)

    def __enter__(self) -> PeakMemory:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join()


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb-per-partition", type=float, default=25)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--value-bytes", type=int, default=1000)
    ap.add_argument("--bootstrap", default=os.environ.get("OFFSETKEEPER_TEST_BOOTSTRAP"))
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--repeat", type=int, default=2, help="warm runs (the best one is reported)")
    args = ap.parse_args()

    from offsetkeeper import devbroker

    tmp = Path(tempfile.mkdtemp(prefix="okbench-"))
    started_broker = None
    bootstrap = args.bootstrap
    if not bootstrap:
        started_broker = tmp / "broker"
        bootstrap = devbroker.start(devbroker.free_port(), started_broker).bootstrap
    try:
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
        spark = get_spark(args.master)
        session_s = time.monotonic() - t
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
            "backup_no_session": rate(results["no_session"][0]),
            "backup_warm": {**rate(min(results["warm"])),
                            "all_seconds": [round(x, 2) for x in results["warm"]]},
            "phase_seconds": {"e2e": e2e["summary"]["timings"], **timings},
            "peak_rss_mb_in_process_backups": round(mem.peak / 2**20, 1),
            "ratio_e2e_vs_kcat": round(kcat["seconds"] / e2e["seconds"], 3),
            "ratio_no_session_vs_kcat": round(kcat["seconds"] / results["no_session"][0], 3),
            "ratio_warm_vs_kcat": round(kcat["seconds"] / min(results["warm"]), 3),
            "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
            "goal": "backup throughput without session start >= 0.5x kcat",
        }
        out["goal_met"] = out["ratio_no_session_vs_kcat"] >= 0.5
        print(json.dumps(out, indent=2))
    finally:
        if started_broker:
            devbroker.stop(started_broker)


if __name__ == "__main__":
    main()
