"""Wait until a freshly started cluster serves: `python -m offsetkeeper.devbroker.probe`.

Run as a child process on purpose: a librdkafka client destroyed while a request is still in
flight can crash the process that owns it (librdkafka #4605), and a probe of a starting broker
leaves requests in flight by design. The child ends with os._exit, destroying nothing.
Exit 0 when every broker is registered and the group coordinator answers; 1 at the deadline.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

PROBE_GROUP = "offsetkeeper-dev-broker-probe"


def _ready(admin, brokers: int) -> bool:
    md = admin.list_topics(timeout=2)
    if len(md.brokers) != brokers or md.controller_id < 0:
        return False
    # Kafka creates __consumer_offsets on the first coordinator lookup and loads it afterwards;
    # until then commits fail with NOT_COORDINATOR. Describing a group that does not exist
    # triggers the creation and creates no group.
    fut = admin.describe_consumer_groups([PROBE_GROUP], request_timeout=5)[PROBE_GROUP]
    fut.result(timeout=6)
    return True


def main() -> None:
    from offsetkeeper.kafka import clients

    spec = json.loads(sys.stdin.read())
    quiet = logging.getLogger("offsetkeeper.devbroker.probe")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False
    admin = clients.admin_client(spec["conf"], {"socket.connection.setup.timeout.ms": 2000,
                                                "logger": quiet})
    deadline = time.monotonic() + float(spec["wait"])
    while time.monotonic() < deadline:
        try:
            if _ready(admin, int(spec["brokers"])):
                sys.stdout.flush()
                os._exit(0)
        except Exception:
            pass
        time.sleep(0.2)
    os._exit(1)


if __name__ == "__main__":
    main()
