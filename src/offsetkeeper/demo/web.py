"""The dashboard parts of `offsetkeeper demo`: start `offsetkeeper ui`, read the groups page and
a reset plan preview over HTTP (what a browser gets, as JSON), print them, stop the server; after
the streaming part, the checkpoints page on the streaming query's checkpoint."""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
import time

from rich.markup import escape
from rich.table import Table

from offsetkeeper.tables import print_table


def _fail(ctx, message: str) -> None:
    ctx.run.failures.append(f"dashboard: {message}")
    ctx.console.print(f"[bold red]{escape(message)}")


@contextlib.contextmanager
def _dashboard(ctx, args: list[str]):
    """`offsetkeeper ui ARGS` on a free loopback port; yields an HTTP client (None when it did
    not start), stops the server after."""
    import httpx

    from offsetkeeper.devbroker import free_port

    port = free_port()
    args = ["ui", "--listen", f"127.0.0.1:{port}", *args]
    ctx.console.print(f"[green]$ offsetkeeper {escape(' '.join(args))}", highlight=False)
    proc = subprocess.Popen([sys.executable, "-m", "offsetkeeper.cli.main", *args], env=ctx.env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if http.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if proc.poll() is not None or time.monotonic() > deadline:
                    _fail(ctx, f"the dashboard did not start: {(proc.stderr.read() or '')[-300:]}")
                    yield None
                    return
                time.sleep(0.2)
            ctx.console.print(f"dashboard up at http://127.0.0.1:{port}/")
            yield http
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        ctx.console.print("dashboard stopped")


def part(ctx) -> None:
    args = ["-b", ctx.prod]
    history = ctx.work / "history.db"
    if history.exists():  # recorded by the history part of the demo
        args += ["--history-store", str(history)]
    ctx.console.rule("[bold]Start the dashboard (loopback only; no token needed there)")
    with _dashboard(ctx, args) as http:
        if http is not None:
            _groups(ctx, http)
            _preview(ctx, http)


def checkpoints_part(ctx) -> None:
    """After the streaming part: the dashboard's checkpoints page on the demo query's
    checkpoint (and one that does not exist, shown as an error row)."""
    ck = ctx.work / "streaming" / "checkpoint"
    if not ck.exists():
        ctx.console.print("no streaming checkpoint from the streaming part: skipped")
        return
    args = ["-b", ctx.prod, "--checkpoint", f"orders-spark={ck}",
            "--checkpoint", f"typo={ctx.work / 'streaming' / 'no-such-checkpoint'}"]
    with _dashboard(ctx, args) as http:
        if http is None:
            return
        ctx.console.rule("[bold]GET /checkpoints (the streaming checkpoints page, as JSON)")
        r = http.get("/checkpoints", params={"format": "json"})
        if r.status_code != 200:
            _fail(ctx, f"checkpoints page answered {r.status_code}")
            return
        t = _table("checkpoint", "status", "latest batch", "committed", "total lag",
                  "lag per topic", "error")
        for c in r.json()["checkpoints"]:
            t.add_row(escape(c["name"]), c["status"], _dash(c["latest_batch"]),
                      _dash(c["last_committed_batch"]),
                      "-" if c["total_lag"] is None else str(c["total_lag"]),
                      escape(", ".join(f"{x['topic']}: {x['lag']}" for x in c["topics"])),
                      escape(c["error"] or ""))
        print_table(t, ctx.console)
        rows = r.json()["checkpoints"]
        if not rows or rows[0]["status"] == "ERROR" or rows[-1]["status"] != "ERROR":
            _fail(ctx, "the demo checkpoint should read fine and the missing one be an error row")
        d = http.get("/checkpoints/0", params={"format": "json"}).json()["checkpoint"]
        t = _table("topic", "partition", "checkpoint offset", "log start", "log end", "lag",
                  title=f"GET /checkpoints/0: {escape(d['position_from'])}")
        for p in d["partitions"]:
            t.add_row(escape(p["topic"]), str(p["partition"]), _dash(p["offset"]),
                      _dash(p["log_start"]), _dash(p["log_end"]), _dash(p["lag"]))
        print_table(t, ctx.console)


def _table(*headers: str, title: str | None = None) -> Table:
    """A table whose cells never wrap (printed at its natural width by `print_table`)."""
    t = Table(title=title)
    for h in headers:
        t.add_column(h, no_wrap=True)
    return t


def _dash(v) -> str:
    return "-" if v is None else str(v)


def _groups(ctx, http) -> None:
    ctx.console.rule("[bold]GET /c/default/groups (the groups page, as JSON)")
    r = http.get("/c/default/groups", params={"format": "json"})
    if r.status_code != 200:
        _fail(ctx, f"groups page answered {r.status_code}")
        return
    t = _table("group", "state", "members", "lag", "time lag s", "status", "reason")
    for g in r.json()["groups"]:
        t.add_row(escape(g["group"]), g["state"], str(g["members"]),
                  "-" if g["lag"] is None else str(g["lag"]),
                  "-" if g["time_lag_s"] is None else f"{g['time_lag_s']:.0f}",
                  g["status"] or "-", escape(g["reason"] or ""))
    print_table(t, ctx.console)
    html = http.get("/c/default/groups").text
    rows, sparks = html.count("<tr data-name="), html.count('<svg class="spark"')
    ctx.console.print(f"the HTML page: {rows} rows, {sparks} sparklines")


def _preview(ctx, http) -> None:
    ctx.console.rule("[bold]POST /c/default/reset/preview: rewind payments by 10 (plan only)")
    form = http.get("/c/default/reset", params={"g": "payments"}).text
    m = re.search(r'name="csrf-token" content="([^"]+)"', form)
    if not m:
        _fail(ctx, "the wizard page has no CSRF token")
        return
    data = {"groups": "payments", "topics": ctx.topic, "kind": "shift-by", "value_shift-by": "-10"}
    refused = http.post("/c/default/reset/preview", data=data,
                        headers={"accept": "application/json"})
    ctx.console.print(f"without the CSRF token: HTTP {refused.status_code} "
                      f"{escape(refused.text)}", highlight=False)
    if refused.status_code != 403:
        _fail(ctx, f"a POST without CSRF token got {refused.status_code}, expected 403")
    r = http.post("/c/default/reset/preview", data={**data, "csrf": m.group(1)},
                  headers={"accept": "application/json"})
    if r.status_code != 200:
        _fail(ctx, f"plan preview answered {r.status_code}: {r.text[:200]}")
        return
    body = r.json()
    plan = body["plan"]
    t = _table("group", "topic", "partition", "current", "target", "note",
              title=f"plan {plan['target']} — nothing changed; the page's button executes it")
    for g in plan["groups"]:
        if g["refused"]:
            t.add_row(escape(g["group"]), "", "", "", "",
                      f"REFUSED: {escape(g['refused']['message'])}")
        for p in g["partitions"]:
            t.add_row(escape(p["group"]), escape(p["topic"]), str(p["partition"]),
                      str(p["current"]), str(p["target"]), escape(p["note"] or ""))
    print_table(t, ctx.console)
    for n in body["notes"]:
        ctx.console.print(f"note: {escape(n)}", highlight=False)
