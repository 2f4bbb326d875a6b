"""Two resets of one group at once (issue 31 J), against the real broker: Kafka has no
compare-and-set for committed offsets, so the executor reads the group back after its commit
and once more when its run is done, and says "moved by another writer" instead of SUCCESS."""

from __future__ import annotations

import pytest

from kafkatools import commit, committed, create_topic, produce_n
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.ops import ExecuteOptions, ResetRequest, TargetKind, TargetSpec, reset_offsets
from offsetkeeper.reset.plan import ResetScope, TopicSpec

pytestmark = pytest.mark.integration


class _Interleaved(KafkaAdmin):
    """The real admin facade; right after its first read of committed offsets that follows its
    commit (the executor's read-back), `between()` runs: another writer acting at exactly
    that moment."""

    between = staticmethod(lambda: None)
    committed_once = False
    done = False

    def alter_result(self, *a, **kw):
        out = super().alter_result(*a, **kw)
        self.committed_once = True
        return out

    def committed_offsets_each(self, *a, **kw):
        out = super().committed_offsets_each(*a, **kw)
        if self.committed_once and not self.done:
            self.done = True
            self.between()
        return out


def _req(g: str, t: str, offset: int, store) -> ResetRequest:
    return ResetRequest(target=TargetSpec(TargetKind.TO_OFFSET, str(offset)),
                        scope=ResetScope(groups=(g,), topics=(TopicSpec(t),)), execute=True,
                        options=ExecuteOptions(snapshot_store=str(store)))


def test_of_two_concurrent_resets_only_the_one_that_holds_reports_success(
        conn, bootstrap, unique, tmp_path):
    """Invariant (issue 31 J): run A commits 31 and reads it back; before A ends, run B resets
    the group to 32. B reports SUCCESS (the group holds 32); A reports FAILED with every
    partition "moved by another writer after this run committed it", never SUCCESS."""
    t, g = unique("conc"), unique("g")
    create_topic(bootstrap, t, 2)
    produce_n(bootstrap, t, 2, 50)
    commit(bootstrap, g, {(t, 0): 20, (t, 1): 20})
    results = {}

    def run_b() -> None:
        with KafkaAdmin(conn) as other:
            results["b"] = reset_offsets(other, _req(g, t, 32, tmp_path / "s"))

    with _Interleaved(conn) as admin:
        admin.between = run_b
        results["a"] = reset_offsets(admin, _req(g, t, 31, tmp_path / "s"))
    a, b = results["a"].report, results["b"].report
    assert str(b.status) == "SUCCESS", b.to_dict()
    assert str(a.status) == "FAILED", a.to_dict()
    errs = a.results[0].partition_errors
    assert set(errs) == {f"{t}:0", f"{t}:1"}
    assert all("moved by another writer after this run committed it: this run committed 31, "
               "the group now has 32" in e for e in errs.values())
    assert committed(bootstrap, g, t, 2) == {0: 32, 1: 32}
