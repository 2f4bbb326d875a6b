"""The one place where confluent-kafka / Kafka error codes become offsetkeeper errors."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException

from offsetkeeper.errors import (
    GroupActiveError,
    KafkaOperationError,
    OffsetkeeperError,
    UnknownGroupError,
    UnknownTopicError,
)

# Error names that go away on their own: a retry with backoff is the right answer.
RETRIABLE = frozenset(
    {
        "COORDINATOR_LOAD_IN_PROGRESS",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "REQUEST_TIMED_OUT",
        "NETWORK_EXCEPTION",
        "LEADER_NOT_AVAILABLE",
        "NOT_LEADER_FOR_PARTITION",
        "NOT_LEADER_OR_FOLLOWER",
        "REBALANCE_IN_PROGRESS",
        "_TIMED_OUT",
        "_TRANSPORT",
        "_ALL_BROKERS_DOWN",
        "_WAIT_COORD",
        "_RESOLVE",
    }
)

# One actionable sentence per Kafka error; {what} names the object the request was about.
ADVICE = {
    "COORDINATOR_LOAD_IN_PROGRESS": "the group coordinator for {what} is still loading; try again shortly",
    "COORDINATOR_NOT_AVAILABLE": "no group coordinator is available for {what}; check broker health",
    "NOT_COORDINATOR": "the broker is no longer the coordinator of {what}; try again",
    "REQUEST_TIMED_OUT": "the request for {what} timed out on the broker",
    "_TIMED_OUT": "the request for {what} timed out; is the cluster reachable?",
    "_TRANSPORT": "the connection broke while working on {what}; check the network and broker",
    "_ALL_BROKERS_DOWN": "no broker is reachable; check --bootstrap-server and the network",
    "_RESOLVE": "the broker address cannot be resolved; check --bootstrap-server",
    "NETWORK_EXCEPTION": "the connection broke while working on {what}",
    "GROUP_ID_NOT_FOUND": "group {what} does not exist",
    "UNKNOWN_TOPIC_OR_PART": "{what}: unknown topic or partition",
    "_UNKNOWN_TOPIC": "{what}: unknown topic",
    "_UNKNOWN_PARTITION": "{what}: unknown partition",
    "_NOENT": "{what}: unknown topic or partition (no leader found)",
    "GROUP_AUTHORIZATION_FAILED": "not authorized to access group {what}; check the principal's ACLs",
    "TOPIC_AUTHORIZATION_FAILED": "not authorized to access the topic of {what}; check ACLs",
    "CLUSTER_AUTHORIZATION_FAILED": "not authorized for this cluster operation; check ACLs",
    "SASL_AUTHENTICATION_FAILED": "authentication failed; check the SASL settings in the command config",
    "_AUTHENTICATION": "authentication failed; check the SASL/SSL settings in the command config",
    "NON_EMPTY_GROUP": "group {what} still has members; stop its consumers and run again",
    "GROUP_SUBSCRIBED_TO_TOPIC": "group {what} is subscribed to the topic; stop its consumers first",
    "UNKNOWN_MEMBER_ID": "group {what} has active members; stop its consumers and run again",
    "REBALANCE_IN_PROGRESS": "group {what} is rebalancing; stop its consumers and run again",
    "OFFSET_OUT_OF_RANGE": "{what}: offset out of range",
    "INVALID_COMMIT_OFFSET_SIZE": "{what}: commit metadata too large",
    "OFFSET_METADATA_TOO_LARGE": "{what}: commit metadata too large",
}


def error_name(err: KafkaError | KafkaException | BaseException) -> str:
    """The symbolic Kafka error name (e.g. NOT_COORDINATOR) of an exception, or '' if none."""
    if isinstance(err, KafkaException) and err.args and isinstance(err.args[0], KafkaError):
        err = err.args[0]
    if isinstance(err, KafkaError):
        return err.name()
    return ""


def is_retriable(err: BaseException | KafkaError) -> bool:
    """True when a retry may succeed."""
    if isinstance(err, KafkaOperationError):
        return err.retriable
    if isinstance(err, KafkaException) and err.args and isinstance(err.args[0], KafkaError):
        e = err.args[0]
        return e.retriable() or e.name() in RETRIABLE
    if isinstance(err, KafkaError):
        return err.retriable() or err.name() in RETRIABLE
    return isinstance(err, TimeoutError)


def translate(
    err: BaseException | KafkaError,
    *,
    action: str,
    group: str | None = None,
    topic: str | None = None,
    partition: int | None = None,
) -> OffsetkeeperError:
    """Turn a confluent-kafka error into the matching OffsetkeeperError with one clear sentence."""
    if isinstance(err, OffsetkeeperError):
        return err
    ctx = {"group": group, "topic": topic, "partition": partition}
    if isinstance(err, TimeoutError):
        return KafkaOperationError(f"{action}: timed out waiting for the cluster", code="_TIMED_OUT",
                                   retriable=True, **ctx)
    name = error_name(err)
    what = group if group is not None else (
        f"{topic}:{partition}" if partition is not None else (topic or "the request"))
    advice = ADVICE.get(name)
    if advice is None:
        raw = err.args[0] if isinstance(err, KafkaException) and err.args else err
        detail = raw.str() if isinstance(raw, KafkaError) else str(raw)
        advice = f"{what}: {detail}" if detail else f"{what}: Kafka error {name or type(err).__name__}"
    message = f"{action}: {advice.format(what=what)}"
    if name == "GROUP_ID_NOT_FOUND":
        return UnknownGroupError(message, **ctx)
    if name in {"UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC", "_UNKNOWN_PARTITION", "_NOENT"}:
        return UnknownTopicError(message, **ctx)
    if name in {"NON_EMPTY_GROUP", "UNKNOWN_MEMBER_ID", "GROUP_SUBSCRIBED_TO_TOPIC"}:
        return GroupActiveError(message, **ctx)
    return KafkaOperationError(message, code=name or None, retriable=is_retriable(err), **ctx)
