"""One exception tree for everything offsetkeeper reports to a user.

    OffsetkeeperError                 exit_code 1 — an operation failed
    ├── UsageError                    exit_code 2 — bad input; nothing was changed
    │   ├── ConfigError               a config file, property or cluster name is wrong
    │   ├── UnknownGroupError         the group has no committed offsets / does not exist
    │   ├── UnknownTopicError         a topic or partition does not exist
    │   ├── NotFoundError             a named snapshot or backup does not exist (also a StoreError)
    │   ├── ConsumerConfigError       an invalid commit policy / consumer parameter
    │   ├── PartitionNotAssignedError a commit for a partition the consumer does not own
    │   └── MissingExtraError         the command needs an extra that is not installed
    │                                 (`require_extra`: pip install 'offsetkeeper[spark]')
    ├── GroupActiveError              the group has members; offsets may not be changed
    ├── KafkaOperationError           the cluster answered with an error (code + advice)
    │   └── RestoreWriteError         a restore task could not write or resume (also a RuntimeError)
    ├── StoreError                    a snapshot/manifest/store file is missing or corrupt
    │   ├── SnapshotFormatError       a snapshot document is malformed (also a ValueError)
    │   ├── FencedError               another consumer now owns the partition (external store)
    │   └── StoreUnavailable*         the history store cannot be reached (history/store/base.py)
    ├── CheckpointBusyError           a streaming checkpoint looks in use or is stateful
    ├── NoCommittedOffset             auto.offset.reset=none and a partition has no offset
    ├── JvmHelperUnavailable          Java or the admin helper is missing (kafka/jvm.py)
    └── GroupCommitError*             a streaming query could not commit to its group
                                      (spark/kafka/group.py)

* defined next to the code that raises it. tests/unit/test_errors_tree.py checks this drawing
against the classes. The reset executor never raises for a group's failure: it returns an
`ApplyReport` whose status is PARTIAL_SUCCESS or FAILED.

Every message is one sentence a user can act on. Context (group, topic, partition) is
carried as attributes so callers can build reports without parsing messages.
"""

from __future__ import annotations

from collections.abc import Iterable


class OffsetkeeperError(Exception):
    """Root of every error offsetkeeper raises on purpose."""

    exit_code = 1

    def __init__(
        self,
        message: str,
        *,
        group: str | None = None,
        topic: str | None = None,
        partition: int | None = None,
    ) -> None:
        from offsetkeeper.redact import mask_url

        message = mask_url(message)  # no password of a store URL or DSN in any error
        super().__init__(message)
        self.message = message
        self.group = group
        self.topic = topic
        self.partition = partition

    def __str__(self) -> str:
        return self.message


class UsageError(OffsetkeeperError):
    """The input is wrong (a flag, a value, a file): fix it and run again."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration file, property file or cluster name is wrong."""


class UnknownGroupError(UsageError):
    """The consumer group does not exist or has no committed offsets."""


class UnknownTopicError(UsageError):
    """A topic or a partition of it does not exist."""


class GroupActiveError(OffsetkeeperError):
    """A group has active members, so its offsets must not be changed."""


class KafkaOperationError(OffsetkeeperError):
    """The cluster answered a request with an error."""

    def __init__(self, message: str, *, code: str | None = None, retriable: bool = False, **ctx):
        super().__init__(message, **ctx)
        self.code = code
        self.retriable = retriable


class StoreError(OffsetkeeperError):
    """A stored file (snapshot, manifest, mapping) is missing, unreadable or corrupt."""


class NotFoundError(UsageError, StoreError):
    """A named snapshot or backup does not exist: bad input, exit 2 (also a StoreError, as
    code that catches a store's errors expects)."""


class SnapshotFormatError(StoreError, ValueError):
    """A snapshot document does not have the expected structure."""


class RestoreWriteError(KafkaOperationError, RuntimeError):
    """A restore task could not write, or could not prove where to continue."""
class CheckpointBusyError(OffsetkeeperError):
    """A streaming checkpoint looks in use (or stateful), so it must not be changed now."""
class ConsumerConfigError(UsageError):
    """A commit policy or consumer parameter is invalid (checked before anything is consumed)."""


class PartitionNotAssignedError(UsageError):
    """A commit or acknowledgement names a partition this consumer does not own."""


class FencedError(StoreError):
    """An external-store transaction lost its partition to another consumer and was rolled back."""


class NoCommittedOffset(OffsetkeeperError):
    """auto.offset.reset is 'none' and a partition has no committed (or stored) offset."""


class JvmHelperUnavailable(OffsetkeeperError):
    """Java or the admin helper's jar is missing: the commands that need it cannot run (raised
    by kafka/jvm.py; defined here so the front ends can name it without the Kafka layer)."""


def did_you_mean(name: str, candidates: Iterable[str]) -> str:
    """`; did you mean 'payments'?` when a candidate is close to `name` (a typo), else ""."""
    import difflib

    close = difflib.get_close_matches(name, [c for c in candidates if c != name], n=1, cutoff=0.6)
    return f"; did you mean '{close[0]}'?" if close else ""


class MissingExtraError(UsageError):
    """A command needs an optional part (an extra) that is not installed: the message is the
    pip command that installs it."""

    def __init__(self, message: str, *, extra: str) -> None:
        super().__init__(message)
        self.extra = extra


#: The extras of pyproject.toml and the modules whose import proves each is installed.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "spark": ("pyspark", "pyarrow", "pandas", "numpy"),
    "ui": ("starlette", "jinja2", "multipart", "uvicorn", "matplotlib"),
    "plots": ("matplotlib",),
    "postgres": ("psycopg",),
    "redis": ("redis",),
    "zk": ("kazoo",),
    "demo": ("starlette", "jinja2", "multipart", "uvicorn", "matplotlib", "kazoo", "httpx"),
}
#: The extra to install for each group of EXTRA_MODULES (plots come with ui, the stores together).
_PIP_EXTRA = {"plots": "ui", "postgres": "stores", "redis": "stores", "demo": "all"}


def require_extra(extra: str, what: str) -> None:
    """Raise MissingExtraError (exit 2, one line naming the pip command) unless the modules of
    `extra` can be imported; `what` names the command or feature, e.g. 'backup run'.

    Call it at the entry of a command (before anything connects), not inside library code that
    only an installed extra reaches. It looks the modules up without importing them.
    """
    from importlib.util import find_spec

    pip_extra = _PIP_EXTRA.get(extra, extra)
    for module in EXTRA_MODULES[extra]:
        try:
            found = find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise MissingExtraError(
                f"offsetkeeper {what} needs the {pip_extra} extra: "
                f"pip install 'offsetkeeper[{pip_extra}]'", extra=pip_extra)
