"""Benchmark: offsetkeeper's Spark tasks as RDD vs DataFrame (mapInArrow), and small backups and
restores through a warm Spark Connect server vs a fresh local session, kcat as the ceiling.

    .venv/bin/python bench/spark_connect.py [--records 300] [--partitions 2] [--repeat 3]
                                            [--way-mb 4] [--bootstrap HOST:PORT]
                                            [--only ways|small] [--ways local,connect,auto]

1. ``ways``: in one classic local[2] session, backups (then restores) of the same topic
   (--way-mb MB per partition), alternating `offsetkeeper.spark.tasks` ways ``rdd`` and
   ``dataframe``; median seconds of the Spark job each (ratio dataframe / rdd).
2. ``small``: a topic of --records records; whole commands as fresh processes, alternating:
   ``offsetkeeper backup run --master local[2]`` (a new Spark session each time) and
   ``... --remote sc://...`` (a warm Connect server started once, `offsetkeeper.spark.server`),
   then ``restore run`` the same two ways; kcat consuming the topic is the ceiling.
   ``--ways`` picks among ``local``, ``connect`` and ``auto``: the commands as a user runs them,
   with no --master/--remote (the warm server of `offsetkeeper.spark.warm`, in a state
   directory of the run): ``auto_cold`` is a command that starts the server (none runs: the one
   before was stopped), ``auto_warm`` the same command again, attached.
Prints JSON (seconds, medians, ratios). Temporary data is deleted at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from fill import fill_topic, workspace  # bench/ is on sys.path when run as a script


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[float, dict]:
    exe = Path(sys.executable).parent / "offsetkeeper"
    t = time.monotonic()
    p = subprocess.run([str(exe), *args, "-o", "json"], capture_output=True, text=True, env=env)
    secs = time.monotonic() - t
    assert p.returncode == 0, p.stderr[-2000:]
    return secs, json.loads(p.stdout)


def _kcat(bootstrap: str, topic: str, out: Path) -> float:
    t = time.monotonic()
    with out.open("wb") as f:
        subprocess.run(["kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
                        "-f", "%o %k %s\n"], stdout=f, check=True)
    return time.monotonic() - t


def start_server(tmp: Path, master: str) -> tuple[subprocess.Popen, str, float]:
    from offsetkeeper.devbroker import free_port

    port = free_port()
    out = tmp / "server.out"
    # the server takes sessions with its token only; the --remote commands (children of this
    # process) read it from the environment, as a user attaching by hand does
    os.environ["SPARK_CONNECT_AUTHENTICATE_TOKEN"] = secrets.token_urlsafe(32)
    t = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "offsetkeeper.spark.server", "--port", str(port),
                             "--master", master, "--idle-timeout", "600"],
                            stdout=out.open("w"), stderr=(tmp / "server.err").open("w"))
    while '"ready": true' not in out.read_text():
        if proc.poll() is not None:
            raise SystemExit(f"Connect server failed: {(tmp / 'server.err').read_text()[-2000:]}")
        time.sleep(0.2)
    return proc, f"sc://localhost:{port}", time.monotonic() - t


def ways(bootstrap: str, tmp: Path, args) -> dict:
    from offsetkeeper.backup.config import BackupConfig
    from offsetkeeper.backup.run import run_backup
    from offsetkeeper.config import Connection
    from offsetkeeper.restore.config import RestoreOptions
    from offsetkeeper.restore.run import run_restore
    from offsetkeeper.spark import tasks
    from offsetkeeper.spark.session import get_spark

    topic = f"bench-ways-{uuid.uuid4().hex[:8]}"
    records, _ = fill_topic(bootstrap, topic, args.partitions, args.way_mb, 1000)
    spark = get_spark("local[2]")
    dest = str(tmp / "ways")
    out: dict[str, dict[str, list[float]]] = {"backup": {"rdd": [], "dataframe": []},
                                              "restore": {"rdd": [], "dataframe": []}}
    # warm-up run of each way (first Python data, first Arrow job), not counted
    order = ["rdd", "dataframe"] * (args.repeat + 1)
    for i, way in enumerate(order):
        tasks.CLASSIC_WAY = way
        r = run_backup(BackupConfig(connection=Connection(bootstrap), include=(topic,),
                                    destination=dest, backup_id=f"b{i}"), spark=spark)
        assert r.records == records
        if i >= 2:
            out["backup"][way].append(r.timings["spark_job"])
        t = time.monotonic()
        res = run_restore(RestoreOptions(dest, f"b{i}", Connection(bootstrap), restore_id=f"r{i}",
                                         rename={topic: f"{topic}-r{i}"}), spark=spark)
        assert res.records == records
        if i >= 2:
            out["restore"][way].append(time.monotonic() - t)
    tasks.CLASSIC_WAY = "rdd"
    spark.stop()
    summary = {}
    for kind, by in out.items():
        med = {w: round(statistics.median(v), 3) for w, v in by.items()}
        summary[kind] = {"median_seconds": med, "all_seconds": by,
                         "ratio_dataframe_vs_rdd": round(med["dataframe"] / med["rdd"], 3)}
    return {"records": records, "partitions": args.partitions, **summary}


def small(bootstrap: str, tmp: Path, args) -> dict:
    from restore import _value, run_kcat

    from offsetkeeper.spark.session import local_cores  # noqa: F401  (imports offsetkeeper early)

    topic = f"bench-small-{uuid.uuid4().hex[:8]}"
    # printable values, each record also as a `key<TAB>value` line: kcat -P's input (the
    # restore's ceiling: kcat producing the same records)
    fill_topic(bootstrap, topic, args.partitions, args.records * 1000 / args.partitions / 2**20,
               1000, make_value=_value, copy_to=tmp / "records.tsv")
    ways = [w.strip() for w in args.ways.split(",") if w.strip()]
    proc, url, server_s = start_server(tmp, "local[2]") if "connect" in ways else (None, "", 0.0)
    print(json.dumps({"benchmark": "spark_connect_small", "connect_server_start_seconds":
                      round(server_s, 2), "load": os.getloadavg()[0]}), flush=True)
    dest = str(tmp / "small")
    kinds = ["local", "connect"] if "auto" not in ways else ["local", "connect", "auto_cold",
                                                             "auto_warm"]
    kinds = [k for k in kinds if k.split("_")[0] in ways]
    res: dict[str, list[float]] = {k: [] for k in ("kcat", "kcat_produce",
                                                   *(f"{c}_{k}" for c in ("backup", "restore")
                                                     for k in kinds))}
    auto_state = tmp / "warm-server"
    auto_env = {**os.environ, "OFFSETKEEPER_SPARK_WARM": "1",
                "OFFSETKEEPER_SPARK_SERVER_DIR": str(auto_state)}
    auto_env.pop("SPARK_REMOTE", None)
    # what the command itself reports (its work after Python start and imports)
    inside: dict[str, list] = {k: [] for k in res if not k.startswith("kcat")}

    def line(way: str, secs: float, **kw) -> None:
        print(json.dumps({"benchmark": "spark_connect_small", "way": way, "seconds": round(secs, 2),
                          "load": os.getloadavg()[0], **kw}), flush=True)

    try:
        for i in range(args.repeat):
            res["kcat"].append(_kcat(bootstrap, topic, tmp / "kcat.out"))
            line("kcat", res["kcat"][-1])
            secs, _ = run_kcat(bootstrap, f"{topic}-kcat{i}", args.partitions, tmp / "records.tsv")
            res["kcat_produce"].append(secs)
            line("kcat_produce", secs)
            flags = {"local": ["--master", "local[2]"], "connect": ["--remote", url]}
            for how in kinds:
                bid = f"{how}{i}"
                env = auto_env if how.startswith("auto") else None
                if how == "auto_cold":
                    stop_auto(auto_state)
                s, summary = _cli("backup", "run", "-b", bootstrap, "-t", topic, "--dest", dest,
                                  "--id", bid, *flags.get(how, []), env=env)
                assert summary["records"] >= args.records - args.partitions, summary
                res[f"backup_{how}"].append(s)
                inside[f"backup_{how}"].append({"seconds": summary["seconds"], **summary["timings"]})
                line(f"backup_{how}", s, inside=summary["seconds"], records=summary["records"],
                     timings=summary["timings"])
                if how == "auto_cold":
                    stop_auto(auto_state)
                s, rsum = _cli("restore", "run", f"{dest}/{bid}", "-b", bootstrap, "--rename",
                               f"{topic}={topic}-{bid}", "--restore-id", "r", *flags.get(how, []),
                               env=env)
                res[f"restore_{how}"].append(s)
                inside[f"restore_{how}"].append(rsum["seconds"])
                line(f"restore_{how}", s, inside=rsum["seconds"])
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(60)
        stop_auto(auto_state)
    med = {k: round(statistics.median(v), 2) for k, v in res.items()}
    ratios = {}
    for k in kinds:
        ratios[f"ratio_backup_{k}_vs_kcat"] = round(med[f"backup_{k}"] / med["kcat"], 1)
        ratios[f"ratio_restore_{k}_vs_kcat_produce"] = round(
            med[f"restore_{k}"] / med["kcat_produce"], 1)
    if "local" in kinds and "connect" in kinds:
        ratios["ratio_backup_connect_vs_local"] = round(
            med["backup_connect"] / med["backup_local"], 3)
        ratios["ratio_restore_connect_vs_local"] = round(
            med["restore_connect"] / med["restore_local"], 3)
    return {"records": args.records, "connect_server_start_seconds": round(server_s, 2),
            "median_seconds": med, "all_seconds": {k: [round(x, 2) for x in v] for k, v in res.items()},
            "reported_by_the_command": inside, **ratios,
            # kafka-backup (issue 32, same topic): backup 3.0x kcat, restore 4.0x kcat
            "peer_kafka_backup_ratios_vs_kcat": {"backup": 3.0, "restore": 4.0},
            "load_after": os.getloadavg()[0]}


def stop_auto(state: Path) -> None:
    """Stop the warm server of the `auto` ways (if one runs)."""
    from offsetkeeper.spark.server import stop_background

    if state.is_dir():
        stop_background(state)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=300)
    ap.add_argument("--partitions", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--way-mb", type=float, default=4, help="MB per partition of the ways part")
    ap.add_argument("--only", choices=["ways", "small"], default=None)
    ap.add_argument("--ways", default="local,connect,auto",
                    help="of the small part: local, connect, auto (comma-separated)")
    ap.add_argument("--bootstrap", default=os.environ.get("OFFSETKEEPER_TEST_BOOTSTRAP"))
    args = ap.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    with workspace("okbench-connect-", args.bootstrap) as (tmp, bootstrap):
        out: dict = {}
        if args.only in (None, "ways"):
            out["ways"] = ways(bootstrap, tmp, args)
        if args.only in (None, "small"):
            out["small"] = small(bootstrap, tmp, args)
        out["load_average_1m"] = round(os.getloadavg()[0], 2)
        out["cpus"] = os.cpu_count()
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
