"""A development broker (Apache Kafka, one node) behind a TCP proxy that adds network latency (this kernel has no netem).

    .venv/bin/python bench/latency_proxy.py --rtt-ms 3 [--port 39092] -- CMD ...

Kafka clients connect to the address a broker advertises in its metadata, so a proxy on another
port would be bypassed after the first request. Instead the broker runs in its own network
namespace (``ip netns``, needs root) on ``127.0.0.1:PORT`` — the address it advertises — and
this proxy listens on ``127.0.0.1:PORT`` of the normal namespace: every connection a client
makes, bootstrap or advertised, goes through the proxy, which opens its upstream socket inside
the broker's namespace (a thread that has entered it with setns) and delays every chunk of bytes
by half the round trip in each direction, keeping their order.

Starts the broker, runs CMD with ``OK_LATENCY_BOOTSTRAP=127.0.0.1:PORT`` in its environment
(e.g. ``bench/bulk_reset.py --bootstrap-server 127.0.0.1:PORT``), then stops everything.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from offsetkeeper import devbroker

CLONE_NEWNET = 0x40000000


def _enter_netns(name: str) -> None:
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if ctypes.CDLL("libc.so.6", use_errno=True).setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {name} failed")
    finally:
        os.close(fd)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy bytes, each chunk sent `delay` seconds after it arrived (order kept)."""
    q: asyncio.Queue = asyncio.Queue()

    async def send() -> None:
        while True:
            due, data = await q.get()
            if data is None:
                break
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            writer.write(data)
            await writer.drain()
        with contextlib.suppress(Exception):
            writer.close()

    sender = asyncio.create_task(send())
    try:
        while data := await reader.read(1 << 16):
            q.put_nowait((time.monotonic() + delay, data))
    except (ConnectionError, OSError):
        pass
    q.put_nowait((0, None))
    await sender


async def serve(port: int, netns: str, one_way: float, ready: threading.Event) -> None:
    ns_thread = ThreadPoolExecutor(1, initializer=_enter_netns, initargs=(netns,))

    def upstream() -> socket.socket:
        s = socket.create_connection(("127.0.0.1", port))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.setblocking(False)
        return s

    async def handle(cr: asyncio.StreamReader, cw: asyncio.StreamWriter) -> None:
        cw.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock = await asyncio.get_running_loop().run_in_executor(ns_thread, upstream)
        except OSError:
            cw.close()
            return
        ur, uw = await asyncio.open_connection(sock=sock)
        await asyncio.gather(_pipe(cr, uw, one_way), _pipe(ur, cw, one_way))

    server = await asyncio.start_server(handle, "127.0.0.1", port)
    ready.set()
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rtt-ms", type=float, default=3.0)
    ap.add_argument("--port", type=int, default=39092)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd

    netns = f"okbench-{uuid.uuid4().hex[:6]}"
    data = Path(tempfile.mkdtemp(prefix="oklat-"))
    subprocess.run(["ip", "netns", "add", netns], check=True)
    broker = None
    try:
        subprocess.run(["ip", "netns", "exec", netns, "ip", "link", "set", "lo", "up"], check=True)
        ready = threading.Event()
        t = threading.Thread(target=lambda: asyncio.run(serve(args.port, netns, args.rtt_ms / 2000, ready)),
                             daemon=True)
        t.start()
        ready.wait(10)
        # the Kafka node runs inside the namespace; dev-broker waits until it answers through
        # the proxy (every request it and the command make pays the injected latency)
        broker = devbroker.start(args.port, data, launcher=("ip", "netns", "exec", netns))
        env = {**os.environ, "OK_LATENCY_BOOTSTRAP": f"127.0.0.1:{args.port}"}
        rc = subprocess.run(cmd, env=env).returncode if cmd else 0
    finally:
        if broker is not None:
            devbroker.stop(data)
        subprocess.run(["ip", "netns", "del", netns], check=False)
    sys.exit(rc)


if __name__ == "__main__":
    main()
