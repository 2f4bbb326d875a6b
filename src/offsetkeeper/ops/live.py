"""Live reset keys: the operator's signing key and the public line consumers trust."""

from __future__ import annotations

from pathlib import Path

from offsetkeeper.consumer.live_auth import generate_key, load_signer


def generate_live_key(path: Path) -> str:
    """Write a new Ed25519 signing key to `path` (mode 600, never over a file); its public line."""
    return generate_key(Path(path).expanduser())


def live_public_key(path: Path) -> tuple[str, str]:
    """(public key line, key id) of the signing key in `path`."""
    signer = load_signer(Path(path).expanduser())
    return signer.public, signer.id
