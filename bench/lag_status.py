"""Benchmark: `lag status` for many groups from a local SQLite history store (issue 32, goal 3).

    .venv/bin/python bench/lag_status.py [--groups 100 --partitions 8 --cycles 2880] [--repeat 5]
        [--baseline-python /work/main/.venv/bin/python]

Fills a store in a temporary directory with CYCLES samples per group partition (30 s apart: one
day at the default), no broker needed (`lag status` reads the store only), then times:
- `cold`: `offsetkeeper lag status --all-groups -o json` as a fresh process, whole command;
- `warm`: `ops.history.lag_status(all_groups=True)` in this process, second call on;
- `per_group`: the same verdicts with one `store.recent` per group (the read path before);
- yardstick, same run, same file: `sqlite3` (the stdlib module, in a fresh `python -c`)
  reading the last 10 cycles of every group with one query, and a bare `python -c pass`.
Also a cProfile of the warm call (top 12 by cumulative time). JSON out, ratios against the
yardstick.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def summary(xs: list[float]) -> dict:
    return {"min": round(min(xs), 4), "median": round(statistics.median(xs), 4),
            "max": round(max(xs), 4), "runs": len(xs)}


def timed_cmd(cmd: list[str], env: dict | None = None, ok=(0, 1)) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})
    took = time.perf_counter() - t
    if proc.returncode not in ok:
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-800:]}")
    return took


def fill(path: str, groups: int, partitions: int, cycles: int) -> None:
    from offsetkeeper.history.model import Cycle, Sample
    from offsetkeeper.history.store import open_store

    now = int(time.time() * 1000)
    start = now - cycles * 30_000
    with open_store(path) as st:
        for c in range(cycles):
            ts = start + c * 30_000
            batch = []
            for g in range(groups):
                for p in range(partitions):
                    end = 1000 + c * 10
                    committed = end - (g % 7) * 3 - (c % 3)
                    batch.append(Sample(ts, f"bench-group-{g:04d}", "orders", p, committed, 0,
                                        end, state="stable", members=1, consumer_id=f"m{p}"))
            st.write(batch, Cycle(ts, 30_000, groups, groups * partitions, 50))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--cycles", type=int, default=2880)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--baseline-python", help="another checkout's interpreter (e.g. main's "
                    ".venv/bin/python): its `lag status` alternates with ours on the same file")
    args = ap.parse_args()

    from offsetkeeper.history.read import status as read_status
    from offsetkeeper.history.status import evaluate_status
    from offsetkeeper.history.store import open_store
    from offsetkeeper.ops.history import lag_status

    tmp = Path(tempfile.mkdtemp(prefix="ok-bench-lag-"))
    db = str(tmp / "history.db")
    t = time.perf_counter()
    fill(db, args.groups, args.partitions, args.cycles)
    result: dict = {"groups": args.groups, "partitions": args.partitions, "cycles": args.cycles,
                    "fill_s": round(time.perf_counter() - t, 1),
                    "db_mb": round(os.path.getsize(db) / 1e6, 1),
                    "load_before": os.getloadavg()[0]}
    cli = [sys.executable, "-m", "offsetkeeper.cli.main", "lag", "status", "--all-groups",
           "--store", db, "-o", "json"]
    yard = [sys.executable, "-c",
            "import sqlite3,sys; db=sqlite3.connect(sys.argv[1]); "
            "rows=db.execute('SELECT s.* FROM samples s JOIN (SELECT grp, ts FROM samples "
            "GROUP BY grp, ts ORDER BY ts DESC LIMIT ?) r ON s.grp=r.grp AND s.ts=r.ts', "
            "(int(sys.argv[2]),)).fetchall()", db, str(args.groups * 10)]
    bare = [sys.executable, "-c", "pass"]
    # byte-code cache (outside the checkouts, as an installed package has it: this machine
    # sets PYTHONDONTWRITEBYTECODE) and page cache warm
    os.environ.update({"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(tmp / "pyc")})
    timed_cmd(cli)
    cold, ys, bs, old = [], [], [], []
    base = [args.baseline_python, *cli[1:]] if args.baseline_python else None
    if base:
        timed_cmd(base)
    for _ in range(args.repeat):
        cold.append(timed_cmd(cli))
        ys.append(timed_cmd(yard))
        bs.append(timed_cmd(bare))
        if base:
            old.append(timed_cmd(base))
    result["cold_cli"] = summary(cold)
    if old:
        result["baseline_cold_cli"] = summary(old)
    result["yardstick_sqlite3_python"] = summary(ys)
    result["bare_python"] = summary(bs)

    lag_status(all_groups=True, store=db)
    warm = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        lag_status(all_groups=True, store=db)
        warm.append(time.perf_counter() - t)
    result["warm"] = summary(warm)

    per = []
    for _ in range(args.repeat):
        t = time.perf_counter()
        with open_store(db) as st:
            for g in st.groups():
                evaluate_status(st.recent(g.group, 10), window=10, group=g.group)
        per.append(time.perf_counter() - t)
    result["per_group_reads"] = summary(per)
    with open_store(db) as st:
        assert len(read_status(st, all_groups=True)) == args.groups

    prof = cProfile.Profile()
    prof.enable()
    lag_status(all_groups=True, store=db)
    prof.disable()
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(12)
    result["profile_warm"] = [ln for ln in buf.getvalue().splitlines() if ln.strip()][-14:]
    ym = result["yardstick_sqlite3_python"]["median"]
    result["ratios"] = {"cold_cli_vs_yardstick": round(result["cold_cli"]["median"] / ym, 1),
                        "warm_vs_yardstick": round(result["warm"]["median"] / ym, 2)}
    if old:
        result["ratios"]["baseline_cold_vs_ours"] = round(
            result["baseline_cold_cli"]["median"] / result["cold_cli"]["median"], 2)
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
