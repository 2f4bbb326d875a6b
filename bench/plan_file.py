"""Benchmark: planning a reset of G groups x P partitions from a `--from-file` CSV.

Writes a `group,topic,partition,offset` file (G groups over T topics of P partitions), then in
the same run and on the same text times
  (a) offsetkeeper: strict UTF-8 decode + `parse_offsets_csv` (RFC 4180, line-numbered checks,
      FromOffsets validation) and the pure planner `plan_reset` over facts shaped like those
      `build_plan` reads from a cluster (half the groups exist, empty, committed in the middle
      of the log; the other half do not exist yet, as on a DR cluster, and are created by the
      file), with a progress callback counting events;
  (b) the yardstick: Python's `csv.reader` over the same text into the same
      group -> (topic, partition) -> offset dicts (no checks, no plan): a lower bound.
No broker: this is the part of `offsets reset --from-file` that grew quadratically (20,000
groups took 26 s). Prints one JSON document; `--profile` prints the top functions instead.

    .venv/bin/python bench/plan_file.py --groups 20000 --partitions 8
    PYTHONPATH=../main/src .venv/bin/python bench/plan_file.py ...   # another tree's code
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import io
import json
import pstats
import resource
import time

from offsetkeeper.models import CommittedOffset, GroupInfo, TopicPartition, Watermarks
from offsetkeeper.reset.parse import decode_utf8, parse_offsets_csv
from offsetkeeper.reset.plan import GroupFacts, ResetFacts, ResetScope, plan_reset


def make_file(groups: int, partitions: int, topics: int) -> bytes:
    out = io.StringIO()
    for g in range(groups):
        t = f"bench-topic-{g % topics:03d}"
        for p in range(partitions):
            out.write(f"bench-group-{g:06d},{t},{p},{40 + g % 7}\n")
    return out.getvalue().encode()


def make_facts(groups: int, partitions: int, topics: int) -> ResetFacts:
    names = [f"bench-topic-{t:03d}" for t in range(topics)]
    gf = {}
    for g in range(groups):
        gid = f"bench-group-{g:06d}"
        t = names[g % topics]
        if g % 2:  # half the groups do not exist yet (a DR cluster): created by the file
            gf[gid] = GroupFacts(GroupInfo(gid, "dead"))
            continue
        gf[gid] = GroupFacts(GroupInfo(gid, "empty"),
                             {TopicPartition(t, p): CommittedOffset(50) for p in range(partitions)})
    wms = {TopicPartition(t, p): Watermarks(10, 100) for t in names for p in range(partitions)}
    return ResetFacts(groups=gf, topic_partitions={t: tuple(range(partitions)) for t in names},
                      watermarks=wms, may_create=frozenset(gf))


def offsetkeeper_plan(data: bytes, facts: ResetFacts, events: list) -> tuple[float, float, int]:
    t0 = time.perf_counter()
    kwargs = {"progress": events.append} if _takes_progress(parse_offsets_csv) else {}
    target = parse_offsets_csv(decode_utf8(data, source="plan.csv"), source="plan.csv", **kwargs)
    t1 = time.perf_counter()
    kwargs = {"progress": events.append} if _takes_progress(plan_reset) else {}
    plan = plan_reset(facts, ResetScope(all_groups=True), target, **kwargs)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, sum(len(g.partitions) for g in plan.groups)


def _takes_progress(fn) -> bool:
    import inspect

    return "progress" in inspect.signature(fn).parameters


def yardstick(data: bytes) -> float:
    t0 = time.perf_counter()
    out: dict[str, dict[tuple[str, int], int]] = {}
    for g, t, p, o in csv.reader(io.StringIO(data.decode("utf-8"))):
        out.setdefault(g, {})[(t, int(p))] = int(o)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=20_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--topics", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    data = make_file(a.groups, a.partitions, a.topics)
    facts = make_facts(a.groups, a.partitions, a.topics)
    if a.profile:
        prof = cProfile.Profile()
        prof.runcall(offsetkeeper_plan, data, facts, [])
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
        return
    runs, yard = [], []
    events: list = []
    for _ in range(a.repeat):  # alternate, best of each
        yard.append(yardstick(data))
        events.clear()
        runs.append(offsetkeeper_plan(data, facts, events))
    parse_s = min(r[0] for r in runs)
    plan_s = min(r[1] for r in runs)
    total = min(r[0] + r[1] for r in runs)
    print(json.dumps({
        "benchmark": "plan_from_file", "groups": a.groups, "partitions_per_group": a.partitions,
        "lines": a.groups * a.partitions, "file_mb": round(len(data) / 1e6, 1),
        "parse_s": round(parse_s, 3), "plan_s": round(plan_s, 3), "total_s": round(total, 3),
        "partitions_planned": runs[0][2], "progress_events": len(events),
        "yardstick_csv_reader_s": round(min(yard), 3),
        "total_over_yardstick": round(total / min(yard), 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }))


if __name__ == "__main__":
    main()
