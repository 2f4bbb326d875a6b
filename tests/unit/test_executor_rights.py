"""Issue 31 E: a group is changed whole or not at all, and only what changes is committed.
Against the in-memory cluster (tests/fake_admin.py) with the real planner and executor."""

from __future__ import annotations

from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.apply import GroupStatus, ReportStatus
from offsetkeeper.reset.targets import FromOffsets
from tests.unit.executor_support import FAST, TOPIC, by_group, cluster, install_clock, run


class _Rights:
    """The cluster as a principal without Read on some topics sees it (KIP-430 operations)."""

    def __init__(self, admin, unreadable: set[str]) -> None:
        self.admin, self.unreadable = admin, unreadable
        self.altered: list[dict] = []
        orig = admin.alter_offsets_async

        def alter(group_id, offsets):
            self.altered.append(dict(offsets))
            return orig(group_id, offsets)
        admin.alter_offsets_async = alter
        admin.topics_without_read = lambda topics: set(topics) & self.unreadable


def test_a_group_touching_a_topic_without_read_is_refused_whole(monkeypatch):
    """Invariant: when the principal lacks Read on any topic a group's commit touches, nothing
    of that group is committed (not its readable partitions either): FAILED with one line
    naming the topic and the operation; other groups of the run go on."""
    install_clock(monkeypatch)
    admin = cluster({"g": {0: 10, 1: 20}, "h": {0: 10, 1: 20}})
    admin.add_topic("audit", [(0, 100)])
    admin.commit("g", {("audit", 0): 7})
    rights = _Rights(admin, {"audit"})
    from offsetkeeper.reset.facts import build_plan
    from offsetkeeper.reset.plan import ResetScope
    from offsetkeeper.reset.targets import ToOffset

    plan = build_plan(admin, ResetScope(groups=("g", "h"), all_topics=True), ToOffset(50))
    rep = run(admin, plan, FAST)
    g, h = by_group(rep)["g"], by_group(rep)["h"]
    assert g.status is GroupStatus.FAILED and "Read on topic audit" in g.error
    assert "nothing of this group was changed" in g.error
    assert admin.committed("g") == {TopicPartition(TOPIC, 0): 10, TopicPartition(TOPIC, 1): 20,
                                    TopicPartition("audit", 0): 7}
    assert h.status is GroupStatus.SUCCESS and rep.status is ReportStatus.PARTIAL_SUCCESS
    assert all(TopicPartition("audit", 0) not in a for a in rights.altered)


def test_partitions_already_at_their_target_are_not_committed(monkeypatch):
    """Invariant: only partitions that change are committed: a rollback whose snapshot holds a
    partition at its current offset does not commit it (so it needs no rights on its topic),
    and the run succeeds."""
    install_clock(monkeypatch)
    admin = cluster({"g": {0: 10, 1: 20}})
    admin.add_topic("audit", [(0, 100)])
    admin.commit("g", {("audit", 0): 7})
    rights = _Rights(admin, {"audit"})
    from offsetkeeper.reset.facts import build_plan
    from offsetkeeper.reset.plan import ResetScope

    target = FromOffsets(offsets={None: {TopicPartition(TOPIC, 0): 5, TopicPartition(TOPIC, 1): 20,
                                         TopicPartition("audit", 0): 7}}, source="snapshot")
    plan = build_plan(admin, ResetScope(groups=("g",), all_topics=True), target)
    rep = run(admin, plan, FAST)
    assert rep.status is ReportStatus.SUCCESS, rep.to_dict()
    assert rights.altered == [{TopicPartition(TOPIC, 0): 5}]
    assert by_group(rep)["g"].partitions_changed == 1
