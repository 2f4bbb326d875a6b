"""Java-style client property files (``--command-config``) read into librdkafka properties."""

from __future__ import annotations

import re
from pathlib import Path

from offsetkeeper.config.textfile import expand_env, read_text_strict
from offsetkeeper.errors import ConfigError


def java_jaas_to_librdkafka(props: dict[str, str]) -> dict[str, str]:
    """Java clients put SASL credentials in sasl.jaas.config; librdkafka wants sasl.username/password."""
    jaas = props.pop("sasl.jaas.config", None)
    if jaas is None:
        return props
    user = re.search(r'\busername\s*=\s*"([^"]*)"', jaas)
    pw = re.search(r'\bpassword\s*=\s*"([^"]*)"', jaas)
    if not (user and pw):
        raise ConfigError("sasl.jaas.config: only PLAIN/SCRAM login modules with username and password are supported")
    props.setdefault("sasl.username", user.group(1))
    props.setdefault("sasl.password", pw.group(1))
    return props


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line) as java.util.Properties.load joins them: a line ending
    in an odd number of backslashes continues on the next, whose leading whitespace is dropped;
    comment lines (# or ! first) and blank lines are skipped and never continue."""
    out: list[tuple[int, str]] = []
    natural = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(natural):
        start, line = i + 1, natural[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        parts = []
        while True:
            trailing = len(line) - len(line.rstrip("\\"))
            if trailing % 2 == 1:
                parts.append(line[:-1])
                if i == len(natural):
                    break
                line = natural[i].lstrip(" \t\f")
                i += 1
                continue
            parts.append(line)
            break
        out.append((start, "".join(parts)))
    return out


def _unescape(text: str, *, where: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2:i + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise ConfigError(f"{where}: malformed \\uxxxx escape")
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def parse_properties(text: str, *, source: str = "properties") -> dict[str, str]:
    """Parse a Java properties file as java.util.Properties.load does: `key=value`, `key: value`
    and `key value`, continuation lines, `\\` escapes (`\\u00e9`, `\\=`, `\\:`), `#`/`!`
    comments; multi-line JAAS configs included. Values are never quoted in errors (they may be
    secrets): errors name the file, the line and the key."""
    props: dict[str, str] = {}
    for lineno, line in _logical_lines(text):
        i, n = 0, len(line)
        while i < n and line[i] not in "=: \t\f":
            i += 2 if line[i] == "\\" else 1
        raw_key = line[:min(i, n)]
        rest = line[min(i, n):].lstrip(" \t\f")
        has_sep = i < n
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        where = f"{source} line {lineno}"
        key = _unescape(raw_key, where=where)
        if not has_sep or not key:
            # Java would read a lone word as a key with an empty value; for client properties
            # that is always a mistake (often the second half of a broken secret), so refuse
            # it — and never echo the text.
            raise ConfigError(f"{where}: expected key=value (the line has no key and value; "
                              "its text is not shown in case it is a secret)")
        props[key] = _unescape(rest, where=f"{where} (value of {key})")
    return java_jaas_to_librdkafka(props)


def load_properties_file(path: str | Path) -> dict[str, str]:
    """Read a ``--command-config`` file (Kafka tool style) into librdkafka properties."""
    p = Path(path).expanduser()
    text = read_text_strict(p, kind="command config")
    return expand_env(parse_properties(text, source=str(p)), where=str(p))


def prop_str(v: str | int | bool) -> str:
    """A YAML scalar as a librdkafka/Spark property string (booleans lower-case)."""
    return str(v).lower() if isinstance(v, bool) else str(v)

