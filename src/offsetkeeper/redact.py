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
