"""The live reset control topic's records: hostile input is an answer, never an exception, and
only a request signed by a trusted key is believed (issue 22, items 1 and 2)."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.consumer.live import (
    Ignored,
    LiveAck,
    LiveResetRequest,
    SignedRequest,
    decode_record,
    encode_ack,
    encode_request,
)
from offsetkeeper.consumer.live_auth import (
    LiveKeyError,
    generate_key,
    load_signer,
    parse_public_key,
    trusted_keys,
)
from offsetkeeper.models import TopicPartition

NOW = 1_795_000_000_000


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    generate_key(d / "op.key")
    generate_key(d / "other.key")
    return load_signer(d / "op.key"), load_signer(d / "other.key")


def _req(group="payments", offset=5, **kw) -> LiveResetRequest:
    args = {"id": "lr-0123456789ab", "group": group,
            "offsets": {TopicPartition("orders", 0): offset}, "created_at_ms": NOW,
            "expires_at_ms": NOW + 60_000, "snapshot_id": None, "cluster_id": "cluster-A", **kw}
    return LiveResetRequest(**args)


def _value(req, signer, **override) -> bytes:
    v = json.loads(encode_request(req, signer)[1])
    v.update(override)
    return json.dumps(v).encode()


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=30)


@given(st.binary(max_size=300) | st.none(), st.binary(max_size=300) | st.none())
def test_decode_never_raises_on_any_bytes(key, value):
    """Invariant: any bytes on the control topic decode to a record or an Ignored reason."""
    decode_record(key, value)


@given(json_values, json_values)
def test_decode_never_raises_on_any_json(k, v):
    """Invariant: any JSON key/value (wrong types, floats, nesting) decodes without raising."""
    rec = decode_record(json.dumps(k).encode(), json.dumps(v).encode())
    assert rec is not None


@given(st.fixed_dictionaries({
    "id": st.just("lr-0123456789ab"), "group": st.just("g"), "v": st.just(3), "type": st.just("reset"),
    "cluster_id": st.just("c"),
    "created_at_ms": st.integers() | st.floats(), "expires_at_ms": st.integers() | st.floats(),
    "offsets": st.lists(st.fixed_dictionaries({
        "topic": st.text(max_size=5), "partition": st.integers() | st.booleans(),
        "offset": st.integers() | st.floats() | st.booleans()}), max_size=3)}))
def test_a_decoded_request_holds_only_valid_offsets(v):
    """Invariant: whatever numbers a request carries, a request that decodes has offsets in
    0 <= n < 2^63, partitions in 0 <= p < 2^31 and a bounded lifetime."""
    rec = decode_record(json.dumps(["reset", "g"]).encode(), json.dumps(v).encode())
    if isinstance(rec, Ignored):
        return
    req = rec[1].request
    assert all(0 <= o < 2**63 and type(o) is int for o in req.offsets.values())
    assert all(0 <= tp.partition < 2**31 for tp in req.offsets)
    assert 0 < req.expires_at_ms - req.created_at_ms <= 3_660_000


@pytest.mark.parametrize("key,value,why", [
    (b'["reset","g"]', b'{"v":3,"type":"reset","expires_at_ms":1e400}', "malformed"),
    (b"[" * 200_000 + b"]" * 200_000, b"{}", "key"),
    (b'["reset","g"]', b"[" * 100_000 + b"]" * 100_000, "unparseable"),
    (b'["reset","g"]', b'{"v":3,"type":"reset","x":' + b"9" * 10_000 + b"}", "unparseable"),
    (b'["reset","g"]', b'{"v":2,"type":"reset"}', "version"),  # v2 did not sign the cluster
    (b'["reset","g"]', b"\xff\xfe", "unparseable"),
    (b'["reset","g"]', b"x" * (5 * 1024 * 1024), "oversized"),
    (b'["reset","g"]', b'{"v":1,"type":"reset"}', "version"),
    (b'["reset"]', None, "malformed"),
])
def test_hostile_records_are_ignored_with_a_reason(key, value, why):
    """Invariant: the records that killed every consumer (1e400, deep nesting) are ignored."""
    rec = decode_record(key, value)
    assert isinstance(rec, Ignored) and why in rec


@pytest.mark.parametrize("offset", [-1, 2**63, 2**62 * 4, True])
def test_offsets_outside_the_range_are_refused(keys, offset):
    """Invariant: offsets are 0 <= n < 2^63 (a bool is not an offset)."""
    op, _ = keys
    v = _value(_req(), op, offsets=[{"topic": "orders", "partition": 0, "offset": offset}])
    assert isinstance(decode_record(b'["reset","payments"]', v), Ignored)


def test_key_and_value_must_name_the_same_group(keys):
    """Invariant: a request keyed for one group cannot carry another group's reset."""
    op, _ = keys
    _, value = encode_request(_req(group="victim"), op)
    rec = decode_record(json.dumps(["reset", "attacker"]).encode(), value)
    assert isinstance(rec, Ignored) and "different groups" in rec


def test_a_request_lives_at_most_an_hour(keys):
    """Invariant: a captured request cannot be replayed days later (bounded lifetime)."""
    op, _ = keys
    req = _req(expires_at_ms=NOW + 11 * 86_400_000)
    rec = decode_record(*encode_request(req, op))
    assert isinstance(rec, Ignored) and "lifetime" in rec


def test_only_a_trusted_untampered_signature_is_believed(keys):
    """Invariant: verification passes for the trusted key's own request only: not unsigned, not
    another key's, not one whose offsets were changed after signing."""
    op, other = keys
    trusted = trusted_keys([op.public])
    rec = decode_record(*encode_request(_req(), op))
    assert isinstance(rec[1], SignedRequest)
    assert trusted.verify(rec[1].request.payload(), rec[1].key_id, rec[1].sig) is None

    forged = decode_record(*encode_request(_req(), other))[1]
    assert "untrusted key" in trusted.verify(forged.request.payload(), forged.key_id, forged.sig)

    tampered = decode_record(b'["reset","payments"]', _value(
        _req(), op, offsets=[{"topic": "orders", "partition": 0, "offset": 2**62}]))[1]
    assert trusted.verify(tampered.request.payload(), tampered.key_id, tampered.sig) == "bad signature"

    unsigned = decode_record(b'["reset","payments"]', _value(_req(), op, key_id=None, sig=None))[1]
    assert trusted.verify(unsigned.request.payload(), unsigned.key_id, unsigned.sig) == "not signed"


def test_a_request_signed_for_one_cluster_is_ignored_on_another(keys):
    """Invariant (issue 31 A): the cluster id is signed: a request published on cluster A and
    replayed onto cluster B's control topic is ignored by B's members, and changing its cluster
    id breaks the signature."""
    op, _ = keys
    trusted = trusted_keys([op.public])
    key, value = encode_request(_req(cluster_id="cluster-A"), op)
    ok = decode_record(key, value, group="payments", trusted=trusted, cluster_id="cluster-A")
    assert isinstance(ok[1], SignedRequest) and ok[1].request.cluster_id == "cluster-A"
    assert decode_record(key, value, group="payments", trusted=trusted,
                         cluster_id="cluster-B") == "request for another cluster"
    moved = _value(_req(), op, cluster_id="cluster-B")
    assert decode_record(key, moved, group="payments", trusted=trusted,
                         cluster_id="cluster-B") == "request bad signature"
    v = json.loads(value)
    v.pop("cluster_id")
    assert isinstance(decode_record(key, json.dumps(v).encode()), Ignored)


def test_the_signature_is_checked_before_any_offset_is_built(keys):
    """Invariant (issue 31 C): a watcher checks the signature before it builds anything of a
    request: an unsigned request of 60,000 offsets is answered "not signed" (its malformed
    last offset is never reached), and a record keyed for another group is not even parsed."""
    op, _ = keys
    trusted = trusted_keys([op.public])
    offsets = [{"topic": "orders", "partition": p, "offset": 1} for p in range(59_999)]
    offsets.append({"topic": "orders", "partition": 0, "offset": "not a number"})
    v = json.loads(encode_request(_req(), op)[1])
    v.update(offsets=offsets, key_id=None, sig=None)
    rec = decode_record(b'["reset","payments"]', json.dumps(v).encode(), group="payments",
                        trusted=trusted, cluster_id="cluster-A")
    assert rec == "request not signed"
    assert decode_record(b'["reset","other"]', b"[" * 1_000_000, group="payments") == ("other", None)


def test_a_request_naming_one_partition_twice_is_ignored(keys):
    """Invariant: a request listing a partition twice is refused whole (which one was meant?),
    never "the last one wins"."""
    op, _ = keys
    req = _req()
    v = _value(req, op, offsets=[{"topic": "orders", "partition": 0, "offset": 5},
                                 {"topic": "orders", "partition": 0, "offset": 1}])
    assert decode_record(b'["reset","payments"]', v) == "malformed record"


@given(st.binary(max_size=60), json_values)
def test_ignore_reasons_are_a_fixed_set_and_never_quote_the_record(version, junk):
    """Invariant (issue 31 C): whatever a record holds, the reason it is ignored is one of a few
    fixed sentences: 20,000 distinct junk values make a handful of counters and log lines,
    and no record text (a newline forging a log line) reaches them."""
    from offsetkeeper.consumer import live

    fixed = {v for v in vars(live).values() if isinstance(v, Ignored)} | {
        Ignored(f"request {why}") for why in ("not signed", "signed by an untrusted key",
                                              "malformed signature", "bad signature")}
    for key, value in ((b'["reset","g"]', json.dumps({"v": version.decode("latin-1"),
                                                      "type": "reset"}).encode()),
                       (b'["reset","g"]', json.dumps({"v": 3, "type": "reset", "group": "g",
                                                      "junk": junk}).encode()),
                       (json.dumps(["ack", "g", junk]).encode(), version)):
        rec = decode_record(key, value)
        if isinstance(rec, Ignored):
            assert rec in fixed and "\n" not in rec


def test_a_withdrawal_names_its_request():
    """Invariant (issue 31 B): a withdrawal decodes to the request id it revokes; one whose key
    and value name different requests is ignored."""
    from offsetkeeper.consumer.live import encode_withdrawal

    req = _req()
    k, v = encode_withdrawal(req)
    assert decode_record(k, v) == ("withdrawn", (req.id, req.expires_at_ms))
    other = json.dumps(["withdrawn", "payments", "lr-ffffffffffff"]).encode()
    assert isinstance(decode_record(other, v), Ignored)


def test_acks_round_trip_and_disagreeing_keys_are_ignored():
    """Invariant: an acknowledgement decodes exactly; one whose key and value disagree does not."""
    ack = LiveAck("lr-0123456789ab", "g", TopicPartition("t", 1), 7, "applied", "m-1", None, NOW, True)
    k, v = encode_ack(ack)
    assert decode_record(k, v) == ("ack", ack)
    bad_key = json.dumps(["ack", "g", "lr-0123456789ab", "t", 2]).encode()
    assert isinstance(decode_record(bad_key, v), Ignored)


def test_generated_key_is_private_and_never_overwritten(tmp_path):
    """Invariant: a new key file is mode 600; an existing file is never replaced."""
    line = generate_key(tmp_path / "k")
    assert os.stat(tmp_path / "k").st_mode & 0o777 == 0o600
    assert load_signer(tmp_path / "k").public == line
    before = (tmp_path / "k").read_bytes()
    with pytest.raises(LiveKeyError, match="exists"):
        generate_key(tmp_path / "k")
    assert (tmp_path / "k").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["k"]


def test_unusable_signing_keys_are_refused_by_name(tmp_path):
    """Invariant: a key file others can read, garbage, or a missing file is one clear error."""
    generate_key(tmp_path / "k")
    os.chmod(tmp_path / "k", 0o644)
    with pytest.raises(LiveKeyError, match="readable by others"):
        load_signer(tmp_path / "k")
    (tmp_path / "g").write_bytes(b"not a key")
    os.chmod(tmp_path / "g", 0o600)
    with pytest.raises(LiveKeyError, match="not an unencrypted PEM"):
        load_signer(tmp_path / "g")
    with pytest.raises(LiveKeyError, match="cannot read"):
        load_signer(tmp_path / "missing")


@pytest.mark.parametrize("line", ["", "ed25519:", "ed25519:!!!", "rsa:AAAA", "ed25519:" + "A" * 8, None])
def test_bad_public_key_lines_are_refused(line):
    """Invariant: a trusted key line that is not 32 bytes of Ed25519 is refused, by value."""
    with pytest.raises(LiveKeyError):
        parse_public_key(line)
