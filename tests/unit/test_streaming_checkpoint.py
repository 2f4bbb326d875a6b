"""The checkpoint model, the reset-by-rewrite of offsets files and rollback, on hand-made
checkpoint directories in the format of Spark's JVM Kafka source (no broker needed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from offsetkeeper.errors import CheckpointBusyError, StoreError, UsageError
from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.plan import PartitionPlan
from offsetkeeper.reset.targets import ToEarliest
from offsetkeeper.streaming import reset as ckreset
from offsetkeeper.streaming.checkpoint import (
    parse_initial_offsets,
    parse_kafka_offsets,
    parse_offset_log,
    render_kafka_offsets,
    render_offset_log,
)
from offsetkeeper.streaming.store import CheckpointStore
from offsetkeeper.streaming.view import load_view
from streaming_support import META, jvm_checkpoint


def test_parse_jvm_offsets_file_and_initial_offsets():
    e = parse_offset_log(7, "\n".join(["v1", META, '{"orders":{"0":23,"1":6}}', "-"]))
    assert e.version == "v1" and e.metadata["batchWatermarkMs"] == 0
    assert e.kafka_sources() == [0]
    assert e.kafka_offsets(0) == {TopicPartition("orders", 0): 23, TopicPartition("orders", 1): 6}
    assert e.kafka_offsets(1) is None
    assert parse_initial_offsets('\x00v1\n{"orders":{"0":5}}') == {TopicPartition("orders", 0): 5}


@pytest.mark.parametrize("line", ["-", "", "{}", "[1]", '{"t":[1]}', '{"t":{"x":1}}',
                                  '{"t":{"0":"1"}}', '{"t":{"0":true}}', '{"logOffset":5}'])
def test_non_kafka_lines_are_not_kafka_offsets(line):
    assert parse_kafka_offsets(line) is None


@pytest.mark.parametrize("text", ["", "v1", "x1\n{}\n{}", "v1\nnot json\n{}", "v1\n[1]\n{}"])
def test_malformed_offsets_file_is_a_store_error(text):
    with pytest.raises(StoreError):
        parse_offset_log(3, text)


names = st.from_regex(r"[A-Za-z0-9._-]{1,12}", fullmatch=True).filter(lambda n: n not in (".", ".."))


@given(st.dictionaries(st.tuples(names, st.integers(0, 500)), st.integers(0, 2**62), min_size=1))
def test_kafka_offsets_round_trip(raw):
    """Invariant: offsets of valid topic names survive rendering and parsing unchanged."""
    offsets = {TopicPartition(t, p): o for (t, p), o in raw.items()}
    assert parse_kafka_offsets(render_kafka_offsets(offsets)) == offsets


def test_render_offset_log_round_trip_keeps_other_sources():
    text = "\n".join(["v1", META, '{"a":{"0":1}}', '{"logOffset":4}'])
    e = parse_offset_log(1, text)
    e2 = e.with_source(0, {TopicPartition("a", 0): 0})
    back = parse_offset_log(1, render_offset_log(e2))
    assert back.sources[1] == '{"logOffset":4}' and back.kafka_offsets(0) == {TopicPartition("a", 0): 0}
    assert json.loads(render_offset_log(e2).split("\n")[1]) == json.loads(META)


def test_view_of_a_jvm_checkpoint_with_a_pending_batch(tmp_path):
    ck = jvm_checkpoint(tmp_path / "ck", {0: {"orders": {"0": 10, "1": 4}},
                                          1: {"orders": {"0": 23, "1": 6}},
                                          2: {"orders": {"0": 30, "1": 9}}}, commits=[0, 1])
    view = load_view(ck)
    assert view.state.query_id.startswith("0c3a1d2e")
    assert view.state.last_committed == 1 and view.state.pending == 2
    assert view.rows() == [
        {"topic": "orders", "partition": 0, "committed_offset": 23, "pending_offset": 30},
        {"topic": "orders", "partition": 1, "committed_offset": 6, "pending_offset": 9}]
    assert view.state.initial[0] == {TopicPartition("orders", 0): 10, TopicPartition("orders", 1): 4}
    assert not view.state.stateful


def test_not_a_checkpoint_and_several_kafka_sources_are_usage_errors(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="not a Spark streaming checkpoint"):
        load_view(str(tmp_path / "empty"))
    with pytest.raises(UsageError, match="does not exist"):
        load_view(str(tmp_path / "nope"))
    ck = jvm_checkpoint(tmp_path / "two", {0: {"a": {"0": 1}}}, [0], extra_sources=('{"b":{"0":2}}',))
    with pytest.raises(UsageError, match="--source"):
        load_view(ck)
    assert load_view(ck, source=1).committed_offsets == {TopicPartition("b", 0): 2}


def _plan(ck, batches, new: dict[TopicPartition, int], refusals=()):
    parts = tuple(PartitionPlan(ckreset.CHECKPOINT_GROUP, tp.topic, tp.partition, None, o, 0, 100)
                  for tp, o in new.items())
    return ckreset.CheckpointResetPlan(ck, "--to-offset", parts, batches, refusals=tuple(refusals))


def test_execute_rewrites_committed_and_pending_batch_then_rollback_restores_bytes(tmp_path):
    """Invariant: a reset rewrites only the end offsets of the last committed batch (and of a
    pending one), removes their stale Hadoop .crc files, and rollback restores every byte."""
    ck = jvm_checkpoint(tmp_path / "ck", {0: {"orders": {"0": 10, "1": 4}},
                                          1: {"orders": {"0": 23, "1": 6}},
                                          2: {"orders": {"0": 30, "1": 9}}}, commits=[0, 1])
    before = {p: (tmp_path / "ck" / p).read_bytes() for p in
              ("offsets/0", "offsets/1", "offsets/2", "offsets/.1.crc", "offsets/.2.crc")}
    tp0 = TopicPartition("orders", 0)
    record = ckreset.execute_checkpoint_reset(_plan(ck, (1, 2), {tp0: 3}))
    for n in (1, 2):
        e = CheckpointStore(ck).offset_entry(n)
        assert e.kafka_offsets(0) == {tp0: 3, TopicPartition("orders", 1): 6 if n == 1 else 9}
        assert e.metadata == json.loads(META)
        assert not (tmp_path / "ck" / "offsets" / f".{n}.crc").exists()
    assert (tmp_path / "ck" / "offsets" / "0").read_bytes() == before["offsets/0"]
    assert {f.path for f in record.files} == {"offsets/1", "offsets/2", "offsets/.1.crc", "offsets/.2.crc"}

    dry = ckreset.rollback_checkpoint(ckreset.CheckpointRollbackRequest(ck, "latest", alive_window_s=0))
    assert not dry.executed and not dry.refusals
    assert CheckpointStore(ck).offset_entry(1).kafka_offsets(0)[tp0] == 3  # dry run: unchanged
    ckreset.rollback_checkpoint(ckreset.CheckpointRollbackRequest(
        ck, record.reset_id, execute=True, alive_window_s=0))
    for p, data in before.items():
        assert (tmp_path / "ck" / p).read_bytes() == data
    with pytest.raises(CheckpointBusyError, match="already rolled back"):
        ckreset.rollback_checkpoint(ckreset.CheckpointRollbackRequest(
            ck, "latest", execute=True, alive_window_s=0))


def test_a_checkpoint_reset_is_planned_from_its_scope_as_given(tmp_path):
    """Invariant (regression: the request's CheckpointScope once reached the liveness check
    as the planner's ResetScope): the planner takes the scope as it is — only its topics and
    partitions, clamped to the log by the reset planner, and its alive window: a window that
    covers the newest batch file refuses (a running query), a zero window does not."""
    from dataclasses import replace

    from offsetkeeper.reset.plan import TopicSpec
    from tests.fake_admin import FakeAdmin

    ck = jvm_checkpoint(tmp_path / "ck", {0: {"t": {"0": 5, "1": 7}}}, [0])
    admin = FakeAdmin({"t": [(2, 20), (3, 9)]})
    # jvm_checkpoint dates its files an hour back: a two-hour window sees them as just written
    scope = ckreset.CheckpointScope(ck, topics=(TopicSpec("t", (1,)),), alive_window_s=7200)
    plan = ckreset.plan_checkpoint_reset(admin, scope, ToEarliest(), label="--to-earliest")
    assert [(p.partition, p.current, p.target) for p in plan.partitions] == [(1, 7, 3)]
    assert any("alive" in r for r in plan.refusals), plan.refusals
    quiet = ckreset.plan_checkpoint_reset(admin, replace(scope, alive_window_s=0), ToEarliest(),
                                          label="--to-earliest")
    assert quiet.refusals == () and quiet.offsets == plan.offsets


def test_refusals_block_execute_unless_forced(tmp_path):
    ck = jvm_checkpoint(tmp_path / "ck", {0: {"t": {"0": 5}}}, [0], state=True)
    st = CheckpointStore(ck).state()
    assert st.stateful
    reasons = ckreset.liveness_refusals(st, alive_window_s=120)
    assert len(reasons) == 1 and "stateful" in reasons[0]
    assert "alive" in ckreset.liveness_refusals(st, alive_window_s=120, now=st.newest_change_s + 5)[0]
    plan = _plan(ck, (0,), {TopicPartition("t", 0): 1}, reasons)
    with pytest.raises(CheckpointBusyError, match="stateful"):
        ckreset.execute_checkpoint_reset(plan)
    assert CheckpointStore(ck).offset_entry(0).kafka_offsets(0) == {TopicPartition("t", 0): 5}
    ckreset.execute_checkpoint_reset(plan, force=True)
    assert CheckpointStore(ck).offset_entry(0).kafka_offsets(0) == {TopicPartition("t", 0): 1}


def test_rollback_refused_after_the_query_ran_on(tmp_path):
    ck = jvm_checkpoint(tmp_path / "ck", {0: {"t": {"0": 5}}}, [0])
    ckreset.execute_checkpoint_reset(_plan(ck, (0,), {TopicPartition("t", 0): 1}))
    (tmp_path / "ck" / "offsets" / "1").write_text("\n".join(["v1", META, '{"t":{"0":4}}']))
    with pytest.raises(CheckpointBusyError, match="ran batches after"):
        ckreset.rollback_checkpoint(ckreset.CheckpointRollbackRequest(
            ck, execute=True, alive_window_s=0))


def test_rollback_without_resets_is_a_usage_error(tmp_path):
    ck = jvm_checkpoint(tmp_path / "ck", {0: {"t": {"0": 5}}}, [0])
    with pytest.raises(UsageError, match="no offsetkeeper reset"):
        ckreset.rollback_checkpoint(ckreset.CheckpointRollbackRequest(ck))


def test_fsspec_memory_url(tmp_path):
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/ck1/metadata", b'{"id":"q"}')
    fs.pipe("/ck1/offsets/0", "\n".join(["v1", META, '{"t":{"0":5}}']).encode())
    fs.pipe("/ck1/commits/0", b'v1\n{"nextBatchWatermarkMs":0}')
    view = load_view("memory://ck1")
    assert view.committed_offsets == {TopicPartition("t", 0): 5} and view.state.query_id == "q"
    ckreset.execute_checkpoint_reset(_plan("memory://ck1", (0,), {TopicPartition("t", 0): 2}))
    assert load_view("memory://ck1").committed_offsets == {TopicPartition("t", 0): 2}


# -- the command line (no broker needed for these) ------------------------------------------
def test_cli_show_on_a_jvm_checkpoint_json_and_table(tmp_path, capsys):
    from cli import run_cli

    ck = jvm_checkpoint(tmp_path / "ck", {0: {"or[bold]ders": {"0": 10}}, 1: {"or[bold]ders": {"0": 23}}},
                        commits=[0])
    r = run_cli(capsys, "streaming", "show", ck, "-o", "json")
    assert r.code == 0
    data = r.json()
    assert data["last_committed_batch"] == 0 and data["pending_batch"] == 1
    assert data["partitions"] == [{"topic": "or[bold]ders", "partition": 0,
                                   "committed_offset": 10, "pending_offset": 23}]
    r = run_cli(capsys, "streaming", "show", ck, "-o", "csv")
    assert r.code == 0 and r.out.splitlines()[1] == "or[bold]ders,0,10,23"


@pytest.mark.parametrize("args,msg", [
    (["streaming", "show", "/nonexistent/ck"], "does not exist"),
    (["streaming", "reset", "/nonexistent/ck", "-b", "127.0.0.1:1"], "missing reset target"),
    (["streaming", "reset", "/x", "--to-earliest", "--to-latest", "-b", "127.0.0.1:1"], "conflicting"),
    (["streaming", "reset", "/x", "--to-datetime", "yesterday", "-b", "127.0.0.1:1"], "is not a time"),
])
def test_cli_bad_input_exits_2(args, msg, capsys):
    from cli import run_cli

    r = run_cli(capsys, *args)
    assert r.code == 2 and msg in r.err and "Traceback" not in r.err


def test_cli_rollback_dry_run_then_refused_while_alive(tmp_path, capsys):
    """Invariant: right after a reset, its own rewrite is not taken for a live query (the
    rollback works at once); a checkpoint the query wrote to since is refused as alive."""
    import shutil

    from cli import run_cli

    ck = jvm_checkpoint(tmp_path / "ck", {0: {"t": {"0": 5}}}, [0])
    assert run_cli(capsys, "streaming", "rollback", ck).code == 2  # nothing to roll back
    ckreset.execute_checkpoint_reset(_plan(ck, (0,), {TopicPartition("t", 0): 1}))
    r = run_cli(capsys, "streaming", "rollback", ck)
    assert r.code == 0 and "dry run" in r.out and "looks alive" not in r.err
    assert CheckpointStore(ck).offset_entry(0).kafka_offsets(0) == {TopicPartition("t", 0): 1}
    r = run_cli(capsys, "streaming", "rollback", ck, "--execute")
    assert r.code == 0, r.err
    assert CheckpointStore(ck).offset_entry(0).kafka_offsets(0) == {TopicPartition("t", 0): 5}

    ckreset.execute_checkpoint_reset(_plan(ck, (0,), {TopicPartition("t", 0): 1}))
    shutil.copy(Path(ck) / "offsets" / "0", Path(ck) / "offsets" / "1")  # the query ran a batch
    r = run_cli(capsys, "streaming", "rollback", ck, "--execute")
    assert r.code == 1 and "looks alive" in r.err
    r = run_cli(capsys, "streaming", "rollback", ck, "--execute", "--force")
    assert r.code == 0
    assert CheckpointStore(ck).offset_entry(0).kafka_offsets(0) == {TopicPartition("t", 0): 5}


def test_a_checkpoint_reset_takes_the_targets_of_offsets_reset_only_where_they_fit(tmp_path):
    """Invariant: `streaming reset` names its target as `offsets reset` does (TargetSpec through
    ops.targets.resolve_target); targets that hold consumer groups' offsets (a snapshot, a
    mapping, the history, ZooKeeper, the commit log) are refused before anything is read."""
    from offsetkeeper.ops.streaming import (
        TARGET_KINDS,
        CheckpointResetRequest,
        CheckpointScope,
        reset_checkpoint,
    )
    from offsetkeeper.ops.targets import TargetKind, TargetSpec

    ck = jvm_checkpoint(tmp_path / "ck", {0: {"t": {"0": 5}}}, [0])
    for kind in set(TargetKind) - set(TARGET_KINDS):
        with pytest.raises(UsageError, match=f"{kind.flag} is not a target for a checkpoint"):
            reset_checkpoint(None, CheckpointResetRequest(CheckpointScope(ck), TargetSpec(kind, "x")))
    with pytest.raises(UsageError, match="--to-offset"):
        reset_checkpoint(None, CheckpointResetRequest(CheckpointScope(ck), TargetSpec(TargetKind.TO_OFFSET, "-1")))


@pytest.mark.parametrize("topic", ["bad topic", "a/b", "..", "x" * 300])
def test_invalid_topic_names_in_a_checkpoint_are_said_before_asking_the_cluster(tmp_path, topic):
    """Invariant (issue 31 K): resetting or measuring a checkpoint that names a topic Kafka
    cannot have is a StoreError naming it (at most 80 characters of it) from the file — the
    cluster is never asked (it only timed out: "timed out waiting for the cluster")."""
    from offsetkeeper.streaming.reset import CheckpointScope, plan_checkpoint_reset
    from offsetkeeper.streaming.view import checkpoint_lag

    class NoCluster:
        def __getattr__(self, name):
            raise AssertionError(f"the cluster was asked ({name})")

    ck = jvm_checkpoint(tmp_path / "ck", {0: {topic: {"0": 10}}}, commits=[0])
    for call in (lambda: plan_checkpoint_reset(NoCluster(), CheckpointScope(str(ck)), ToEarliest(),
                                                   label="x"),
                 lambda: checkpoint_lag(NoCluster(), str(ck))):
        with pytest.raises(StoreError, match="is not a valid Kafka topic name") as exc:
            call()
        assert len(exc.value.message) < 400


def test_a_partition_of_5000_digits_is_a_store_error():
    """Invariant: a checkpoint partition key of 5,000 digits is one StoreError, not a ValueError
    from int(), and its digits are not echoed."""
    with pytest.raises(StoreError, match="not a partition number") as exc:
        parse_kafka_offsets('{"orders":{"' + "9" * 5000 + '":5}}', where="offsets/3")
    assert "9" * 50 not in exc.value.message
