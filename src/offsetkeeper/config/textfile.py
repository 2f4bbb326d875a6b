"""Configuration text files read strictly (bounded size, strict UTF-8, one-line ConfigErrors
naming the file and line) and ``${VAR}`` expansion from the environment: what property files
and YAML files share, without YAML or pydantic (which `offsetkeeper.config.loading` adds)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from offsetkeeper.errors import ConfigError

MAX_CONFIG_BYTES = 4 * 1024 * 1024   # a YAML or properties file

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(value: Any, *, where: str = "config") -> Any:
    """Expand ``${VAR}`` / ``${VAR:-default}`` in every string inside `value`."""
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            name, default = m.group(1), m.group(2)
            if name in os.environ:
                return os.environ[name]
            if default is not None:
                return default
            raise ConfigError(f"{where}: environment variable {name} is not set (used as ${{{name}}})")

        return _ENV_REF.sub(sub, value)
    if isinstance(value, dict):
        return {k: expand_env(v, where=where) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, where=where) for v in value]
    return value


def read_text_strict(path: Path, *, kind: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """A file's text, decoded as UTF-8 strictly; ConfigError naming the file and line. Files
    larger than `limit` bytes are refused before they are read further."""
    try:
        with path.open("rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise ConfigError(f"{kind} {path} cannot be read: {exc.strerror or exc}") from exc
    if len(data) > limit:
        raise ConfigError(f"{kind} {path} is larger than {limit // (1024 * 1024)} MiB (the limit "
                          "of a configuration file)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{kind} {path} line {line}: not UTF-8 text "
                          f"(byte 0x{data[exc.start]:02x})") from None
