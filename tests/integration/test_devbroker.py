"""`offsetkeeper dev-broker start|status|stop` runs and stops a real Apache Kafka (KRaft)."""

import pytest

from offsetkeeper.devbroker import free_port
from tests.cli import run_cli

pytestmark = pytest.mark.integration


def test_start_status_stop(capsys, tmp_path):
    port = free_port()
    d = tmp_path / "b"
    r = run_cli(capsys, "dev-broker", "start", "--port", port, "--data-dir", d, "-o", "json")
    try:
        assert r.code == 0, r.err
        assert r.json()["bootstrap"] == f"127.0.0.1:{port}" and r.json()["running"]
        r = run_cli(capsys, "groups", "list", "-b", f"127.0.0.1:{port}", "-o", "json")
        assert r.code == 0 and r.json() == []
        r = run_cli(capsys, "dev-broker", "status", "--data-dir", d, "-o", "json")
        assert r.code == 0 and r.json()["running"]
    finally:
        r = run_cli(capsys, "dev-broker", "stop", "--data-dir", d, "-o", "json")
    assert r.code == 0 and not r.json()["running"]
    r = run_cli(capsys, "dev-broker", "status", "--data-dir", d)
    assert r.code == 1


def test_status_and_stop_without_data_dir_list_the_running_ones(capsys, tmp_path, monkeypatch):
    """Invariant (issue 31 item 10): `dev-broker status`/`stop` without --data-dir never imply
    that no dev-broker runs when one runs elsewhere: they say which directory they looked in
    and list the running ones (data directory, bootstrap) to pass as --data-dir; `stop` stops
    none of them; with none running anywhere they say where they looked."""
    port = free_port()
    d = tmp_path / "elsewhere"
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))  # an empty default directory
    r = run_cli(capsys, "dev-broker", "start", "--port", port, "--data-dir", d)
    assert r.code == 0, r.err
    try:
        r = run_cli(capsys, "dev-broker", "status")
        err = r.err.replace("\n", " ")
        assert r.code == 1 and str(tmp_path / "xdg") in err, r.err
        assert str(d.resolve()) in err and f"127.0.0.1:{port}" in err, r.err
        r = run_cli(capsys, "dev-broker", "stop")
        assert r.code == 0 and str(d.resolve()) in r.err.replace("\n", " "), r.err
        r = run_cli(capsys, "dev-broker", "status", "--data-dir", d, "-o", "json")
        assert r.code == 0 and r.json()["running"]  # `stop` without --data-dir left it alone
    finally:
        run_cli(capsys, "dev-broker", "stop", "--data-dir", d)
    r = run_cli(capsys, "dev-broker", "status")
    assert r.code == 1 and str(d.resolve()) not in r.err.replace("\n", " ")
    assert str(tmp_path / "xdg") in r.err.replace("\n", " ")


def test_bad_port(capsys, tmp_path):
    r = run_cli(capsys, "dev-broker", "start", "--port", "70000", "--data-dir", tmp_path)
    assert r.code == 2 and "--port 70000" in r.err


def test_restart_keeps_the_cluster_and_a_different_request_is_refused(capsys, tmp_path):
    """Invariant: stop/start from one data directory brings the same cluster back (its id and
    topics); asking a running cluster for another port or shape is exit 2 naming what runs
    (issue 22.16: it used to print the running broker, exit 0); a new directory is a new
    cluster with its own id; Kafka's own tools run from the same release."""
    from tests.kafkatools import create_topic

    d = tmp_path / "keep"
    port = free_port()
    r = run_cli(capsys, "dev-broker", "start", "--port", port, "--data-dir", d, "-o", "json")
    assert r.code == 0, r.err
    first = r.json()
    try:
        create_topic(first["bootstrap"], "kept", 2)
        other = free_port()
        r = run_cli(capsys, "dev-broker", "start", "--port", other, "--data-dir", d)
        assert r.code == 2 and first["bootstrap"] in r.err and "already runs" in r.err
        r = run_cli(capsys, "dev-broker", "start", "--port", port, "--brokers", "3",
                    "--data-dir", d)
        assert r.code == 2 and "already runs" in r.err
        r = run_cli(capsys, "dev-broker", "start", "--port", port, "--data-dir", d, "-o", "json")
        assert r.code == 0 and r.json()["cluster_id"] == first["cluster_id"]  # the same, running
        r = run_cli(capsys, "dev-broker", "stop", "--data-dir", d, "-o", "json")
        assert r.code == 0
        r = run_cli(capsys, "dev-broker", "start", "--port", port, "--data-dir", d, "-o", "json")
        assert r.code == 0 and r.json()["cluster_id"] == first["cluster_id"]
        capsys.readouterr()
        from offsetkeeper import devbroker

        code = devbroker.run_kafka_tool("kafka-consumer-groups",
                                        ["--bootstrap-server", first["bootstrap"], "--list"])
        assert code == 0
        r = run_cli(capsys, "offsets", "show", "-t", "kept", "-b", first["bootstrap"], "-o", "json")
        assert r.code == 0 and len(r.json()) == 2, r.err
        r = run_cli(capsys, "dev-broker", "start", "--port", port, "--brokers", "3",
                    "--data-dir", d)
        assert r.code == 2
    finally:
        run_cli(capsys, "dev-broker", "stop", "--data-dir", d)
    r = run_cli(capsys, "dev-broker", "start", "--port", port, "--brokers", "2",
                "--data-dir", tmp_path / "two")
    assert r.code == 2 and "--brokers 2" in r.err
    r = run_cli(capsys, "dev-broker", "kafka-tool", "nosuch")
    assert r.code == 2 and "unknown Kafka tool 'nosuch'" in r.err


def test_readme_topic_produce_consume_with_kafka_tools(bootstrap, unique):
    """Invariant: the README's way to create a topic, produce test data and read it on the local
    broker works as written (issue 22 item 24): 1000 records in, 1000 out, the group committed."""
    import subprocess
    import sys

    from kafkatools import committed

    topic, group = unique("tools"), unique("tools-g")
    cli = [sys.executable, "-m", "offsetkeeper.cli.main", "dev-broker", "kafka-tool"]
    b = ["--bootstrap-server", bootstrap]
    r = subprocess.run([*cli, "kafka-topics", *b, "--create", "--topic", topic, "--partitions", "3"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    records = "".join(f"{i}\n" for i in range(1, 1001))
    r = subprocess.run([*cli, "kafka-console-producer", *b, "--topic", topic], input=records,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([*cli, "kafka-console-consumer", *b, "--topic", topic, "--group", group,
                        "--from-beginning", "--max-messages", "1000"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert sorted(int(x) for x in r.stdout.split()) == list(range(1, 1001))
    assert sum(committed(bootstrap, group, topic, 3).values()) == 1000


def test_a_secure_format_keeps_the_scram_password_off_the_command_line(tmp_path, monkeypatch):
    """Invariant (issue 31 K): provisioning the secured cluster's SCRAM user never puts the
    admin's password on a command line (anyone on the machine reads those in `ps`): the
    storage format gets it from a mode-600 Java argument file, removed afterwards, and the
    format works (the node's metadata is written)."""
    import subprocess

    from offsetkeeper.devbroker import cluster
    from offsetkeeper.devbroker.security import prepare_security

    d = tmp_path / "sec"
    d.mkdir()
    sec = prepare_security(d)
    node = d / "node-1"
    node.mkdir()
    props = node / "server.properties"
    props.write_text(cluster._server_properties(1, node, [free_port()], [free_port()], sec))
    seen: list[list[str]] = []
    files: list[tuple[str, int]] = []
    real_run = subprocess.run

    def recording_run(cmd, *a, **kw):
        import os
        import stat
        from pathlib import Path

        seen.append(list(cmd))
        for arg in cmd:
            if arg.startswith("@"):
                f = Path(arg[1:])
                files.append((f.read_text(), stat.S_IMODE(os.stat(f).st_mode)))
        return real_run(cmd, *a, **kw)
    monkeypatch.setattr(cluster.subprocess, "run", recording_run)
    cluster._format(node, cluster._cluster_id(), props, sec)
    assert seen and all(sec.admin_password not in " ".join(cmd) for cmd in seen)
    assert files and sec.admin_password in files[0][0] and files[0][1] == 0o600
    assert not (node / ".format-args").exists()
    assert any(node.rglob("meta.properties"))


def test_a_failed_demo_keeps_its_logs_and_says_where(capsys, monkeypatch):
    """Invariant (issue 31 item 8): when a demo part fails, the demo's data directory with the
    brokers' logs is kept and its path printed (the log it named had been deleted with the
    temporary directory); the brokers are stopped all the same."""
    import re
    from pathlib import Path

    from offsetkeeper import demo
    from offsetkeeper.errors import OffsetkeeperError

    def failing(ctx):
        raise OffsetkeeperError("this part failed on purpose")

    monkeypatch.setattr(demo, "PARTS", [("a part that fails", failing, False)])
    with pytest.raises(OffsetkeeperError, match="on purpose"):
        demo.run_demo(spark=False)
    out = capsys.readouterr().out.replace("\n", " ")
    m = re.search(r"kept in (\S+) ", out)
    assert m, out
    work = Path(m.group(1))
    try:
        assert (work / "prod" / "node-1" / "server.log").stat().st_size > 0
        from offsetkeeper.devbroker import status

        assert not status(work / "prod").running
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
