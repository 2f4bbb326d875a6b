"""Benchmark: a small backup and a small restore end to end, as fresh CLI processes.

    .venv/bin/python bench/small_jobs.py [--records 300] [--partitions 3] [--repeat 2]
                                         [--source HOST:PORT] [--target HOST:PORT]

Times ``offsetkeeper backup run`` and ``offsetkeeper restore run`` of RECORDS records, each a
new process (Python start, imports, Spark session start, the job, exit), and, as a yardstick in
the same run, ``kcat`` consuming and producing the same records and ``python -c 'import pyspark'``
plus a bare session start (``get_spark``) in a fresh process. Prints JSON. Goal: each job
<= 12 s end to end on this machine.
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


def timed(cmd: list[str], **kw) -> tuple[float, str]:
    t = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, **kw)
    secs = time.monotonic() - t
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed ({proc.returncode}): {proc.stderr[-2000:]!r}")
    return secs, proc.stdout.decode(errors="replace")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2, help="runs of each job (all are reported)")
    ap.add_argument("--source", default=None)
    ap.add_argument("--target", default=None)
    ap.add_argument("--master", default="local[*]")
    args = ap.parse_args()

    from offsetkeeper import devbroker

    tmp = Path(tempfile.mkdtemp(prefix="ok-bench-small-"))
    started: list[Path] = []

    def broker(given: str | None, name: str) -> str:
        if given:
            return given
        d = tmp / name
        started.append(d)
        return devbroker.start(devbroker.free_port(), d, tied=True).bootstrap

    exe = str(Path(sys.executable).parent / "offsetkeeper")
    try:
        source, target = broker(args.source, "src"), broker(args.target, "dst")
        topic = f"small-{uuid.uuid4().hex[:6]}"
        mb = args.records * 100 / args.partitions / 2**20
        records, _ = fill_topic(source, topic, args.partitions, mb, 100)
        dest = str(tmp / "backups")
        out: dict = {"records": records, "partitions": args.partitions, "master": args.master,
                     "load_average_1m_at_start": round(os.getloadavg()[0], 2)}

        kcat_c, kcat_out = timed(["kcat", "-C", "-b", source, "-t", topic, "-o", "beginning", "-e",
                                  "-q", "-f", "%o %k %s\n"])
        out["kcat_consume_seconds"] = round(kcat_c, 2)
        # a yardstick that read nothing is no yardstick: >= records lines (values hold newlines)
        out["kcat_consume_lines"] = kcat_out.count("\n")
        t_import, _ = timed([sys.executable, "-c", "import pyspark, offsetkeeper.cli.main"])
        out["python_imports_seconds"] = round(t_import, 2)
        t_session, _ = timed([sys.executable, "-c",
                              "from offsetkeeper.spark.session import get_spark; "
                              f"get_spark({args.master!r}).stop()"])
        out["bare_session_process_seconds"] = round(t_session, 2)

        backups, restores = [], []
        for i in range(args.repeat):
            secs, stdout = timed([exe, "backup", "run", "-b", source, "-t", topic, "--dest", dest,
                                  "--id", f"b{i}", "--master", args.master, "-o", "json"])
            summary = json.loads(stdout)
            assert summary["records"] == records, summary
            backups.append({"seconds": round(secs, 2),
                            "spark_start": summary.get("seconds_spark_start"),
                            "timings": summary.get("timings")})
        for i in range(args.repeat):
            secs, stdout = timed([exe, "restore", "run", f"{dest}/b0", "-b", target,
                                  "--restore-id", f"r{i}", "--rename", f"{topic}={topic}-r{i}",
                                  "--master", args.master, "-o", "json"])
            restores.append({"seconds": round(secs, 2)})
        out["backup_e2e"] = backups
        out["restore_e2e"] = restores
        out["goal"] = "each <= 12 s end to end, session start included"
        out["goal_met"] = max(x["seconds"] for x in backups + restores) <= 12
        out["load_average_1m"] = round(os.getloadavg()[0], 2)
        print(json.dumps(out, indent=2))
    finally:
        for d in started:
            devbroker.stop(d)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
