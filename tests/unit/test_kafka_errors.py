"""kafka/errors.py translates delivery reports and client configuration errors (issue 21): one
sentence naming the partition or topic and what to do, never librdkafka's raw text for a known
code, never a secret value."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException

import offsetkeeper
from offsetkeeper.errors import ConfigError
from offsetkeeper.kafka.connect import check_client_properties
from offsetkeeper.kafka.errors import (
    DELIVERABLE,
    PARTITION_EOF,
    client_config_error,
    delivery_message,
    is_denied,
    is_partition_eof,
)

SECRET = "s3cretLEAK"


@pytest.mark.parametrize("name", sorted(DELIVERABLE))
def test_every_deliverable_error_names_the_partition_and_what_to_do(name):
    """Invariant: a failed delivery is one sentence that names where (topic:partition, or the
    topic an ACL is about) and what to do; librdkafka's own text is not shown."""
    err = KafkaError(getattr(KafkaError, name))
    text = delivery_message(err, topic="orders", partition=3)
    assert text.startswith("producing to orders:3 failed: "), text
    assert "\n" not in text and "KafkaError{" not in text
    assert err.str() not in text
    _, _, advice = text.partition(" failed: ")
    assert "; " in advice, f"{name}: no advice on what to do: {text}"
    if name.endswith("AUTHORIZATION_FAILED"):
        assert is_denied(text) and "kafka-acls" in text


def test_an_authorization_failure_names_the_topic_and_the_acl():
    text = delivery_message(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), topic="orders",
                            partition=0)
    assert "Write on topic orders" in text


@pytest.mark.parametrize("partition, where", [(3, "orders:3"), (None, "orders"), (-1, "orders")])
def test_a_produce_call_refused_at_once_is_translated_too(partition, where):
    """produce() raises KafkaException (too large, unknown partition) instead of reporting."""
    exc = KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
    text = delivery_message(exc, topic="orders", partition=partition)
    assert text.startswith(f"producing to {where} failed: ")
    assert "max.message.bytes" in text


def test_an_unknown_code_keeps_its_name_and_says_what_to_do():
    text = delivery_message(KafkaError(KafkaError.INVALID_CONFIG), topic="t", partition=1)
    assert text.startswith("producing to t:1 failed: Kafka error INVALID_CONFIG")
    assert text.endswith("check the broker logs, then run again")


def test_partition_eof_is_a_named_event_not_a_failure():
    assert PARTITION_EOF == KafkaError._PARTITION_EOF == -191
    assert is_partition_eof(KafkaError(PARTITION_EOF))
    assert not is_partition_eof(KafkaError(KafkaError._TRANSPORT))
    assert not is_partition_eof(None)


def test_no_module_compares_error_numbers_of_its_own():
    """Invariant: the end-of-partition event is named in kafka/errors.py only (no bare -191)."""
    root = Path(offsetkeeper.__file__).parent
    bad = [str(p.relative_to(root)) for p in root.rglob("*.py")
           if p.name != "errors.py" and re.search(r"-191\b|_PARTITION_EOF", p.read_text())]
    assert bad == []


# -- client configuration ----------------------------------------------------------------------
@pytest.mark.parametrize("props", [
    {"sasl.password": SECRET, "security.protocol": SECRET},          # the secret as another value
    {"security.protocol": "SASL_SSL", "sasl.mechanism": SECRET, "sasl.password": SECRET},
    {"ssl.key.password": SECRET, "ssl.endpoint.identification.algorithm": SECRET},
    {"sasl.oauthbearer.config": SECRET, "sasl.oauthbearer.method": SECRET},
    {"sasl.jaas.config": SECRET, "bogus.property": SECRET},
])
def test_librdkafka_config_errors_never_show_a_secret(props):
    """Invariant: whatever librdkafka quotes back, a secret property's value is masked."""
    with pytest.raises(ConfigError) as info:
        check_client_properties(props, source="--command-config c.properties")
    assert SECRET not in info.value.message
    assert info.value.message.startswith("--command-config c.properties: ")
    assert "\n" not in info.value.message


@pytest.mark.parametrize("value", ["x", "ab", SECRET])
def test_the_quoted_value_of_a_secret_property_is_masked_whatever_its_length(value):
    """A short password is not masked everywhere (it would garble the text), but where
    librdkafka quotes it as the invalid value of a secret property it is."""
    exc = KafkaException(KafkaError(KafkaError._INVALID_ARG,
                                    f'Invalid value "{value}" for configuration property '
                                    '"sasl.password"'))
    err = client_config_error(exc, {"sasl.password": value}, where="cluster 'prod'")
    assert f'"{value}"' not in err.message
    assert 'property "sasl.password"' in err.message


@pytest.mark.parametrize("props, names", [
    ({"bogus.property": "1"}, ["bogus.property", "check the name"]),
    ({"sasl.mechanism": "PLAINX", "security.protocol": "SASL_SSL"},
     ["sasl.mechanism", "PLAINX", "SCRAM-SHA-512"]),
    ({"acks": "sometimes"}, ["acks", "check the value"]),
])
def test_a_config_error_names_the_property_and_what_to_do(props, names):
    with pytest.raises(ConfigError) as info:
        check_client_properties(props)
    for n in names:
        assert n in info.value.message


def test_a_multi_line_config_error_is_one_line():
    err = client_config_error(ValueError("first line\nsecond line"), {}, where="x")
    assert err.message == "x: first line"


def test_the_restore_producer_reports_its_first_failed_delivery_as_a_sentence():
    """restore/produce.py keeps the KafkaError of a failed delivery and shows kafka/errors.py's
    sentence for it, not librdkafka's text."""
    from offsetkeeper.models import TopicPartition
    from offsetkeeper.restore.produce import _Producer
    from offsetkeeper.restore.resume import WriterConfig

    cfg = WriterConfig(restore_id="r", mapping_root="/nonexistent", offset_headers=True,
                       producer_conf={"bootstrap.servers": "127.0.0.1:1"}, consumer_conf={},
                       chunk_records=10)
    p = _Producer(cfg)

    class Msg:
        def topic(self):
            return "orders"

        def partition(self):
            return 2

    p._on_error(KafkaError(KafkaError.NOT_ENOUGH_REPLICAS), Msg())
    p._on_error(KafkaError(KafkaError._MSG_TIMED_OUT), Msg())    # only the first is kept
    assert p.error_for(TopicPartition("orders", 1)) is None
    text = p.error_for(TopicPartition("orders", 2))
    assert text.startswith("producing to orders:2 failed: ") and "min.insync.replicas" in text
    p.p.flush(0)


def test_the_consumer_library_masks_secrets_in_config_errors_too():
    from offsetkeeper.consumer import OffsetConsumer
    from offsetkeeper.errors import ConsumerConfigError

    with pytest.raises(ConsumerConfigError) as info:
        OffsetConsumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g",
                        "sasl.password": SECRET, "security.protocol": SECRET}, ["t"])
    assert SECRET not in info.value.message
    assert info.value.message.startswith("invalid consumer configuration: ")
    assert "security.protocol" in info.value.message
