"""The executor's live strategy (`ApplyOptions.live`): a member's acknowledgement is a claim,
believed only when the group confirms it — the member is current and the committed offset read
back equals the target. Against the in-memory cluster and a channel whose "members" do what each
row says (tests/fake_admin.py)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.apply import GroupStatus, ReportStatus
from offsetkeeper.reset.facts import build_plan
from offsetkeeper.reset.plan import ResetScope, TopicSpec
from tests.unit.executor_support import FAST, TO_50, TOPIC, by_group, cluster, install_clock, run

P0, P1 = TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)


@dataclass
class Ack:
    group: str
    tp: TopicPartition
    offset: int
    status: str = "applied"
    member: str = "m0"
    error: str | None = None
    store: bool = False


class Channel:
    """Members that, per partition, commit (or not) and claim (or not) as the row says."""

    timeout_s = 5.0

    def __init__(self, admin, behaviour: dict[int, str]) -> None:
        self.admin, self.behaviour = admin, behaviour
        self.published: dict = {}
        self.withdrawn = False

    def publish(self, offsets, snapshot_id):
        self.published = {g: dict(o) for g, o in offsets.items()}

    def acknowledgements(self, deadline):
        for g, offs in self.published.items():
            for tp, target in sorted(offs.items()):
                how = self.behaviour.get(tp.partition, "apply")
                if how in ("apply", "apply-stranger", "apply-store"):
                    self.admin.commit(g, {tp: target})
                if how == "apply":
                    yield Ack(g, tp, target)
                elif how == "apply-stranger":
                    yield Ack(g, tp, target, member="left-the-group")
                elif how == "apply-store":
                    yield Ack(g, tp, target, store=True)
                elif how == "forged":  # claims applied, changed nothing
                    yield Ack(g, tp, target)
                elif how == "failed":
                    yield Ack(g, tp, target, status="failed", error="offset 50 is outside the log")
                elif how in ("forged-failure-first", "forged-failure-only"):
                    # someone who can write the topic claims, in a stranger's name, a failure
                    yield Ack(g, tp, target, status="failed", member="intruder", error="disk full")
                    if how == "forged-failure-first":
                        self.admin.commit(g, {tp: target})
                        yield Ack(g, tp, target)
                # "silent": no acknowledgement at all

    def withdraw(self):
        self.withdrawn = True


def _live_plan(admin):
    scope = ResetScope(groups=("g",), topics=(TopicSpec(TOPIC),), live=True)
    return build_plan(admin, scope, TO_50)


# (what partition 1's member does, expected group status, words in partition 1's error)
TABLE = [
    ("apply", GroupStatus.SUCCESS, None),
    ("forged", GroupStatus.FAILED, "committed offset is 20, not 50"),
    ("apply-stranger", GroupStatus.FAILED, "not a member"),
    ("apply-store", GroupStatus.FAILED, "cannot be read back"),
    ("failed", GroupStatus.FAILED, "outside the log"),
    ("silent", GroupStatus.FAILED, "no member acknowledged"),
    # K: a forged "failed" from a non-member is never believed as the member's error, and does
    # not crowd out the member's own answer
    ("forged-failure-first", GroupStatus.SUCCESS, None),
    ("forged-failure-only", GroupStatus.FAILED, "was not believed"),
]


@pytest.mark.parametrize("how, status, words", TABLE)
def test_only_claims_the_group_confirms_count(monkeypatch, how, status, words):
    """Invariant: partition 0 applied honestly is `applied` by m0 in every row; partition 1 is
    applied only when its claim is confirmed by the group itself; the request is withdrawn in
    every case."""
    install_clock(monkeypatch)
    admin = cluster({"g": {0: 10, 1: 20}})
    admin.set_members("g", 1)
    plan = _live_plan(admin)
    channel = Channel(admin, {1: how})
    rep = run(admin, plan, replace(FAST, live=channel))
    r = by_group(rep)["g"]
    assert r.status is status
    assert r.applied_by.get(str(P0)) == "m0"
    if words is None:
        assert r.applied_by.get(str(P1)) == "m0" and rep.status is ReportStatus.SUCCESS
    else:
        assert str(P1) not in r.applied_by and words in r.partition_errors[str(P1)]
        assert rep.status is ReportStatus.FAILED
    assert channel.withdrawn
    assert admin.count("alter_offsets_async") == 0, "the live strategy never commits from outside"


def test_a_group_that_lost_its_members_is_refused_and_nothing_is_published(monkeypatch):
    """Invariant: the live strategy re-checks right before publishing: a group without members
    now is REFUSED (a stopped group takes an ordinary reset) and no request goes out."""
    install_clock(monkeypatch)
    admin = cluster({"g": {0: 10, 1: 20}})
    admin.set_members("g", 1)
    plan = _live_plan(admin)
    admin.set_members("g", 0)
    channel = Channel(admin, {})
    r = by_group(run(admin, plan, replace(FAST, live=channel)))["g"]
    assert r.status is GroupStatus.REFUSED and "no members now" in r.error
    assert channel.published == {} and not channel.withdrawn


def test_the_request_is_withdrawn_even_when_reading_back_fails(monkeypatch):
    """Invariant: members hold partitions until the request is withdrawn, so the executor
    withdraws it whatever happens after publishing; a failed read-back is no success."""
    from tests.fake_admin import FATAL

    install_clock(monkeypatch)
    admin = cluster({"g": {0: 10, 1: 20}})
    admin.set_members("g", 1)
    plan = _live_plan(admin)
    channel = Channel(admin, {})
    admin.fail("committed_offsets_each", FATAL, times=5)
    rep = run(admin, plan, replace(FAST, live=channel))
    assert channel.withdrawn and rep.status is not ReportStatus.SUCCESS
