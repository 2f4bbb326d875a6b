"""Commit metadata read from confluent-kafka is untrusted (issue 31 item 2)."""

from __future__ import annotations

import pytest

from offsetkeeper.kafka.admin import commit_metadata


class _Binding:
    """A partition as confluent-kafka 2.16.1 hands it over: its `metadata` getter decodes a C
    string that may run past the metadata's end (the bytes after it are whatever follows)."""

    def __init__(self, raw: bytes | None) -> None:
        self.raw = raw

    @property
    def metadata(self):
        return None if self.raw is None else self.raw.decode("utf-8")


@pytest.mark.parametrize(("raw", "want"), [
    (None, ""),
    (b"", ""),
    (b"AgAAAZPi0fQ=", "AgAAAZPi0fQ="),
    (b"line\nbreak\x1b[31m", "line\nbreak\x1b[31m"),  # kept exactly; rendering escapes it
    (b"AgAAAZPi0fQ=\xd0\x8f\xff", None),   # bytes past the end: not the metadata
    (b"\xff", None),
])
def test_commit_metadata_never_raises_and_never_invents(raw, want):
    """Invariant: reading a partition's commit metadata never raises (a Kafka Streams group
    crashed describe and reset at random with UnicodeDecodeError); metadata the client cannot
    read is None (unreadable), never a guess."""
    assert commit_metadata(_Binding(raw)) == want
