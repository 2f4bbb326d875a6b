"""Demo part: delivery guarantees measured by crashing consumers, and a live reset of a running
application built on offsetkeeper.consumer.

Run as a module (`python -m offsetkeeper.demo.consumer BOOTSTRAP GROUP TOPIC`) it is that
application: it consumes with the BATCH policy until SIGTERM/SIGINT, then closes cleanly.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time


def part(ctx) -> None:
    """The consumer part of `offsetkeeper demo`."""
    run, b = ctx.run, ["-b", ctx.prod]
    run("Delivery lab: BATCH commits after processing (at-least-once) — 5 crashes",
        ["lab", "delivery", "--policy", "batch", "--crashes", "5", "--records", "150", *b])
    run("Delivery lab: commit before processing (at-most-once) — 5 crashes",
        ["lab", "delivery", "--policy", "before_processing", "--crashes", "5", "--records", "150", *b])
    run("Delivery lab: results and offsets in one SQLite transaction (exactly-once) — 5 crashes",
        ["lab", "delivery", "--policy", "store", "--crashes", "5", "--records", "150", *b])

    group = "live-app"
    key = ctx.work / "live-reset.key"
    key.unlink(missing_ok=True)  # a rerun in the same work directory makes a new one
    run("An operator's signing key for live resets (the application trusts its public line)",
        ["live-key", "generate", "--out", str(key)])
    from offsetkeeper.consumer.live_auth import load_signer

    app = subprocess.Popen([sys.executable, "-m", "offsetkeeper.demo.consumer", ctx.prod, group, ctx.topic,
                            load_signer(key).public], env=ctx.env)
    ctx.stack.callback(_stop, app)
    _wait_caught_up(ctx.prod, group, ctx.topic)
    run("A running application (OffsetConsumer, BATCH) has read everything", ["groups", "describe", group, *b])
    run("An ordinary reset is refused: the group has an active member",
        ["offsets", "reset", "-g", group, "-t", ctx.topic, "--to-offset", "100", "--execute", *b], expect=1)
    run("A live reset signed with a key the application does not trust: ignored, exit 1",
        ["offsets", "reset", "-g", group, "-t", ctx.topic, "--to-offset", "100", "--live", "--execute",
         "--live-timeout", "3", "--signing-key", str(_other_key(ctx.work)), *b], expect=1)
    run("Live reset, signed: the running consumer applies it at its next poll, the command reads "
        "the group back",
        ["offsets", "reset", "-g", group, "-t", ctx.topic, "--to-offset", "100", "--live", "--execute",
         "--live-timeout", "30", "--signing-key", str(key), *b])
    _wait_caught_up(ctx.prod, group, ctx.topic)
    run("It re-read from offset 100 and caught up again", ["groups", "describe", group, *b])
    _stop(app)  # the application prints what it processed: 360 records + 60 re-read


def _other_key(work):
    from offsetkeeper.consumer.live_auth import generate_key

    path = work / "untrusted.key"
    if not path.exists():
        generate_key(path)
    return path


def _stop(app: subprocess.Popen) -> None:
    if app.poll() is None:
        app.send_signal(signal.SIGTERM)
        try:
            app.wait(20)
        except subprocess.TimeoutExpired:
            app.kill()
            app.wait()


def _wait_caught_up(bootstrap: str, group: str, topic: str, timeout: float = 30) -> None:
    """Until the group committed the log end of every partition (or the timeout)."""
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.models import TopicPartition

    deadline = time.monotonic() + timeout
    with KafkaAdmin(Connection(bootstrap_servers=bootstrap)) as admin:
        tps = [TopicPartition(topic, p) for p in admin.topic_partitions([topic])[topic]]
        ends = admin.watermarks(tps)
        while time.monotonic() < deadline:
            committed = admin.committed_offsets(group)
            if all(tp in committed and committed[tp].offset >= ends[tp].high for tp in tps):
                return
            time.sleep(0.3)


def _app(bootstrap: str, group: str, topic: str, trusted_key: str) -> None:
    from offsetkeeper.consumer import CommitPolicy, OffsetConsumer

    consumer = OffsetConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                               "session.timeout.ms": 6000, "log_level": 3},
                              [topic], policy=CommitPolicy.batch(), auto_offset_reset="earliest",
                              live_reset_keys=[trusted_key])
    signal.signal(signal.SIGTERM, lambda *_: consumer.stop())
    signal.signal(signal.SIGINT, lambda *_: consumer.stop())
    for _msg in consumer.records(0.2):
        pass  # the application's work
    consumer.close()
    m = consumer.metrics()
    print(f"[{group}] stopped: processed {m.processed} records in {m.commits} commits; "
          f"{m.live_resets_applied} partitions moved by a live reset, without a restart", flush=True)


if __name__ == "__main__":
    _app(*sys.argv[1:5])
