"""Benchmark: calls to Kafka's Java Admin client, one process per call vs one session.

    .venv/bin/python bench/jvm_session.py [--calls 10] [--repeat 3] [--bootstrap HOST:PORT]

On a share group (3 partitions, 30 records acknowledged by a real KafkaShareConsumer that then
stops), times CALLS rounds of the three reads a share reset makes (list-groups,
describe-share-groups, list-share-group-offsets):
- `per_process`: `kafka.jvm.call`, one `java` process per call (the helper before sessions);
- `session`: one `HelperSession`, its start included;
and end to end, fresh CLI processes each:
- `offsetkeeper share-groups reset-offsets --to-earliest --execute`;
- yardstick, in the same run on the same group: Kafka's own `kafka-share-groups.sh
  --reset-offsets --to-earliest --execute` (also one JVM).
Also, as the floor: a warm librdkafka AdminClient's ListGroups (list_consumer_groups). Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path


def timed(fn) -> float:
    t = time.monotonic()
    fn()
    return time.monotonic() - t


def run(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:3]} failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-1500:]}")


def summary(xs: list[float]) -> dict:
    return {"min": round(min(xs), 3), "median": round(statistics.median(xs), 3),
            "max": round(max(xs), 3), "runs": len(xs)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bootstrap")
    args = ap.parse_args()

    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    from offsetkeeper import devbroker
    from offsetkeeper.devbroker.dist import tool_command
    from offsetkeeper.kafka import jvm

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository: tests/
    from tests.jvm_apps import JvmApp

    tmp = Path(tempfile.mkdtemp(prefix="ok-bench-jvm-"))
    try:
        bootstrap = args.bootstrap or devbroker.start(devbroker.free_port(), tmp / "broker",
                                                      tied=True).bootstrap
        conf = {"bootstrap.servers": bootstrap}
        topic, group = f"bench-share-{uuid.uuid4().hex[:6]}", f"bench-sg-{uuid.uuid4().hex[:6]}"
        admin = AdminClient(conf)
        admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
        p = Producer(conf)
        for i in range(30):
            p.produce(topic, str(i).encode(), partition=i % 3)
        p.flush(30)
        run(tool_command("kafka-configs", "--bootstrap-server", bootstrap, "--alter", "--entity-type",
                         "groups", "--entity-name", group, "--add-config",
                         "share.auto.offset.reset=earliest"))
        app = JvmApp(conf, "share-consume", {"group": group, "topics": [topic]})
        try:
            app.wait_for("acknowledged", count=30)
        finally:
            app.stop()

        reads = [("list-groups", {}), ("describe-share-groups", {"groups": [group]}),
                 ("list-share-group-offsets", {"groups": [group]})]
        out: dict = {"calls": args.calls * len(reads), "load_average_1m_at_start": round(os.getloadavg()[0], 2)}

        def per_process() -> None:
            for _ in range(args.calls):
                for op, a in reads:
                    jvm.call(conf, op, a)

        def session() -> None:
            s = jvm.HelperSession(conf)
            try:
                for _ in range(args.calls):
                    for op, a in reads:
                        s.call(op, a)
            finally:
                s.close()

        admin.list_consumer_groups().result(10)  # warm

        def librdkafka() -> None:
            for _ in range(args.calls * len(reads)):
                admin.list_consumer_groups().result(10)

        exe = str(Path(sys.executable).parent / "offsetkeeper")
        ours = [exe, "share-groups", "reset-offsets", "-b", bootstrap, "-g", group, "-t", topic,
                "--to-earliest", "--execute", "--output", "json"]
        kafkas = tool_command("kafka-share-groups", "--bootstrap-server", bootstrap, "--reset-offsets",
                              "--group", group, "--topic", topic, "--to-earliest", "--execute")
        times: dict[str, list[float]] = {k: [] for k in ("per_process", "session", "librdkafka_warm",
                                                          "cli_share_reset", "kafka_share_groups_reset")}
        for _ in range(args.repeat):  # interleaved, so drifting load hits every figure alike
            times["per_process"].append(timed(per_process))
            times["session"].append(timed(session))
            times["librdkafka_warm"].append(timed(librdkafka))
            times["cli_share_reset"].append(timed(lambda: run(ours)))
            times["kafka_share_groups_reset"].append(timed(lambda: run(kafkas)))
        out.update({k: summary(v) for k, v in times.items()})
        med = {k: statistics.median(v) for k, v in times.items()}
        out["per_process_over_session"] = round(med["per_process"] / med["session"], 1)
        out["session_over_librdkafka"] = round(med["session"] / med["librdkafka_warm"], 1)
        out["cli_over_kafka_share_groups"] = round(med["cli_share_reset"] / med["kafka_share_groups_reset"], 2)
        print(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
