"""Time the dashboard's Connectors page and the sampler's read of source positions with N
FileStream source connectors (and N/10 sink connectors) on a real distributed Connect worker.

Prints JSON. Yardstick in the same run: the fewest REST calls that get the same facts
(`GET /connectors?expand=info&expand=status`, then `GET .../offsets` per connector).

    python bench/connect_ui.py --connectors 50
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
import warnings
from pathlib import Path

from offsetkeeper import devbroker
from offsetkeeper.config import ConfigFile, Connection
from offsetkeeper.connect.rest import ConnectClient, parse_target
from offsetkeeper.devbroker import connect as dev_connect
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.ops.history import SamplerSettings
from offsetkeeper.web.app import UiSettings, create_app
from offsetkeeper.web.clusters import Clusters
from offsetkeeper.web.connectors import worker_entries


def _best(fn, runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        t0 = time.monotonic()
        fn()
        times.append(time.monotonic() - t0)
    return min(times)


def main() -> None:
    warnings.filterwarnings("ignore")
    from starlette.testclient import TestClient

    ap = argparse.ArgumentParser()
    ap.add_argument("--connectors", type=int, default=50)
    n = ap.parse_args().connectors
    with tempfile.TemporaryDirectory(prefix="ok-connect-ui-bench-") as tmp:
        d = Path(tmp)
        st = devbroker.start(devbroker.free_port(), d / "broker", tied=True)
        w = dev_connect.start_worker(st.bootstrap, d / "worker", tied=True)
        try:
            client = ConnectClient(parse_target(w.url))
            with KafkaAdmin(Connection(bootstrap_servers=st.bootstrap)) as admin:
                admin.create_topic("ui-bench", 1)
            names = [f"src-{i:03d}" for i in range(n)]
            for name in names:
                src = d / f"{name}.txt"
                src.write_text("".join(f"{name}-{k}\n" for k in range(20)))
                client.create(name, {"connector.class": "FileStreamSource", "file": str(src),
                                     "topic": "ui-bench", "tasks.max": "1"})
            sinks = [f"snk-{i:03d}" for i in range(max(1, n // 10))]
            for name in sinks:
                client.create(name, {"connector.class": "FileStreamSink", "topics": "ui-bench",
                                     "file": str(d / f"{name}.out"), "tasks.max": "1"})
            deadline = time.monotonic() + 600
            while not all(client.offsets(x)["offsets"] for x in names + sinks):
                if time.monotonic() > deadline:
                    raise SystemExit("timed out waiting for the connectors' offsets")
                time.sleep(0.5)
            clusters = Clusters(ConfigFile(), bootstrap=st.bootstrap)
            app = create_app(UiSettings(connect_workers=worker_entries([], (w.url,), ["default"]),
                                        allowed_hosts=("127.0.0.1",)), clusters, None)
            web = TestClient(app, base_url="http://127.0.0.1")

            def page():
                r = web.get("/connectors", params={"format": "json"})
                assert r.status_code == 200
                assert len(r.json()["workers"][0]["connectors"]) == n + len(sinks)
            reader = SamplerSettings(all_groups=True, connect_urls=(w.url,)).position_reader()

            def positions():
                got, errors = reader(0)
                assert len(got) == n and errors == {w.url: ""}

            def bare():
                listed = client.request("GET", "/connectors?expand=info&expand=status")
                for name in listed:
                    client.offsets(name)
            out = {"connectors": n + len(sinks), "sources": n, "sinks": len(sinks),
                   "page_s": _best(page), "positions_s": _best(positions),
                   "bare_rest_s": _best(bare)}
            out["page_vs_bare"] = round(out["page_s"] / out["bare_rest_s"], 2)
            out["positions_vs_bare"] = round(out["positions_s"] / out["bare_rest_s"], 2)
            clusters.close()
            print(json.dumps(out))
        finally:
            dev_connect.stop_worker(d / "worker")
            devbroker.stop(d / "broker")


if __name__ == "__main__":
    main()
