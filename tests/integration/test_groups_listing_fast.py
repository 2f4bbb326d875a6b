"""The facts `groups list` builds on to skip Kafka's Java client (issue 32, goal 7), on Apache
Kafka: librdkafka's typed listing says of classic and consumer groups what the Java client
says, and its older listing names the groups the typed one leaves out (share, streams)."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer

from offsetkeeper.groups.listing import GroupRow, librdkafka_rows, list_typed_groups
from offsetkeeper.kafka import jvm
from offsetkeeper.kafka.group_types import state_key
from tests.cli import MODULES_PROBE
from tests.integration.test_share_streams_groups import share, streams, wait_until  # noqa: F401
from tests.kafkatools import commit, create_topic

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not jvm.available(), reason="the JVM admin helper is not built "
                                 "(scripts/setup.sh)")]


def test_librdkafka_rows_equal_the_java_listing(bootstrap, admin, unique):
    """Classic (offsets only) and consumer-protocol groups, running and closed: the rows built
    from librdkafka alone equal Kafka's Java client's, protocol included."""
    topic, classic, consumer = unique("t"), unique("classic"), unique("consumer")
    create_topic(bootstrap, topic, 2)
    commit(bootstrap, classic, {(topic, 0): 0})
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": consumer,
                  "group.protocol": "consumer", "enable.auto.commit": False})
    try:
        c.subscribe([topic])
        wait_until("an assignment", lambda: c.poll(0.2) is None and c.assignment())

        def same(expect_state: str) -> bool:
            basic = [g for g in admin.list_groups() if g.group_id in (classic, consumer)]
            java = {g.group_id: g for g in admin.list_all_groups()}
            fast = {r.group_id: r for r in librdkafka_rows(basic)}
            want = {g: GroupRow(g, state_key(java[g].state), state_key(java[g].group_type),
                                java[g].protocol) for g in (classic, consumer)}
            return fast == want and fast[consumer].state == expect_state

        wait_until("a stable consumer group in both listings", lambda: same("stable"))
    finally:
        c.close()
    wait_until("an empty consumer group in both listings", lambda: same("empty"))
    assert same("empty")


def test_other_group_types_are_seen_without_java(admin, share, streams):  # noqa: F811
    """librdkafka's typed listing leaves share and streams groups out; its older listing names
    them, so `groups list` knows to ask the Java client, which then types them."""
    typed = {g.group_id for g in admin.list_groups()}
    every = admin.all_group_ids()
    for g in (share["group"], streams["group"]):
        assert g not in typed and g in every
    rows, note = list_typed_groups(admin, types={"share", "streams"})
    assert note is None
    got = {r.group_id: r.group_type for r in rows}
    assert got[share["group"]] == "share" and got[streams["group"]] == "streams"




def test_everyday_commands_write_to_a_pipe_without_rich_or_pydantic(bootstrap, unique, tmp_path):
    """Invariant (issue 32, goal 7): against a cluster, `groups list`, `groups describe G` and
    `offsets reset` (a dry run, then --execute: snapshot to a local directory, plan and report
    tables, notes; neither imports fsspec) with their output to a pipe and no config file import neither
    Rich nor pydantic nor YAML, and still print every row; the reset is read back by an
    independent client."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    from platformdirs import user_cache_dir

    from tests.kafkatools import committed, produce_n

    topic, group = unique("fastcli"), unique("fastcli-g")
    create_topic(bootstrap, topic, 2)
    produce_n(bootstrap, topic, 2, 5)
    commit(bootstrap, group, {(topic, 0): 0, (topic, 1): 0})
    env = {**{k: v for k, v in os.environ.items()
              if k not in ("OFFSETKEEPER_CONFIG", "FORCE_COLOR", "TTY_COMPATIBLE")},
           "HOME": str(tmp_path), "XDG_CACHE_HOME": str(Path(user_cache_dir("offsetkeeper")).parent)}

    def run(*argv: str, also: frozenset = frozenset()) -> str:
        proc = subprocess.run([sys.executable, "-c", MODULES_PROBE, *argv, "-b", bootstrap],
                              capture_output=True, text=True, timeout=120, env=env,
                              stdin=subprocess.DEVNULL)
        code, mods = json.loads(proc.stderr.strip().splitlines()[-1])
        assert code == 0, proc.stderr[-2000:]
        heavy = set(mods) & {"rich", "pydantic", "pydantic_core", "yaml", "pyspark", "pyarrow",
                             *also}
        assert not heavy, (argv, heavy)
        return proc.stdout

    listed = run("groups", "list")
    assert listed.startswith("GROUP-ID ") and f"\n{group} " in listed
    described = run("groups", "describe", group)
    assert described.startswith("GROUP ") and described.count(f"\n{group} ") == 2
    # a dry run opens no snapshot store (nor fsspec)
    dry = run("offsets", "reset", "--group", group, "--topic", topic, "--to-offset", "3",
              also=frozenset({"fsspec"}))
    assert dry.startswith("Reset plan (") and dry.count(f"\n{group} ") == 2
    # nor does saving the snapshot to a local directory
    reset = run("offsets", "reset", "--group", group, "--topic", topic, "--to-offset", "3",
                "--execute", "--snapshot-store", str(tmp_path / "snaps"),
                also=frozenset({"fsspec"}))
    assert reset.startswith("GROUP ") and "\nExecution report\n" in reset
    assert reset.count(f"\n{group} ") == 3  # two planned partitions, one report row
    assert committed(bootstrap, group, topic, 2) == {0: 3, 1: 3}
