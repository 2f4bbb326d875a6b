"""Configuration: YAML clusters, ${ENV} expansion, property files, secrets never shown."""

import pytest

from offsetkeeper.config import load_config_file, parse_properties
from offsetkeeper.errors import ConfigError
from offsetkeeper.kafka.connect import resolve_connection
from offsetkeeper.redact import MASK, redact_properties, redact_text


def write(tmp_path, text, name="c.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_named_cluster_with_env_and_command_config(tmp_path, monkeypatch):
    monkeypatch.setenv("KPASS", "s3cr3t-pw")
    props = write(tmp_path, "# comment\nclient.id = ok-cli\nsecurity.protocol=SASL_SSL\n", "c.properties")
    cfg = load_config_file(write(tmp_path, f"""
default_cluster: prod
clusters:
  prod:
    bootstrap_servers: k1:9092,k2:9092
    command_config: {props}
    properties:
      sasl.mechanism: PLAIN
      sasl.username: ops
      sasl.password: ${{KPASS}}
      enable.ssl.certificate.verification: false
  dr:
    bootstrap_servers: ${{DR_HOST:-dr:9092}}
"""))
    c = resolve_connection(config=cfg)
    assert c.bootstrap_servers == "k1:9092,k2:9092"
    assert c.properties["sasl.password"] == "s3cr3t-pw"
    assert c.properties["client.id"] == "ok-cli"
    assert c.properties["enable.ssl.certificate.verification"] == "false"
    assert "s3cr3t-pw" not in repr(c)
    assert resolve_connection(config=cfg, cluster="dr").bootstrap_servers == "dr:9092"
    assert resolve_connection(config=cfg, bootstrap_server="x:1").bootstrap_servers == "x:1"


def test_unknown_key_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown key 'clusters.prod.bootstrap'"):
        load_config_file(write(tmp_path, "clusters:\n  prod:\n    bootstrap: x\n"))


def test_unknown_cluster_and_missing_env(tmp_path, monkeypatch):
    monkeypatch.delenv("NOPE_VAR", raising=False)
    cfg = load_config_file(write(tmp_path, "clusters:\n  a:\n    bootstrap_servers: x:1\n"))
    with pytest.raises(ConfigError, match="unknown cluster 'b' \\(known: a\\)"):
        resolve_connection(config=cfg, cluster="b")
    lazy = load_config_file(write(tmp_path, "clusters:\n  a:\n    bootstrap_servers: ${NOPE_VAR}\n"))
    with pytest.raises(ConfigError, match="NOPE_VAR is not set"):
        resolve_connection(config=lazy, cluster="a")


def test_missing_explicit_config_and_bad_yaml(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config_file(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config_file(write(tmp_path, "a: [b\n"))


def test_no_cluster_given(monkeypatch):
    monkeypatch.delenv("OFFSETKEEPER_BOOTSTRAP_SERVER", raising=False)
    with pytest.raises(ConfigError, match="no cluster given"):
        resolve_connection()


def test_java_jaas_is_translated_and_masked():
    props = parse_properties(
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="alice" password="pa55word";\nbootstrap.servers=k:9092\n')
    assert props["sasl.username"] == "alice" and props["sasl.password"] == "pa55word"
    shown = redact_properties(props)
    assert shown["sasl.password"] == MASK and shown["sasl.username"] == "alice"
    assert redact_text("failed with pa55word inside", props) == f"failed with {MASK} inside"


def test_properties_bad_line():
    with pytest.raises(ConfigError, match="line 2"):
        parse_properties("a=b\n=nokey\n", source="p")


def test_cluster_ref_in_another_file_and_flags_win(tmp_path):
    """Invariant: a backup/restore file's cluster reference keeps its own properties, and
    explicit flags replace the reference entirely."""
    from offsetkeeper.config import ClusterRef
    from offsetkeeper.kafka.connect import connect_ref

    cfg = load_config_file(write(tmp_path, "clusters:\n  dr:\n    bootstrap_servers: dr:9092\n"
                                           "    properties: {client.id: a, acks: all}\n"))
    ref = ClusterRef(cluster="dr", properties={"client.id": "b", "enable.idempotence": True})
    c = connect_ref(ref, config=cfg)
    assert c.bootstrap_servers == "dr:9092"
    assert c.properties == {"client.id": "b", "acks": "all", "enable.idempotence": "true"}
    c = connect_ref(ref, bootstrap_server="other:1", config=cfg)
    assert c.bootstrap_servers == "other:1" and c.properties == {}


@pytest.mark.parametrize("loader,kind", [
    ("offsetkeeper.backup.config:load_backup_file", "backup file"),
    ("offsetkeeper.restore.config:load_restore_file", "restore file"),
])
def test_every_yaml_file_reports_unknown_keys_the_same_way(tmp_path, loader, kind):
    import importlib

    mod, fn = loader.split(":")
    load = getattr(importlib.import_module(mod), fn)
    with pytest.raises(ConfigError, match=f"{kind} .*: unknown key 'colour'"):
        load(write(tmp_path, "colour: blue\n"))
    with pytest.raises(ConfigError, match=f"{kind} .* must hold a mapping"):
        load(write(tmp_path, "- a\n- b\n"))
