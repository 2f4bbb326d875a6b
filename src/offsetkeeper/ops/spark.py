"""Where Spark jobs run (`--master`, `--remote`, SPARK_REMOTE) and the warm local Spark Connect
server (`spark-server start|status|stop`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from offsetkeeper.spark.server import (
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_PORT,
    ServerStatus,
    server_status,
    stop_background,
)


def spark_location(master: str | None, remote: str | None) -> str | None:
    """The Spark master for a request from ``--master`` / ``--remote`` (and SPARK_REMOTE, which
    an explicit --master overrides); a bad or doubled choice is a UsageError."""
    from offsetkeeper.spark.session import spark_location as merge

    if remote is None and master is None:
        remote = os.environ.get("SPARK_REMOTE") or None
    return merge(master, remote)


def start_spark_server(port: int = DEFAULT_PORT, *, master: str = "local[*]",
                       idle_timeout: float = DEFAULT_IDLE_TIMEOUT, conf: Sequence[str] = (),
                       state_dir: str | Path | None = None) -> ServerStatus:
    """Start the background Connect server (`conf`: KEY=VALUE pairs) or return the running one."""
    from offsetkeeper.spark.server import start_background
    from offsetkeeper.spark.session import parse_conf_pairs

    return start_background(port, master=master, idle_timeout=idle_timeout,
                            conf=parse_conf_pairs(list(conf)), state_dir=state_dir)


__all__ = ["DEFAULT_IDLE_TIMEOUT", "DEFAULT_PORT", "ServerStatus", "server_status",
           "spark_location", "start_spark_server", "stop_background"]
