"""Regression tests for issue 8: Java properties parsed fully and secrets never echoed (item 10),
bad config input as one-line errors (item 12), ${VAR} expanded lazily per cluster (item 20)."""

from __future__ import annotations

import pytest

from offsetkeeper.config import load_config_file, parse_properties
from offsetkeeper.errors import ConfigError
from offsetkeeper.kafka.connect import check_client_properties, resolve_connection


def write(tmp_path, text: str | bytes, name="c.yaml"):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def test_java_properties_continuations_separators_and_escapes():
    """Invariant: a --command-config file means what java.util.Properties.load reads from it."""
    props = parse_properties(
        "# comment \\\n"
        "! another\n"
        "client.id : ops-cli\n"
        "security.protocol SASL_SSL\n"
        "sasl.password=\\\n"
        "    JavaContPwLEAK88\n"
        "ssl.ca.location = /etc/ca\\\n"
        "  .pem\n"
        "sasl.mechanism=PL\\u0041IN\n"
        "weird\\=key\\:x = a\\tb\\\\\n"
        "trailing.backslash.even=c:\\\\\n"
        "next.key=1\n", source="p")
    assert props == {"client.id": "ops-cli", "security.protocol": "SASL_SSL",
                     "sasl.password": "JavaContPwLEAK88", "ssl.ca.location": "/etc/ca.pem",
                     "sasl.mechanism": "PLAIN", "weird=key:x": "a\tb\\",
                     "trailing.backslash.even": "c:\\", "next.key": "1"}


def test_multi_line_jaas_is_translated():
    """Invariant: a JAAS config continued over several lines gives sasl.username/password."""
    props = parse_properties(
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        "    username=\"alice\" \\\n"
        "    password=\"multi-LEAK-77\";\n")
    assert props == {"sasl.username": "alice", "sasl.password": "multi-LEAK-77"}


@pytest.mark.parametrize("text", [
    "sasl.password\\\nJavaContPwLEAK88\n",          # the key swallowed, the secret alone
    "JavaContPwLEAK88\n",
    "sasl.password=\\uZZZZLEAK88\n",
])
def test_property_errors_never_echo_values(text):
    """Invariant: a malformed properties file is a one-line error naming the line, never
    quoting a value (half of a secret is still a secret)."""
    try:
        parse_properties("a=b\n" + text, source="client.properties")
    except ConfigError as exc:
        assert "LEAK88" not in exc.message and "ZZZZ" not in exc.message
        assert "client.properties line 2" in exc.message
    else:  # the first case is legal Java (key 'sasl.passwordJavaContPwLEAK88' without value)
        assert text.startswith("sasl.password\\")


def test_librdkafka_checks_properties_up_front():
    """Invariant: unknown or invalid librdkafka properties are refused before any connection,
    naming the property; secret values are masked."""
    with pytest.raises(ConfigError, match="bogus.property"):
        check_client_properties({"bogus.property": "1"})
    with pytest.raises(ConfigError, match="PLAINX"):
        check_client_properties({"sasl.mechanism": "PLAINX", "security.protocol": "SASL_SSL"})
    with pytest.raises(ConfigError, match="ssl.truststore.location.*ssl.ca.location"):
        check_client_properties({"ssl.truststore.location": "/etc/kafka/truststore.jks"})
    check_client_properties({"client.id": "x", "security.protocol": "PLAINTEXT",
                             "enable.ssl.certificate.verification": "false"})


def test_secret_value_masked_in_librdkafka_error():
    """Invariant: librdkafka's error text never carries a secret value through."""
    with pytest.raises(ConfigError) as info:
        check_client_properties({"sasl.password": "s3cretLEAK", "security.protocol": "s3cretLEAK"})
    assert "s3cretLEAK" not in info.value.message


def test_jaas_under_yaml_properties_is_translated(tmp_path):
    """Invariant: sasl.jaas.config in the YAML `properties` works like in a properties file."""
    cfg = load_config_file(write(tmp_path, """
clusters:
  prod:
    bootstrap_servers: k:9092
    properties:
      security.protocol: SASL_PLAINTEXT
      sasl.mechanism: PLAIN
      sasl.jaas.config: org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";
"""))
    c = resolve_connection(config=cfg, cluster="prod")
    assert c.properties["sasl.username"] == "u" and "sasl.jaas.config" not in c.properties


def test_unset_variable_breaks_only_its_cluster(tmp_path, monkeypatch):
    """Invariant: an unset ${VAR} in one cluster breaks only commands that use that cluster."""
    monkeypatch.delenv("DR_PASSWORD_UNSET", raising=False)
    cfg = load_config_file(write(tmp_path, """
default_cluster: prod
clusters:
  prod:
    bootstrap_servers: k:9092
  dr:
    bootstrap_servers: dr:9092
    properties: {sasl.password: "${DR_PASSWORD_UNSET}"}
"""))
    assert resolve_connection(config=cfg).bootstrap_servers == "k:9092"
    with pytest.raises(ConfigError, match="cluster 'dr'.*DR_PASSWORD_UNSET is not set"):
        resolve_connection(config=cfg, cluster="dr")


@pytest.mark.parametrize("text,msg", [
    (b"clusters:\n  a:\n    bootstrap_servers: k\xff:9092\n", "line 3: not UTF-8"),
    (b"snapshots:\n  store: 2026-02-30\n", None),
    (b"clusters: [\n", "not valid YAML"),
])
def test_bad_yaml_is_one_line(tmp_path, text, msg):
    """Invariant: a non-UTF-8 file, an impossible date or broken YAML is a one-line error (or,
    for a date where a string is expected, the string itself) — never a traceback."""
    p = write(tmp_path, text)
    if msg is None:
        assert load_config_file(p).snapshots.store == "2026-02-30"
        return
    with pytest.raises(ConfigError, match=msg):
        load_config_file(p)


def test_non_utf8_properties_file(tmp_path):
    """Invariant: a non-UTF-8 --command-config is a one-line error naming the line."""
    from offsetkeeper.config import load_properties_file

    with pytest.raises(ConfigError, match="line 2: not UTF-8"):
        load_properties_file(write(tmp_path, b"a=b\nc=\xe9\n", "p.properties"))


@pytest.mark.parametrize("key", ["sasl.password", "ssl.keystore.password", "sasl.jaas.config",
                                 "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config",
                                 "ssl.key.pem", "ssl.keystore.key"])
def test_secret_keys_are_recognised(key):
    """Invariant: every librdkafka/Java property that can carry a secret is masked."""
    from offsetkeeper.redact import is_secret_key

    assert is_secret_key(key)


@pytest.mark.parametrize("servers", ["user:s3cr3t@k:9092", "k1:9092,SASL_SSL://u:s3cr3t@k2:9093",
                                     "s3cr3t@k:9092"])
def test_credentials_in_a_bootstrap_address_are_refused_unechoed(servers):
    """Invariant: an address with userinfo is bad input (exit 2) and its secret never appears."""
    with pytest.raises(ConfigError) as info:
        resolve_connection(bootstrap_server=servers)
    assert info.value.exit_code == 2
    assert "s3cr3t" not in str(info.value) and "holds credentials" in str(info.value)


@pytest.mark.parametrize("text", [
    "clusters:\n  a:\n    bootstrap_servers: k:9092\n    bootstrap_servers: evil:9092\n",
    "snapshots:\n  store: /a\nsnapshots:\n  store: /b\n",
])
def test_a_key_written_twice_is_an_error(tmp_path, text):
    """Invariant (issue 31 K): a YAML mapping naming one key twice is a one-line ConfigError
    with the key and its line (YAML would keep the last one silently); a merge key overriding
    what it merges is still allowed."""
    with pytest.raises(ConfigError, match=r"appears twice in one mapping \(line \d+\)"):
        load_config_file(write(tmp_path, text))
    merged = ("clusters:\n  a: &b\n    bootstrap_servers: k:9092\n  c:\n    <<: *b\n"
              "    bootstrap_servers: other:9092\n")
    assert load_config_file(write(tmp_path, merged, "m.yaml")).clusters["c"]
