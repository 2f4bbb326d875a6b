"""Regression tests for issue 8 against a real broker: each asserts the exit code and the message,
then checks the cluster with an independent client (tests/kafkatools)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from kafkatools import commit, committed, create_topic, produce_n
from offsetkeeper.snapshots.store import SnapshotStore
from tests.cli import run_cli

pytestmark = pytest.mark.integration


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No user config, snapshots into a temporary store."""
    (tmp_path / "none.yaml").write_text("{}\n")
    monkeypatch.setenv("OFFSETKEEPER_CONFIG", str(tmp_path / "none.yaml"))
    monkeypatch.setenv("OFFSETKEEPER_SNAPSHOT_STORE", str(tmp_path / "snaps"))
    monkeypatch.delenv("OFFSETKEEPER_BOOTSTRAP_SERVER", raising=False)


@pytest.fixture
def topic(bootstrap, unique):
    t = unique("hard")
    create_topic(bootstrap, t, partitions=2)
    produce_n(bootstrap, t, 2, 20)
    return t


def admin_commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit through the admin API: the group id is sent as given (a Consumer's group.id
    config loses leading whitespace inside librdkafka)."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": bootstrap})
    tps = [TopicPartition(t, p, o) for (t, p), o in offsets.items()]
    client.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])[group].result(15)


def admin_committed(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """Independent read of a group's committed offsets through the admin API."""
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": bootstrap})
    req = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    res = client.list_consumer_group_offsets([req])[group].result(15)
    return {tp.partition: tp.offset for tp in res.topic_partitions}


def _groups(bootstrap) -> set[str]:
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": bootstrap})
    res = client.list_consumer_groups().result(15)
    return {g.group_id for g in res.valid}


# -- item 1 -----------------------------------------------------------------------------------

def test_script_from_cli_is_safe_executable_and_announced(capsys, bootstrap, topic, unique, tmp_path):
    """Invariant: `--script` writes a 0755 file, says where, and running it runs only
    kafka-consumer-groups.sh — once per group — even for a group named to inject commands."""
    mark = tmp_path / "PWNED"
    hostile = f"act\ntouch {mark} #{unique('g')}"
    plain = unique("g")
    for g in (hostile, plain):
        commit(bootstrap, g, {(topic, 0): 3, (topic, 1): 4})
    script = tmp_path / "reset.sh"
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", hostile, "-g", plain, "-t", topic,
                "--to-offset", "7", "--script", script)
    assert r.code == 0, r.err
    assert f"plan written to {script}" in r.err
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    (bindir / "kafka-consumer-groups.sh").write_text(
        f'#!/usr/bin/env bash\nprintf "CALL %s\\n" "$*" >> {str(log)!r}\n')
    (bindir / "kafka-consumer-groups.sh").chmod(0o755)
    res = subprocess.run([str(script)], env={"PATH": f"{bindir}:/usr/bin:/bin"},
                         capture_output=True, text=True, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert not mark.exists()
    assert log.read_text().count("CALL ") == 2
    # The dry run changed nothing.
    assert committed(bootstrap, plain, topic, 2) == {0: 3, 1: 4}


# -- item 2 -----------------------------------------------------------------------------------

def test_export_from_file_round_trip_with_awkward_names(capsys, bootstrap, topic, unique, tmp_path):
    """Invariant: groups named ' lead-trail ', '#hash' and 'a,b' survive --export and
    --from-file exactly: the file re-applies the exported offsets to those same groups."""
    suffix = unique("x")
    groups = [f" lead-trail {suffix} ", f"#hash{suffix}", f"a,b{suffix}"]
    for g in groups:
        admin_commit(bootstrap, g, {(topic, 0): 2, (topic, 1): 3})
    plan = tmp_path / "plan.csv"
    args = [a for g in groups for a in ("-g", g)]
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, *args, "-t", topic, "--to-offset", "9",
                "--export", plan)
    assert r.code == 0, r.err
    for g in groups:
        admin_commit(bootstrap, g, {(topic, 0): 1, (topic, 1): 1})
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--from-file", plan, "--execute",
                "--no-snapshot")
    assert r.code == 0, r.err
    for g in groups:
        assert admin_committed(bootstrap, g, topic, 2) == {0: 9, 1: 9}, g
    assert f"lead-trail {suffix}" not in _groups(bootstrap)


def test_from_file_with_bom_is_refused_and_creates_nothing(capsys, bootstrap, topic, unique, tmp_path):
    """Invariant: a UTF-8 BOM is refused with the line number (exit 2); no invisible group is
    created."""
    g = unique("pay")
    f = tmp_path / "bom.csv"
    f.write_bytes(f"\ufeff{g},{topic},0,5\n".encode())
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--from-file", f, "--execute")
    assert r.code == 2
    assert "line 1" in r.err and "byte order mark" in r.err
    assert not any(g in x for x in _groups(bootstrap))


# -- items 9, 12, 16: bad input is one line, exit 2, nothing changed ---------------------------

@pytest.mark.parametrize("args,message", [
    (["--to-datetime", "1969-12-31T23:59:59.999Z"], "before 1970"),
    (["--to-datetime", "0001-01-01T00:00:00Z"], "before 1970"),
    (["--by-duration", "P99999999D"], "before 1970"),
    (["--by-duration", "-PT1H"], "no sign"),
    (["--shift-by", "1_000"], "ASCII digits"),
    (["--to-offset", "١٠"], "ASCII digits"),
    (["--to-earliest", "--script", "/nonexistent/x.sh"], "directory '/nonexistent' does not exist"),
])
def test_bad_reset_input_exits_2_and_changes_nothing(capsys, bootstrap, topic, unique, args, message):
    """Invariant: bad input is exit 2 with one line naming the option and value, no traceback,
    and the group's committed offsets stay as they were."""
    g = unique("g")
    commit(bootstrap, g, {(topic, 0): 4, (topic, 1): 6})
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", g, "-t", topic, *args, "--execute")
    assert r.code == 2, (r.out, r.err)
    assert message in r.err
    assert "Traceback" not in r.err
    assert committed(bootstrap, g, topic, 2) == {0: 4, 1: 6}
    assert not os.path.exists("/nonexistent")


def test_other_bad_input_is_one_line(capsys, bootstrap, topic, tmp_path):
    """Invariant: an empty group id, a non-UTF-8 file, an unknown librdkafka property, a
    Java-only property and a bad --at are each one line and exit 2 — never a traceback."""
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"orders,0,1\n\xff,0,1\n")
    props = tmp_path / "client.properties"
    props.write_text("bogus.property=1\n")
    java = tmp_path / "java.properties"
    java.write_text("ssl.truststore.location=/etc/kafka/truststore.jks\n")
    cases = [
        (["offsets", "reset", "-b", bootstrap, "--group", "", "-t", topic, "--to-earliest"], "--group ''"),
        (["offsets", "reset", "-b", bootstrap, "-g", "x", "--from-file", bad], "line 2: not UTF-8"),
        (["groups", "list", "-b", bootstrap, "--command-config", props], "bogus.property"),
        (["groups", "list", "-b", bootstrap, "--command-config", java], "ssl.ca.location"),
        (["offsets", "show", "-b", bootstrap, "-t", topic, "--at", "garbage"], "--at 'garbage'"),
        (["offsets", "show", "-b", bootstrap, "-t", topic, "--at", "0001-01-01T00:00:00Z"], "--at"),
        (["groups", "describe", "-b", bootstrap, ""], "GROUP '' is empty"),
    ]
    for args, message in cases:
        r = run_cli(capsys, *args)
        assert r.code == 2, (args, r.err)
        assert message in r.err, (args, r.err)
        assert len(r.err.strip().splitlines()) == 1, r.err


def test_export_into_missing_or_bad_directory_leaves_nothing(capsys, bootstrap, topic, unique, tmp_path):
    """Invariant: --export into a missing directory or below a file is exit 2, writes nothing
    and leaves no .tmp file."""
    g = unique("g")
    commit(bootstrap, g, {(topic, 0): 1})
    (tmp_path / "afile").write_text("x")
    for target in (tmp_path / "missing" / "p.csv", tmp_path / "afile" / "p.csv"):
        r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", g, "-t", topic,
                    "--to-earliest", "--export", target)
        assert r.code == 2 and "--export" in r.err, r.err
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(("none", "snaps"))) \
        == ["afile"]


def test_unexpected_errors_are_one_line_and_verbose_shows_the_traceback(capsys, bootstrap, monkeypatch):
    """Invariant: even a bug is one line without --verbose; --verbose shows the traceback."""
    from offsetkeeper.kafka.admin import KafkaAdmin

    def boom(*a, **k):
        raise RuntimeError("simulated bug")

    monkeypatch.setattr(KafkaAdmin, "list_groups", boom)
    r = run_cli(capsys, "groups", "list", "-b", bootstrap)
    assert r.code == 1
    assert r.err.strip() == ("error: unexpected RuntimeError: simulated bug "
                             "(run again with --verbose for the traceback)")
    r = run_cli(capsys, "--verbose", "groups", "list", "-b", bootstrap)
    assert r.code == 1 and "Traceback" in r.err


# -- item 11 ----------------------------------------------------------------------------------

def test_markup_and_control_characters_in_names_are_shown_literally(capsys, bootstrap, topic, unique):
    """Invariant: names holding Rich markup or escape sequences are rendered literally and
    escaped, never interpreted or sent raw; an --execute with them prints the undo snapshot id."""
    s = unique("")
    names = [f"[/]{s}", f"[bold red]x[/bold red]{s}", f"evil\x1b[2J\n{s}"]
    for g in names:
        commit(bootstrap, g, {(topic, 0): 2})
    r = run_cli(capsys, "groups", "list", "-b", bootstrap)
    assert r.code == 0, r.err
    assert f"[/]{s}" in r.out and f"[bold red]x[/bold red]{s}" in r.out
    assert f"evil\\x1b[2J\\n{s}" in r.out
    assert "\x1b" not in r.out
    args = [a for g in names for a in ("-g", g)]
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, *args, "-t", f"{topic}:0",
                "--to-offset", "5", "--execute")
    assert r.code == 0, r.err
    assert "snapshot taken before the change: snap-" in r.err
    assert "\x1b" not in r.out + r.err
    for g in names:
        assert committed(bootstrap, g, topic, 1) == {0: 5}


# -- item 15 ----------------------------------------------------------------------------------

def test_unreachable_broker_is_one_line_naming_the_address(capsys):
    """Invariant: an unreachable broker gives one line naming the address after a bounded
    time; librdkafka's own log lines never reach the terminal."""
    r = run_cli(capsys, "groups", "list", "-b", "127.0.0.1:1")
    assert r.code == 1
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "127.0.0.1:1" in lines[0], r.err
    proc = subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", "groups", "list", "-b",
                           "127.0.0.1:1"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert "%3|" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    # A refused connection alone now fails before librdkafka runs (issue 22 item 19): next to a
    # port that listens (and never answers), librdkafka tries 127.0.0.1:1 and logs the refusal.
    import socket

    srv = socket.create_server(("127.0.0.1", 0))
    try:
        proc = subprocess.run([sys.executable, "-m", "offsetkeeper.cli.main", "--verbose",
                               "groups", "list", "-b",
                               f"127.0.0.1:{srv.getsockname()[1]},127.0.0.1:1"],
                              capture_output=True, text=True, timeout=60)
    finally:
        srv.close()
    assert proc.returncode == 1 and "offsetkeeper.librdkafka" in proc.stderr  # only with --verbose


# -- item 17 ----------------------------------------------------------------------------------

def test_tables_on_a_narrow_terminal_keep_one_line_per_row(bootstrap, topic, unique):
    """Invariant: on a terminal narrower than the table no cell wraps: each row is one line."""
    import fcntl
    import pty
    import struct
    import termios

    g = unique("analytics-with-a-long-name")
    commit(bootstrap, g, {(topic, 0): 2, (topic, 1): 3})
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
    env = {**os.environ, "TERM": "dumb", "NO_COLOR": "1"}
    env.pop("COLUMNS", None)
    proc = subprocess.Popen([sys.executable, "-m", "offsetkeeper.cli.main", "groups", "describe",
                             g, "-b", bootstrap], stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(60)
    os.close(master)
    text = b"".join(chunks).decode()
    rows = [line for line in text.splitlines() if g in line]
    assert len(rows) == 2, text
    for p, cur in ((0, 2), (1, 3)):  # each row whole: group, topic, partition, offset
        assert any(r.split()[1:4] == [topic, str(p), str(cur)] for r in rows), text
    assert "analytics-with-a-long-name" in rows[0] and topic in rows[0]


# -- item 19 ----------------------------------------------------------------------------------

def test_negative_lag_is_shown_with_a_note(capsys, bootstrap, topic, unique):
    """Invariant: a commit beyond the log end shows its negative lag (as
    kafka-consumer-groups.sh does), with a note saying why."""
    g = unique("g")
    commit(bootstrap, g, {(topic, 0): 25})
    r = run_cli(capsys, "groups", "describe", g, "-b", bootstrap, "-o", "json")
    assert r.code == 0, r.err
    row = json.loads(r.out)[0]
    assert row["current_offset"] == 25 and row["log_end_offset"] == 20 and row["lag"] == -5
    r = run_cli(capsys, "groups", "describe", g, "-b", bootstrap)
    assert " -5 " in r.out
    assert "beyond the log end" in r.err


# -- item 20 ----------------------------------------------------------------------------------

def test_unset_variable_of_another_cluster_does_not_break_this_one(capsys, bootstrap, tmp_path, monkeypatch):
    """Invariant: ${VAR} is expanded only for the cluster a command uses."""
    monkeypatch.delenv("NO_SUCH_PASSWORD_VAR", raising=False)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"default_cluster: prod\nclusters:\n  prod:\n    bootstrap_servers: {bootstrap}\n"
                   "  dr:\n    bootstrap_servers: dr:9092\n"
                   "    properties: {sasl.password: '${NO_SUCH_PASSWORD_VAR}'}\n")
    r = run_cli(capsys, "groups", "list", "--config", cfg)
    assert r.code == 0, r.err
    r = run_cli(capsys, "groups", "list", "--config", cfg, "--cluster", "dr")
    assert r.code == 2 and "NO_SUCH_PASSWORD_VAR is not set" in r.err


# -- item 21 ----------------------------------------------------------------------------------

def test_latest_is_per_cluster_and_rollback_latest_twice_keeps_the_first(
        capsys, bootstrap, dr_bootstrap, topic, unique, tmp_path):
    """Invariant: `latest` picks a snapshot of the cluster the command talks to, never an
    automatic pre-rollback snapshot — so `snapshots rollback latest --execute` run twice leaves
    the offsets the first rollback restored."""
    store = tmp_path / "shared-snaps"
    g = unique("g")
    commit(bootstrap, g, {(topic, 0): 4, (topic, 1): 6})
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", g, "-t", topic, "--to-offset",
                "15", "--execute", "--snapshot-store", store)
    assert r.code == 0, r.err
    # A newer snapshot taken on another cluster must not become this cluster's latest.
    dr_topic = unique("dr")
    create_topic(dr_bootstrap, dr_topic, partitions=1)
    commit(dr_bootstrap, g, {(dr_topic, 0): 0})
    r = run_cli(capsys, "snapshots", "create", "-b", dr_bootstrap, "-g", g, "--store", store)
    assert r.code == 0, r.err
    for _ in range(2):
        r = run_cli(capsys, "snapshots", "rollback", "latest", "--execute", "-b", bootstrap,
                    "--store", store)
        assert r.code == 0, r.err
        assert committed(bootstrap, g, topic, 2) == {0: 4, 1: 6}
    kinds = sorted(s.origin for s in SnapshotStore(str(store)).list())
    assert kinds == ["before-reset", "before-rollback", "manual"]
    # --from-snapshot latest follows the same rule (the DR snapshot is newer but not ours).
    r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--from-snapshot", "latest",
                "--snapshot-store", store, "-o", "json")
    assert r.code == 0, r.err
    planned = {(p["topic"], p["partition"]): p["target"]
               for grp in json.loads(r.out)["groups"] for p in grp["partitions"]}
    assert planned == {(topic, 0): 4, (topic, 1): 6}


def test_rollback_refuses_a_snapshot_without_cluster_id_and_warns_on_other_servers(
        capsys, bootstrap, topic, unique, tmp_path):
    """Invariant: a snapshot without a cluster id is refused unless --allow-cluster-mismatch;
    one taken through other bootstrap servers (same id) is applied with a warning."""
    store = SnapshotStore(str(tmp_path / "s"))
    g = unique("g")
    commit(bootstrap, g, {(topic, 0): 4})
    r = run_cli(capsys, "snapshots", "create", "-b", bootstrap, "-g", g, "--store", store.url, "-o", "json")
    sid = json.loads(r.out)["id"]
    path = tmp_path / "s" / f"{sid}.json"
    doc = json.loads(path.read_text())
    doc["cluster_id"] = ""
    path.write_text(json.dumps(doc))
    commit(bootstrap, g, {(topic, 0): 9})
    r = run_cli(capsys, "snapshots", "rollback", sid, "--execute", "-b", bootstrap, "--store", store.url)
    assert r.code == 2 and "--allow-cluster-mismatch" in r.err
    assert committed(bootstrap, g, topic, 1) == {0: 9}
    doc["cluster_id"] = _cluster_id(bootstrap)
    doc["bootstrap_servers"] = "kafka-elsewhere:9092"
    path.write_text(json.dumps(doc))
    r = run_cli(capsys, "snapshots", "rollback", sid, "--execute", "-b", bootstrap, "--store", store.url)
    assert r.code == 0, r.err
    assert "warning" in r.err and "kafka-elsewhere:9092" in r.err
    assert committed(bootstrap, g, topic, 1) == {0: 4}


def _cluster_id(bootstrap: str) -> str:
    from confluent_kafka.admin import AdminClient

    client = AdminClient({"bootstrap.servers": bootstrap})
    return client.describe_cluster().result(15).cluster_id or ""


# -- item 23 ----------------------------------------------------------------------------------

def test_one_meaning_per_flag(capsys, bootstrap, topic, unique, tmp_path):
    """Invariant: a comma is part of a group name everywhere (`snapshots create -g a,b` is one
    group), `-d` is not --description, `groups delete nosuch` is exit 2 like describe, and
    `snapshots rollback --max-concurrent` defaults to 100 as reset does."""
    g = f"{unique('a')},{unique('b')}"
    commit(bootstrap, g, {(topic, 0): 1})
    r = run_cli(capsys, "snapshots", "create", "-b", bootstrap, "-g", g, "-o", "json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["groups"] == 1
    r = run_cli(capsys, "snapshots", "create", "-b", bootstrap, "-g", g, "-d", "x")
    assert r.code == 2 and "no such option '-d'" in r.err
    nosuch = unique("nosuch")
    r = run_cli(capsys, "groups", "delete", nosuch, "-b", bootstrap, "--execute")
    assert r.code == 2 and f"consumer group '{nosuch}' does not exist" in r.err
    r = run_cli(capsys, "snapshots", "rollback", "--help")
    assert "[default: 100;" in r.out.replace("\n", " ").replace("  ", " ") or "default: 100" in r.out



@pytest.fixture
def small_mounts(tmp_path):
    """A full and a read-only filesystem (tmpfs; needs root — skipped otherwise)."""
    full, ro = tmp_path / "full", tmp_path / "ro"
    full.mkdir()
    ro.mkdir()
    mounted = []
    try:
        for d, opts in ((full, "size=64k"), (ro, "ro,size=64k")):
            res = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(d)],
                                 capture_output=True)
            if res.returncode != 0:
                pytest.skip(f"cannot mount a tmpfs here: {res.stderr.decode().strip()}")
            mounted.append(d)
        try:
            with open(full / "filler", "wb", buffering=0) as f:
                while True:
                    f.write(b"x" * 4096)
        except OSError:
            pass  # the filesystem is full now
        yield full, ro
    finally:
        for d in mounted:
            subprocess.run(["umount", str(d)], capture_output=True)


def test_export_into_full_or_read_only_directory_leaves_nothing(capsys, bootstrap, topic, unique,
                                                                small_mounts):
    """Invariant: --export/--script into a full or read-only directory is one line (exit 2),
    nothing is executed, and no .tmp file is left behind."""
    full, ro = small_mounts
    g = unique("g")
    commit(bootstrap, g, {(topic, 0): 1, (topic, 1): 1})
    for flag, target in (("--export", full / "p.csv"), ("--script", ro / "r.sh"),
                         ("--export", ro / "p.csv"), ("--script", full / "r.sh")):
        r = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "-g", g, "-t", topic,
                    "--to-earliest", flag, target, "--execute")
        assert r.code == 2, (flag, target, r.err)
        assert flag in r.err and len(r.err.strip().splitlines()) == 1, r.err
        assert "Traceback" not in r.err
    assert sorted(os.listdir(full)) == ["filler"] and os.listdir(ro) == []
    assert committed(bootstrap, g, topic, 2) == {0: 1, 1: 1}
