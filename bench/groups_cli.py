"""Benchmark: everyday group commands, whole command (fresh process) and warm (one facade).

    .venv/bin/python bench/groups_cli.py [--groups 8] [--repeat 5] [--bootstrap HOST:PORT]
        [--baseline-python /work/main/.venv/bin/python]

On a one-node Apache Kafka with GROUPS classic and consumer groups (offsets committed), times:
- `offsetkeeper groups list -o json` and `groups describe G -o json`, each a fresh process
  (`cold`: Python start, imports, connect, the calls, render), alternating with the yardstick
  `kcat -L` (metadata of the same cluster, a fresh process too);
- `warm`: the same library calls on one open `KafkaAdmin` (`list_typed_groups`,
  `describe_offsets`), the second call on;
then again after a share group (a running KafkaShareConsumer) joins the cluster: `groups list`
must then ask Kafka's Java client (`with_share`), with the helper's class archive (AppCDS) and
without it (`OFFSETKEEPER_HELPER_CLASS_ARCHIVE=0`). Without --bootstrap it starts its own broker
(a given cluster must hold no share, streams or Connect group for the first half). JSON out,
with ratios against kcat from the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

OK = [sys.executable, "-m", "offsetkeeper.cli.main"]


def timed_cmd(cmd: list[str], env: dict | None = None) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:4]} failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-800:]}")
    return took


def summary(xs: list[float]) -> dict:
    return {"min": round(min(xs), 3), "median": round(statistics.median(xs), 3),
            "max": round(max(xs), 3), "runs": len(xs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bootstrap")
    ap.add_argument("--baseline-python", help="another checkout's interpreter (e.g. main's "
                    ".venv/bin/python): its `groups list`/`describe` alternate with ours")
    args = ap.parse_args()

    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    from offsetkeeper import devbroker
    from offsetkeeper.config import Connection
    from offsetkeeper.devbroker.dist import tool_command
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.ops.groups import describe_offsets, list_typed_groups

    tmp = Path(tempfile.mkdtemp(prefix="ok-bench-groups-"))
    bootstrap = args.bootstrap or devbroker.start(devbroker.free_port(), tmp / "broker",
                                                  tied=True).bootstrap
    conf = {"bootstrap.servers": bootstrap}
    token = uuid.uuid4().hex[:6]
    topic = f"bench-groups-{token}"
    creator = AdminClient(conf)
    creator.create_topics([NewTopic(topic, 8, 1)])[topic].result(30)
    groups = [f"bench-g{i}-{token}" for i in range(args.groups)]
    for g in groups:
        c = Consumer({**conf, "group.id": g, "enable.auto.commit": False})
        c.commit(offsets=[TopicPartition(topic, p, 0) for p in range(8)], asynchronous=False)
        c.close()
    b = ["-b", bootstrap, "-o", "json"]
    kcat = ["kcat", "-L", "-b", bootstrap]

    base = [args.baseline_python, "-m", "offsetkeeper.cli.main"] if args.baseline_python else None

    def cold(label_env: dict | None = None) -> dict:
        out: dict[str, list[float]] = {"list": [], "describe": [], "kcat": []}
        for _ in range(args.repeat):
            out["list"].append(timed_cmd([*OK, "groups", "list", *b], label_env))
            out["kcat"].append(timed_cmd(kcat))
            if base:
                out.setdefault("baseline_list", []).append(
                    timed_cmd([*base, "groups", "list", *b], label_env))
            out["describe"].append(timed_cmd([*OK, "groups", "describe", groups[0], *b], label_env))
            out["kcat"].append(timed_cmd(kcat))
            if base:
                out.setdefault("baseline_describe", []).append(
                    timed_cmd([*base, "groups", "describe", groups[0], *b], label_env))
        return {k: summary(v) for k, v in out.items()}

    def warm() -> dict:
        with KafkaAdmin(Connection(bootstrap)) as admin:
            list_typed_groups(admin)
            describe_offsets(admin, [groups[0]])
            lst, dsc = [], []
            for _ in range(args.repeat):
                t = time.perf_counter()
                list_typed_groups(admin)
                lst.append(time.perf_counter() - t)
                t = time.perf_counter()
                describe_offsets(admin, [groups[0]])
                dsc.append(time.perf_counter() - t)
        return {"list": summary(lst), "describe": summary(dsc)}

    def ratios(d: dict) -> dict:
        k = d["kcat"]["median"]
        out = {f"{name}_vs_kcat": round(d[name]["median"] / k, 1) for name in d if name != "kcat"}
        for name in ("list", "describe"):
            if f"baseline_{name}" in d:
                out[f"baseline_{name}_vs_ours"] = round(d[f"baseline_{name}"]["median"]
                                                        / d[name]["median"], 2)
        return out

    result: dict = {"bootstrap_given": bool(args.bootstrap), "groups": args.groups,
                    "load_before": os.getloadavg()[0]}
    # the byte-code cache written once, outside the checkouts (as an installed package has it;
    # this machine sets PYTHONDONTWRITEBYTECODE)
    os.environ.update({"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(tmp / "pyc")})
    timed_cmd([*OK, "--version"])
    if base:
        timed_cmd([*base, "--version"])
    result["no_share_or_streams"] = c1 = cold()
    c1["ratios"] = ratios(c1)
    result["no_share_or_streams_warm"] = warm()
    print(json.dumps({"benchmark": "groups_cli", "part": "no_share_or_streams",
                      "load": os.getloadavg()[0], **c1}), flush=True)

    share = f"bench-sg-{token}"
    subprocess.run(tool_command("kafka-configs", "--bootstrap-server", bootstrap, "--alter",
                                "--entity-type", "groups", "--entity-name", share,
                                "--add-config", "share.auto.offset.reset=earliest"),
                   capture_output=True, stdin=subprocess.DEVNULL)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/ (its JVM apps)
    from tests.jvm_apps import JvmApp

    app = JvmApp(conf, "share-consume", {"group": share, "topics": [topic]})
    try:
        deadline = time.monotonic() + 60
        from offsetkeeper.errors import OffsetkeeperError

        with KafkaAdmin(Connection(bootstrap)) as admin:
            while True:
                try:  # a coordinator still loading (a busy machine) answers again shortly
                    if share in admin.all_group_ids():
                        break
                except OffsetkeeperError as exc:
                    if not getattr(exc, "retriable", False) and "loading" not in exc.message:
                        raise
                if time.monotonic() > deadline:
                    raise SystemExit("the share group did not appear")
                time.sleep(0.5)
        result["with_share"] = c2 = cold()
        c2["ratios"] = ratios(c2)
        result["with_share_no_class_archive"] = c3 = cold({"OFFSETKEEPER_HELPER_CLASS_ARCHIVE": "0"})
        c3["ratios"] = ratios(c3)
        result["with_share_warm"] = warm()
    finally:
        app.stop()
    result["load_after"] = os.getloadavg()[0]
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
