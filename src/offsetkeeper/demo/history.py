"""The history part of `offsetkeeper demo`: record samples, read them back, judge status, plot,
and plan a reset to where a group was."""

from __future__ import annotations

import time

from offsetkeeper.times import iso_ms


def _tick(bootstrap: str, topic: str, partitions: int, *, caught_up_group: str,
          moved: tuple[str, int] | None = None) -> None:
    """New records arrive; one group keeps up (commits the log end); `moved` = (group, offset)
    is a group that consumes a little once and then stops."""
    from confluent_kafka import TopicPartition as CkTP

    from offsetkeeper.kafka import clients

    cluster = {"bootstrap.servers": bootstrap}
    p = clients.producer(cluster, {"linger.ms": 5})
    for part in range(partitions):
        for i in range(5):
            p.produce(topic, value=f'{{"tick": {i}}}'.encode(), partition=part)
    p.flush(30)
    c = clients.consumer(cluster, {"group.id": caught_up_group, "enable.auto.commit": False})
    try:
        ends = [c.get_watermark_offsets(CkTP(topic, part), timeout=10)[1] for part in range(partitions)]
        c.commit(offsets=[CkTP(topic, part, end) for part, end in enumerate(ends)], asynchronous=False)
    finally:
        c.close()
    if moved is not None:
        c = clients.consumer(cluster, {"group.id": moved[0], "enable.auto.commit": False})
        try:
            c.commit(offsets=[CkTP(topic, part, moved[1]) for part in range(partitions)],
                     asynchronous=False)
        finally:
            c.close()


def part(ctx) -> None:
    run, b = ctx.run, ["-b", ctx.prod]
    store = str(ctx.work / "history.db")
    s = ["--store", store]
    first = None
    for i in range(4):
        if i:
            _tick(ctx.prod, ctx.topic, ctx.partitions, caught_up_group="analytics",
                  moved=("payments", 95) if i == 1 else None)
            time.sleep(0.3)
        run(f"Sample both groups (cycle {i + 1} of 4; a cron job or `--interval 30s` as a service)",
            ["history", "record", "-g", "payments", "-g", "analytics", "--once", *s, *b])
        if first is None:  # a moment after the first sample, before the second
            first = iso_ms(int(time.time() * 1000) + 200)
            time.sleep(0.5)
    run("Lag and time lag of payments over time", ["history", "show", "payments", *s])
    run("Status, Burrow's rules: payments has lag and nobody consumes it (STOP, exit 1)",
        ["lag", "status", "payments", "analytics", "--window", "3", *s], expect=1)
    run("analytics keeps up: OK (exit 0, usable as a check)",
        ["lag", "status", "analytics", "--window", "3", "--partitions", *s])
    run("Where was payments at the first sample?", ["history", "at", "payments", "--time", first, *s])
    run("Plan: put payments back to that moment (dry run)",
        ["offsets", "reset", "-g", "payments", "--to-history", first, "--history-store", store, *b])
    run("Plot lag and time lag", ["history", "plot", "payments", "--since", "1h",
                                  "--out", str(ctx.work / "payments-lag.png"), *s])
    ctx.console.print(f"plot written to {ctx.work / 'payments-lag.png'}")
