"""Errors of the offsetkeeper-kafka source's planning: usage errors stay usage errors (exit 2),
failures stay failures (exit 1). No Spark needed: planning runs before any task."""

from __future__ import annotations

import socket

import pytest

from offsetkeeper.errors import KafkaOperationError, UnknownTopicError, UsageError
from offsetkeeper.spark.kafka import parse_options, plan

pytestmark = [pytest.mark.integration]


def test_unknown_topic_is_a_usage_error(bootstrap, unique):
    with pytest.raises(UnknownTopicError) as exc:
        plan(parse_options({"kafka.bootstrap.servers": bootstrap, "subscribe": unique("none")}))
    assert exc.value.exit_code == 2


@pytest.mark.slow
def test_unreachable_broker_is_a_failure_not_a_usage_error():
    """Regression: planning used to turn every exception into UsageError, so an unreachable
    broker exited 2 ("bad input"). Invariant: it is a KafkaOperationError (exit 1)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there
    opts = parse_options({"kafka.bootstrap.servers": f"127.0.0.1:{port}", "subscribe": "t"})
    with pytest.raises(KafkaOperationError) as exc:
        plan(opts)
    assert not isinstance(exc.value, UsageError) and exc.value.exit_code == 1
