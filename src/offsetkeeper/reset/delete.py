"""Deleting committed offsets and whole groups, with the same safety as resets."""

from __future__ import annotations

from dataclasses import dataclass, field

from offsetkeeper.errors import UsageError
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.models import TopicPartition
from offsetkeeper.reset.plan import TopicSpec


@dataclass
class DeleteResult:
    """Rows describing what was (or would be) deleted, and one message per failure."""

    rows: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def delete_offsets(admin: KafkaAdmin, groups: list[str], specs: list[TopicSpec], *,
                   execute: bool) -> DeleteResult:
    """Delete the groups' committed offsets on the given partitions (dry run unless execute)."""
    parts = admin.topic_partitions([s.topic for s in specs])
    tps: list[TopicPartition] = []
    for s in specs:
        for p in s.partitions or parts[s.topic]:
            if p not in parts[s.topic]:
                raise UsageError(f"topic '{s.topic}' has no partition {p}")
            tps.append(TopicPartition(s.topic, p))
    infos = admin.describe_groups(groups)
    committed = admin.committed_offsets_many(groups)
    out = DeleteResult()
    for g in groups:
        reason = infos[g].refusal
        mine = [tp for tp in tps if tp in committed[g]]
        if not committed[g]:
            out.errors.append(f"group {g} has no committed offsets")
            continue
        if reason:
            out.errors.append(reason)
            out.rows += [{"group": g, "topic": tp.topic, "partition": tp.partition,
                          "current": committed[g][tp].offset, "result": "refused"} for tp in mine]
            continue
        results: dict[TopicPartition, str | None] = {}
        if execute and mine:
            results = admin.delete_offsets(g, mine)
        for tp in tps:
            cur = committed[g].get(tp)
            if cur is None:
                res = "no committed offset"
            elif not execute:
                res = "would delete"
            else:
                err = results.get(tp)
                res = "deleted" if err is None else f"failed: {err}"
                if err:
                    out.errors.append(f"group {g} {tp}: delete failed ({err})")
            out.rows.append({"group": g, "topic": tp.topic, "partition": tp.partition,
                             "current": None if cur is None else cur.offset, "result": res})
    return out


def delete_groups(admin: KafkaAdmin, groups: list[str], *, execute: bool) -> DeleteResult:
    """Delete whole groups (refused while they have active members)."""
    infos = admin.describe_groups(groups)
    committed = admin.committed_offsets_many(groups)
    out = DeleteResult()
    deletable = []
    for g in groups:
        info = infos[g]
        reason = info.refusal
        if reason:
            out.errors.append(reason)
            out.rows.append({"group": g, "state": info.state, "result": "refused"})
        elif info.state == "dead" and not committed[g]:
            out.errors.append(f"group {g} does not exist")
            out.rows.append({"group": g, "state": info.state, "result": "not found"})
        else:
            deletable.append(g)
    results = admin.delete_groups(deletable) if execute and deletable else {}
    for g in deletable:
        if not execute:
            res = "would delete"
        elif results.get(g) is None:
            res = "deleted"
        else:
            res = "failed"
            out.errors.append(str(results[g]))
        out.rows.append({"group": g, "state": infos[g].state, "result": res})
    return out
