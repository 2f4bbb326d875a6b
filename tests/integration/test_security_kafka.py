"""Every capability against Apache Kafka with SASL_SSL (SCRAM-SHA-512, a PEM CA) and ACLs.

The cluster is the session's `secure_cluster` (StandardAuthorizer, no ACL = denied). Each
capability runs with the admin's client properties given two ways: `--command-config FILE` and
a YAML `--config` whose cluster `properties:` take the password from the environment. The
password must never show: not on stdout/stderr, not in log records, not in any file a command
wrote, not in Spark's configuration. A principal with only some ACLs (`alice-...`) gets one line
naming the resource and the operation it lacks, and nothing is changed for what it may not touch.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from offsetkeeper.config import load_config_file, load_properties_file
from offsetkeeper.kafka.connect import resolve_connection
from tests.cli import run_cli

pytestmark = pytest.mark.integration

PASSWORD_ENV = "OK_TEST_SECURE_PASSWORD"
MODES = ["command-config", "yaml"]


@dataclass(frozen=True)
class Secure:
    bootstrap: str
    admin_props: Path          # client.properties of the super user (holds the password)
    password: str              # the admin's password: must never be shown
    conf: dict                 # librdkafka conf of the admin (with bootstrap.servers)
    yaml: Path                 # a config file naming the cluster `secure`; password from $ENV
    empty_yaml: Path

    def admin(self) -> AdminClient:
        return AdminClient(self.conf)


@pytest.fixture(scope="module")
def sec(secure_cluster, tmp_path_factory) -> Secure:
    props = Path(secure_cluster.command_config)
    conf = load_properties_file(props)
    d = tmp_path_factory.mktemp("secure-cfg")
    yaml = d / "config.yaml"
    yaml.write_text(
        "default_cluster: secure\n"
        "clusters:\n"
        "  secure:\n"
        f"    bootstrap_servers: {secure_cluster.bootstrap}\n"
        "    properties:\n"
        f"      security.protocol: {conf['security.protocol']}\n"
        f"      sasl.mechanism: {conf['sasl.mechanism']}\n"
        f"      sasl.username: {conf['sasl.username']}\n"
        f"      sasl.password: ${{{PASSWORD_ENV}}}\n"
        f"      ssl.ca.location: {conf['ssl.ca.location']}\n")
    empty = d / "empty.yaml"
    empty.write_text("{}\n")
    return Secure(secure_cluster.bootstrap, props, conf["sasl.password"],
                  {**conf, "bootstrap.servers": secure_cluster.bootstrap}, yaml, empty)


@pytest.fixture
def env(sec, monkeypatch, tmp_path):
    """The password in the environment (for the YAML config), snapshots in this test's tmp."""
    monkeypatch.setenv(PASSWORD_ENV, sec.password)
    monkeypatch.setenv("OFFSETKEEPER_SNAPSHOT_STORE", str(tmp_path / "snapshots"))
    monkeypatch.delenv("OFFSETKEEPER_BOOTSTRAP_SERVER", raising=False)
    return tmp_path


def conn_args(sec: Secure, mode: str) -> list[str]:
    if mode == "command-config":
        return ["-b", sec.bootstrap, "--command-config", str(sec.admin_props),
                "--config", str(sec.empty_yaml)]
    return ["--config", str(sec.yaml), "--cluster", "secure"]


# -- helpers (as the admin, with plain confluent-kafka) -------------------------------------------
def create_topic(sec: Secure, name: str, partitions: int = 2) -> None:
    a = sec.admin()
    for f in a.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        t = a.list_topics(name, timeout=5).topics.get(name)
        if t is not None and t.error is None and len(t.partitions) == partitions:
            return
        time.sleep(0.1)
    raise AssertionError(f"topic {name} did not appear")


def produce_n(sec: Secure, topic: str, partitions: int, n: int) -> None:
    p = Producer({**sec.conf, "linger.ms": 5})
    for part in range(partitions):
        for i in range(n):
            p.produce(topic, key=f"k{i}".encode(), value=f"v{part}-{i}".encode(), partition=part)
    assert p.flush(30) == 0


def commit(sec: Secure, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Commit offsets for a group without joining it; every partition must succeed (a topic
    just created may not be known to the coordinator yet: retried)."""
    a = sec.admin()
    tps = [CkTP(t, p, o) for (t, p), o in offsets.items()]
    deadline = time.monotonic() + 20
    while True:
        res = a.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])[group]
        errors = [tp.error for tp in res.result(15).topic_partitions if tp.error]
        if not errors:
            return
        assert time.monotonic() < deadline, errors
        time.sleep(0.3)


def committed(sec: Secure, group: str) -> dict[tuple[str, int], int]:
    a = sec.admin()  # kept referenced until the answer came: dropping it cancels the request
    res = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(15)
    return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.offset >= 0}


def assert_secret_absent(secret: str, *texts: str, roots: tuple[Path, ...] = ()) -> None:
    for i, t in enumerate(texts):
        at = t.find(secret)
        assert at < 0, f"password in text #{i}: ...{t[max(0, at - 300):at]}<PASSWORD>"
    for root in roots:
        for f in Path(root).rglob("*"):
            if f.is_file():
                data = f.read_bytes()
                if f.suffix == ".zstd":  # Spark's event logs are compressed by default
                    import pyarrow as pa

                    with pa.input_stream(pa.py_buffer(data), compression="zstd") as z:
                        data = z.read()
                assert secret.encode() not in data, f"password written to {f}"


def one_error_line(err: str, needle: str) -> str:
    lines = [ln for ln in err.splitlines() if needle in ln]
    assert len(lines) == 1, err
    return lines[0]


# -- the cluster itself ---------------------------------------------------------------------------
def test_admin_connects_and_bad_credentials_fail_in_one_line(sec, env, capsys, caplog,
                                                             tmp_path_factory):
    inputs = tmp_path_factory.mktemp("inputs")  # files holding passwords: not scanned
    caplog.set_level(logging.DEBUG)
    r = run_cli(capsys, "groups", "list", *conn_args(sec, "command-config"))
    assert r.code == 0, r.err

    bad = inputs / "bad.properties"
    bad.write_text(sec.admin_props.read_text().replace(sec.password, "not-the-password"))
    t0 = time.monotonic()
    r = run_cli(capsys, "groups", "list", "-b", sec.bootstrap, "--command-config", bad,
                "--config", sec.empty_yaml)
    assert r.code == 1 and r.out == ""
    line = one_error_line(r.err, "authentication failed")
    assert r.err.strip() == line and sec.bootstrap in line and "sasl.password" in line
    assert time.monotonic() - t0 < 60  # not a hang (the probe answers as soon as it is refused)

    # the YAML way, with the wrong password from the environment
    env_bad = inputs / "bad.yaml"
    env_bad.write_text(sec.yaml.read_text())
    import os
    os.environ[PASSWORD_ENV] = "also-wrong"
    r = run_cli(capsys, "groups", "list", "--config", env_bad, "--cluster", "secure")
    os.environ[PASSWORD_ENV] = sec.password
    assert r.code == 1 and "authentication failed" in r.err and len(r.err.strip().splitlines()) == 1

    # a client that does not trust the cluster's CA: the TLS handshake is refused, in one line
    noca = inputs / "noca.properties"
    noca.write_text("".join(ln + "\n" for ln in sec.admin_props.read_text().splitlines()
                            if not ln.startswith("ssl.ca.location")))
    r = run_cli(capsys, "groups", "list", "-b", sec.bootstrap, "--command-config", noca,
                "--config", sec.empty_yaml)
    assert r.code == 1 and "TLS failed" in r.err and "certificate verify failed" in r.err
    assert len(r.err.strip().splitlines()) == 1
    assert_secret_absent(sec.password, r.out, r.err, caplog.text, roots=(env,))


# -- every capability as the admin, both ways of giving the credentials ----------------------------
@pytest.mark.parametrize("mode", MODES)
def test_inspect_reset_snapshots_and_rollback(sec, env, mode, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    topic, group = f"sec-t-{uuid.uuid4().hex[:8]}", f"sec-g-{uuid.uuid4().hex[:8]}"
    create_topic(sec, topic, 2)
    produce_n(sec, topic, 2, 10)
    commit(sec, group, {(topic, 0): 5, (topic, 1): 7})
    c = conn_args(sec, mode)
    outs = []

    r = run_cli(capsys, "groups", "list", *c, "-o", "json")
    assert r.code == 0, r.err
    assert group in [g["group_id"] for g in r.json()]
    outs.append(r)
    r = run_cli(capsys, "groups", "describe", group, *c, "-o", "json")
    assert r.code == 0, r.err
    assert {(x["partition"], x["current_offset"], x["log_end_offset"]) for x in r.json()} == \
        {(0, 5, 10), (1, 7, 10)}
    outs.append(r)
    r = run_cli(capsys, "--verbose", "groups", "describe", group, "--state", *c)
    assert r.code == 0 and "empty" in r.out, r.err
    outs.append(r)

    r = run_cli(capsys, "snapshots", "create", "-g", group, "--description", "manual", *c)
    assert r.code == 0, r.err
    outs.append(r)
    r = run_cli(capsys, "snapshots", "list", "--config", str(sec.yaml), "-o", "json")
    assert r.code == 0 and any(s.get("description") == "manual" for s in r.json()), r.out
    outs.append(r)

    r = run_cli(capsys, "offsets", "reset", "--group", group, "--topic", topic, "--to-earliest",
                "--execute", *c)
    assert r.code == 0, r.err
    assert committed(sec, group) == {(topic, 0): 0, (topic, 1): 0}
    snap = r.err.split("snapshot taken before the change: ", 1)[1].split()[0]
    outs.append(r)

    r = run_cli(capsys, "snapshots", "rollback", snap, "--execute", *c)
    assert r.code == 0, r.err
    assert committed(sec, group) == {(topic, 0): 5, (topic, 1): 7}
    outs.append(r)
    assert_secret_absent(sec.password, *(x.out + x.err for x in outs), caplog.text, roots=(env,))


@pytest.mark.parametrize("mode", MODES)
def test_history_record_and_lag_status(sec, env, mode, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    topic, group = f"sec-h-{uuid.uuid4().hex[:8]}", f"sec-hg-{uuid.uuid4().hex[:8]}"
    create_topic(sec, topic, 1)
    produce_n(sec, topic, 1, 6)
    commit(sec, group, {(topic, 0): 2})
    store = env / "history.db"
    outs = []
    for _ in range(2):
        r = run_cli(capsys, "history", "record", "-g", group, "--once", "--store", store,
                    *conn_args(sec, mode))
        assert r.code == 0, r.err
        outs.append(r)
    r = run_cli(capsys, "lag", "status", group, "--store", store, "-o", "json")
    assert r.code == 3, r.err  # two samples of a lagging group: no verdict yet (exit 3)
    rows = r.json()
    assert rows and rows[0]["group"] == group and rows[0]["total_lag"] == 4
    assert rows[0]["status"] == "INCOMPLETE"
    outs.append(r)
    assert_secret_absent(sec.password, *(x.out + x.err for x in outs), caplog.text, roots=(env,))


def test_exporter_serves_metrics_from_the_secured_cluster(sec, env, caplog):
    from offsetkeeper.history.sample_cycle import SampleScope
    from offsetkeeper.history.sampler import SamplerConfig
    from offsetkeeper.history.service import record

    caplog.set_level(logging.DEBUG)
    topic, group = f"sec-x-{uuid.uuid4().hex[:8]}", f"sec-xg-{uuid.uuid4().hex[:8]}"
    create_topic(sec, topic, 1)
    produce_n(sec, topic, 1, 5)
    commit(sec, group, {(topic, 0): 1})
    conn = resolve_connection(cluster="secure", config=load_config_file(sec.yaml))
    servers: list = []
    stop = threading.Event()
    cfg = SamplerConfig(scope=SampleScope(groups=(group,)), interval_ms=300, window=3)
    t = threading.Thread(target=record, args=(conn, "memory://", cfg),
                         kwargs={"listen": "127.0.0.1:0", "stop": stop, "on_ready": servers.append})
    t.start()
    text = ""
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if servers:
                url = f"http://127.0.0.1:{servers[0].port}/metrics"
                text = urllib.request.urlopen(url, timeout=5).read().decode()
                if f'group="{group}",topic="{topic}"' in text:
                    break
            time.sleep(0.2)
    finally:
        stop.set()
        t.join(30)
    lag = [ln for ln in text.splitlines() if ln.startswith("kafka_consumergroup_group_lag{")
           and f'group="{group}"' in ln]
    assert lag and float(lag[0].rsplit(" ", 1)[1]) == 4.0, text[-2000:]
    assert_secret_absent(sec.password, text, caplog.text, repr(conn))


def test_consumer_library_reads_and_commits(sec, caplog):
    from offsetkeeper.consumer import CommitPolicy, OffsetConsumer

    caplog.set_level(logging.DEBUG)
    topic, group = f"sec-c-{uuid.uuid4().hex[:8]}", f"sec-cg-{uuid.uuid4().hex[:8]}"
    create_topic(sec, topic, 1)
    produce_n(sec, topic, 1, 8)
    conf = {k: v for k, v in sec.conf.items()}
    conf["group.id"] = group
    got = []
    with OffsetConsumer(conf, [topic], policy=CommitPolicy.batch(),
                        auto_offset_reset="earliest") as c:
        deadline = time.monotonic() + 60
        for msg in c.records(timeout=0.5):
            got.append(msg.value())
            if len(got) == 8 or time.monotonic() > deadline:
                break
    assert len(got) == 8
    # a record counts as processed when the loop asks for the next one: the 8th was not
    assert committed(sec, group) == {(topic, 0): 7}

    # a wrong password is one error from the first poll, not an empty stream forever
    bad = {**conf, "sasl.password": "not-the-password"}
    with pytest.raises(Exception) as exc, OffsetConsumer(bad, [topic], live_reset=False) as c:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            c.poll(0.5)
    assert "authentication failed" in str(exc.value)
    assert_secret_absent(sec.password, str(exc.value), caplog.text)


# -- a principal with only some ACLs --------------------------------------------------------------
@dataclass(frozen=True)
class Alice:
    user: str
    props: Path
    topic: str          # Read (and so Describe) on it
    topic_ro: str       # Describe only
    g_read: str         # Read on the group
    g_desc: str         # Describe only
    g_none: str         # no ACL at all


@pytest.fixture(scope="module")
def alice(sec, tmp_path_factory) -> Alice:
    tag = uuid.uuid4().hex[:8]
    a = Alice(f"alice-{tag}", tmp_path_factory.mktemp("alice") / "alice.properties",
              f"sec-a-{tag}", f"sec-aro-{tag}", f"ga-read-{tag}", f"ga-desc-{tag}",
              f"ga-none-{tag}")
    for t in (a.topic, a.topic_ro):
        create_topic(sec, t, 2)
        produce_n(sec, t, 2, 10)
    for g in (a.g_read, a.g_desc, a.g_none):
        commit(sec, g, {(a.topic, 0): 5, (a.topic, 1): 5, (a.topic_ro, 0): 3})
    admin = sec.admin()
    cred = UserScramCredentialUpsertion(
        a.user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"alice-pw-" + tag.encode())
    for f in admin.alter_user_scram_credentials([cred]).values():
        f.result(30)

    def allow(rt, name, op):
        return AclBinding(rt, name, ResourcePatternType.LITERAL, f"User:{a.user}", "*", op,
                          AclPermissionType.ALLOW)

    acls = [allow(ResourceType.TOPIC, a.topic, AclOperation.READ),
            allow(ResourceType.TOPIC, a.topic_ro, AclOperation.DESCRIBE),
            allow(ResourceType.GROUP, a.g_read, AclOperation.READ),
            allow(ResourceType.GROUP, a.g_desc, AclOperation.DESCRIBE)]
    for f in admin.create_acls(acls).values():
        f.result(30)
    lines = [ln for ln in sec.admin_props.read_text().splitlines()
             if not ln.startswith(("sasl.username", "sasl.password"))]
    a.props.write_text("\n".join([*lines, f"sasl.username={a.user}",
                                   f"sasl.password=alice-pw-{tag}"]) + "\n")
    # the ACLs reach the authorizer through the metadata log: wait until alice sees her group
    deadline = time.monotonic() + 30
    conf = {**load_properties_file(a.props), "bootstrap.servers": sec.bootstrap}
    while time.monotonic() < deadline:
        try:
            client = AdminClient(conf)
            res = client.describe_consumer_groups([a.g_read])[a.g_read].result(10)
            if res is not None:
                break
        except Exception:  # not yet authorized
            time.sleep(0.3)
    return a


def alice_args(sec: Secure, a: Alice) -> list[str]:
    return ["-b", sec.bootstrap, "--command-config", str(a.props), "--config", str(sec.empty_yaml)]


def test_group_without_describe_is_one_line_and_others_are_shown(sec, alice, env, capsys):
    c = alice_args(sec, alice)
    r = run_cli(capsys, "groups", "describe", alice.g_none, *c)
    assert r.code == 1 and r.out == ""
    line = one_error_line(r.err, "not authorized")
    assert r.err.strip() == line
    assert f"Describe on group {alice.g_none}" in line

    r = run_cli(capsys, "groups", "describe", alice.g_read, alice.g_desc, alice.g_none, *c,
                "-o", "json")
    assert r.code == 1  # partial: two shown, one refused
    shown = {(x["group"], x["topic"], x["partition"]): x["current_offset"] for x in r.json()}
    assert shown == {(g, alice.topic, p): 5 for g in (alice.g_read, alice.g_desc) for p in (0, 1)} | \
        {(g, alice.topic_ro, 0): 3 for g in (alice.g_read, alice.g_desc)}
    line = one_error_line(r.err, "not authorized")
    assert alice.g_none in line and "Describe" in line

    # listing shows only what alice may describe (Kafka filters ListGroups by ACL)
    r = run_cli(capsys, "groups", "list", *c, "-o", "json")
    assert r.code == 0, r.err
    names = {g["group_id"] for g in r.json()}
    assert {alice.g_read, alice.g_desc} <= names and alice.g_none not in names


def test_reset_without_rights_changes_nothing_and_partial_runs_report_per_group(
        sec, alice, env, capsys):
    c = alice_args(sec, alice)
    before = {g: committed(sec, g) for g in (alice.g_read, alice.g_desc, alice.g_none)}

    # Describe but not Read on the group: refused in one line naming group and operation
    r = run_cli(capsys, "offsets", "reset", "--group", alice.g_desc, "--topic", alice.topic,
                "--to-earliest", "--execute", *c)
    assert r.code == 1
    line = one_error_line(r.err, "not authorized")
    assert f"Read on group {alice.g_desc}" in line
    # Read on the group, Describe only on the topic: the commit needs Read on the topic
    r = run_cli(capsys, "offsets", "reset", "--group", alice.g_read, "--topic", alice.topic_ro,
                "--to-earliest", "--execute", *c)
    assert r.code == 1
    line = one_error_line(r.err, "not authorized")
    assert f"Read on topic {alice.topic_ro}" in line
    # no ACL on the group at all
    r = run_cli(capsys, "offsets", "reset", "--group", alice.g_none, "--topic", alice.topic,
                "--to-earliest", "--execute", *c)
    assert r.code == 1
    line = one_error_line(r.err, "not authorized")
    assert f"Describe on group {alice.g_none}" in line
    assert {g: committed(sec, g) for g in before} == before

    # several groups: the one alice may reset is done, the others reported one line each
    r = run_cli(capsys, "offsets", "reset", "--group", alice.g_read, "--group", alice.g_desc,
                "--group", alice.g_none, "--topic", alice.topic, "--to-earliest", "--execute",
                *c, "-o", "json")
    assert r.code == 1, r.err
    status = {x["group"]: x["status"] for x in r.json()["report"]["groups"]}
    assert status == {alice.g_read: "success", alice.g_desc: "failed", alice.g_none: "refused"}
    errors = [ln for ln in r.err.splitlines() if "not authorized" in ln]
    assert len(errors) == 2, r.err
    assert any(alice.g_desc in ln and "Read on group" in ln for ln in errors)
    assert any(alice.g_none in ln and "Describe on group" in ln for ln in errors)
    assert committed(sec, alice.g_read) == {(alice.topic, 0): 0, (alice.topic, 1): 0,
                                            (alice.topic_ro, 0): 3}
    assert committed(sec, alice.g_desc) == before[alice.g_desc]
    assert committed(sec, alice.g_none) == before[alice.g_none]


def test_history_and_offsets_show_with_partial_rights(sec, alice, env, capsys):
    c = alice_args(sec, alice)
    store = env / "history.db"
    # alice may describe g_desc but may not Read its topic_ro: no exact time lag there (no wait)
    r = run_cli(capsys, "history", "record", "-g", alice.g_desc, "-g", alice.g_none, "--once",
                "--store", store, *c)
    assert r.code == 1
    line = one_error_line(r.err, "error: group")  # (the cycle's log line says it too)
    assert alice.g_none in line and f"Describe on group {alice.g_none}" in line
    r = run_cli(capsys, "lag", "status", alice.g_desc, "--store", store, "-o", "json")
    # one sample with lag: no verdict yet (INCOMPLETE, exit 3), but the numbers are there
    assert r.code == 3 and r.json()[0]["total_lag"] == 5 + 5 + 7, r.out

    secret = f"sec-hidden-{uuid.uuid4().hex[:8]}"
    create_topic(sec, secret, 1)
    r = run_cli(capsys, "offsets", "show", "--topic", secret, *c)
    assert r.code == 2 and f"unknown topic '{secret}'" in r.err and "may not Describe" in r.err


def test_backup_without_describe_configs_is_refused_before_spark(sec, alice, env, capsys):
    r = run_cli(capsys, "backup", "run", *alice_args(sec, alice), "-t", alice.topic,
                "--dest", env / "backups", "--id", "denied")
    assert r.code == 1
    line = one_error_line(r.err, "not authorized")
    assert f"DescribeConfigs on topic {alice.topic}" in line
    assert not (env / "backups" / "denied" / "manifest.json").exists()


def test_consumer_without_read_on_topic_gets_one_error(sec, alice):
    from offsetkeeper.consumer import OffsetConsumer

    conf = {**load_properties_file(alice.props), "bootstrap.servers": sec.bootstrap,
            "group.id": alice.g_read}
    with pytest.raises(Exception) as exc, OffsetConsumer(conf, [alice.topic_ro],
                                                         auto_offset_reset="earliest",
                                                         live_reset=False) as c:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            c.poll(0.5)
    assert f"Read on topic {alice.topic_ro}" in str(exc.value)


# -- Spark: backup and restore, the data source --------------------------------------------------
def _spark_conf_text(spark) -> str:
    return "\n".join(f"{k}={v}" for k, v in spark.sparkContext.getConf().getAll())


def _event_logs(spark) -> tuple[Path, ...]:
    conf = dict(spark.sparkContext.getConf().getAll())
    if conf.get("spark.eventLog.enabled", "false").lower() != "true":
        return ()
    return (Path(conf.get("spark.eventLog.dir", "/tmp/spark-events").removeprefix("file:")),)


@pytest.mark.spark
def test_backup_and_restore_on_spark(sec, env, spark, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    topic, group = f"sec-b-{uuid.uuid4().hex[:8]}", f"sec-bg-{uuid.uuid4().hex[:8]}"
    create_topic(sec, topic, 2)
    produce_n(sec, topic, 2, 15)
    commit(sec, group, {(topic, 0): 4, (topic, 1): 9})
    dest = env / "backups"

    r = run_cli(capsys, "backup", "run", *conn_args(sec, "command-config"), "-t", topic,
                "--dest", dest, "--id", "b1", "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["records"] == 30, r.out
    outs = [r]

    target = f"{topic}-restored"
    r = run_cli(capsys, "restore", "run", f"{dest}/b1", *conn_args(sec, "yaml"),
                "--restore-id", "r1", "--rename", f"{topic}={target}", "-o", "json")
    assert r.code == 0, r.err
    outs.append(r)
    lows_highs = {}
    a = sec.admin()
    from confluent_kafka.admin import OffsetSpec
    for p in (0, 1):
        f = a.list_offsets({CkTP(target, p): OffsetSpec.latest()})[CkTP(target, p)]
        lows_highs[p] = f.result(15).offset
    assert lows_highs == {0: 15, 1: 15}

    assert_secret_absent(sec.password, *(x.out + x.err for x in outs), caplog.text,
                         _spark_conf_text(spark), roots=(env, *_event_logs(spark)))


@pytest.mark.spark
def test_kafka_data_source_reads_with_sasl_options(sec, spark, caplog, tmp_path):
    caplog.set_level(logging.DEBUG)
    topic = f"sec-s-{uuid.uuid4().hex[:8]}"
    create_topic(sec, topic, 2)
    produce_n(sec, topic, 2, 5)
    from offsetkeeper.spark.kafka import SOURCE_NAME, register

    register(spark)
    reader = spark.read.format(SOURCE_NAME)
    for k, v in sec.conf.items():
        reader = reader.option(f"kafka.{k}", v)
    df = (reader.option("subscribe", topic).option("startingOffsets", "earliest")
          .option("endingOffsets", "latest").load())
    assert df.count() == 10
    plan = df._jdf.queryExecution().toString()

    # the streaming source, its progress shown as a consumer group (commitToGroup)
    group = f"sec-sg-{uuid.uuid4().hex[:8]}"
    stream = spark.readStream.format(SOURCE_NAME)
    for k, v in sec.conf.items():
        stream = stream.option(f"kafka.{k}", v)
    q = (stream.option("subscribe", topic).option("startingOffsets", "earliest")
         .option("commitToGroup", group).load()
         .writeStream.format("parquet").option("path", str(tmp_path / "out"))
         .option("checkpointLocation", str(tmp_path / "ck")).trigger(availableNow=True).start())
    q.awaitTermination(120)
    progress = json.dumps([p.json for p in q.recentProgress])
    assert q.exception() is None
    assert spark.read.parquet(str(tmp_path / "out")).count() == 10
    deadline = time.monotonic() + 30  # commit(end) of the last batch may come a moment later
    while committed(sec, group) != {(topic, 0): 5, (topic, 1): 5} and time.monotonic() < deadline:
        time.sleep(0.3)
    assert committed(sec, group) == {(topic, 0): 5, (topic, 1): 5}

    # py4j's own debug log echoes the test's .option() calls; offsetkeeper's loggers must not
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("offsetkeeper"))
    assert_secret_absent(sec.password, plan, progress, ours, _spark_conf_text(spark),
                         roots=(tmp_path, *_event_logs(spark)))


# -- the dev cluster's own security ----------------------------------------------------------------
def test_controller_listener_does_not_grant_anonymous_admin(sec, secure_cluster, tmp_path):
    """An admin client may talk to a KRaft controller directly (KIP-919, `--bootstrap-controller`):
    the controller listener must authenticate too, or anyone on the machine could add ACLs."""
    import subprocess

    from confluent_kafka.admin import AclBindingFilter

    from offsetkeeper.devbroker import dist

    cfg = tmp_path / "anonymous.properties"
    cfg.write_text("request.timeout.ms=3000\ndefault.api.timeout.ms=6000\n")
    cport = secure_cluster.nodes[0].controller_port
    r = subprocess.run(dist.tool_command(
        "kafka-acls", "--bootstrap-controller", f"127.0.0.1:{cport}", "--command-config", str(cfg),
        "--add", "--allow-principal", "User:mallory", "--operation", "All", "--topic", "*"),
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode != 0, r.stdout
    a = sec.admin()
    found = a.describe_acls(AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:mallory", None, AclOperation.ANY,
        AclPermissionType.ANY)).result(15)
    assert found == []
    props = (Path(secure_cluster.data_dir) / "node-1" / "server.properties")
    assert props.stat().st_mode & 0o077 == 0  # it holds the admin's password


def test_a_group_is_reset_whole_or_not_at_all_and_rollback_skips_untouched(sec, alice, env, capsys):
    """Invariant (issue 31 E): with Read on topic A but only Describe on topic B, resetting a
    group that committed to both changes nothing (exit 1, one line naming B and the Read it
    needs), never A alone; a reset of A alone succeeds, and its rollback — whose snapshot also
    holds B's partition, unchanged — commits only A's partitions and exits 0."""
    g = f"ga-whole-{uuid.uuid4().hex[:8]}"
    admin = sec.admin()
    for f in admin.create_acls([AclBinding(ResourceType.GROUP, g, ResourcePatternType.LITERAL,
                                           f"User:{alice.user}", "*", AclOperation.READ,
                                           AclPermissionType.ALLOW)]).values():
        f.result(30)
    before = {(alice.topic, 0): 5, (alice.topic, 1): 5, (alice.topic_ro, 0): 3}
    commit(sec, g, before)
    c = alice_args(sec, alice)
    deadline = time.monotonic() + 30
    while True:  # the new ACL reaches the authorizer through the metadata log
        r = run_cli(capsys, "offsets", "reset", "--group", g, "--all-topics", "--to-earliest",
                    "--execute", *c)
        if "Read on group" not in r.err or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert r.code == 1, r.err
    line = one_error_line(r.err, "not authorized")
    assert f"Read on topic {alice.topic_ro}" in line and "nothing of this group was changed" in line
    assert committed(sec, g) == before
    r = run_cli(capsys, "offsets", "reset", "--group", g, "--topic", alice.topic, "--to-earliest",
                "--execute", *c)
    assert r.code == 0, r.err
    assert committed(sec, g) == {(alice.topic, 0): 0, (alice.topic, 1): 0, (alice.topic_ro, 0): 3}
    snap = r.err.split("snapshot taken before the change: ", 1)[1].split()[0]
    r = run_cli(capsys, "snapshots", "rollback", snap, "--execute", *c, "-o", "json")
    assert r.code == 0, r.err
    assert r.json()["report"]["status"] == "SUCCESS"
    assert committed(sec, g) == before
