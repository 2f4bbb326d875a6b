"""What the page of a share group (KIP-932) and of a streams group (KIP-1071) shows: what
`share-groups describe` and `streams-groups describe` show, as rows the dashboard renders (the
consumer groups' pages are `ops.group_pages`).

Both come from Kafka's Java admin client (the group facade `ops.groups`). Without the JVM
helper the describe raises `JvmHelperUnavailable`: the page is the group's name and that one
sentence (`error`), never a failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from offsetkeeper.errors import JvmHelperUnavailable
from offsetkeeper.kafka.ports import KafkaPort
from offsetkeeper.ops.groups import share_group, streams_group


@dataclass(frozen=True)
class TypedGroupView:
    """A share or streams group's page."""

    group: str
    group_type: str                 # share or streams
    state: str = ""                 # Kafka's spelling: Stable, Empty, NotReady ...
    coordinator: str = ""
    epochs: dict = field(default_factory=dict)
    members: list[dict] = field(default_factory=list)
    partitions: list[dict] = field(default_factory=list)
    total_lag: int = 0
    processes: list[dict] = field(default_factory=list)       # streams
    subtopologies: list[dict] = field(default_factory=list)   # streams
    input_topics: list[str] = field(default_factory=list)     # streams
    error: str | None = None        # the JVM helper is missing: its sentence


def _tasks(kind) -> str:
    # as `streams-groups describe --members` prints them: subtopology:[partitions]; ...
    return "; ".join(f"{sub}:[{','.join(str(p) for p in ps)}]" for sub, ps in kind) or "-"


def share_group_page(admin: KafkaPort, group: str) -> TypedGroupView:
    """State, members and their assignments, and per partition the start offset, log start
    and end, and lag (KIP-1226: computed by the broker)."""
    try:
        v = share_group(admin, group)
    except JvmHelperUnavailable as exc:
        return TypedGroupView(group, "share", error=exc.message)
    d = v.detail
    owner = {(tp.topic, tp.partition): m.client_id or m.member_id
             for m in d.members for tp in m.assignment}
    parts = [{"topic": r.topic, "partition": r.partition, "start_offset": r.start_offset,
              "log_start": r.log_start_offset, "log_end": r.log_end_offset, "lag": r.lag,
              "leader_epoch": r.leader_epoch, "assigned_to": owner.get((r.topic, r.partition))}
             for r in v.offsets]
    members = [{"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
                "rack": m.rack, "member_epoch": m.member_epoch,
                "assignment": [str(tp) for tp in m.assignment]} for m in d.members]
    return TypedGroupView(group, "share", d.state, d.coordinator,
                          {"group epoch": d.group_epoch,
                           "assignment epoch": d.target_assignment_epoch},
                          members, parts, sum(max(0, p["lag"] or 0) for p in parts))


def streams_group_page(admin: KafkaPort, group: str) -> TypedGroupView:
    """Members with their processes and tasks, the topology (subtopologies, input topics), and
    per input partition the committed offset, log end and lag."""
    try:
        v = streams_group(admin, group)
    except JvmHelperUnavailable as exc:
        return TypedGroupView(group, "streams", error=exc.message)
    d = v.detail
    members = [{"member_id": m.member_id, "process_id": m.process_id, "client_id": m.client_id,
                "host": m.host, "instance_id": m.instance_id, "member_epoch": m.member_epoch,
                "protocol": "classic" if m.is_classic else "streams",
                "active": _tasks(m.assignment.active), "standby": _tasks(m.assignment.standby),
                "warmup": _tasks(m.assignment.warmup),
                "target_active": _tasks(m.target_assignment.active)} for m in d.members]
    procs: dict[str, dict] = {}
    for m in d.members:
        p = procs.setdefault(m.process_id, {"process_id": m.process_id, "hosts": set(),
                                            "members": 0, "active_tasks": 0, "standby_tasks": 0})
        p["hosts"].add(m.host)
        p["members"] += 1
        p["active_tasks"] += sum(len(ps) for _, ps in m.assignment.active)
        p["standby_tasks"] += sum(len(ps) for _, ps in m.assignment.standby)
    processes = [{**p, "hosts": sorted(p["hosts"])} for _, p in sorted(procs.items())]
    subs = [{"subtopology": s.subtopology_id, "source_topics": list(s.source_topics),
             "repartition_source_topics": list(s.repartition_source_topics),
             "repartition_sink_topics": list(s.repartition_sink_topics),
             "state_changelog_topics": list(s.state_changelog_topics)} for s in d.subtopologies]
    parts = [{"topic": r.topic, "partition": r.partition, "committed": r.current_offset,
              "log_end": r.log_end_offset, "lag": r.lag} for r in v.offsets]
    return TypedGroupView(group, "streams", d.state, d.coordinator,
                          {"group epoch": d.group_epoch,
                           "target assignment epoch": d.target_assignment_epoch,
                           "topology epoch": d.topology_epoch},
                          members, parts, sum(max(0, p["lag"] or 0) for p in parts),
                          processes, subs, list(d.input_topics))
