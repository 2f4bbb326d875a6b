"""The one place where confluent-kafka / Kafka errors become offsetkeeper errors.

- request errors (admin requests, commits, offset reads): `translate`, `translate_code`,
  `partition_error`, with one actionable sentence per code in ADVICE (RECEIVABLE lists the codes
  those requests can answer with; a test fails when one has no advice);
- authorization: `denied` names the resource and the ACL operation the principal needs;
- connecting: `connection_failure` (SASL login, TLS handshake);
- delivery reports of producers: `delivery_message` (DELIVERABLE, DELIVERY_ADVICE);
- client configuration refused by librdkafka: `client_config_error` (secret values masked);
- the end of a partition while reading, which is not a failure: `PARTITION_EOF`;
- a consumer group the cluster does not have: `unknown_group` (with the closest name).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from confluent_kafka import KafkaError, KafkaException

from offsetkeeper.errors import (
    ConfigError,
    GroupActiveError,
    KafkaOperationError,
    OffsetkeeperError,
    UnknownGroupError,
    UnknownTopicError,
    did_you_mean,
)
from offsetkeeper.kafka.ports import GroupsPort
from offsetkeeper.redact import MASK, is_secret_key, redact_text

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


def denied(name: str, *, action: str, group: str | None = None, topic: str | None = None,
           subject: str | None = None) -> str:
    """One sentence for an authorization error: the resource refused and the ACL operation the
    principal needs on it (e.g. `not authorized: this principal needs Read on group payments`).
    `subject` starts the sentence instead of `action` (e.g. `producing to orders:3`)."""
    group_op, topic_op = ACL_OPERATIONS.get(action, (None, None))
    if name == "GROUP_AUTHORIZATION_FAILED":
        what = f"{group_op or 'Describe'} on group {group}" if group else \
            f"{group_op or 'Describe'} on the group"
    elif name == "TOPIC_AUTHORIZATION_FAILED":
        what = f"{topic_op or 'Describe'} on topic {topic}" if topic else \
            f"{topic_op or 'Describe'} on the topic"
    else:
        what = "an operation on the cluster resource"
    return (f"{subject or action}: {DENIED_MARK}{name}): this principal needs {what}; "
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


def _advise(advice: str, what: str) -> str:
    # Without a group or topic to name, "the request for the request timed out" reads as a typo.
    return advice.format(what=what).replace("the request for the request", "the request")


def translate_code(name: str, *, action: str, detail: str = "", group: str | None = None,
                   retriable: bool | None = None) -> OffsetkeeperError:
    """The OffsetkeeperError for a bare error code name (e.g. from librdkafka's C API)."""
    what = group if group is not None else "the request"
    advice = ADVICE.get(name)
    text = _advise(advice, what) if advice else f"{what}: {detail or 'Kafka error ' + name}"
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
        else f"{action}: {_advise(advice, what)}"
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


# --- reading records -----------------------------------------------------------------------
# A consumer with enable.partition.eof reached the end of a partition: not a failure (librdkafka
# reports it as an error event, code -191).
PARTITION_EOF = KafkaError._PARTITION_EOF


def is_partition_eof(err: KafkaError | None) -> bool:
    """True for the end-of-partition event of a consumer (see PARTITION_EOF)."""
    return err is not None and err.code() == PARTITION_EOF


# --- delivery reports ----------------------------------------------------------------------
# Why a record was not delivered, and what to do (the sentence starts with "producing to T:P
# failed: "). Every code of DELIVERABLE has one; tests/unit/test_kafka_errors.py checks them.
DELIVERY_ADVICE = {
    "_MSG_TIMED_OUT": "records were not acknowledged within message.timeout.ms; check that the "
                      "partition has a leader and its broker is reachable, then run again",
    "MSG_SIZE_TOO_LARGE": "a record is larger than the producer's message.max.bytes or the "
                          "topic's max.message.bytes; raise them (the producer properties, "
                          "kafka-configs --alter) or write smaller records",
    "RECORD_LIST_TOO_LARGE": "a batch of records is larger than the broker accepts; lower "
                             "batch.size in the producer properties or raise the topic's "
                             "max.message.bytes",
    "NOT_ENOUGH_REPLICAS": "the partition has fewer in-sync replicas than the topic's "
                           "min.insync.replicas; bring its replicas' brokers back, then run again",
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": "the partition lost in-sync replicas while writing (fewer "
                                        "than min.insync.replicas); bring its replicas' brokers "
                                        "back, then run again",
    "UNKNOWN_TOPIC_OR_PART": "the topic or partition does not exist; create it (or add "
                             "partitions), then run again",
    "_UNKNOWN_TOPIC": "the topic does not exist; create it, then run again",
    "_UNKNOWN_PARTITION": "the topic has no such partition; add partitions or write to an "
                          "existing one",
    "INVALID_TIMESTAMP": "a record's timestamp is too far from the broker's clock for the topic "
                         "(message.timestamp.*.max.ms); raise that topic setting or use "
                         "message.timestamp.type=LogAppendTime",
    "INVALID_RECORD": "the broker refused a record as invalid (a compacted topic needs a key on "
                      "every record); check the topic's cleanup.policy and the records",
    "INVALID_MSG": "the broker found a record corrupt (checksum mismatch); check the network "
                       "and the broker, then run again",
    "_FATAL": "the idempotent producer hit a fatal error and stopped (the broker lost records it "
              "had acknowledged?); check the brokers, then run again",
    "OUT_OF_ORDER_SEQUENCE_NUMBER": "the broker lost records it had acknowledged (out-of-order "
                                    "sequence; unclean leader election?); check the brokers, "
                                    "then run again",
    "UNKNOWN_PRODUCER_ID": "the broker no longer knows this producer (its state expired); run "
                           "again",
    "INVALID_PRODUCER_EPOCH": "another producer fenced this one; make sure one job writes at a "
                              "time, then run again",
    "PRODUCER_FENCED": "another producer with the same transactional.id fenced this one; make "
                       "sure one job writes at a time, then run again",
    "DUPLICATE_SEQUENCE_NUMBER": "the broker saw a record twice (duplicate sequence); run again",
    "_PURGE_QUEUE": "records were dropped because the producer was closed before sending them; "
                    "run again",
    "_PURGE_INFLIGHT": "records were dropped because the producer was closed while sending "
                       "them; run again",
    "_QUEUE_FULL": "the producer's queue is full; lower the write rate or raise "
                   "queue.buffering.max.messages in the producer properties",
    "POLICY_VIOLATION": "a broker policy refused the records; check the brokers' policies",
    "KAFKA_STORAGE_ERROR": "the partition's broker has a storage error; check its disks, then run "
                           "again",
    "REQUEST_TIMED_OUT": "the partition's broker did not answer in time; check its load, then run "
                         "again",
    "NOT_LEADER_FOR_PARTITION": "the partition's leader moved and the producer ran out of retries; "
                              "run again",
    "LEADER_NOT_AVAILABLE": "the partition has no leader (its brokers are down?); check the "
                            "brokers, then run again",
    "_TRANSPORT": "the connection to the partition's leader broke; check the network and the "
                  "broker, then run again",
    "NETWORK_EXCEPTION": "the connection to the partition's leader broke; check the network and "
                         "the broker, then run again",
    "_ALL_BROKERS_DOWN": "no broker is reachable; check bootstrap.servers and the network",
    "INVALID_REQUIRED_ACKS": "the broker refused the producer's acks setting; use acks=all",
    "UNSUPPORTED_FOR_MESSAGE_FORMAT": "the topic's message format is too old for these records "
                                      "(headers need 0.11 or later); raise the topic's "
                                      "message.format.version",
    "UNSUPPORTED_COMPRESSION_TYPE": "the broker does not support the producer's "
                                    "compression.type; choose another in the producer "
                                    "properties",
    "CLUSTER_AUTHORIZATION_FAILED": f"{DENIED_MARK}CLUSTER_AUTHORIZATION_FAILED): this principal "
                                    "needs IdempotentWrite on the cluster (brokers before 2.8); "
                                    "grant it with an ACL (kafka-acls --add)",
    "_SSL": "the TLS handshake with the partition's broker failed; check ssl.ca.location and "
            "the other ssl.* settings",
    "_AUTHENTICATION": ADVICE["_AUTHENTICATION"],
    "SASL_AUTHENTICATION_FAILED": ADVICE["SASL_AUTHENTICATION_FAILED"],
}

# Every error a producer's delivery report (or a produce() call) can carry for offsetkeeper's
# producers (restore, the Spark sink): each has advice naming what to do.
DELIVERABLE = frozenset({*DELIVERY_ADVICE, "TOPIC_AUTHORIZATION_FAILED",
                         "TRANSACTIONAL_ID_AUTHORIZATION_FAILED"})


def delivery_message(err: KafkaError | KafkaException | str, *, topic: str,
                     partition: int | None = None) -> str:
    """One sentence for a record that was not delivered: the partition (or topic) and what to
    do, e.g. `producing to orders:3 failed: a record is larger than the topic accepts; raise
    ...`. `err` is the error of a delivery report, a produce() call's exception, or a name."""
    if isinstance(err, KafkaException) and err.args and isinstance(err.args[0], KafkaError):
        err = err.args[0]
    name = err.name() if isinstance(err, KafkaError) else str(err)
    where = f"{topic}:{partition}" if partition is not None and partition >= 0 else topic
    subject = f"producing to {where} failed"
    if name == "TOPIC_AUTHORIZATION_FAILED":
        return denied(name, action="produce", topic=topic, subject=subject)
    if name == "TRANSACTIONAL_ID_AUTHORIZATION_FAILED":
        return (f"{subject}: {DENIED_MARK}{name}): this principal needs Write on the "
                "transactional id; grant it with an ACL (kafka-acls --add)")
    advice = DELIVERY_ADVICE.get(name)
    if advice is None:
        detail = err.str() if isinstance(err, KafkaError) else ""
        advice = (f"Kafka error {name}" + (f" ({detail})" if detail and detail != name else "")
                  + "; check the broker logs, then run again")
    return f"{subject}: {advice}"


# --- client configuration ------------------------------------------------------------------
_INVALID_VALUE = re.compile(r'Invalid value "(?P<value>.*)" for configuration property '
                            r'"(?P<key>[^"]+)"', re.S)


def client_config_error(exc: BaseException, props: Mapping[str, str], *,
                        where: str) -> ConfigError:
    """The ConfigError for client properties librdkafka refused (building a client raised
    `exc`): one line naming the property, with what to do; never a secret value (the value of
    any secret-looking property of `props` is masked wherever it appears, and so is the value
    quoted for a secret property whatever its length)."""
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else exc
    text = err.str() if isinstance(err, KafkaError) else str(err)
    text = _INVALID_VALUE.sub(
        lambda m: (f'Invalid value "{MASK}" for configuration property "{m["key"]}"'
                   if is_secret_key(m["key"]) else m[0]), text)
    text = redact_text(text, props)
    lines = text.strip().splitlines()
    text = lines[0] if lines else type(exc).__name__
    text = re.sub(r"^Failed to create (producer|consumer|client): ", "", text)
    if text.startswith("Unsupported SASL mechanism"):
        text += (" (sasl.mechanism: use PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, GSSAPI or "
                 "OAUTHBEARER)")
    elif text.startswith("No such configuration property"):
        text += " (check the name: librdkafka's properties are listed in its CONFIGURATION.md)"
    elif text.startswith("Invalid value"):
        text += " (check the value: librdkafka's CONFIGURATION.md lists the allowed ones)"
    return ConfigError(f"{where}: {text}")


def unknown_group(admin: GroupsPort, group: str, *, hint: str = "") -> UnknownGroupError:
    """The error for a consumer group the cluster does not have, with the closest existing
    group as a suggestion (the group list is read only here, when a group is missing)."""
    try:
        known = [g.group_id for g in admin.list_groups()]
    except Exception:  # the suggestion is a courtesy: never let it hide the real error
        known = []
    return UnknownGroupError(f"consumer group '{group}' does not exist"
                             f"{did_you_mean(group, known)}{hint}", group=group)
