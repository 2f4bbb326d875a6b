"""Demo part: a MirrorMaker 2 failover. MM2 mirrors 'prod' (alias A) to 'dr' (alias B); an
application's group reads the topic on prod; `mm2 status` shows what a failover would do, and
`offsets reset --from-mm2` moves the group on dr through the executor (snapshot, read-back),
where it resumes right after the last record it processed on prod; then it is rolled back."""

from __future__ import annotations

from offsetkeeper.demo.context import DemoContext, wait_until
from offsetkeeper.devbroker import connect as dev_connect
from offsetkeeper.errors import OffsetkeeperError

TOPIC = "mm2-demo-orders"
GROUP = "mm2-demo-payments"
PARTITIONS = 2
PER_PARTITION = 20


def _seed(bootstrap: str) -> dict[int, int]:
    """The topic, and the group's commits after reading all of it (the application on prod)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import NewTopic

    from offsetkeeper.kafka import clients

    admin = clients.admin_client({"bootstrap.servers": bootstrap})  # held: its futures die with it
    for f in admin.create_topics([NewTopic(TOPIC, PARTITIONS, -1)]).values():
        f.result(30)
    p = clients.producer({"bootstrap.servers": bootstrap})
    for part in range(PARTITIONS):
        for i in range(PER_PARTITION):
            p.produce(TOPIC, f"payment-{part}-{i}".encode(), partition=part)
    p.flush(30)
    c = clients.consumer({"bootstrap.servers": bootstrap, "group.id": GROUP, "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(TOPIC, n, 0) for n in range(PARTITIONS)])
        seen: dict[int, int] = {}
        empty = 0
        while sum(seen.values()) < PARTITIONS * PER_PARTITION:
            msgs = [m for m in c.consume(500, 1.0) if not m.error()]
            empty = 0 if msgs else empty + 1
            if empty > 60:
                raise OffsetkeeperError(f"reading {TOPIC} on {bootstrap} stood still for 60s")
            for m in msgs:
                seen[m.partition()] = seen.get(m.partition(), 0) + 1
        c.commit(offsets=[TopicPartition(TOPIC, n, seen[n]) for n in range(PARTITIONS)],
                 asynchronous=False)
        return seen
    finally:
        c.close()


def _value_before(bootstrap: str, topic: str, partition: int, offset: int) -> str | None:
    """The value of the record just before `offset` (the last one a group there processed)."""
    from confluent_kafka import TopicPartition

    from offsetkeeper.kafka import clients

    if offset <= 0:
        return None
    c = clients.consumer({"bootstrap.servers": bootstrap, "group.id": "demo-reader",
                  "enable.auto.commit": False})
    try:
        c.assign([TopicPartition(topic, partition, offset - 1)])
        for _ in range(30):
            for m in c.consume(1, 1.0):
                if not m.error():
                    return m.value().decode()
        return None
    finally:
        c.close()


def _translated(dr: str, committed: dict[int, int]):
    """True once MM2's checkpoints translate every partition of the group to the mirrored log
    end (the group read all of prod); else what they say now (progress)."""
    from offsetkeeper.mm2.records import latest_checkpoints

    try:
        latest, _ = latest_checkpoints({"bootstrap.servers": dr}, "A", timeout_s=30)
    except Exception as exc:  # not yet there: keep waiting while MM2 makes progress
        return repr(exc)
    got = {p: (c.upstream, c.downstream) for (g, t, p), c in latest.items()
           if g == GROUP and t == f"A.{TOPIC}"}
    return True if got == {n: (off, off) for n, off in committed.items()} else repr(got)


def part(ctx: DemoContext) -> None:
    run, prod = ctx.run, ctx.prod
    dr = ctx.broker("dr")
    d = ctx.work / "mm2"
    log = d / "mm2.log"
    ctx.console.rule(f"[bold]An application's group {GROUP} reads {TOPIC} on prod")
    committed = _seed(prod)
    run("The group on prod", ["groups", "describe", GROUP, "-b", prod])
    run("Start MirrorMaker 2: prod (alias A) -> dr (alias B), checkpoints every second",
        ["dev-broker", "mm2", "start", "--source-bootstrap", prod, "--target-bootstrap", dr,
         "--topics", "mm2-demo.*", "--groups", "mm2-demo.*", "--data-dir", str(d)])
    if not ctx.keep:
        ctx.stack.callback(dev_connect.stop_mm2, d)
    if not dev_connect.mm2_status(d).running:
        run.fail(f"MirrorMaker 2 did not start (see {log}): the rest of this part is skipped")
        return
    if not wait_until(ctx, "MM2 checkpoints of the group", lambda: _translated(dr, committed),
                      logs=(log,)):
        return
    status = ["mm2", "status", "--source-alias", "A", "-g", GROUP, "-b", dr,
              "--source-bootstrap", prod]
    run("What a failover would do: MM2's translation, checkpoint age, offset syncs, re-reads",
        status)
    reset = ["offsets", "reset", "-g", GROUP, "--from-mm2", "--source-alias", "A", "-b", dr]
    run("Plan the failover of the group on dr (dry run)", reset)
    run("Apply it (snapshot first, read back)", [*reset, "--execute"])
    same = True
    for n, off in committed.items():
        on_prod = _value_before(prod, TOPIC, n, off)
        on_dr = _value_before(dr, f"A.{TOPIC}", n, off)
        ctx.console.print(f"partition {n}: last record processed on prod {on_prod!r}; "
                          f"on dr the group resumes right after {on_dr!r}", highlight=False)
        same = same and on_prod is not None and on_prod == on_dr
    if same:
        ctx.console.print("[bold green]the group resumes on dr at the same record: nothing "
                          "skipped, nothing read twice")
    else:
        run.fail("the group does not resume on dr right after the record it processed on prod")
    run("The group on dr", ["groups", "describe", GROUP, "-b", dr])
    run("Undo the failover: roll back to the snapshot taken before",
        ["snapshots", "rollback", "latest", "--execute", "-b", dr])
    run("Stop MirrorMaker 2", ["dev-broker", "mm2", "stop", "--data-dir", str(d)])
