"""Warm Spark by default: the commands that run Spark jobs (backup run, restore run, commits
scan) attach to the user's local Spark Connect server when nothing names where Spark runs
(no ``--master``/``--remote``, no SPARK_REMOTE, no ``spark.master``/``spark.remote`` in the
config files, no Spark settings of their own), and start it in the background on first use.

The server (`offsetkeeper.spark.server`, the same one ``offsetkeeper spark-server start``
runs) keeps its JVM, Python workers and planner warm between commands and stops after
``OFFSETKEEPER_SPARK_IDLE_TIMEOUT`` seconds without a job (default 30 min). Its state directory
(``OFFSETKEEPER_SPARK_SERVER_DIR``, default ~/.local/share/offsetkeeper/spark-server) has a lock,
so two commands starting it at the same moment start one server; a server of another
offsetkeeper, pyspark or Python (`background.identity`) is replaced, a dead one restarted, and
so is one that takes no token (an older offsetkeeper's). Commands attach with the token of the
server's start, read from its owner-only token file and never shown (`background.write_token`).

When the server cannot be used (the Connect client libraries are missing, it fails to start)
the command runs Spark in its own process, as before, after one line on stderr saying why.
``OFFSETKEEPER_SPARK_WARM=0`` (or ``spark: {warm: false}`` in the config file) turns it off.
"""

from __future__ import annotations

import os
import sys
import time

WARM_ENV = "OFFSETKEEPER_SPARK_WARM"
IDLE_ENV = "OFFSETKEEPER_SPARK_IDLE_TIMEOUT"
# the warm server's master: every core of this machine, as an in-process session would use
WARM_MASTER = "local[*]"


class WarmUnavailable(Exception):
    """The warm server cannot be used; the message says why (one clause)."""


def enabled() -> bool:
    """False when OFFSETKEEPER_SPARK_WARM is 0/false/no/off."""
    return os.environ.get(WARM_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def idle_timeout() -> float:
    """Seconds the server stays without a job: OFFSETKEEPER_SPARK_IDLE_TIMEOUT, else 30 min."""
    from offsetkeeper.errors import ConfigError
    from offsetkeeper.spark.background import DEFAULT_IDLE_TIMEOUT

    text = os.environ.get(IDLE_ENV, "").strip()
    if not text:
        return DEFAULT_IDLE_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise ConfigError(f"{IDLE_ENV}={text!r} is not a number of seconds (0: never stop)")
    return value


def why_not(conf, kafka_connector: bool) -> str | None:
    """Why a command with these settings runs Spark in its own process rather than on the
    warm server (None: it can attach). The server was started with its own settings, and
    a Connect session can change runtime SQL settings only."""
    if conf:
        return "the command has Spark settings of its own (--conf, spark.conf)"
    if kafka_connector:
        return "Spark's Kafka connector was asked for"
    return None


def warm_server(timings: dict[str, float] | None = None) -> tuple[str, str]:
    """The URL of the user's warm server and the token to attach with, the server started (and
    waited for) when none runs; the seconds it took to start go into `timings['server']`.
    WarmUnavailable when it cannot be used. The URL carries no token: it may be shown."""
    import threading

    from offsetkeeper.errors import OffsetkeeperError
    from offsetkeeper.spark import background as server

    st = server.server_status()
    token = server.read_token(st)
    if st.running and token and st.identity == server.identity():
        _raise_unusable(_import_client())
        return st.url or "", token
    _raise_unusable(_missing_client())
    # the client's imports (grpc, pandas, pyarrow: ~1 s) while the server starts, not after
    failed: list[str | None] = [None]
    importer = threading.Thread(target=lambda: failed.__setitem__(0, _import_client()),
                                daemon=True)
    importer.start()
    t = time.monotonic()
    try:
        st = server.start_background(None, master=WARM_MASTER, idle_timeout=idle_timeout(),
                                     replace_other=True)
    except OffsetkeeperError as exc:
        raise WarmUnavailable(str(exc)) from None
    except OSError as exc:  # the state directory cannot be written
        raise WarmUnavailable(f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")) from None
    finally:
        importer.join()
    _raise_unusable(failed[0])
    token = server.read_token(st)
    if not token:
        raise WarmUnavailable(f"cannot read the server's token file {st.token_file or '-'}")
    if timings is not None and st.started:
        timings["server"] = time.monotonic() - t
    return st.url or "", token


def _missing_client() -> str | None:
    """A quick look (no import) for the Connect client's main parts."""
    from importlib.util import find_spec

    for name in ("grpc", "pandas", "pyarrow", "pyspark"):
        if find_spec(name) is None:
            return f"No module named '{name}'"
    return None


def _import_client() -> str | None:
    """Import the Connect client (pyspark checks its dependencies); the error, or None."""
    try:
        from inspect import signature

        from pyspark.sql.connect.utils import check_dependencies

        if signature(check_dependencies).parameters:  # pyspark 4.0: the caller's module name
            check_dependencies(__name__)
        else:
            check_dependencies()
        import pyspark.sql.connect.session  # noqa: F401 - what the session needs, imported now
    except ImportError as exc:
        return str(exc)
    return None


def _raise_unusable(error: str | None) -> None:
    if error is not None:
        raise WarmUnavailable(f"the Spark Connect client is not installed ({error})")


def note_fallback(reason: str) -> None:
    """The one line that says a command runs Spark in its own process, and why."""
    print(f"offsetkeeper: not using the warm Spark server: {reason}; starting Spark in this "
          f"process (slower; {WARM_ENV}=0 skips the warm server)", file=sys.stderr, flush=True)
