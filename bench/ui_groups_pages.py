"""Benchmark: the dashboard's groups page at 10,000 groups, paged on the server (issue 22 #25).

Creates G groups with committed offsets on a broker (a fresh local Apache Kafka unless
--bootstrap-server is given) and a SQLite history store with C cycles per group, then times in
the same run on the same data, each the median of --repeat runs (server time: GET through the
ASGI app in-process, history cold = every group's history read again, as after a new cycle):
  (a) the groups page as served now: page 1 of 100 rows sorted by name; a name filter that
      keeps 1% of the groups; page 50; sorted by lag — ordered by each group's last sampled
      cycle in the history store (cold: every group's last cycle read again; warm: between
      cycles), then only the page described — and sorted by lag without a history store
      (beyond 1,000 groups: the page's groups only, said on the page);
  (b) yardstick: the old full page — every group described, its history read, filtered,
      sorted and rendered as one table (`ops.group_pages.overview` + the template, what the page did
      before paging);
  (c) yardstick: a plain listing of the groups (one ListGroups request, no describe), and
      the typed listing the page now makes (`groups list`: + one ListGroups of the Java client);
  (d) yardstick: sorting by lag the old way — every group the filter keeps described, then
      sorted (what the page did before; once, ~1 min at 10,000 groups; --skip-describe-all).
Prints one JSON document.

    .venv/bin/python bench/ui_groups_pages.py --groups 10000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ui_groups import fill_history

from offsetkeeper import devbroker
from offsetkeeper.config import ConfigFile
from offsetkeeper.ops.group_pages import filter_sort, overview
from offsetkeeper.ops.history_view import open_history
from offsetkeeper.ops.reset import ExecuteOptions
from offsetkeeper.web.app import UiSettings, create_app
from offsetkeeper.web.clusters import Clusters

warnings.filterwarnings("ignore", category=DeprecationWarning)
from starlette.testclient import TestClient  # noqa: E402


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def setup(bootstrap: str, topic: str, groups: list[str], partitions: int) -> None:
    """The topic, 50 records per partition, and one committed offset per group — committed
    500 groups at a time: 10,000 requests in flight at once made librdkafka abort
    (`rd_kafka_enq_once_del_source_return: Assertion eonce->refcnt > 0`)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, Producer
    from confluent_kafka import TopicPartition as CkTP
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)
    time.sleep(0.5)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for part in range(partitions):
        for _ in range(50):
            p.produce(topic, value=b"x" * 16, partition=part)
    p.flush(60)
    for start in range(0, len(groups), 500):
        futures = []
        for i, g in enumerate(groups[start:start + 500], start):
            tps = [CkTP(topic, i % partitions, 10 + i % 40)]
            futures.append(admin.alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(g, tps)])[g])
        for f in futures:
            f.result(120)


def median_time(fn, repeat: int, before=None) -> float:
    times = []
    for _ in range(repeat):
        if before:
            before()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=8)
    ap.add_argument("--cycles", type=int, default=20, help="history cycles per group")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--bootstrap-server", default=None)
    ap.add_argument("--skip-describe-all", action="store_true",
                    help="skip yardstick (d), the old sort by lag (~1 min at 10,000 groups)")
    args = ap.parse_args()

    run = uuid.uuid4().hex[:8]
    topic = f"bench-pg-{run}"
    groups = [f"bench-pg-{run}-{i:05d}" for i in range(args.groups)]
    with tempfile.TemporaryDirectory() as d:
        ctx = None
        if args.bootstrap_server:
            bootstrap = args.bootstrap_server
        else:
            ctx = devbroker.running_broker(data_dir=d)
            bootstrap = ctx.__enter__()
        try:
            t0 = time.perf_counter()
            log(f"committing offsets of {len(groups)} groups")
            setup(bootstrap, topic, groups, args.partitions)
            log("filling the history store")
            hist = str(Path(d) / "history.db")
            samples = fill_history(hist, topic, groups, args.partitions, args.cycles)
            setup_s = time.perf_counter() - t0
            log(f"set up in {setup_s:.0f} s; timing")
            app = create_app(UiSettings(execute=ExecuteOptions(snapshot_store=str(Path(d) / "snaps")),
                                        allowed_hosts=("127.0.0.1",)),
                             Clusters(ConfigFile(), bootstrap=bootstrap), open_history(hist))
            c = TestClient(app, base_url="http://127.0.0.1")
            dash = app.state.dash

            def cold():
                dash.history._cache.clear()
                dash.history._last.clear()

            def get(**params):
                r = c.get("/c/default/groups", params=params)
                assert r.status_code == 200, r.text[:300]
                return r

            first = get()  # warm-up: connections, template compile
            assert first.text.count('<tr data-name="') == 100
            one_pct = f"bench-pg-{run}-000"       # 00000..00099 of 10,000: 1%
            n_filtered = sum(g.startswith(one_pct) for g in groups)
            assert get(q=one_pct, format="json").json()["matched"] == n_filtered
            pages = {
                "page1_by_name_s": dict(),
                "filter_1pct_s": dict(q=one_pct),
                "page50_by_name_s": dict(page="50"),
                "page1_by_lag_desc_s": dict(sort="lag", dir="desc"),
            }
            out = {}
            for k, p in pages.items():
                log(f"timing {k}")
                out[k] = median_time(lambda p=p: get(**p), args.repeat, cold)
            warm = median_time(get, args.repeat)
            lag_desc = dict(sort="lag", dir="desc")
            doc = get(**lag_desc, format="json").json()
            assert doc["order"] == "history", doc["order"]
            by_lag_warm = median_time(lambda: get(**lag_desc), args.repeat)
            # the store's order: the first row has the largest lag of the last cycle
            no_store = TestClient(create_app(
                UiSettings(execute=ExecuteOptions(snapshot_store=str(Path(d) / "snaps")), allowed_hosts=("127.0.0.1",)),
                Clusters(ConfigFile(), bootstrap=bootstrap), None), base_url="http://127.0.0.1")

            def get_no_store():
                r = no_store.get("/c/default/groups", params={**lag_desc, "q": f"bench-pg-{run}"})
                assert r.status_code == 200 and 'id="order-note"' in r.text, r.text[:300]
            log("timing the lag sort without a history store (page only)")
            by_lag_no_store = median_time(get_no_store, args.repeat)

            admin = dash.admin("default")
            tpl = dash.templates.env.get_template("groups.html")

            def old_full_page():
                # What the handler did before paging: every group, then filter, sort, render.
                rows, herr = overview(admin, dash.history)
                shown = filter_sort(rows, sort="group")
                return tpl.render(rows=shown, total=len(rows), matched=len(shown), page=1,
                                  pages=1, per=len(shown), history_error=herr,
                                  states=sorted({r.state for r in rows}), q="", state="",
                                  status="", sort="group", desc=False, cluster="default",
                                  clusters=["default"], csrf="x", read_only=False,
                                  has_history=True, empty_store=False)
            log("pages timed; the old full page")
            old_s = median_time(old_full_page, args.repeat, cold)

            from offsetkeeper.ops import list_groups

            listing_s = median_time(lambda: list_groups(admin), args.repeat)
            listed = len(list_groups(admin))
            from offsetkeeper.ops.groups import list_typed_groups

            typed_listing_s = median_time(lambda: list_typed_groups(admin), args.repeat)
            describe_all_s = None
            if not args.skip_describe_all:
                log("yardstick: sorting by lag the old way (every group described), once")

                def old_lag_sort():
                    rows, _ = overview(admin, dash.history, groups)
                    return filter_sort(rows, sort="lag", desc=True)[:100]
                describe_all_s = median_time(old_lag_sort, 1, cold)
        finally:
            if ctx is not None:
                ctx.__exit__(None, None, None)
    print(json.dumps({
        "benchmark": "ui_groups_pages",
        "groups": args.groups,
        "groups_on_cluster": listed,
        "history_samples": samples,
        "setup_s": round(setup_s, 1),
        "repeat": args.repeat,
        "load_average_1m": round(os.getloadavg()[0], 2),
        **{k: round(v, 4) for k, v in out.items()},
        "page1_between_cycles_s": round(warm, 4),
        "page1_by_lag_desc_history_warm_s": round(by_lag_warm, 4),
        "page1_by_lag_desc_no_store_page_only_s": round(by_lag_no_store, 4),
        "filtered_rows": n_filtered,
        "yardstick_old_full_page_s": round(old_s, 4),
        "yardstick_list_groups_s": round(listing_s, 4),
        "yardstick_typed_listing_s": round(typed_listing_s, 4),
        "yardstick_old_sort_by_lag_describe_all_s": (None if describe_all_s is None
                                                     else round(describe_all_s, 2)),
        "ratio_old_full_page_vs_page1": round(old_s / out["page1_by_name_s"], 1),
        "ratio_page1_vs_list_groups": round(out["page1_by_name_s"] / listing_s, 1),
        "target_s": 2.0,
        "meets_target_page1": out["page1_by_name_s"] < 2.0,
        "meets_target_filter": out["filter_1pct_s"] < 2.0,
        "meets_target_by_lag": out["page1_by_lag_desc_s"] < 2.0,
    }, indent=2))


if __name__ == "__main__":
    main()
