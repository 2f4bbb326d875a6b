"""Time a bulk reset of N FileStream source connectors on a real distributed Connect worker
(offsetkeeper connect reset --pattern ... --to-none --execute, through the connector executor:
stop all, one snapshot, DELETE each, read back via REST and the offsets topic, resume all).

Prints JSON. Yardstick in the same run: the bare KIP-875 REST calls a script would make
(stop all, wait STOPPED, DELETE, resume all; no snapshot or read-back).

    python bench/connect_bulk.py --connectors 50
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from offsetkeeper import devbroker
from offsetkeeper.config import Connection
from offsetkeeper.connect.apply import _retry, _wait_state
from offsetkeeper.connect.rest import ConnectClient, parse_target
from offsetkeeper.devbroker import connect as dev_connect
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.ops import connect as ops_connect


def _wait_all(client, names, pred, timeout=600):
    deadline = time.monotonic() + timeout
    while not all(pred(n) for n in names):
        if time.monotonic() > deadline:
            raise SystemExit("timed out")
        time.sleep(0.5)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connectors", type=int, default=50)
    n = ap.parse_args().connectors
    with tempfile.TemporaryDirectory(prefix="ok-connect-bench-") as tmp:
        d = Path(tmp)
        st = devbroker.start(devbroker.free_port(), d / "broker", tied=True)
        w = dev_connect.start_worker(st.bootstrap, d / "worker", tied=True)
        client = ConnectClient(parse_target(w.url))
        names = [f"bulk-{i:03d}" for i in range(n)]
        for name in names:
            src = d / f"{name}.txt"
            src.write_text("".join(f"{name}-{k}\n" for k in range(20)))
            client.create(name, {"connector.class": "FileStreamSource", "file": str(src),
                                 "topic": "bulk-topic", "tasks.max": "1"})
        _wait_all(client, names, lambda x: bool(client.offsets(x)["offsets"]))
        with KafkaAdmin(Connection(bootstrap_servers=st.bootstrap)) as admin:
            t0 = time.monotonic()
            out = ops_connect.reset_connectors(client, admin, ops_connect.ConnectResetRequest(
                patterns=("bulk-*",), to_none=True, execute=True, offsets_topic=w.offsets_topic))
            ours = time.monotonic() - t0
        assert out.ok, out.as_dict()
        _wait_all(client, names, lambda x: bool(client.offsets(x)["offsets"]))
        t0 = time.monotonic()
        # the same calls a careful script makes (retrying 409 while the worker rebalances)
        for name in names:
            _retry(lambda n=name: client.stop(n))
        for name in names:
            _wait_state(client, name, "STOPPED", 120)
            _retry(lambda n=name: client.reset_offsets(n))
        for name in names:
            _retry(lambda n=name: client.resume(n))
        bare = time.monotonic() - t0
        dev_connect.stop_worker(d / "worker")
        devbroker.stop(d / "broker")
    print(json.dumps({"connectors": n, "offsetkeeper_s": round(ours, 2),
                      "bare_rest_s": round(bare, 2), "ratio": round(ours / bare, 2)}))


if __name__ == "__main__":
    main()
