"""Demo part: Kafka Connect connectors' offsets. A distributed worker beside 'prod' runs a
FileStream source (a file of orders into a topic) and a FileStream sink (that topic into a
file); offsetkeeper lists them, rewinds the source (it re-emits exactly the lines after the
target), moves the sink's group back (it re-delivers exactly those records), and undoes a
mistaken reset of a stopped connector before it runs again."""

from __future__ import annotations

import json
import shlex
import urllib.request
from pathlib import Path

from offsetkeeper.demo.context import DemoContext, wait_until
from offsetkeeper.devbroker import connect as dev_connect

TOPIC = "connect-orders"
SOURCE, SINK = "demo-file-source", "demo-file-sink"
LINES = [f"order-{i}" for i in range(1, 11)]


def _rest(ctx: DemoContext, url: str, method: str, path: str, body: dict | None = None):
    """One request to the worker's REST API, shown as the curl command a user would type."""
    data = None if body is None else json.dumps(body).encode()
    shown = ["curl", "-s", "-X", method, url + path]
    if body is not None:
        shown += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    ctx.console.print(f"[green]$ {shlex.join(shown)}", highlight=False)
    req = urllib.request.Request(url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:  # the demo's own local worker
        text = r.read().decode()
    return json.loads(text) if text.strip() else None


def _values(bootstrap: str, topic: str) -> list[str]:
    """Every record value of the topic's partition 0, read by a plain consumer."""
    from confluent_kafka import TopicPartition

    from offsetkeeper.kafka import clients

    c = clients.consumer({"bootstrap.servers": bootstrap, "group.id": "demo-reader",
                  "enable.auto.commit": False})
    try:
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        out: list[str] = []
        if hi > lo:
            c.assign([TopicPartition(topic, 0, lo)])
            empty = 0
            while len(out) < hi - lo and empty < 30:  # a broker gone quiet ends the read
                got = [m.value().decode() for m in c.consume(500, 1.0) if not m.error()]
                empty = 0 if got else empty + 1
                out += got
        return out
    finally:
        c.close()


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def part(ctx: DemoContext) -> None:
    run, prod = ctx.run, ctx.prod
    d = ctx.work / "connect"
    log = d / "connect.log"
    run("Start a Kafka Connect worker beside 'prod' (distributed mode, FileStream connectors)",
        ["dev-broker", "connect", "start", "-b", prod, "--data-dir", str(d)])
    if not ctx.keep:
        ctx.stack.callback(dev_connect.stop_worker, d)
    st = dev_connect.worker_status(d)
    if not st.running or not st.url:
        run.fail(f"the Connect worker did not start (see {log}): the rest of this part is "
                 "skipped")
        return
    url, conn = st.url, ["--connect-url", st.url, "-b", prod]
    from confluent_kafka.admin import NewTopic

    from offsetkeeper.kafka import clients

    admin = clients.admin_client({"bootstrap.servers": prod})  # held: its futures die with it
    for f in admin.create_topics([NewTopic(TOPIC, 1, -1)]).values():
        f.result(30)
    src, out = d / "orders.txt", d / "orders-copy.txt"
    src.write_text("".join(f"{x}\n" for x in LINES))
    ctx.console.rule("[bold]A source connector (file -> topic) and a sink connector (topic -> file)")
    _rest(ctx, url, "PUT", f"/connectors/{SOURCE}/config",
          {"connector.class": "FileStreamSource", "file": str(src), "topic": TOPIC,
           "tasks.max": "1"})
    _rest(ctx, url, "PUT", f"/connectors/{SINK}/config",
          {"connector.class": "FileStreamSink", "file": str(out), "topics": TOPIC,
           "tasks.max": "1"})

    def offsets(name: str) -> list:
        return (_rest_quiet(url, f"/connectors/{name}/offsets") or {}).get("offsets") or []

    def settled(n_records: int, sink_lines: int, position: int):
        got = (len(_values(prod, TOPIC)), len(_lines(out)), offsets(SOURCE), offsets(SINK))
        done = (got[0] == n_records and got[1] == sink_lines and got[2]
                and got[2][0]["offset"].get("position") == position and got[3]
                and got[3][0]["offset"].get("kafka_offset") == n_records)
        return True if done else repr(got)

    size = src.stat().st_size
    if not wait_until(ctx, "the connectors copying 10 orders", lambda: settled(10, 10, size),
                      logs=(log,)):
        return
    run("Connectors with their offsets (the source's byte position, the sink's group and lag)",
        ["connect", "list", *conn])

    after6 = len("".join(f"{x}\n" for x in LINES[:6]).encode())
    rewind = d / "rewind.json"
    rewind.write_text(json.dumps({"offsets": [{"partition": {"filename": str(src)},
                                               "offset": {"position": after6}}]}))
    ctx.console.print(f"[green]$ cat {rewind}[/]\n{rewind.read_text()}", highlight=False)
    run("Plan: rewind the source to the byte after order-6 (dry run)",
        ["connect", "reset", SOURCE, "--to-file", str(rewind), *conn])
    run("Apply it: stop, snapshot, change through the REST API, read back (also from the "
        "offsets topic), resume",
        ["connect", "reset", SOURCE, "--to-file", str(rewind), "--execute",
         "--offsets-topic", st.offsets_topic or "", *conn])
    if not wait_until(ctx, "the source re-emitting order-7..order-10",
                      lambda: settled(14, 14, size), logs=(log,)):
        return
    if _values(prod, TOPIC) == LINES + LINES[6:]:
        ctx.console.print("[bold green]the source re-emitted exactly order-7 .. order-10, once")
    else:
        run.fail(f"the topic holds {_values(prod, TOPIC)}, expected the 10 orders and then "
                 "order-7 .. order-10")

    ctx.console.rule("[bold]The sink: its consumer group moves back 4 records")
    ctx.console.print("A running sink's group has members, so a plan for it is refused until "
                      "it stops (--execute stops it itself); stop it to see the plan.")
    _rest(ctx, url, "PUT", f"/connectors/{SINK}/stop")
    if not wait_until(ctx, "the sink stopped and its group empty",
                      lambda: _stopped_and_left(url, prod, SINK), logs=(log,)):
        return
    run("Plan: move the sink's consumer group back by 4 records (dry run)",
        ["connect", "reset", SINK, "--shift-by", "-4", *conn])
    run("Apply it through the group executor (snapshot, read-back); the sink stays stopped",
        ["connect", "reset", SINK, "--shift-by", "-4", "--execute", *conn])
    _rest(ctx, url, "PUT", f"/connectors/{SINK}/resume")
    if not wait_until(ctx, "the sink re-delivering 4 records", lambda: len(_lines(out)) == 18
                      or len(_lines(out)), logs=(log,)):
        return
    if _lines(out) == LINES + LINES[6:] + LINES[6:]:
        ctx.console.print("[bold green]the sink wrote exactly the last 4 records again")
    else:
        run.fail(f"the sink's file holds {_lines(out)}, expected 4 records re-delivered")

    ctx.console.rule("[bold]Undo a mistaken reset before the connector runs again")
    _rest(ctx, url, "PUT", f"/connectors/{SOURCE}/stop")
    run("Mistake: remove the stopped source's offsets (it would re-emit every order)",
        ["connect", "reset", SOURCE, "--to-none", "--execute", *conn])
    # ids sort by time: the newest is the snapshot the mistaken reset took
    snaps = sorted((ctx.work / "snapshots" / "connect").glob("csnap-*.json"))
    if not snaps:
        run.fail(f"no connector snapshot in {ctx.work / 'snapshots' / 'connect'}")
        return
    run("Roll it back to the snapshot taken before (exactly; the connector stays stopped)",
        ["connect", "rollback", snaps[-1].stem, "--execute", *conn])
    with src.open("a") as f:
        f.write("order-11\n")
    _rest(ctx, url, "PUT", f"/connectors/{SOURCE}/resume")
    if not wait_until(ctx, "the resumed source emitting order-11",
                      lambda: len(_values(prod, TOPIC)) >= 15 or len(_values(prod, TOPIC)),
                      logs=(log,)):
        return
    nxt = _values(prod, TOPIC)[14]
    if nxt == "order-11":
        ctx.console.print("[bold green]resumed after the rollback, the source emitted order-11 "
                          "next: nothing re-emitted")
    else:
        run.fail(f"after the rollback the source emitted {nxt!r} next, expected 'order-11'")
    run("Where the connectors are now", ["connect", "list", *conn])


def _stopped_and_left(url: str, bootstrap: str, name: str):
    """True when the connector is STOPPED with no tasks and its group has no members left."""
    from offsetkeeper.kafka import clients

    st = _rest_quiet(url, f"/connectors/{name}/status") or {}
    if (st.get("connector") or {}).get("state") != "STOPPED" or st.get("tasks"):
        return repr(st.get("connector"))
    admin = clients.admin_client({"bootstrap.servers": bootstrap})
    try:
        [desc] = [f.result(10) for f in admin.describe_consumer_groups([f"connect-{name}"]).values()]
    except Exception as exc:  # the coordinator may be busy: ask again
        return repr(exc)
    return True if not desc.members else f"{len(desc.members)} members"


def _rest_quiet(url: str, path: str):
    try:
        with urllib.request.urlopen(url + path, timeout=10) as r:  # the demo's own worker
            return json.loads(r.read().decode() or "null")
    except (OSError, ValueError):
        return None
