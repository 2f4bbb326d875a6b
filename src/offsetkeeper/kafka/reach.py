"""A fast answer to "is anything listening there at all?" before librdkafka's own probe.

librdkafka retries a refused connection and a name that does not resolve until its timeout
(10 s and more) and then says only that it timed out. A TCP connect to each bootstrap address
answers those two cases in milliseconds: when EVERY bootstrap server either does not resolve or
refuses the connection, the cluster is certainly unreachable and the command fails at once,
saying which. Anything else (a connect that succeeds, times out, or fails otherwise — a
firewall, TLS, SASL) is left to the client's probe.
"""

from __future__ import annotations

import errno
import socket

CONNECT_TIMEOUT_S = 2.0


def split_servers(bootstrap_servers: str) -> list[tuple[str, int]] | None:
    """`host:port,[v6]:port,PROTO://host:port` -> [(host, port)]; None when any entry is not
    in that form (the client's probe then decides)."""
    out = []
    for entry in (s.strip() for s in bootstrap_servers.split(",")):
        if not entry:
            continue
        entry = entry.split("://", 1)[-1]
        if entry.startswith("["):
            host, sep, rest = entry[1:].partition("]")
            port = rest[1:] if rest.startswith(":") else ""
            if not sep:
                return None
        else:
            host, _, port = entry.rpartition(":")
        if not host or not port.isascii() or not port.isdigit() or not 0 < int(port) < 65536:
            return None
        out.append((host, int(port)))
    return out or None


def _server_problem(host: str, port: int, timeout: float) -> str | None:
    """'does not resolve' / 'connection refused' when certain; None when it may be reachable."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        if exc.errno in (socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)):
            return f"{host}:{port}: the name {host!r} does not resolve"
        return None  # a temporary resolver failure: not certain
    except (UnicodeError, OSError):
        return None
    for family, kind, proto, _, addr in infos:
        s = socket.socket(family, kind, proto)
        s.settimeout(timeout)
        try:
            s.connect(addr)
            return None  # something listens: let the client talk to it
        except ConnectionRefusedError:
            continue
        except OSError as exc:
            if exc.errno == errno.ECONNREFUSED:
                continue
            return None  # timeout, unreachable network, ...: not certain
        finally:
            s.close()
    return f"{host}:{port}: connection refused"


def certainly_unreachable(bootstrap_servers: str, *, timeout: float = CONNECT_TIMEOUT_S) -> str | None:
    """Why no bootstrap server can be reached, when that is certain (every one refuses the
    connection or does not resolve); None otherwise."""
    servers = split_servers(bootstrap_servers)
    if not servers:
        return None
    problems = []
    for host, port in servers:
        problem = _server_problem(host, port, timeout)
        if problem is None:
            return None
        problems.append(problem)
    return "; ".join(problems)
