"""`groups list`: every group with its type, protocol and real state (kafka-groups.sh --list)."""

from __future__ import annotations

from dataclasses import dataclass

from offsetkeeper.errors import KafkaOperationError, OffsetkeeperError, UnknownGroupError
from offsetkeeper.kafka.group_types import state_key
from offsetkeeper.kafka.jvm import JvmHelperUnavailable
from offsetkeeper.kafka.ports import AdminPort, KafkaPort, TypedGroupsPort
from offsetkeeper.models import GroupListing

GROUP_TYPES = ("classic", "consumer", "share", "streams", "unknown")


@dataclass(frozen=True)
class GroupRow:
    """One line of `groups list`: state and type lower-case (`assigning`, `share`), protocol as
    the broker names it (`consumer`, `share`, `streams`, `connect`; None when unknown)."""

    group_id: str
    state: str
    group_type: str
    protocol: str | None


def list_typed_groups(admin: KafkaPort, *, types: set[str] | None = None,
                      states: set[str] | None = None,
                      strict: bool = False) -> tuple[list[GroupRow], str | None]:
    """Groups of every type, filtered by type and state (lower-case names); and a note when
    the Java admin helper is missing or failed (then the groups, types and states are
    librdkafka's: no share or streams groups, no protocol, no Assigning/Reconciling, which
    read `unknown`). With `strict`, that failure is raised instead.

    librdkafka is asked first: it checks the connection settings and reachability with the
    same errors as every other command, and names classic and consumer groups with their type,
    protocol and state. Kafka's Java Admin client (a JVM start, about a second) is asked only
    when librdkafka cannot tell: some group is of another type (share, streams, Connect's), or
    a consumer-protocol group is in a state librdkafka cannot name (Assigning, Reconciling).
    """
    basic, others = _librdkafka_listing(admin)
    note = None
    if not needs_java(basic, others):
        return _filtered(librdkafka_rows(basic), types, states), None
    try:
        rows = [GroupRow(g.group_id, state_key(g.state), state_key(g.group_type), g.protocol)
                for g in admin.list_all_groups()]
    except (JvmHelperUnavailable, KafkaOperationError) as exc:
        if strict:  # share-groups / streams-groups: nothing to show without the Java client
            raise
        # librdkafka answered: its listing (classic and consumer groups only) is still worth
        # showing, with a note saying what is missing and why
        note = f"{exc.message}; shown without share and streams groups, PROTOCOL unknown, and " \
               "consumer-protocol groups that are assigning or reconciling in state unknown"
        rows = [GroupRow(g.group_id, g.state, g.group_type or "unknown", None) for g in basic]
    return _filtered(rows, types, states), note


def needs_java(basic: list[GroupListing], others: set[str]) -> bool:
    """Whether librdkafka's listing leaves something only Kafka's Java client can say: groups of
    another protocol type exist (`others`: share, streams, Connect's), or a group's state is
    one librdkafka cannot name (`unknown`: a consumer-protocol group assigning or reconciling;
    or a group type it does not know)."""
    return bool(others) or any(g.state == "unknown" or g.group_type in ("", "unknown")
                               for g in basic)


def librdkafka_rows(basic: list[GroupListing]) -> list[GroupRow]:
    """`groups list` rows from librdkafka's typed listing alone (classic and consumer groups,
    which is all it lists): what the Java client says of the same groups."""
    return [GroupRow(g.group_id, g.state, g.group_type, g.protocol) for g in basic]


def _librdkafka_listing(admin: AdminPort) -> tuple[list, set[str]]:
    """librdkafka's typed listing, and the ids of groups it leaves out (other protocol types):
    both requests in flight at once."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="group-ids") as pool:
        admin.connect()  # connect (and probe) once, before two threads use the client
        every = pool.submit(admin.all_group_ids)
        basic = admin.list_groups()
        others = every.result() - {g.group_id for g in basic}
    return basic, others


def _filtered(rows: list[GroupRow], types: set[str] | None,
              states: set[str] | None) -> list[GroupRow]:
    if types:
        rows = [r for r in rows if r.group_type in types]
    if states:
        rows = [r for r in rows if r.state in states]
    return sorted(rows, key=lambda r: r.group_id)


def not_found_error(admin: TypedGroupsPort, group: str, kind: str) -> UnknownGroupError:
    """The error for a `kind` ("share", "streams") group that Kafka does not know as one: says
    what the group is when it exists as another type (as Kafka's tools do: "Group g is not a
    share group"), else that it does not exist."""
    try:
        found = next((x for x in admin.list_all_groups() if x.group_id == group), None)
    except OffsetkeeperError:
        found = None
    if found is not None and state_key(found.group_type) != kind:
        what = state_key(found.group_type)
        article = "an" if what[:1] in "aeiou" else "a"
        return UnknownGroupError(
            f"group '{group}' is {article} {what} group, not a {kind} group "
            f"(state {state_key(found.state)}); see 'offsetkeeper groups describe'", group=group)
    return UnknownGroupError(f"{kind} group '{group}' does not exist", group=group)
