"""Keep secrets out of output: anything that looks like a credential is masked."""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "******"
_SECRET_KEY = re.compile(
    r"(password|secret|jaas|private|credential|token|\.key$|key\.pem|oauthbearer\.config)", re.I)


def is_secret_key(key: str) -> bool:
    """True for property names whose values must never be shown."""
    return bool(_SECRET_KEY.search(key))


def redact_properties(props: Mapping[str, str]) -> dict[str, str]:
    """A copy of `props` with secret values masked."""
    return {k: (MASK if is_secret_key(k) else v) for k, v in props.items()}


def redact_text(text: str, props: Mapping[str, str]) -> str:
    """Replace any secret value from `props` that appears inside `text`."""
    for key, value in props.items():
        if value and is_secret_key(key) and len(str(value)) >= 3:
            text = text.replace(str(value), MASK)
    return text


# -- URLs and connection strings --------------------------------------------------------------
# Every path that renders a store or destination (history stores, offset stores, snapshot
# stores, backup destinations, checkpoint locations; in messages, errors and dashboard pages)
# passes it through `mask_url`. Forms covered:
#   scheme://user:PASSWORD@host/...        (a raw '@' or ':' inside PASSWORD included)
#   scheme://host/db?password=PASSWORD&... (any parameter whose name looks secret)
#   host=h password=PASSWORD dbname=d      (libpq key=value, quoted values too)
# a password may hold spaces (malformed, but echoed by drivers): userinfo runs to an '@'
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^/\s\"'<>`@:]*:[^\n\"'<>`/]*@)?[^\s\"'<>`]*")
_PAIR = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)(?P<eq>\s*=\s*)"
                   r"(?P<val>'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|[^\s&#]*)")
_TOKEN = re.compile(rf"(?P<url>{_URL.pattern})|{_PAIR.pattern}")
_URL_SECRET_PARAM = re.compile(r"([?&;])([^=&#\s]+)=([^&#]*)")
_PLAIN_SECRET_KEYS = re.compile(r"^(pass|passwd|pwd|sslpassword|secret|secret_key|"
                                r"aws_secret_access_key|access_token|session_token)$", re.I)


def _secret_name(name: str) -> bool:
    return is_secret_key(name) or bool(_PLAIN_SECRET_KEYS.match(name))


def _split_userinfo(url: str) -> tuple[str, str, str] | None:
    """(prefix through 'user:', password, '@' and the rest) of a URL with a password, else None.
    The password runs to the LAST '@' of the URL (a raw '@' in a password stays hidden)."""
    scheme_end = url.find("://")
    if scheme_end < 0:
        return None
    start = scheme_end + 3
    at = url.rfind("@")
    if at < start:
        return None
    colon = url.find(":", start, at)
    if colon < 0 or "/" in url[start:colon]:
        return None
    return url[:colon + 1], url[colon + 1:at], url[at:]


def _mask_one_url(url: str) -> str:
    parts = _split_userinfo(url)
    if parts is not None:
        url = f"{parts[0]}{MASK}{parts[2]}"
    return _URL_SECRET_PARAM.sub(
        lambda m: f"{m[1]}{m[2]}={MASK}" if _secret_name(m[2]) else m[0], url)


def _mask_token(m: re.Match) -> str:
    if m["url"] is not None:
        return _mask_one_url(m["url"])
    if _secret_name(m["key"]) and m["val"]:
        return f"{m['key']}{m['eq']}{MASK}"
    return m[0]


def url_secrets(url: str) -> list[str]:
    """The secret values inside one URL or DSN (to remove them from text that quotes them
    in some other shape, e.g. a driver's error about a malformed URL)."""
    out = []
    parts = _split_userinfo(url)
    if parts is not None and parts[1]:
        out.append(parts[1])
    for m in _PAIR.finditer(url):
        if _secret_name(m["key"]) and m["val"]:
            out.append(m["val"].strip("'\""))
    return [s for s in out if len(s) >= 3]


def mask_url(text: object, *, known: str | None = None) -> str:
    """`text` (a URL, a DSN, or a message quoting them) with every password masked.

    The one masking function for stores and destinations: passwords in URL userinfo,
    secret-looking query parameters, libpq ``key=value`` pairs; with `known` (the URL the
    message is about), that URL's secrets wherever they appear, however mangled the quote."""
    text = "" if text is None else str(text)
    if known:
        for secret in sorted(url_secrets(str(known)), key=len, reverse=True):
            text = text.replace(secret, MASK)
            # a driver may quote the secret URL-decoded or encoded
            from urllib.parse import quote, unquote
            for variant in {unquote(secret), quote(secret, safe="")}:
                if len(variant) >= 3:
                    text = text.replace(variant, MASK)
    return _TOKEN.sub(_mask_token, text)


def looks_like_dsn(text: str) -> bool:
    """A libpq key=value connection string (``host=db password=x dbname=y``), not a path."""
    return "://" not in text and bool(re.match(r"\s*[A-Za-z_]+\s*=", text))


def raw_at_in_password(url: str) -> bool:
    """True when a URL's password holds a raw '@' (libpq would cut the password there and
    quote its tail as the host name in its error): such URLs are refused, asking for %40."""
    parts = _split_userinfo(url)
    return parts is not None and "@" in parts[1]
