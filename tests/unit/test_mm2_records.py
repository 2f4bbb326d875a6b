"""MirrorMaker 2's checkpoint and offset-sync records (connect-mirror's Checkpoint.java /
OffsetSync.java format), decoded as untrusted bytes."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.mm2.records import Checkpoint, decode_checkpoint, decode_offset_sync
from offsetkeeper.mm2.target import source_topic, translations
from offsetkeeper.models import TopicPartition


def _s(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def ck_key(group="g", topic="A.orders", partition=0) -> bytes:
    return _s(group) + _s(topic) + struct.pack(">i", partition)


def ck_value(up=20, down=18, meta="", version=0) -> bytes:
    return struct.pack(">hqq", version, up, down) + _s(meta)


def test_a_checkpoint_written_by_mm2_decodes():
    # bytes as connect-mirror 4.3.1 wrote them in a real run (group mm2-pay, partition 1)
    key = b"\x00\x07mm2-pay\x00\x0cA.mm2-orders\x00\x00\x00\x01"
    value = (b"\x00\x00" + (20).to_bytes(8, "big") + (1).to_bytes(8, "big") + b"\x00\x00")
    c = decode_checkpoint(key, value, 5)
    assert c == Checkpoint("mm2-pay", "A.mm2-orders", 1, 20, 1, "", 5)


@pytest.mark.parametrize("key, value", [
    (ck_key(), ck_value(version=1)),              # a newer format: not trusted
    (ck_key() + b"x", ck_value()),                 # trailing bytes
    (ck_key()[:-1], ck_value()),                   # short
    (ck_key(), ck_value()[:-1]),
    (ck_key(partition=-1), ck_value()),
    (ck_key(), ck_value(up=-5)),
    (ck_key(group=""), ck_value()),
    (b"\xff\xff" + ck_key()[2:], ck_value()),      # negative length
    (b"\x00\x02\xff\xfe" + ck_key()[3:], ck_value()),  # bad UTF-8
    (None, ck_value()), (ck_key(), None),
    (ck_key(), ck_value() + b"x" * 70000),         # over the size bound
])
def test_malformed_checkpoints_decode_to_none(key, value):
    assert decode_checkpoint(key, value) is None


@given(st.binary(max_size=64), st.binary(max_size=64))
def test_any_bytes_decode_or_are_refused_never_raise(key, value):
    decode_checkpoint(key, value)
    decode_offset_sync(key, value)


def test_offset_sync_decodes_and_refuses_trailing_bytes():
    key = _s("orders") + struct.pack(">i", 2)
    value = struct.pack(">qq", 100, 97)
    s = decode_offset_sync(key, value)
    assert (s.topic, s.partition, s.upstream, s.downstream) == ("orders", 2, 100, 97)
    assert decode_offset_sync(key, value + b"\0") is None


def test_translations_keep_the_target_topic_and_filter_groups():
    latest = {("g", "A.orders", 0): Checkpoint("g", "A.orders", 0, 20, 18, ""),
              ("h", "A.orders", 0): Checkpoint("h", "A.orders", 0, 5, 5, "")}
    assert translations(latest, "A", {"g"}) == {"g": {TopicPartition("A.orders", 0): 18}}
    assert source_topic("A", "A.orders") == "orders"
    assert source_topic("A", "orders") == "orders"  # IdentityReplicationPolicy


class _Topics:
    """The one admin call the syncs-topic lookup makes: the cluster's topic names."""

    def __init__(self, *names: str) -> None:
        self.names = names

    def topic_partitions(self):
        return {n: [0] for n in self.names}


SYNCS_B = "mm2-offset-syncs.B.internal"


@pytest.mark.parametrize(("source", "target", "alias", "found", "why"), [
    ((SYNCS_B, "orders"), (), None, ("source", SYNCS_B), None),
    ((), ("A.orders", SYNCS_B), None, ("target", SYNCS_B), None),  # location=target
    ((SYNCS_B, "mm2-offset-syncs.C.internal"), (), None, None, "name one with --target-alias"),
    ((SYNCS_B, "mm2-offset-syncs.C.internal"), (), "C",
     ("source", "mm2-offset-syncs.C.internal"), None),
    ((SYNCS_B,), (), "C", None, "no topic mm2-offset-syncs.C.internal"),
    (("orders",), ("A.orders",), None, None, "no mm2-offset-syncs.*.internal topic"),
])
def test_the_offset_syncs_topic_is_found_by_name_or_the_reason_said(source, target, alias,
                                                                    found, why):
    """The syncs topic is looked for on the source, then the target; several MM2 targets need
    --target-alias; a missing one is a reason, never a guess."""
    from offsetkeeper.ops.mm2 import _find_syncs_topic

    admins = {"source": _Topics(*source), "target": _Topics(*target)}
    topic, where = _find_syncs_topic(admins["source"], admins["target"], alias)
    if found is None:
        assert topic is None and why in where
    else:
        assert (topic, where) == (found[1], admins[found[0]])
