"""Who may reset a running group: Ed25519 signatures on live reset requests.

Anyone who can write to the control topic could otherwise move a running consumer anywhere.
Operators hold a private key (`offsetkeeper live-key generate`); each application's consumers
are configured with the public keys they trust (`OffsetConsumer(live_reset_keys=[...])`), so a
key trusted by a group's consumers is what "allowed to reset that group" means. Asymmetric
keys, not a shared secret: a compromised application host can read its trusted keys but cannot
forge requests for its own group or any other. ACLs on the topic (docs/consumer.md) limit who
can write at all; they cannot tell an operator from an application, signatures can.

Public keys travel as one line: ``ed25519:<base64 of the 32 raw bytes>``. A request names the
key that signed it by id (first 16 hex digits of the key's SHA-256), so keys can be rotated by
trusting old and new for a while.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from offsetkeeper.errors import OffsetkeeperError, UsageError

PUBLIC_PREFIX = "ed25519:"
_DOMAIN = b"offsetkeeper-live-reset-v3\n"  # signatures for this purpose and format only
_MAX_KEY_FILE = 16 * 1024


class LiveKeyError(UsageError):
    """A signing or trusted key that cannot be used (bad input: exit 2)."""


def _ed25519():
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return ed25519


def key_id(raw_public: bytes) -> str:
    """The id a request names its key by."""
    return hashlib.sha256(raw_public).hexdigest()[:16]


def canonical(payload: dict) -> bytes:
    """The signed bytes: the payload re-encoded canonically (sorted keys, no spaces, ASCII), so
    the signature does not depend on how a producer formatted the JSON."""
    return _DOMAIN + json.dumps(payload, sort_keys=True, separators=(",", ":"),
                                ensure_ascii=True).encode()


@dataclass(frozen=True)
class Signer:
    """An operator's private key."""

    _key: object
    public: str
    id: str

    def sign(self, payload: dict) -> str:
        """Base64 signature of `payload`'s canonical bytes."""
        return base64.b64encode(self._key.sign(canonical(payload))).decode()


@dataclass(frozen=True)
class TrustedKeys:
    """The public keys a group's consumers accept requests from."""

    keys: dict[str, object]  # key id -> Ed25519PublicKey

    def verify(self, payload: dict, kid: object, sig: object) -> str | None:
        """None when `sig` is a valid signature of `payload` by a trusted key, else the reason."""
        from cryptography.exceptions import InvalidSignature

        if not isinstance(kid, str) or kid not in self.keys:
            return "signed by an untrusted key" if isinstance(kid, str) else "not signed"
        if not isinstance(sig, str) or len(sig) > 200:
            return "malformed signature"
        try:
            self.keys[kid].verify(base64.b64decode(sig, validate=True), canonical(payload))
        except (InvalidSignature, binascii.Error, ValueError):
            return "bad signature"
        return None


def parse_public_key(text: object) -> tuple[str, object]:
    """(key id, key) of a public key line ``ed25519:BASE64``."""
    if not isinstance(text, str) or not text.strip().startswith(PUBLIC_PREFIX):
        raise LiveKeyError(f"live reset key {str(text)[:80]!r} is invalid; expected "
                           f"'{PUBLIC_PREFIX}<base64>' as printed by `offsetkeeper live-key public`")
    body = text.strip()[len(PUBLIC_PREFIX):]
    try:
        raw = base64.b64decode(body, validate=True)
        if len(raw) != 32:
            raise ValueError
        key = _ed25519().Ed25519PublicKey.from_public_bytes(raw)
    except (binascii.Error, ValueError):
        raise LiveKeyError(f"live reset key {text.strip()[:80]!r} is invalid; expected 32 bytes "
                           "of base64 after 'ed25519:'") from None
    return key_id(raw), key


def trusted_keys(lines) -> TrustedKeys:
    """The keys of `lines` (strings as printed by `live-key public`)."""
    if isinstance(lines, str):
        lines = [lines]
    keys = dict(parse_public_key(line) for line in lines or ())
    if not keys:
        raise LiveKeyError("live_reset_keys is empty; give the public key(s) of the operators "
                           "allowed to reset this group (offsetkeeper live-key public FILE)")
    return TrustedKeys(keys)


def _public_line(key) -> str:
    from cryptography.hazmat.primitives import serialization

    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return PUBLIC_PREFIX + base64.b64encode(raw).decode()


def load_signer(path: str | os.PathLike) -> Signer:
    """The private key in `path` (PEM, PKCS#8, unencrypted, readable by its owner only — like
    ssh, a key others can read is refused)."""
    from cryptography.hazmat.primitives import serialization

    p = Path(path)
    try:
        st = p.stat()
        if not stat.S_ISREG(st.st_mode):
            raise LiveKeyError(f"signing key {str(p)!r} is not a file")
        if st.st_size > _MAX_KEY_FILE:
            raise LiveKeyError(f"signing key {str(p)!r} is {st.st_size} bytes; expected a PEM "
                               "private key (under 16 KiB)")
        if st.st_mode & 0o077:
            raise LiveKeyError(f"signing key {str(p)!r} is readable by others (mode "
                               f"{stat.S_IMODE(st.st_mode):o}); chmod 600 it")
        data = p.read_bytes()
    except OSError as exc:
        raise LiveKeyError(f"cannot read signing key {str(p)!r}: {exc.strerror}") from None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        raise LiveKeyError(f"signing key {str(p)!r} is not an unencrypted PEM private key; "
                           "make one with `offsetkeeper live-key generate`") from None
    if not isinstance(key, _ed25519().Ed25519PrivateKey):
        raise LiveKeyError(f"signing key {str(p)!r} is not an Ed25519 key")
    line = _public_line(key)
    return Signer(key, line, parse_public_key(line)[0])


def generate_key(path: str | os.PathLike) -> str:
    """Write a new private key to `path` (mode 600, atomically, never over an existing file);
    returns its public key line."""
    from cryptography.hazmat.primitives import serialization

    p = Path(path)
    if p.exists():
        raise LiveKeyError(f"{str(p)!r} exists; refusing to overwrite a key (choose another path)")
    key = _ed25519().Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, p)  # fails if `path` appeared meanwhile: never replaces a key
    except FileExistsError:
        raise LiveKeyError(f"{str(p)!r} exists; refusing to overwrite a key") from None
    except OSError as exc:
        raise OffsetkeeperError(f"cannot write {str(p)!r}: {exc.strerror}") from None
    finally:
        tmp.unlink(missing_ok=True)
    return _public_line(key)
