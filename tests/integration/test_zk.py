"""ZooKeeper-era offsets against a real ZooKeeper server: export in the reset CSV format, and
migration through the one reset executor (clamping, snapshot), refused while old consumers live."""

from __future__ import annotations

import csv
import io
import uuid

import pytest

from cli import run_cli
from kafkatools import committed, create_topic, produce_n

pytestmark = pytest.mark.integration

ODD = 'pay,"ments"'


@pytest.fixture
def zk(zookeeper_hosts):
    from kazoo.client import KazooClient

    client = KazooClient(hosts=zookeeper_hosts)
    client.start(timeout=20)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@pytest.fixture
def chroot():
    return f"/kafka-{uuid.uuid4().hex[:8]}"


def put(zk, chroot, group, topic, partition, value: bytes):
    zk.create(f"{chroot}/consumers/{group}/offsets/{topic}/{partition}", value, makepath=True)


def test_export_csv_json_table(zk, zookeeper_hosts, chroot, capsys):
    put(zk, chroot, ODD, "orders", 0, b"42")
    put(zk, chroot, ODD, "orders", 1, b"7")
    put(zk, chroot, "analytics", "clicks", 0, b"1000")
    zk.ensure_path(f"{chroot}/consumers/no-offsets-yet/ids")  # a group that never committed
    address = f"{zookeeper_hosts}{chroot}"
    r = run_cli(capsys, "zk", "export", "--zookeeper", address, "-o", "csv")
    assert r.code == 0, r.err
    assert list(csv.reader(io.StringIO(r.out))) == [
        ["analytics", "clicks", "0", "1000"], [ODD, "orders", "0", "42"], [ODD, "orders", "1", "7"]]
    assert r.out.splitlines()[1] == '"pay,""ments""",orders,0,42'  # RFC 4180 quoting
    r = run_cli(capsys, "zk", "export", "-z", address, "-g", "analytics", "-o", "json")
    assert r.json() == [{"group": "analytics", "topic": "clicks", "partition": 0, "offset": 1000}]
    r = run_cli(capsys, "zk", "export", "-z", address, "-g", ODD)
    assert r.code == 0 and "orders" in r.out


def test_export_errors(zk, zookeeper_hosts, chroot, capsys):
    put(zk, chroot, "g", "orders", 0, b"12")
    put(zk, chroot, "g", "orders", 1, b"not-a-number")
    address = f"{zookeeper_hosts}{chroot}"
    r = run_cli(capsys, "zk", "export", "-z", address, "-o", "csv")
    assert r.code == 1 and r.out == "g,orders,0,12\n"
    assert "orders/1" in r.err and "not-a-number" in r.err
    r = run_cli(capsys, "zk", "export", "-z", address, "-g", "missing")
    assert r.code == 2 and "'missing'" in r.err
    r = run_cli(capsys, "zk", "export", "-z", f"{zookeeper_hosts}/empty-{uuid.uuid4().hex[:6]}")
    assert r.code == 2 and "no consumer offsets" in r.err
    r = run_cli(capsys, "zk", "export", "-z", "localhost")
    assert r.code == 2 and "HOST:PORT" in r.err


def test_migrate_clamps_snapshots_and_applies(zk, zookeeper_hosts, chroot, bootstrap, unique, tmp_path, capsys):
    topic, group = unique("zk-orders"), unique("legacy")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 10)
    put(zk, chroot, group, topic, 0, b"4")
    put(zk, chroot, group, topic, 1, b"50")  # beyond the log end (10): clamped
    zk.ensure_path(f"{chroot}/consumers/{group}/ids")  # the old consumers are gone
    args = ["offsets", "reset", "--from-zookeeper", f"{zookeeper_hosts}{chroot}", "-g", group,
            "-b", bootstrap, "--snapshot-store", str(tmp_path / "snaps")]
    r = run_cli(capsys, *args)
    assert r.code == 0, r.err
    assert "clamped to log end (asked 50)" in r.out
    assert committed(bootstrap, group, topic, 2) == {0: -1001, 1: -1001}  # dry run
    r = run_cli(capsys, *args, "--execute")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 2) == {0: 4, 1: 10}
    assert "snapshot taken" in r.out + r.err
    assert any((tmp_path / "snaps").rglob("*.json"))


def test_migrate_refuses_while_old_consumers_live(zk, zookeeper_hosts, chroot, bootstrap, unique, capsys):
    """An ephemeral node under /consumers/<group>/ids means an old consumer is alive and would keep
    committing to ZooKeeper: the migration must refuse and change nothing."""
    from kazoo.client import KazooClient

    topic, group = unique("zk-live"), unique("legacy-live")
    create_topic(bootstrap, topic, 1)
    produce_n(bootstrap, topic, 1, 5)
    put(zk, chroot, group, topic, 0, b"3")
    owner = KazooClient(hosts=zookeeper_hosts)
    owner.start(timeout=20)
    try:
        owner.create(f"{chroot}/consumers/{group}/ids/{group}_host-1", b"{}", ephemeral=True, makepath=True)
        r = run_cli(capsys, "offsets", "reset", "--from-zookeeper", f"{zookeeper_hosts}{chroot}", "-g", group,
                    "-b", bootstrap, "--execute", "--no-snapshot")
        assert r.code == 1
        assert group in r.err and "live ZooKeeper consumer" in r.err
        assert committed(bootstrap, group, topic, 1) == {0: -1001}
    finally:
        owner.stop()
        owner.close()
    # Once the old consumer's session ended, the migration goes through.
    r = run_cli(capsys, "offsets", "reset", "--from-zookeeper", f"{zookeeper_hosts}{chroot}", "-g", group,
                "-b", bootstrap, "--execute", "--no-snapshot")
    assert r.code == 0, r.err
    assert committed(bootstrap, group, topic, 1) == {0: 3}


def test_migrate_needs_a_group(zookeeper_hosts, bootstrap, capsys):
    r = run_cli(capsys, "offsets", "reset", "--from-zookeeper", zookeeper_hosts, "--all-groups", "-b", bootstrap)
    assert r.code == 2 and "--group" in r.err


def test_a_node_of_100k_digits_is_one_problem_not_a_failed_export(zk, zookeeper_hosts, chroot,
                                                                  bootstrap, unique, capsys):
    """Invariant (issue 31 I): a ZooKeeper offset node holding a 100,000-digit number (or a
    partition node named by one) is refused per node, with a message that says how many digits
    and never echoes them; the other nodes are still exported, and --from-zookeeper refuses
    with that one line (exit 1), never `unexpected ValueError`."""
    put(zk, chroot, "g", "orders", 0, b"12")
    put(zk, chroot, "g", "orders", 1, b"9" * 100_000)
    put(zk, chroot, "g", "orders", "1" * 40, b"5")
    address = f"{zookeeper_hosts}{chroot}"
    r = run_cli(capsys, "zk", "export", "-z", address, "-o", "csv")
    assert r.code == 1 and r.out == "g,orders,0,12\n", r.err
    assert "100000-digit number" in r.err and "9" * 50 not in r.err
    assert "not a partition number" in r.err and "unexpected" not in r.err
    t = unique("zk")
    create_topic(bootstrap, t, 2)
    r = run_cli(capsys, "offsets", "reset", "-g", "g", "--all-topics", "--from-zookeeper", address,
                "-b", bootstrap)
    assert r.code in (1, 2) and "unexpected" not in r.err and "9" * 50 not in r.err, r.err
    assert "digit" in r.err or "partition number" in r.err
