"""The Kafka Connect worker's REST API: the narrow seam every connector call goes through.

Stdlib only (urllib): a URL (http or https), optional basic auth (in the URL's userinfo or given
apart), optional CA file / no verification for TLS. The URL is rendered only through `mask_url`,
so a password in it never reaches output, as for store URLs. HTTP errors become
`ConnectError` with the status and Connect's own message (its JSON ``{"error_code",
"message"}``), bounded in size.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from offsetkeeper.errors import OffsetkeeperError, UsageError
from offsetkeeper.redact import mask_url

MAX_BODY = 16 * 1024 * 1024  # a worker's answer larger than this is refused, not parsed


class ConnectError(OffsetkeeperError):
    """The Connect worker refused or failed a request (status: the HTTP status, 0 = no answer)."""

    def __init__(self, message: str, *, status: int = 0, connector: str | None = None):
        super().__init__(message)
        self.status = status
        self.connector = connector


@dataclass(frozen=True)
class ConnectTarget:
    """Where a worker's REST API is and how to authenticate to it."""

    url: str
    username: str | None = None
    password: str | None = None
    ca_file: str | None = None
    verify: bool = True

    @property
    def display_url(self) -> str:
        return mask_url(self.url)


def parse_target(url: str, *, username: str | None = None, password: str | None = None,
                 ca_file: str | None = None, verify: bool = True) -> ConnectTarget:
    """Validate a worker URL (bad input: UsageError naming the masked value)."""
    parsed = urllib.parse.urlsplit(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise UsageError(f"--connect-url '{mask_url(url)}' is not a Connect REST URL "
                         "(expected http[s]://host:port)")
    if parsed.username is not None:
        username = username or urllib.parse.unquote(parsed.username)
        password = password or urllib.parse.unquote(parsed.password or "")
        netloc = parsed.hostname + (f":{parsed.port}" if parsed.port else "")
        url = urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path, "", ""))
    return ConnectTarget(url.rstrip("/"), username, password, ca_file, verify)


class ConnectClient:
    """Plain calls to one worker: JSON in, JSON out, `ConnectError` on failure."""

    def __init__(self, target: ConnectTarget, *, timeout: float = 30.0) -> None:
        self.target = target
        self.timeout = timeout
        self._ctx: ssl.SSLContext | None = None
        if target.url.startswith("https:"):
            self._ctx = ssl.create_default_context(cafile=target.ca_file)
            if not target.verify:
                self._ctx.check_hostname = False
                self._ctx.verify_mode = ssl.CERT_NONE

    def _masked(self, text: object) -> str:
        out = mask_url(text, known=self.target.url)
        if self.target.password and len(self.target.password) >= 3:
            out = out.replace(self.target.password, "******")
        return out

    def request(self, method: str, path: str, body: object = None, *,
                connector: str | None = None) -> object:
        """Send one request; the decoded JSON answer (None for an empty body)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.target.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.target.username is not None:
            token = f"{self.target.username}:{self.target.password or ''}".encode()
            req.add_header("Authorization", "Basic " + base64.b64encode(token).decode())
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self._ctx) as r:
                raw = r.read(MAX_BODY + 1)
        except urllib.error.HTTPError as exc:
            message = _error_message(exc)
            raise ConnectError(self._masked(
                f"Connect worker {self.target.display_url} answered {exc.code} to {method} "
                f"{path}: {message}"), status=exc.code, connector=connector) from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConnectError(self._masked(
                f"Connect worker {self.target.display_url} did not answer {method} {path}: "
                f"{reason}"), connector=connector) from None
        if len(raw) > MAX_BODY:
            raise ConnectError(f"Connect worker {self.target.display_url} sent more than "
                               f"{MAX_BODY} bytes for {path}", connector=connector)
        if not raw.strip():
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise ConnectError(f"Connect worker {self.target.display_url} sent no JSON for "
                               f"{path}", connector=connector) from None

    # -- the calls offsetkeeper makes ----------------------------------------------------------
    def connectors(self) -> list[str]:
        names = self.request("GET", "/connectors")
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConnectError(f"Connect worker {self.target.display_url} listed connectors "
                               "in an unexpected shape")
        return names

    def info(self, name: str) -> dict:
        return _obj(self.request("GET", f"/connectors/{_q(name)}", connector=name), name)

    def status(self, name: str) -> dict:
        return _obj(self.request("GET", f"/connectors/{_q(name)}/status", connector=name), name)

    def offsets(self, name: str) -> object:
        return self.request("GET", f"/connectors/{_q(name)}/offsets", connector=name)

    def stop(self, name: str) -> None:
        self.request("PUT", f"/connectors/{_q(name)}/stop", connector=name)

    def resume(self, name: str) -> None:
        self.request("PUT", f"/connectors/{_q(name)}/resume", connector=name)

    def alter_offsets(self, name: str, offsets: list[dict]) -> object:
        return self.request("PATCH", f"/connectors/{_q(name)}/offsets", {"offsets": offsets},
                            connector=name)

    def reset_offsets(self, name: str) -> object:
        return self.request("DELETE", f"/connectors/{_q(name)}/offsets", connector=name)

    def create(self, name: str, config: dict) -> dict:
        return _obj(self.request("POST", "/connectors", {"name": name, "config": config},
                                 connector=name), name)


def _q(name: str) -> str:
    return urllib.parse.quote(name, safe="")


def _obj(value: object, name: str) -> dict:
    if not isinstance(value, dict):
        raise ConnectError(f"Connect answered for connector {name!r} in an unexpected shape",
                           connector=name)
    return value


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read(64 * 1024)
        body = json.loads(raw)
        msg = body.get("message") if isinstance(body, dict) else None
        if isinstance(msg, str) and msg:
            return msg[:2000]
        return raw.decode("utf-8", "replace")[:500] or exc.reason
    except (ValueError, OSError, AttributeError):
        return str(exc.reason)
