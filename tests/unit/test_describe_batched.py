"""Which answers of the batched describe the facade takes, and when it describes group by group
(`LibrdkafkaAdmin._describe_member_less`); its equality with the per-group describe against a
real broker: tests/integration/test_describe_batched.py."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from offsetkeeper.config import Connection
from offsetkeeper.kafka import admin as admin_mod
from offsetkeeper.kafka.admin import LibrdkafkaAdmin
from offsetkeeper.models import GroupInfo

BROKER = SimpleNamespace(id=1, host="k1", port=9092)


def _group(gid: str, state: str = "Empty", protocol_type: str = "consumer", members=(),
           error=None, protocol: str = "") -> SimpleNamespace:
    return SimpleNamespace(id=gid, state=state, protocol_type=protocol_type, protocol=protocol,
                           members=list(members), error=error, broker=BROKER)


class _Listing:
    """librdkafka's older group listing, as confluent-kafka answers it (the unit under test is
    the facade's choice among its answers)."""

    def __init__(self, groups=None, fail: bool = False, listed: int = 0) -> None:
        self.groups, self.fail, self.calls = groups or [], fail, 0
        self.listed = listed

    def list_groups(self, timeout: float):
        self.calls += 1
        if self.fail:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        return self.groups


def _admin(listing: _Listing, groups_listed: int | None = 40) -> LibrdkafkaAdmin:
    a = LibrdkafkaAdmin(Connection("k1:9092"))
    a._admin = listing  # connected already: no probe
    a._groups_listed = groups_listed
    return a


IDS = [f"g{i:02d}" for i in range(admin_mod.BATCH_DESCRIBE_MIN)]


@pytest.mark.parametrize("answer, taken", [
    (_group("g00"), True),
    (_group("g00", state="Stable", protocol_type=""), True),
    (_group("g00", state="PreparingRebalance"), True),
    (_group("g00", state="Dead"), False),              # a consumer-protocol group, or none
    (_group("g00", state="Unknown"), False),
    (_group("g00", members=[object()]), False),       # its refusal names its members
    (_group("g00", protocol_type="connect"), False),
    (_group("g00", error=KafkaError(KafkaError.NOT_COORDINATOR)), False),
])
def test_only_answers_meaning_a_member_less_classic_group_are_taken(answer, taken):
    """Invariant: the batched describe answers a group only when it is a live member-less
    classic group (no error, consumer or empty protocol type, not Dead); any other answer is
    left to the per-group describe."""
    got = _admin(_Listing([answer, _group("other-group")]))._describe_member_less(IDS)
    assert set(got) == ({"g00"} if taken else set())
    if taken:
        assert got["g00"] == GroupInfo("g00", answer.state.lower(), coordinator="k1:9092 (1)",
                                       assignor="", group_type="classic", members=())


def test_a_group_two_brokers_answer_for_is_described_on_its_own():
    """Invariant: a group listed by two brokers (its coordinator moving) is left to the
    per-group describe, which asks its current coordinator: one answer may be stale."""
    got = _admin(_Listing([_group("g00"), _group("g00"), _group("g01")]))._describe_member_less(IDS)
    assert set(got) == {"g01"}


def test_a_failed_listing_leaves_every_group_to_the_per_group_describe_from_then_on():
    """Invariant: when the batched listing fails (a broker that does not answer), nothing is
    answered from it and it is not tried again by this client (no repeated wait)."""
    listing = _Listing(fail=True)
    a = _admin(listing)
    assert a._describe_member_less(IDS) == {}
    assert a._describe_member_less(IDS) == {}
    assert listing.calls == 1


@pytest.mark.parametrize("wanted, cluster_groups, batched", [
    (admin_mod.BATCH_DESCRIBE_MIN - 1, 10, False),     # too few groups to be worth it
    (admin_mod.BATCH_DESCRIBE_MIN, admin_mod.BATCH_DESCRIBE_MIN * admin_mod.BATCH_DESCRIBE_SPREAD, True),
    (admin_mod.BATCH_DESCRIBE_MIN, admin_mod.BATCH_DESCRIBE_MIN * admin_mod.BATCH_DESCRIBE_SPREAD + 1, False),
])
def test_groups_are_described_at_once_only_when_the_cluster_has_not_many_more(
        wanted, cluster_groups, batched):
    """Invariant: every group of every broker is described by the batched call, so it is made
    only for BATCH_DESCRIBE_MIN groups or more, and only while the cluster holds at most
    BATCH_DESCRIBE_SPREAD times as many groups as asked for."""
    listing = _Listing([_group(g) for g in IDS])
    got = _admin(listing, groups_listed=cluster_groups)._describe_member_less(IDS[:wanted])
    assert bool(got) is batched and listing.calls == int(batched)
