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
    # Authorization: `denied()` names the resource and the operation the ACL must allow.
    "GROUP_AUTHORIZATION_FAILED": "not authorized to access group {what}; check the principal's ACLs",
    "TOPIC_AUTHORIZATION_FAILED": "not authorized to access the topic of {what}; check ACLs",
    "CLUSTER_AUTHORIZATION_FAILED": "not authorized for this cluster operation; check ACLs",
    "SASL_AUTHENTICATION_FAILED": "authentication failed (wrong user name or password?); check "
                                  "sasl.username and sasl.password in the command config",
    "_AUTHENTICATION": "authentication failed (wrong user name or password?); check "
                       "sasl.username and sasl.password in the command config",
    "NON_EMPTY_GROUP": "group {what} still has members; stop its consumers and run again",
    "GROUP_SUBSCRIBED_TO_TOPIC": "group {what} is subscribed to the topic; stop its consumers first",
    "UNKNOWN_MEMBER_ID": "group {what} has active members; stop its consumers and run again",
    "REBALANCE_IN_PROGRESS": "group {what} is rebalancing; stop its consumers and run again",
    "OFFSET_OUT_OF_RANGE": "{what}: offset out of range",
    "INVALID_COMMIT_OFFSET_SIZE": "{what}: commit metadata too large",
    "OFFSET_METADATA_TOO_LARGE": "{what}: commit metadata too large",
    "ILLEGAL_GENERATION": "group {what} rebalanced (illegal generation); stop its consumers and run again",
    "FENCED_INSTANCE_ID": "group {what} has a static member with this instance id; stop its consumers",
    "INVALID_GROUP_ID": "group id {what} is not valid",
    "STALE_MEMBER_EPOCH": "group {what} has active members (stale member epoch); stop its consumers",
    "UNKNOWN_TOPIC_ID": "{what}: unknown topic id",
    "UNSUPPORTED_VERSION": "the broker does not support this request for {what}; upgrade the broker",
    "_UNSUPPORTED_FEATURE": "the broker does not support this request for {what}; upgrade the broker",
    "INVALID_REQUEST": "the broker rejected the request for {what} as invalid",
    "POLICY_VIOLATION": "a broker policy refused the request for {what}",
    "UNKNOWN": "the broker failed while working on {what}; check the broker logs",
    "OFFSET_NOT_AVAILABLE": "{what}: the offset is not available yet (leader changing); try again",
    "KAFKA_STORAGE_ERROR": "{what}: the broker has a storage error; check the broker",
    "UNKNOWN_LEADER_EPOCH": "{what}: the leader is changing; try again",
    "UNRELEASED_INSTANCE_ID": "group {what} still has a member with this group.instance.id that did "
                              "not leave (a killed process?); under group.protocol=consumer it is "
                              "released when that member's session expires (the group's "
                              "consumer.session.timeout.ms): start again after that",
}

# librdkafka reports some broker errors only as _FATAL with the broker's text: the text names
# the error (a static member rejoining under group.protocol=consumer while its predecessor is
# still in the group).
FATAL_TEXTS = {"instance ID is still used by another member": "UNRELEASED_INSTANCE_ID"}

# Advice about the group as a whole: in a per-partition result it names the group, not the
# partition ("group payments has active members", never "group orders:0 has ...").
GROUP_LEVEL = frozenset({
    "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
    "GROUP_ID_NOT_FOUND", "GROUP_AUTHORIZATION_FAILED", "NON_EMPTY_GROUP",
    "GROUP_SUBSCRIBED_TO_TOPIC", "UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS",
    "ILLEGAL_GENERATION", "FENCED_INSTANCE_ID", "INVALID_GROUP_ID", "STALE_MEMBER_EPOCH",
})

# Every error code the requests offsetkeeper sends can answer with (OffsetCommit, OffsetFetch,
# OffsetDelete, DescribeGroups, ListGroups, DeleteGroups, ListOffsets, Metadata, and the client's
# own local errors). tests/unit/test_reset_safety.py (test_every_receivable_kafka_error_has_advice)
# fails when one of them has no advice.
RECEIVABLE = frozenset({
    "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "NOT_COORDINATOR",
    "REQUEST_TIMED_OUT", "NETWORK_EXCEPTION", "GROUP_ID_NOT_FOUND", "UNKNOWN_TOPIC_OR_PART",
    "GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED",
    "SASL_AUTHENTICATION_FAILED", "NON_EMPTY_GROUP", "GROUP_SUBSCRIBED_TO_TOPIC",
    "UNKNOWN_MEMBER_ID", "REBALANCE_IN_PROGRESS", "OFFSET_OUT_OF_RANGE",
    "INVALID_COMMIT_OFFSET_SIZE", "OFFSET_METADATA_TOO_LARGE", "ILLEGAL_GENERATION",
    "FENCED_INSTANCE_ID", "INVALID_GROUP_ID", "STALE_MEMBER_EPOCH", "UNKNOWN_TOPIC_ID",
    "UNSUPPORTED_VERSION", "INVALID_REQUEST", "POLICY_VIOLATION", "UNKNOWN",
    "OFFSET_NOT_AVAILABLE", "KAFKA_STORAGE_ERROR", "UNKNOWN_LEADER_EPOCH",
    "_TIMED_OUT", "_TRANSPORT", "_ALL_BROKERS_DOWN", "_RESOLVE", "_UNKNOWN_TOPIC",
    "_UNKNOWN_PARTITION", "_NOENT", "_AUTHENTICATION", "_UNSUPPORTED_FEATURE",
})


# --- authorization -------------------------------------------------------------------------
AUTHORIZATION = frozenset({"GROUP_AUTHORIZATION_FAILED", "TOPIC_AUTHORIZATION_FAILED",
                           "CLUSTER_AUTHORIZATION_FAILED"})
AUTHENTICATION = frozenset({"SASL_AUTHENTICATION_FAILED", "_AUTHENTICATION"})
DENIED_MARK = "not authorized ("

# The ACL operations Kafka checks for the requests behind each `action` (Kafka's
# KafkaApis/GroupCoordinator authorization): (operation on the group, operation on the topic).
# An error answers which resource type was refused; this says which operation it needed.
ACL_OPERATIONS: dict[str, tuple[str | None, str | None]] = {
    "list groups": ("Describe", None),
    "describe group": ("Describe", None),
    "describe groups": ("Describe", None),
    "read committed offsets": ("Describe", "Describe"),
    "commit offsets": ("Read", "Read"),
    "delete offsets": ("Delete", "Read"),
    "delete group": ("Delete", None),
    "consume": ("Read", "Read"),
    "read records": (None, "Read"),
    "list topics": (None, "Describe"),
    "read log offsets": (None, "Describe"),
    "read log start offsets": (None, "Describe"),
    "read log end offsets": (None, "Describe"),
    "look up offsets by time": (None, "Describe"),
    "describe topic configs": (None, "DescribeConfigs"),
    "create topic": (None, "Create"),
    "produce": (None, "Write"),
}


def group_denied(name: str, *, action: str, group: str, topics: list[str]) -> str:
    """One sentence for a group whose every partition was refused with the same authorization
    error (instead of one per partition)."""
    return denied(name, action=action, group=group, topic=", ".join(sorted(set(topics))))


def denied(name: str, *, action: str, group: str | None = None, topic: str | None = None) -> str:
    """One sentence for an authorization error: the resource refused and the ACL operation the
    principal needs on it (e.g. `not authorized: this principal needs Read on group payments`)."""
    group_op, topic_op = ACL_OPERATIONS.get(action, (None, None))
    if name == "GROUP_AUTHORIZATION_FAILED":
        what = f"{group_op or 'Describe'} on group {group}" if group else \
            f"{group_op or 'Describe'} on the group"
    elif name == "TOPIC_AUTHORIZATION_FAILED":
        what = f"{topic_op or 'Describe'} on topic {topic}" if topic else \
            f"{topic_op or 'Describe'} on the topic"
    else:
        what = "an operation on the cluster resource"
    return (f"{action}: {DENIED_MARK}{name}): this principal needs {what}; "
            "grant it with an ACL (kafka-acls --add)")


def is_denied(text: str) -> bool:
    """True for a message made by `denied` (where only the text of an error was kept)."""
    return DENIED_MARK in text


def partition_error(name: str, *, group: str, tp: object, action: str = "commit offsets") -> str:
    """One sentence for an error code answered for one partition of a group's request."""
    advice = ADVICE.get(name)
    if advice is None:
        return f"{tp}: Kafka error {name}"
    if name in AUTHORIZATION:
        return denied(name, action=action, group=group, topic=getattr(tp, "topic", None))
    if name in GROUP_LEVEL:
        return f"{tp}: {advice.format(what=group)}"
    return advice.format(what=f"{tp} of group {group}")


def translate_code(name: str, *, action: str, detail: str = "", group: str | None = None,
                   retriable: bool | None = None) -> OffsetkeeperError:
    """The OffsetkeeperError for a bare error code name (e.g. from librdkafka's C API)."""
    what = group if group is not None else "the request"
    advice = ADVICE.get(name)
    text = advice.format(what=what) if advice else f"{what}: {detail or 'Kafka error ' + name}"
    message = denied(name, action=action, group=group) if name in AUTHORIZATION \
        else f"{action}: {text}"
    ctx = {"group": group}
    if name == "GROUP_ID_NOT_FOUND":
        return UnknownGroupError(message, **ctx)
    if name in {"NON_EMPTY_GROUP", "UNKNOWN_MEMBER_ID", "GROUP_SUBSCRIBED_TO_TOPIC"}:
        return GroupActiveError(message, **ctx)
    return KafkaOperationError(message, code=name, retriable=name in RETRIABLE if retriable is None
                               else retriable, **ctx)


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
    if name == "_FATAL":
        text = str(err.args[0] if isinstance(err, KafkaException) and err.args else err)
        name = next((n for mark, n in FATAL_TEXTS.items() if mark in text), name)
    what = group if group is not None else (
        f"{topic}:{partition}" if partition is not None else (topic or "the request"))
    advice = ADVICE.get(name)
    if advice is None:
        raw = err.args[0] if isinstance(err, KafkaException) and err.args else err
        detail = raw.str() if isinstance(raw, KafkaError) else str(raw)
        advice = f"{what}: {detail}" if detail else f"{what}: Kafka error {name or type(err).__name__}"
    message = denied(name, action=action, group=group, topic=topic) if name in AUTHORIZATION \
        else f"{action}: {advice.format(what=what)}"
    if name == "GROUP_ID_NOT_FOUND":
        return UnknownGroupError(message, **ctx)
    if name in {"UNKNOWN_TOPIC_OR_PART", "_UNKNOWN_TOPIC", "_UNKNOWN_PARTITION", "_NOENT"}:
        return UnknownTopicError(message, **ctx)
    if name in {"NON_EMPTY_GROUP", "UNKNOWN_MEMBER_ID", "GROUP_SUBSCRIBED_TO_TOPIC"}:
        return GroupActiveError(message, **ctx)
    return KafkaOperationError(message, code=name or None, retriable=is_retriable(err), **ctx)


def connection_failure(name: str, detail: str, *, bootstrap: str) -> OffsetkeeperError | None:
    """The error for a client that cannot log in (SASL) or shake hands (TLS) with the cluster,
    from librdkafka's error callback (those never reach a request: it just times out); None for
    other errors. One line; librdkafka's texts hold no secrets, but only the reason is kept."""
    if name in AUTHENTICATION:
        return KafkaOperationError(
            f"connect to {bootstrap}: {ADVICE['_AUTHENTICATION']}", code=name, retriable=False)
    if name == "_SSL":
        reason = detail.split("/bootstrap: ", 1)[-1].split(" (after ", 1)[0]
        return KafkaOperationError(
            f"connect to {bootstrap}: TLS failed: {reason}; check ssl.ca.location and the other "
            "ssl.* settings in the command config", code=name, retriable=False)
    return None
