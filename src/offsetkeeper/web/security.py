"""Who may use the dashboard and how a state-changing request proves it came from our page.

- Authentication (when a token is configured): `Authorization: Bearer TOKEN`, a session cookie
  obtained by posting the token to /login, or HTTP basic (any user, the token as password) —
  basic only over TLS, because it sends the token with every request.
- CSRF: every POST carries `csrf` (form field) or `X-CSRF-Token` (header), an HMAC of the
  session id under a per-process secret; the session cookie is HttpOnly and SameSite=Strict.
- Loopback binding: Host must be a loopback name (stops DNS rebinding from a web page).
Tokens are compared in constant time and never logged, rendered or returned.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import secrets
import threading
import time

from offsetkeeper.errors import UsageError
from offsetkeeper.netaddr import parse_listen  # noqa: F401  (the one parser; web.server uses it here)

SESSION_COOKIE = "offsetkeeper_session"
CSRF_FIELD = "csrf"
SESSION_TTL_S = 12 * 3600


def is_loopback(host: str) -> bool:
    """True for loopback addresses and `localhost`."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_listen(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without authentication (it can move offsets)."""
    if not is_loopback(host) and not token:
        raise UsageError(f"--listen {host} is not a loopback address: configure a token first "
                         "(ui.token in the config file or $OFFSETKEEPER_UI_TOKEN)")


def same(a: str, b: str) -> bool:
    return hmac.compare_digest(a.encode(), b.encode())


class Sessions:
    """Session ids (random, server-side) and which of them have logged in."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)
        self._authed: dict[str, float] = {}
        self._lock = threading.Lock()

    @staticmethod
    def new_id() -> str:
        return secrets.token_urlsafe(24)

    def csrf_token(self, session_id: str) -> str:
        return hmac.new(self._secret, session_id.encode(), hashlib.sha256).hexdigest()

    def csrf_ok(self, session_id: str | None, token: str | None) -> bool:
        if not session_id or not token:
            return False
        return same(self.csrf_token(session_id), token)

    def login(self, session_id: str) -> None:
        with self._lock:
            self._authed[session_id] = time.monotonic() + SESSION_TTL_S

    def logout(self, session_id: str | None) -> None:
        with self._lock:
            self._authed.pop(session_id or "", None)

    def authed(self, session_id: str | None) -> bool:
        if not session_id:
            return False
        with self._lock:
            until = self._authed.get(session_id)
            if until is None:
                return False
            if until < time.monotonic():
                del self._authed[session_id]
                return False
            return True


def token_from_header(header: str | None, *, tls: bool) -> str | None:
    """The token an Authorization header carries: Bearer always, Basic (password) only over TLS."""
    if not header:
        return None
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic" and tls:
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return None
        return decoded.partition(":")[2]
    return None
