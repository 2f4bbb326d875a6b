"""Benchmark: bulk offset reset of G groups x P partitions, offsetkeeper vs a naive baseline.

Creates the groups on a broker (a fresh local Apache Kafka (dev-broker) unless --bootstrap-server is given), then
in the same run times
  (a) offsetkeeper: plan + concurrent execute of a reset of all groups (read-back verified),
  (b) the naive baseline: the same groups reset one after another with the same client library
      (confluent-kafka AdminClient.alter_consumer_group_offsets, waiting for each), and
  (c) the same, but doing the work offsetkeeper does per group (state check, commit, read back).
Prints one JSON document with both throughputs, the ratio and latency percentiles.

    .venv/bin/python bench/bulk_reset.py --groups 1000 --partitions 8

With `--command` (issue 32: the whole command against kafka-backup's unchecked commit) it
times instead, alternating, each a fresh process on the same groups:
  (a) `offsetkeeper offsets reset --group-pattern ... --to-offset N --execute` (snapshot,
      re-check, commit, read-back, the end's confirmation, the rendered table),
  (b) the yardstick: a bare confluent-kafka script committing the same groups' offsets with
      every request in flight (no checks: what an unchecked commit costs),
  (c) with `--baseline-python`, another checkout's CLI (e.g. main's) doing (a),
and counts the Kafka requests of one reset run in process (per kind), with the executor's
phases. One JSON line per measurement, then a summary line with ratios and the load average.

    .venv/bin/python bench/bulk_reset.py --command --groups 200 --partitions 8 \
        [--baseline-python /work/main/.venv/bin/python] [--repeat 5]
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
from collections import Counter

from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import AdminClient, NewTopic

from offsetkeeper import devbroker
from offsetkeeper.config import Connection
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.reset.apply import ApplyOptions, apply_plan
from offsetkeeper.reset.facts import build_plan
from offsetkeeper.reset.options import ExecuteOptions
from offsetkeeper.reset.plan import ResetScope, TopicSpec
from offsetkeeper.reset.targets import ToLatest


def setup(bootstrap: str, topic: str, groups: list[str], partitions: int, records: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    time.sleep(0.5)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for part in range(partitions):
        for i in range(records):
            p.produce(topic, value=b"x" * 16, key=str(i).encode(), partition=part)
    p.flush(60)
    # Groups start in the middle of the log, committed concurrently (setup, not measured).
    futures = []
    for g in groups:
        tps = [CkTP(topic, part, records // 2) for part in range(partitions)]
        futures.append(admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g])
    for f in futures:
        f.result(60)


def naive(bootstrap: str, topic: str, groups: list[str], partitions: int) -> dict:
    """One group after another: what a shell loop or simple script does."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    start = time.monotonic()
    for g in groups:
        tps = [CkTP(topic, part, 0) for part in range(partitions)]
        admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g].result(60)
    elapsed = time.monotonic() - start
    n = len(groups) * partitions
    return {"elapsed_s": round(elapsed, 3), "offsets": n, "offsets_per_s": round(n / elapsed, 1)}


def naive_checked(bootstrap: str, topic: str, groups: list[str], partitions: int) -> dict:
    """One group after another doing the same work as offsetkeeper: state check, commit, read back."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    start = time.monotonic()
    for g in groups:
        state = admin.describe_consumer_groups([g])[g].result(60)
        if state.members:
            continue
        tps = [CkTP(topic, part, 1) for part in range(partitions)]
        admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(g, tps)])[g].result(60)
        admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])[g].result(60)
    elapsed = time.monotonic() - start
    n = len(groups) * partitions
    return {"elapsed_s": round(elapsed, 3), "offsets": n, "offsets_per_s": round(n / elapsed, 1)}


def offsetkeeper_bulk(bootstrap: str, topic: str, groups: list[str], max_concurrent: int) -> dict:
    with KafkaAdmin(Connection(bootstrap)) as admin:
        t0 = time.monotonic()
        plan = build_plan(admin, ResetScope(groups=tuple(groups), topics=(TopicSpec(topic),)), ToLatest())
        t1 = time.monotonic()
        report = apply_plan(admin, plan, ApplyOptions(ExecuteOptions(max_concurrent=max_concurrent)))
        t2 = time.monotonic()
    s = report.summary()
    return {
        "status": s["status"],
        "plan_s": round(t1 - t0, 3),
        "execute_s": round(t2 - t1, 3),
        "elapsed_s": round(t2 - t0, 3),
        "offsets": s["partitions_changed"],
        "offsets_per_s": round(s["partitions_changed"] / (t2 - t0), 1),
        "execute_offsets_per_s": s["offsets_per_s"],
        "latency_p50_ms": s["latency_p50_ms"],
        "latency_p99_ms": s["latency_p99_ms"],
        "latency_max_ms": s["latency_max_ms"],
        "groups_failed": s["groups_failed"],
    }


# -- --command: the whole command against an unchecked commit -------------------------------------

UNCHECKED = """
import sys
from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient
bootstrap, topic, parts, offset, groups = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:]
admin = AdminClient({"bootstrap.servers": bootstrap})
futures = [admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(
    g, [TopicPartition(topic, p, offset) for p in range(parts)])])[g] for g in groups]
for f in futures:
    f.result(60)
"""


class _Counting:
    """An AdminClient that counts what offsetkeeper asks of it, per kind of Kafka request
    (describe and offset fetch/commit per group: librdkafka sends one request per group, each
    after a FindCoordinator; `list_groups`, the batched describe of member-less classic groups:
    one ListGroups and one DescribeGroups per broker)."""

    def __init__(self, inner, counts: Counter) -> None:
        self._inner, self._counts = inner, counts

    def __getattr__(self, name):
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*a, **kw):
            first = a[0] if a else None
            n = len(first) if name in ("describe_consumer_groups", "list_offsets",
                                       "delete_consumer_groups") and first is not None else 1
            self._counts[name] += n
            return attr(*a, **kw)

        return call


def _timed(cmd: list[str], env: dict | None = None) -> float:
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env={**os.environ, **(env or {})})
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[:6]} failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-800:]}")
    return took


def _summary(xs: list[float]) -> dict:
    return {"min": round(min(xs), 3), "median": round(statistics.median(xs), 3),
            "max": round(max(xs), 3), "runs": len(xs)}


def requests_of_one_run(bootstrap: str, topic: str, pattern: str, offset: int, store: str) -> dict:
    """One `offsets reset --execute` through the library (what the command calls), counting the
    Kafka requests of planning and of the executor (snapshot included) apart."""
    from offsetkeeper.kafka.admin import LibrdkafkaAdmin
    from offsetkeeper.ops.reset import ExecuteOptions, ResetRequest, reset_offsets
    from offsetkeeper.ops.targets import TargetKind, TargetSpec

    counts: Counter = Counter()
    # the facade's librdkafka half sends every group request through its AdminClient
    real = LibrdkafkaAdmin.admin

    req = ResetRequest(target=TargetSpec(TargetKind.TO_OFFSET, str(offset)),
                       scope=ResetScope(group_patterns=(pattern,), topics=(TopicSpec(topic),)),
                       execute=True,
                       options=ExecuteOptions(snapshot_store=store))
    LibrdkafkaAdmin.admin = property(lambda self: _Counting(real.fget(self), counts))
    try:
        with KafkaAdmin(Connection(bootstrap)) as admin:
            t0 = time.perf_counter()
            outcome = reset_offsets(admin, req)
            took = time.perf_counter() - t0
    finally:
        LibrdkafkaAdmin.admin = real
    assert outcome.report is not None and outcome.ok, outcome.report.summary()
    return {"requests": dict(sorted(counts.items())), "requests_total": sum(counts.values()),
            "seconds": round(took, 3), "partitions_changed": outcome.report.partitions_changed}


def whole_command(args) -> None:
    run = uuid.uuid4().hex[:8]
    topic = f"bench-bulk-{run}"
    groups = [f"bench-{run}-{i:05d}" for i in range(args.groups)]
    pattern = f"bench-{run}-*"
    load_before = os.getloadavg()
    lines: list[dict] = []

    def emit(d: dict) -> None:
        lines.append(d)
        print(json.dumps(d), flush=True)

    with tempfile.TemporaryDirectory(prefix="ok-bench-bulk-") as d:
        if args.bootstrap_server:
            bootstrap, ctx = args.bootstrap_server, None
        else:
            ctx = devbroker.running_broker(data_dir=d)
            bootstrap = ctx.__enter__()
        try:
            setup(bootstrap, topic, groups, args.partitions, args.records)
            store = os.path.join(d, "snapshots")
            ours = [sys.executable, "-m", "offsetkeeper.cli.main"]
            base = [args.baseline_python, "-m", "offsetkeeper.cli.main"] \
                if args.baseline_python else None
            ways = {"unchecked_commit": lambda off: [
                        sys.executable, "-c", UNCHECKED, bootstrap, topic, str(args.partitions),
                        str(off), *groups],
                    "offsetkeeper": lambda off: [
                        *ours, "offsets", "reset", "--bootstrap-server", bootstrap,
                        "--group-pattern", pattern, "--topic", topic, "--to-offset", str(off),
                        "--execute", "--snapshot-store", store, *args.output_args]}
            if base:
                ways["baseline"] = lambda off: [
                    *base, "offsets", "reset", "--bootstrap-server", bootstrap,
                    "--group-pattern", pattern, "--topic", topic, "--to-offset", str(off),
                    "--execute", "--snapshot-store", store, *args.output_args]
            # compiled modules cached as an installed package has them (this machine sets
            # PYTHONDONTWRITEBYTECODE), outside both checkouts; filled by the first round
            env = {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": os.path.join(d, "pyc")}
            times: dict[str, list[float]] = {k: [] for k in ways}
            offset = 0
            for i in range(args.repeat + 1):  # the first round warms the page cache: not kept
                for name, cmd in ways.items():
                    offset = offset % (args.records - 1) + 1  # every run moves every group
                    took = _timed(cmd(offset), env)
                    if i:
                        times[name].append(took)
                        emit({"benchmark": "bulk_reset_command", "way": name, "run": i,
                              "seconds": round(took, 3), "load": os.getloadavg()[0]})
            offset = offset % (args.records - 1) + 1
            counted = requests_of_one_run(bootstrap, topic, pattern, offset,
                                          os.path.join(d, "snapshots-counted"))
            emit({"benchmark": "bulk_reset_requests", **counted})
            # check: the last run really moved every group (an independent read)
            with KafkaAdmin(Connection(bootstrap)) as admin:
                sample = admin.committed_offsets(groups[-1])
            assert len(sample) == args.partitions and all(c.offset == offset for c in sample.values())
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"benchmark": "bulk_reset_command_summary", "groups": args.groups,
           "partitions_per_group": args.partitions, "output": " ".join(args.output_args) or "table",
           **{k: _summary(v) for k, v in times.items()},
           "ratio_offsetkeeper_vs_unchecked": round(med["offsetkeeper"] / med["unchecked_commit"], 2),
           "load_before": [round(x, 1) for x in load_before],
           "load_after": [round(x, 1) for x in os.getloadavg()]}
    if "baseline" in med:
        out["ratio_baseline_vs_unchecked"] = round(med["baseline"] / med["unchecked_commit"], 2)
        out["ratio_offsetkeeper_vs_baseline"] = round(med["offsetkeeper"] / med["baseline"], 2)
    print(json.dumps(out), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--records", type=int, default=20, help="records per partition")
    ap.add_argument("--max-concurrent", type=int, default=100)
    ap.add_argument("--bootstrap-server", default=None)
    ap.add_argument("--command", action="store_true",
                    help="whole commands as fresh processes vs an unchecked commit (see above)")
    ap.add_argument("--repeat", type=int, default=5, help="--command: runs of each way")
    ap.add_argument("--baseline-python", help="--command: another checkout's interpreter (e.g. "
                    "main's .venv/bin/python): its `offsets reset` alternates with ours")
    ap.add_argument("--json-output", dest="output_args", action="store_const",
                    const=["-o", "json"], default=[],
                    help="--command: render the report as JSON (default: the table)")
    args = ap.parse_args()
    if args.command:
        whole_command(args)
        return

    run = uuid.uuid4().hex[:8]
    topic = f"bench-bulk-{run}"
    groups = [f"bench-{run}-{i:05d}" for i in range(args.groups)]
    with tempfile.TemporaryDirectory() as d:
        if args.bootstrap_server:
            bootstrap, ctx = args.bootstrap_server, None
        else:
            ctx = devbroker.running_broker(data_dir=d)
            bootstrap = ctx.__enter__()
        try:
            setup(bootstrap, topic, groups, args.partitions, args.records)
            ok = offsetkeeper_bulk(bootstrap, topic, groups, args.max_concurrent)
            checked = naive_checked(bootstrap, topic, groups, args.partitions)
            base = naive(bootstrap, topic, groups, args.partitions)
            # check: the baseline really changed every group (independent read)
            with KafkaAdmin(Connection(bootstrap)) as admin:
                sample = admin.committed_offsets(groups[-1])
            assert all(c.offset == 0 for c in sample.values()) and len(sample) == args.partitions
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
    print(json.dumps({
        "benchmark": "bulk_reset",
        "groups": args.groups,
        "partitions_per_group": args.partitions,
        "max_concurrent": args.max_concurrent,
        "offsetkeeper": ok,
        "naive_sequential": base,
        "naive_sequential_same_checks": checked,
        "ratio_offsetkeeper_vs_naive": round(ok["offsets_per_s"] / base["offsets_per_s"], 2),
        "ratio_execute_only_vs_naive": round(ok["execute_offsets_per_s"] / base["offsets_per_s"], 2),
        "ratio_execute_only_vs_naive_same_checks":
            round(ok["execute_offsets_per_s"] / checked["offsets_per_s"], 2),
    }, indent=2))


if __name__ == "__main__":
    main()
