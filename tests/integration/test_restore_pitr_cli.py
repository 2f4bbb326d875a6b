"""Point-in-time restore from the command line: the mapping and group translation stay exact at
the window's edges; mapping show / lookup; offsets reset --from-mapping; validate; errors."""

from __future__ import annotations

import pytest

from offsetkeeper.models import TopicPartition
from tests.cli import run_cli
from tests.kafkatools import committed
from tests.restore_support import consume_all, rec, write_backup

pytestmark = [pytest.mark.integration, pytest.mark.spark]

T0 = 1_700_000_000_000


def test_pitr_window_mapping_and_translation(capsys, tmp_path, dr_bootstrap, spark, unique):
    topic = unique("pitr")
    # offsets 0, 2, 4, ... (gaps); timestamps T0 + offset*1000
    data = {topic: {p: [rec(o, T0 + o * 1000, f"k{o}".encode(), f"v{p}-{o}".encode()) for o in range(0, 60, 2)]
                    for p in (0, 1)}}
    g_before, g_edge, g_in, g_after = unique("before"), unique("edge"), unique("in"), unique("after")
    # old timestamps: the target topic (created from the backed-up configs) must not expire them
    write_backup(str(tmp_path), "b1", data, configs={topic: {"retention.ms": "-1"}}, groups={
        g_before: {(topic, 0): 3},          # before the window: the first restored record
        g_edge: {(topic, 0): 19},           # between 18 (outside) and 20 (first inside)
        g_in: {(topic, 0): 31, (topic, 1): 40},
        g_after: {(topic, 0): 41},          # at/after the window end: the target log end
    })
    backup = f"{tmp_path}/b1"
    target = unique("pitr-dr")
    common = [backup, "-b", dr_bootstrap, "--restore-id", "w1", "--rename", f"{topic}={target}",
              "--from-time", "2023-11-14T22:13:40Z",          # T0 + 20 s  (inclusive)
              "--to-time", str(T0 + 40_000)]                     # T0 + 40 s  (exclusive)

    r = run_cli(capsys, "restore", "run", *common, "--dry-run", "-o", "json")
    assert r.code == 0, r.err
    dry = r.json()
    assert dry["dry_run"] and dry["records"] == 20
    assert {p["first_source"] for p in dry["partitions"]} == {20}
    assert dry["created_topics"][0]["would_create"]

    r = run_cli(capsys, "restore", "run", *common, "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["records"] == 20
    got = consume_all(dr_bootstrap, target, [0, 1])
    assert [dict(m.headers())["x-kafka-backup-offset"] for m in got[0]] == \
        [str(o).encode() for o in range(20, 40, 2)]

    r = run_cli(capsys, "mapping", "show", backup, "--restore", "w1", "-o", "json")
    assert r.code == 0, r.err
    rows = {(x["topic"], x["partition"]): x for x in r.json()["partitions"]}
    assert (rows[(topic, 0)]["source_first"], rows[(topic, 0)]["source_last"],
            rows[(topic, 0)]["records"]) == (20, 38, 10)
    assert rows[(topic, 0)]["target_first"] == got[0][0].offset()
    r = run_cli(capsys, "mapping", "show", backup, "-o", "csv")
    assert r.code == 0 and r.out.splitlines()[0].startswith("topic,partition,target_topic")

    r = run_cli(capsys, "mapping", "lookup", backup, "--topic", topic, "--partition", "0", "--offset", "24",
                "-o", "json")
    assert r.json()["target_offset"] == got[0][2].offset() and r.json()["restored"]
    r = run_cli(capsys, "mapping", "lookup", backup, "--topic", topic, "--partition", "0", "--offset", "25",
                "-o", "json")
    assert r.json()["target_offset"] == got[0][3].offset() and not r.json()["restored"]

    from offsetkeeper.restore.translate import offsets_from_mapping

    fo = offsets_from_mapping(str(tmp_path), "b1", "w1", None)
    tp0, tp1 = TopicPartition(target, 0), TopicPartition(target, 1)
    assert fo.offsets[g_before][tp0] == got[0][0].offset()
    assert fo.offsets[g_edge][tp0] == got[0][0].offset()
    assert fo.offsets[g_in][tp0] == got[0][6].offset()          # 31 -> source 32
    assert fo.offsets[g_in][tp1] == got[1][-1].offset() + 1      # 40 -> past the window: log end
    assert fo.offsets[g_after][tp0] == got[0][-1].offset() + 1

    # the lead's reset pipeline commits them (dry run first, then --execute)
    r = run_cli(capsys, "offsets", "reset", "-b", dr_bootstrap, "--from-mapping", f"{backup}:w1",
                "--group", g_in, "--execute", "--no-snapshot")
    assert r.code == 0, r.err
    assert committed(dr_bootstrap, g_in, target, 2) == {0: got[0][6].offset(), 1: got[1][-1].offset() + 1}

    r = run_cli(capsys, "restore", "validate", backup, "--restore", "w1", "-b", dr_bootstrap,
                "--group", g_in, "-o", "json")
    assert r.code == 0, r.out + r.err
    v = r.json()
    assert v["ok"] and [p["backup_records"] for p in v["partitions"]] == [10, 10]

    # a group that was not committed on the target: validate reports the mismatch, exit 1
    r = run_cli(capsys, "restore", "validate", backup, "--restore", "w1", "-b", dr_bootstrap,
                "--group", g_edge, "-o", "json")
    assert r.code == 1 and "mismatch" in r.err

    # a rerun with other options under the same restore id is refused
    r = run_cli(capsys, "restore", "run", backup, "-b", dr_bootstrap, "--restore-id", "w1",
                "--rename", f"{topic}={target}")
    assert r.code == 2 and "different options" in r.err


@pytest.mark.parametrize(("args", "message"), [
    (["restore", "run", "nobackup", "-b", "x:1"], "must be DEST/BACKUP_ID"),
    (["restore", "run", "/tmp/none/b", "-b", "x:1", "--from-time", "soon"], "--from-time 'soon'"),
    (["mapping", "show", "/tmp/none/b"], "no completed restore"),
])
def test_cli_usage_errors(capsys, args, message):
    r = run_cli(capsys, *args)
    assert r.code == 2
    assert message in r.err
