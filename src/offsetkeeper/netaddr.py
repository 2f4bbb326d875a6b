"""The one parser of listen addresses (`--listen` of the dashboard, the exporter and
`history record --exporter`)."""

from __future__ import annotations

from offsetkeeper.errors import UsageError


def parse_listen(text: str, *, option: str = "--listen", example: str = "127.0.0.1:8080") -> tuple[str, int]:
    """`HOST:PORT` (IPv6 as `[::1]:8080`; port 0 = any free port) -> (host, port).

    The host is never implied: listening on every interface is written out (`0.0.0.0:9308`).
    """
    host, sep, port = (text or "").strip().rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isascii() or not port.isdigit() or not int(port) < 65536:
        raise UsageError(f"{option} {text!r} is not HOST:PORT (expected e.g. {example})")
    return host, int(port)
