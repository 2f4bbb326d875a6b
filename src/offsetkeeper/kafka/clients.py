"""The one place that builds confluent-kafka clients: consumers, producers and admin clients,
from a `Connection` (or the librdkafka properties one resolved to, which is what Spark
executors and restore tasks receive), with its errors translated at this boundary.

    c = clients.consumer(conn, {"group.id": "offsetkeeper-probe", "enable.auto.commit": False})
    with clients.translated("read the offsets topic", topic=topic):
        low, high = c.get_watermark_offsets(...)

Properties are merged as `{**defaults, **connection, **settings}`: `defaults` are offsetkeeper's
tuning that a user's property overrides (a producer's linger), `settings` what the caller's
use needs whatever the user set (a consumer that never commits). A client librdkafka refuses to
build (an unknown property, a bad value) is a one-line `ConfigError` that names the property and
never shows a secret (`kafka.errors.client_config_error`), not a KafkaException.

The record-moving packages (consumer/, restore/, the Spark data source, the demo) get their
clients here and keep the confluent-kafka messages they read: their product is a Kafka client.
The admin facade (kafka/admin.py) builds its AdminClient here too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from offsetkeeper.config import Connection
from offsetkeeper.errors import OffsetkeeperError

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient

ClientSource = Connection | Mapping[str, Any]


def client_config(source: ClientSource, settings: Mapping[str, Any] | None = None, *,
                  defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """librdkafka properties: `defaults`, then the connection's, then `settings`."""
    base = source.client_config() if isinstance(source, Connection) else dict(source)
    return {**(defaults or {}), **base, **(settings or {})}


def _build(kind: str, make: Any, conf: dict[str, Any], where: str | None) -> Any:
    from confluent_kafka import KafkaException

    from offsetkeeper.kafka.errors import client_config_error

    try:
        return make(conf)
    except (KafkaException, ValueError, TypeError) as exc:
        raise client_config_error(
            exc, conf, where=where or f"the {kind} properties are not valid") from None


def consumer(source: ClientSource, settings: Mapping[str, Any] | None = None, *,
             defaults: Mapping[str, Any] | None = None, where: str | None = None) -> Consumer:
    """A confluent-kafka Consumer (close it when done)."""
    from confluent_kafka import Consumer

    return _build("consumer", Consumer, client_config(source, settings, defaults=defaults), where)


def producer(source: ClientSource, settings: Mapping[str, Any] | None = None, *,
             defaults: Mapping[str, Any] | None = None, where: str | None = None) -> Producer:
    """A confluent-kafka Producer (flush it when done)."""
    from confluent_kafka import Producer

    return _build("producer", Producer, client_config(source, settings, defaults=defaults), where)


def admin_client(source: ClientSource, settings: Mapping[str, Any] | None = None, *,
                 defaults: Mapping[str, Any] | None = None,
                 where: str | None = None) -> AdminClient:
    """A raw confluent-kafka AdminClient (the admin facade wraps one; others only create
    topics or probe a starting broker)."""
    from confluent_kafka.admin import AdminClient

    return _build("admin client", AdminClient,
                  client_config(source, settings, defaults=defaults), where)


def translate(exc: BaseException, *, action: str, **ctx: Any) -> OffsetkeeperError:
    """The project's error for a confluent-kafka exception raised while doing `action` (for a
    caller that catches KafkaException itself, e.g. around a loop that also closes a client)."""
    from offsetkeeper.kafka.errors import translate as translate_error

    return translate_error(exc, action=action, **ctx)


@contextmanager
def translated(action: str, **ctx: Any) -> Iterator[None]:
    """Turn a KafkaException raised inside into the project's error for `action` (one line,
    retriable or not, with advice: `kafka.errors.translate`)."""
    from confluent_kafka import KafkaException

    from offsetkeeper.kafka.errors import translate

    try:
        yield
    except KafkaException as exc:
        raise translate(exc, action=action, **ctx) from exc
