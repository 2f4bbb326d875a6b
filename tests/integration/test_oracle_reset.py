"""Apache Kafka's kafka-consumer-groups as the oracle for `offsets reset`, `groups describe`,
`offsets delete` and `offsets reset --script` (issue "Apache Kafka for real"; docs/oracle.md).

Every hypothesis example builds its own topics and groups on the session's Kafka 4.4.0 cluster
(partitions with gaps, an uncleaned compact-policy topic, transactional partitions with committed
and aborted transactions and sometimes one left open, records deleted with delete_records, empty
partitions, duplicate and out-of-order timestamps, commits below the log start and beyond the log
end, partitions without a commit) next to module-wide ones: a topic the log cleaner has really
compacted, a group with a running member and an Empty KIP-848 group. It then runs each of the
eight KIP-122 targets under two of the six scopes (one group / several groups / --all-groups x
`--topic A --topic B:0,1 --topic C:1` / --all-topics; every example covers all six) through
`offsetkeeper offsets reset --dry-run -o csv --export F` and `kafka-consumer-groups
--reset-offsets --dry-run --export`, compares `groups describe` with `--describe`, and
`offsets delete --execute` with `--delete-offsets` on a twin group. A second property test runs
the `--script` of a reset with the real kafka-consumer-groups.sh.

Where offsetkeeper differs on purpose, the difference is in KNOWN_DIFFERENCES (and
docs/oracle.md); a disagreement that no entry explains fails the test. Each entry also has a
small test of its own (`test_difference_<id>`) showing that the difference is real.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer
from confluent_kafka import TopicPartition as CkTP
from confluent_kafka.admin import AdminClient
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.cli import run_cli
from tests.kafkatools import LiveConsumer, create_topic, produce
from tests.kafkatools import commit as commit_once
from tests.oracle import DescribeRow, ToolRunner, parse_describe, parse_export, run_tool, tool_bin

pytestmark = pytest.mark.integration

# Record timestamps sit on an hourly grid reaching back from the module's start (plus 0-2 ms, so
# equal and neighbouring timestamps occur); `--by-duration PT{k}H30M` then falls half-way between
# two grid points for the next 29 minutes, whatever second each tool reads its clock.
NOW0 = int(time.time() * 1000)
HOUR = 3_600_000
GRID = range(1, 13)

#: Every deliberate difference between offsetkeeper and kafka-consumer-groups (4.3.1, 4.4.0), as listed
#: (with the reasons) in docs/oracle.md. The property test accepts a disagreement only when one
#: of the "plan" entries explains it; each entry has a test of its own below showing it is real.
KNOWN_DIFFERENCES = {
    # in the plans (offsets) of inputs both accept
    "current-clamped": ("plan", "--to-current with a committed offset outside [log start, log "
                        "end]: offsetkeeper clamps it (with a note), Kafka keeps it as it is"),
    "shift-no-commit": ("plan", "--shift-by over a partition without a committed offset: Kafka "
                        "fails the whole command (exit 1, no plan); offsetkeeper fails that "
                        "partition only and plans the others (exit 1)"),
    "file-topic-filter": ("plan", "--from-file with --topic: Kafka ignores --topic and resets "
                          "every partition in the file; offsetkeeper keeps only the file's "
                          "partitions inside the --topic scope (exit 2 when none is)"),
    "file-new-group-all-groups": ("plan", "--from-file naming a group the cluster does not have, "
                                  "with --all-groups: offsetkeeper plans it (the file's groups), "
                                  "Kafka only resets groups the cluster lists"),
    "reset-metadata": ("plan", "a reset commits the new offsets: Kafka with empty commit "
                       "metadata, offsetkeeper keeping each partition's (--clear-metadata: "
                       "empty, as Kafka)"),
    "active-group-refused": ("plan", "a group with members: both leave it alone; Kafka prints "
                             "'Error: Assignments can only be reset ...' and exits 0, "
                             "offsetkeeper refuses it by name and exits 1"),
    # in what the commands accept
    "datetime-without-millis": ("input", "--to-datetime 2023-11-14T22:13:22 (no milliseconds): "
                                "Kafka cannot parse it (and exits 0), offsetkeeper reads it"),
    "signed-duration": ("input", "--by-duration -PT1H / PT-1H: Kafka reaches forward in time, "
                        "offsetkeeper refuses a sign (exit 2)"),
    "overlapping-topics": ("input", "--topic t:0 --topic t: Kafka fails (duplicate key), "
                           "offsetkeeper takes the union"),
    "error-exit-code": ("input", "an unknown topic or partition: both refuse; Kafka prints "
                        "'Error: ...' and exits 0, offsetkeeper exits 2"),
    "one-group-file-several-groups": ("input", "a topic,partition,offset file with several "
                                      "groups: Kafka finds 'No reset plan' for any of them, "
                                      "offsetkeeper applies the file to each group"),
    "delete-active-group": ("input", "offsets delete for a group with members: Kafka deletes "
                            "the offsets of topics the group does not subscribe to (KIP-496), "
                            "offsetkeeper refuses the group (exit 1)"),
    # in what describe shows
    "describe-lag-readable": ("describe", "groups describe LAG counts the records a "
                              "read_committed consumer still has to read (markers and aborted "
                              "records are not lag); LAG-RAW is Kafka's LAG (log end - offset)"),
}


def iso(ms: int, zone: str = "Z") -> str:
    """`yyyy-MM-ddTHH:mm:ss.SSS` + zone, the form kafka-consumer-groups parses (no zone = UTC)."""
    offset = timedelta(0)
    if zone not in ("Z", ""):
        sign = 1 if zone[0] == "+" else -1
        offset = sign * timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    local = datetime.fromtimestamp(ms / 1000, UTC) + offset
    return local.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + zone


def duration(hours: int, form: str) -> str:
    """`hours` and a half, written in one of the ISO-8601 forms both tools read."""
    return {"HM": f"PT{hours}H30M", "M": f"PT{hours * 60 + 30}M",
            "S": f"PT{hours * 3600 + 1800}S", "DHM": f"P0DT{hours}H30M"}[form]


def stamp(k: int, j: int) -> int:
    return NOW0 - k * HOUR + j


# -- the cluster side ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tool(bootstrap):
    runner = ToolRunner(bootstrap)
    try:
        yield runner
    finally:
        runner.close()


class Compacted:
    """A two-partition topic the log cleaner has compacted (gaps in its offsets), built once."""

    def __init__(self, bootstrap: str, name: str) -> None:
        self.bootstrap, self.name, self._ready, self._failed = bootstrap, name, False, ""
        create_topic(bootstrap, name, 2, {
            "cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
            "min.compaction.lag.ms": "0", "delete.retention.ms": "86400000", "retention.ms": "-1"})
        rnd = random.Random(20261124)
        records = []
        for p in range(2):
            for _ in range(14):
                key = f"k{rnd.randrange(4)}".encode()
                value = None if rnd.random() < 0.1 else b"v"
                records.append((p, key, value, None, stamp(rnd.choice(GRID), rnd.randrange(3))))
        produce(bootstrap, name, records)
        # A segment rolls when a record's timestamp is segment.ms past the segment's first one:
        # these (newer than every grid stamp) close the segment the cleaner then compacts.
        produce(bootstrap, name, [(p, b"roll", b"v", None, NOW0) for p in range(2)])

    def wait(self) -> str:
        """The topic's name once both partitions show a gap (the cleaner runs every 15 s)."""
        if self._failed:
            pytest.fail(self._failed)
        deadline = time.monotonic() + 90
        while not self._ready:
            offsets = read_positions(self.bootstrap, self.name, 2)
            if all(len(o) < o[-1] - o[0] + 1 for o in offsets.values() if o):
                self._ready = True
            elif time.monotonic() > deadline:
                self._failed = f"the log cleaner did not compact {self.name}: {offsets}"
                pytest.fail(self._failed)
            else:
                time.sleep(1)
        return self.name


def read_positions(bootstrap: str, topic: str, partitions: int) -> dict[int, list[int]]:
    """Offsets of the records of each partition (read_uncommitted), in order."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "oracle-reader",
                  "enable.auto.commit": False, "isolation.level": "read_uncommitted"})
    try:
        out = {}
        for p in range(partitions):
            low, high = c.get_watermark_offsets(CkTP(topic, p), timeout=10)
            got: list[int] = []
            if high > low:
                c.assign([CkTP(topic, p, low)])
                deadline = time.monotonic() + 10
                while time.monotonic() < deadline and (not got or got[-1] < high - 1):
                    m = c.poll(0.5)
                    if m is not None and not m.error():
                        got.append(m.offset())
            out[p] = got
        return out
    finally:
        c.close()


@pytest.fixture(scope="module")
def compacted(bootstrap):
    return Compacted(bootstrap, f"oracle-compacted-{os.getpid()}-{int(time.time())}")


@pytest.fixture(scope="module")
def active(bootstrap, compacted):
    """A group with a running member for the whole module (--all-groups always meets it)."""
    group = f"oracle-active-{os.getpid()}-{int(time.time())}"
    live = LiveConsumer(bootstrap, group, [compacted.name])
    # LiveConsumer waits 20 s; a busy machine needs longer (its thread owns the consumer)
    assert live.wait_assigned(60), "the live consumer got no assignment"
    try:
        yield live, group
    finally:
        live.stop()


@pytest.fixture(scope="module")
def consumer_protocol_group(bootstrap, compacted):
    """An Empty group of the KIP-848 consumer protocol with commits (--all-groups meets it)."""
    group = f"oracle-kip848-{os.getpid()}-{int(time.time())}"
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        c.subscribe([compacted.name])
        deadline = time.monotonic() + 30
        while not c.assignment() and time.monotonic() < deadline:
            c.poll(0.2)
        assert c.assignment(), "the KIP-848 consumer got no assignment"
        c.commit(offsets=[CkTP(compacted.name, 0, 1), CkTP(compacted.name, 1, 10_000)],
                 asynchronous=False)
    finally:
        c.close()
    return group


def commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """kafkatools.commit, retried while the group coordinator is loading or moving (a fresh or
    busy broker answers NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS for a while)."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + 60
    while True:
        try:
            commit_once(bootstrap, group, offsets)
            return
        except KafkaException as exc:
            if not exc.args[0].retriable() and exc.args[0].name() not in (
                    "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE"):
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def committed_state(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """Every committed offset of a group, read with plain confluent-kafka."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    fut = a.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
    res = fut.result(15)
    return {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions if tp.offset >= 0}


def watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
    """(log start, log end) per partition, retried while a new topic's leaders settle."""
    from confluent_kafka import KafkaException

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "oracle-reader"})
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                return {p: c.get_watermark_offsets(CkTP(topic, p), timeout=10)
                        for p in range(partitions)}
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
    finally:
        c.close()


# -- generated worlds ---------------------------------------------------------------------------

stamps = st.tuples(st.sampled_from(GRID), st.integers(0, 2))
# how a commit or a file offset is chosen once the log's offsets are known
offset_choice = st.one_of(
    st.just(None),
    st.tuples(st.sampled_from(["start", "end", "mid", "below", "beyond", "zero"]),
              st.integers(0, 1000)),
)


@dataclass
class WorldSpec:
    plain_parts: list[list[tuple[int, int]]]          # topic A: records per partition
    plain_compact_policy: bool                        # A has cleanup.policy=compact (uncleaned)
    txn_parts: list[list[tuple[list[tuple[int, int]], bool]]]  # topic B: transactions (commit?)
    delete_fracs: list[int]                           # delete_records per partition of A then B, 0-100
    groups: int
    commits: list[list]                               # per group: per partition of A, B, C
    file_offsets: list[list]                          # per group: per partition of A, B, C
    offset: int
    shift: int
    datetime_pick: tuple
    duration_hours: int
    datetime_zone: str                                # "Z", "", "+02:00", "-05:30"
    duration_form: str                                # "HM", "M", "S", "DHM"
    open_txn: bool                                    # leave a transaction open on B while comparing
    file_new_group: bool                              # the several-group file names a group not in the cluster
    scopes: list[int]                                 # a permutation of the six scopes
    file_no_topic: bool
    delete_group: int
    delete_scope: int


@st.composite
def worlds(draw) -> WorldSpec:
    plain = draw(st.lists(st.lists(stamps, max_size=7), min_size=1, max_size=3))
    txn = draw(st.lists(
        st.lists(st.tuples(st.lists(stamps, min_size=1, max_size=3), st.booleans()), max_size=3),
        min_size=2, max_size=3))
    n_parts = len(plain) + len(txn) + 2
    groups = draw(st.integers(2, 3))
    commits = [draw(st.lists(offset_choice, min_size=n_parts, max_size=n_parts)) for _ in range(groups)]
    files = [draw(st.lists(offset_choice, min_size=n_parts, max_size=n_parts)) for _ in range(groups)]
    return WorldSpec(
        plain_parts=plain, plain_compact_policy=draw(st.booleans()), txn_parts=txn,
        delete_fracs=draw(st.lists(st.sampled_from([0, 0, 30, 60, 100]),
                                   min_size=len(plain) + len(txn), max_size=len(plain) + len(txn))),
        groups=groups, commits=commits, file_offsets=files,
        offset=draw(st.integers(0, 40)), shift=draw(st.integers(-6, 6)),
        datetime_pick=draw(st.one_of(
            st.tuples(st.just("grid"), stamps, st.sampled_from([-1, 0, 1])),
            st.tuples(st.just("before-all"), st.just((0, 0)), st.just(0)),
            st.tuples(st.just("after-all"), st.just((0, 0)), st.just(0)))),
        duration_hours=draw(st.integers(0, 13)),
        datetime_zone=draw(st.sampled_from(["Z", "", "+02:00", "-05:30"])),
        duration_form=draw(st.sampled_from(["HM", "M", "S", "DHM"])),
        open_txn=draw(st.booleans()),
        file_new_group=draw(st.booleans()),
        scopes=draw(st.permutations(range(6))),
        file_no_topic=draw(st.booleans()),
        delete_group=draw(st.integers(0, groups - 1)),
        delete_scope=draw(st.integers(0, 2)),
    )


@dataclass
class World:
    a: str
    b: str
    c: str
    groups: list[str]
    twin: str                                  # same commits as groups[delete_group]
    wm: dict[tuple[str, int], tuple[int, int]]
    partitions: list[tuple[str, int]]
    spec: WorldSpec
    new_group: str = ""                        # named only by the several-group file
    open_txn: Producer | None = None           # a transaction left open on B while comparing
    files: dict[str, Path] = field(default_factory=dict)

    def close(self) -> None:
        if self.open_txn is not None:
            self.open_txn.abort_transaction(30)
            self.open_txn = None


def resolve(choice, low: int, high: int) -> int | None:
    if choice is None:
        return None
    kind, n = choice
    return {"start": low, "end": high, "mid": low + n % (high - low + 1),
            "below": max(0, low - 1 - n % 3), "beyond": high + 1 + n % 5, "zero": 0}[kind]


def build_world(bootstrap: str, unique, spec: WorldSpec, compacted_topic: str) -> World:
    a, b = unique("oa"), unique("ob")
    conf = {"retention.ms": "-1"}
    if spec.plain_compact_policy:
        conf["cleanup.policy"] = "compact"  # default segments: never cleaned during the test
    create_topic(bootstrap, a, len(spec.plain_parts), conf)
    create_topic(bootstrap, b, len(spec.txn_parts), {"retention.ms": "-1"})
    produce(bootstrap, a, [(p, f"k{i % 3}".encode(), b"v", None, stamp(*s))
                           for p, recs in enumerate(spec.plain_parts) for i, s in enumerate(recs)])
    if any(spec.txn_parts):
        pr = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("otx"),
                       "linger.ms": 0})
        pr.init_transactions(30)
        for p, txns in enumerate(spec.txn_parts):
            for recs, ok in txns:
                pr.begin_transaction()
                for s in recs:
                    pr.produce(b, key=b"k", value=b"v", partition=p, timestamp=stamp(*s))
                pr.flush(30)
                (pr.commit_transaction if ok else pr.abort_transaction)(30)
    wm: dict[tuple[str, int], tuple[int, int]] = {}
    for t, n in ((a, len(spec.plain_parts)), (b, len(spec.txn_parts)), (compacted_topic, 2)):
        for p, w in watermarks(bootstrap, t, n).items():
            wm[(t, p)] = w
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deletes = []
    parts_ab = [(a, p) for p in range(len(spec.plain_parts))] + [(b, p) for p in range(len(spec.txn_parts))]
    for (t, p), frac in zip(parts_ab, spec.delete_fracs, strict=True):
        low, high = wm[(t, p)]
        to = low + (high - low) * frac // 100
        if to > low and not (t == a and spec.plain_compact_policy):  # compact: POLICY_VIOLATION
            deletes.append(CkTP(t, p, to))
    if deletes:
        for f in admin.delete_records(deletes).values():
            f.result(15)
        for tp in deletes:
            wm[(tp.topic, tp.partition)] = (tp.offset, wm[(tp.topic, tp.partition)][1])
    open_txn = None
    if spec.open_txn:  # records beyond the last stable offset: the log end is the high watermark
        open_txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("otx"),
                             "linger.ms": 0, "transaction.timeout.ms": 300000})
        open_txn.init_transactions(30)
        open_txn.begin_transaction()
        for j in range(2):
            open_txn.produce(b, key=b"k", value=b"open", partition=len(spec.txn_parts) - 1,
                             timestamp=stamp(1, j))
        open_txn.flush(30)
    partitions = [*parts_ab, (compacted_topic, 0), (compacted_topic, 1)]
    groups = [unique("og") for _ in range(spec.groups)]
    twin = unique("ot")
    for i, g in enumerate(groups):
        offsets = {}
        for tp, choice in zip(partitions, spec.commits[i], strict=True):
            o = resolve(choice, *wm[tp])
            if o is not None:
                offsets[tp] = o
        if not offsets:  # a group exists only through its commits
            offsets[partitions[0]] = wm[partitions[0]][1]
        commit(bootstrap, g, offsets)
        if i == spec.delete_group:
            commit(bootstrap, twin, offsets)
    return World(a, b, compacted_topic, groups, twin, wm, partitions, spec,
                 new_group=unique("on") if spec.file_new_group else "", open_txn=open_txn)


# -- running both sides ---------------------------------------------------------------------

GROUP_SCOPES = ("one", "several", "all")
TOPIC_SCOPES = ("batch", "all-topics")
SCOPES = [(g, t) for g in GROUP_SCOPES for t in TOPIC_SCOPES]
# Each target runs under PER_TARGET of the six scopes, taken in turn from a drawn permutation:
# every example covers all six scopes, and over the examples every target meets every scope.
PER_TARGET = 2


@dataclass
class Case:
    target: str
    target_args: list[str]
    group_scope: str
    topic_scope: str            # batch | all-topics | none (from-file only)
    group_args: list[str]
    topic_args: list[str]
    single_group: str | None    # the one --group (the tool's export then has no group column)

    def label(self) -> str:
        return f"{self.target} [{self.group_scope} x {self.topic_scope}]"


@dataclass
class Ours:
    code: int
    rows: dict[tuple[str, str, int], dict]
    err: str
    exported: str | None          # the --export file written in the same run (None: not written)

    @property
    def targets(self) -> dict[tuple[str, str, int], int]:
        return {k: int(r["target"]) for k, r in self.rows.items() if r["target"]}

    @property
    def refused(self) -> dict[str, str]:
        return {k[0]: r["note"] for k, r in self.rows.items() if (r["note"] or "").startswith("REFUSED:")}

    @property
    def errors(self) -> dict[tuple[str, str, int], str]:
        return {k: r["note"] for k, r in self.rows.items() if (r["note"] or "").startswith("ERROR:")}


def run_ours(capsys, bootstrap: str, case: Case, export: Path) -> Ours:
    import csv
    import io

    export.unlink(missing_ok=True)
    res = run_cli(capsys, "offsets", "reset", "-b", bootstrap, *case.group_args, *case.topic_args,
                  *case.target_args, "--dry-run", "-o", "csv", "--export", str(export))
    rows = {}
    for r in csv.DictReader(io.StringIO(res.out)):
        key = (r["group"], r["topic"], int(r["partition"])) if r["topic"] else (r["group"], "", -1)
        rows[key] = r
    return Ours(res.code, rows, res.err, export.read_text() if export.exists() else None)


def batch_topics(w: World) -> list[str]:
    return ["--topic", w.a, "--topic", f"{w.b}:0,1", "--topic", f"{w.c}:1"]


def in_batch(w: World, tp: tuple[str, int]) -> bool:
    return tp[0] == w.a or (tp[0] == w.b and tp[1] in (0, 1)) or tp == (w.c, 1)


def write_file(w: World, tmp: Path, group_scope: str) -> Path:
    """The --from-file CSV: one group's form for a one-group scope, else the several-group form."""
    lines = []
    names = [w.groups[0]] if group_scope == "one" else w.groups
    for i, g in enumerate(names):
        for tp, choice in zip(w.partitions, w.spec.file_offsets[i], strict=True):
            o = resolve(choice, *w.wm[tp])
            if o is not None:
                lines.append(",".join(([] if group_scope == "one" else [g]) + [tp[0], str(tp[1]), str(o)]))
    if group_scope != "one" and w.new_group:
        lines.append(f"{w.new_group},{w.a},0,0")
    if not lines:
        tp = w.partitions[0]
        lines.append(",".join(([] if group_scope == "one" else [w.groups[0]]) + [tp[0], str(tp[1]), "0"]))
    path = tmp / f"plan-{group_scope}.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def cases_for(w: World, tmp: Path) -> list[Case]:
    s = w.spec
    kind, (k, j), delta = s.datetime_pick
    when = {"grid": stamp(k, j) + delta, "before-all": stamp(max(GRID) + 1, 0),
            "after-all": NOW0 + 60_000}[kind]
    targets = [
        ("earliest", ["--to-earliest"]), ("latest", ["--to-latest"]), ("current", ["--to-current"]),
        ("offset", ["--to-offset", str(s.offset)]), ("shift-by", ["--shift-by", str(s.shift)]),
        ("datetime", ["--to-datetime", iso(when, s.datetime_zone)]),
        ("duration", ["--by-duration", duration(s.duration_hours, s.duration_form)]),
        ("from-file", None),
    ]
    out = []
    for n, (name, args) in enumerate(targets):
        for pos in range(PER_TARGET):
            gs, ts = SCOPES[s.scopes[(PER_TARGET * n + pos) % 6]]
            if name == "from-file":
                args = ["--from-file", str(write_file(w, tmp, gs))]
                if ts == "all-topics" and s.file_no_topic:
                    ts = "none"
            several = w.groups + ([w.new_group] if name == "from-file" and w.new_group else [])
            group_args = {"one": ["--group", w.groups[0]],
                          "several": [x for g in several for x in ("--group", g)],
                          "all": ["--all-groups"]}[gs]
            topic_args = {"batch": batch_topics(w), "all-topics": ["--all-topics"], "none": []}[ts]
            out.append(Case(name, args, gs, ts, group_args, topic_args,
                            w.groups[0] if gs == "one" else None))
    return out


# -- comparing ----------------------------------------------------------------------------------

SHIFT_FAIL = re.compile(r"Cannot shift offset for partition (\S+)-(\d+) since there is no current "
                        r"committed offset")
INACTIVE_ONLY = "Assignments can only be reset if the group '{}' is inactive"


class Seen(set):
    """Known differences met by a case; only plan differences can explain a plan."""

    def add(self, ident: str) -> None:
        assert KNOWN_DIFFERENCES[ident][0] == "plan", ident
        super().add(ident)


def compare(case: Case, ours: Ours, theirs, w: World, active: str) -> tuple[list[str], set[str]]:
    """(unexplained disagreements, known differences seen) for one case."""
    problems: list[str] = []
    seen = Seen()
    where = case.label()
    say = f"\noffsetkeeper: exit {ours.code}: {ours.err.strip()[:600]}\nkafka: {theirs.text()[:1500]}"

    if theirs.code != 0:
        m = SHIFT_FAIL.search(theirs.err + theirs.out)
        if case.target == "shift-by" and m and ours.code == 1 and not parse_export(theirs.out, case.single_group):
            errors = ours.errors
            only_shift = all(n == "ERROR: no committed offset to shift from" for n in errors.values())
            if only_shift and (m.group(1), int(m.group(2))) in {(k[1], k[2]) for k in errors}:
                seen.add("shift-no-commit")
                return problems, seen
        problems.append(f"{where}: kafka-consumer-groups failed{say}")
        return problems, seen

    tool_rows = parse_export(theirs.out, case.single_group)
    if (case.target == "from-file" and case.topic_scope == "batch" and ours.code == 2
            and "the reset selects no partition" in ours.err and tool_rows
            and not any(in_batch(w, (k[1], k[2])) for k in tool_rows)):
        seen.add("file-topic-filter")  # none of the file's partitions is in the --topic scope
        return problems, seen

    # a group with members: both leave it alone; offsetkeeper says so with exit 1
    for g, note in ours.refused.items():
        if (g == active and INACTIVE_ONLY.format(g) in theirs.out
                and not any(k[0] == g for k in tool_rows) and "1 active member" in note):
            seen.add("active-group-refused")
        else:
            problems.append(f"{where}: offsetkeeper refused {g} ({note}){say}")
    if active in {k[0] for k in tool_rows}:
        problems.append(f"{where}: kafka-consumer-groups reset the active group {active}{say}")
    expected_code = 1 if ours.refused else 0
    if ours.code != expected_code or ours.errors:
        problems.append(f"{where}: offsetkeeper exit {ours.code} (expected {expected_code}), "
                        f"errors {ours.errors}{say}")

    mine = ours.targets
    for key in sorted(set(mine) | set(tool_rows)):
        a, b = mine.get(key), tool_rows.get(key)
        if a == b:
            continue
        r = ours.rows.get(key, {})
        tp = (key[1], key[2])
        if (case.target == "current" and a is not None and b is not None and r.get("current")
                and int(r["current"]) == b and not (int(r["log_start"]) <= b <= int(r["log_end"]))
                and a == min(max(b, int(r["log_start"])), int(r["log_end"]))
                and "clamped to log" in (r.get("note") or "")):
            seen.add("current-clamped")
            continue
        if (case.target == "from-file" and case.topic_scope == "batch" and a is None
                and b is not None and not in_batch(w, tp)):
            seen.add("file-topic-filter")
            continue
        if (case.target == "from-file" and case.group_scope == "all" and key[0] == w.new_group
                and b is None and a is not None and "new group: created by --execute" in r["note"]):
            seen.add("file-new-group-all-groups")
            continue
        problems.append(f"{where}: {key}: offsetkeeper {a} ({r.get('note')!r}), kafka {b}")

    # the --export file (same run) is the plan's offsets in the tool's own export format
    if ours.exported is None:
        problems.append(f"{where}: offsetkeeper wrote no --export file{say}")
    elif parse_export(ours.exported, case.single_group) != mine:
        problems.append(f"{where}: --export file {ours.exported!r} is not the plan {mine}")
    return problems, seen


def compare_describe(capsys, bootstrap: str, tool: ToolRunner, w: World, more: list[str]) -> list[str]:
    """`groups describe` vs `--describe` for the example's groups and the module's (`more`).

    The module's running member can be between assignments when one tool asks and not when
    the other does, so a disagreement is looked at again once before it counts.
    """
    import csv
    import io

    groups = [*w.groups, *more]
    problems: list[str] = []
    for _attempt in range(2):
        res = run_cli(capsys, "groups", "describe", "-b", bootstrap, *groups, "-o", "csv")
        assert res.code == 0, res.err
        mine = {(r["group"], r["topic"], int(r["partition"])):
                # lag_raw: Kafka's LAG (KNOWN_DIFFERENCES "describe-lag-readable")
                tuple(None if r[c] == "" else int(r[c])
                      for c in ("current_offset", "log_end_offset", "lag_raw"))
                for r in csv.DictReader(io.StringIO(res.out))}
        theirs_res = tool.run("--describe", *[x for g in groups for x in ("--group", g)])
        assert theirs_res.code == 0, theirs_res.text()
        theirs = {k: (v.current, v.log_end, v.lag) for k, v in parse_describe(theirs_res.out).items()}
        assert set(w.groups) <= {k[0] for k in theirs}, theirs_res.text()
        problems = [f"describe {k}: offsetkeeper {mine.get(k)}, kafka {theirs.get(k)}"
                    for k in sorted(set(mine) | set(theirs)) if mine.get(k) != theirs.get(k)]
        if not problems:
            break
        time.sleep(1)
    return problems


def compare_delete(capsys, bootstrap: str, tool: ToolRunner, w: World) -> list[str]:
    """`offsets delete --execute` on a group vs `--delete-offsets` on its twin: same result."""
    g = w.groups[w.spec.delete_group]
    scope = [["--topic", w.a], ["--topic", f"{w.b}:0,1"],
             ["--topic", w.a, "--topic", f"{w.c}:0,1"]][w.spec.delete_scope]
    before = committed_state(bootstrap, g)
    assert before == committed_state(bootstrap, w.twin)
    ours = run_cli(capsys, "offsets", "delete", "-b", bootstrap, "-g", g, *scope, "--execute",
                   "--no-snapshot", "-o", "csv")
    theirs = tool.run("--delete-offsets", "--group", w.twin, *scope)
    after, twin_after = committed_state(bootstrap, g), committed_state(bootstrap, w.twin)
    problems = []
    if after != twin_after:
        problems.append(f"delete {scope}: offsetkeeper left {after}, kafka left {twin_after}\n"
                        f"offsetkeeper: exit {ours.code} {ours.err[:300]}\n{theirs.text()[:800]}")
    if ours.code != 0 or theirs.code != 0:
        problems.append(f"delete {scope}: offsetkeeper exit {ours.code}: {ours.err[:300]}\n"
                        f"{theirs.text()[:800]}")
    return problems


# -- the harness: the one-JVM runner answers as the command line does ---------------------------

@dataclass
class Small:
    """A fixed little world for the example tests: topic `s` (2 x 5 records, one hour apart),
    group `g1` (s:0 at 2, s:1 at 100, beyond the log end), group `g2` (s:0 at 3)."""

    s: str
    g1: str
    g2: str


@pytest.fixture(scope="module")
def small(bootstrap, compacted):
    import uuid

    s_, g1, g2 = (f"{p}-{uuid.uuid4().hex[:10]}" for p in ("os", "og1", "og2"))
    create_topic(bootstrap, s_, 2, {"retention.ms": "-1"})
    produce(bootstrap, s_, [(p, b"k", b"v", None, stamp(10 - i, 0)) for p in range(2) for i in range(5)])
    commit(bootstrap, g1, {(s_, 0): 2, (s_, 1): 100})
    commit(bootstrap, g2, {(s_, 0): 3})
    return Small(s_, g1, g2)


def test_runner_answers_as_the_command_line(bootstrap, tool, small):
    """The property tests run kafka-consumer-groups' main class in one JVM (tests/oracle.py);
    a fresh `java ... ConsumerGroupCommand` process gives the same exit codes and output."""
    commands = [
        ["--group", small.g1, "--group", small.g2, "--reset-offsets", "--topic", small.s,
         "--to-datetime", iso(stamp(8, 0)), "--dry-run", "--export"],
        ["--group", small.g2, "--reset-offsets", "--topic", small.s, "--shift-by", "1",
         "--dry-run", "--export"],
        ["--describe", "--group", small.g1, "--group", small.g2],
    ]
    for args in commands:
        fresh, reused = run_tool(bootstrap, *args), tool.run(*args)
        assert (fresh.code, fresh.out) == (reused.code, reused.out), (fresh.text(), reused.text())
        assert fresh.err.splitlines()[:1] == reused.err.splitlines()[:1]
    # and the answers are the ones the world was built for
    assert parse_export(tool.run(*commands[0]).out) == {
        (small.g1, small.s, 0): 2, (small.g1, small.s, 1): 2,
        (small.g2, small.s, 0): 2, (small.g2, small.s, 1): 2}
    assert tool.run(*commands[1]).code == 1
    assert parse_describe(tool.run(*commands[2]).out)[(small.g1, small.s, 1)] == DescribeRow(100, 5, -95)


# -- each known difference, shown on a fixed world ----------------------------------------------

def both(capsys, bootstrap, tool, *args: str, file: Path | None = None):
    """(offsetkeeper result with rows by key, kafka-consumer-groups result) of one dry run."""
    import csv
    import io

    res = run_cli(capsys, "offsets", "reset", "-b", bootstrap, *args, "--dry-run", "-o", "csv")
    rows = {(r["group"], r["topic"], int(r["partition"]) if r["partition"] else -1): r
            for r in csv.DictReader(io.StringIO(res.out))}
    theirs = tool.run(*(a for a in args), "--reset-offsets", "--dry-run", "--export")
    return res, rows, theirs


def test_difference_current_clamped(capsys, bootstrap, tool, small):
    ours, rows, theirs = both(capsys, bootstrap, tool, "--group", small.g1, "--topic", small.s,
                              "--to-current")
    assert parse_export(theirs.out, small.g1) == {(small.g1, small.s, 0): 2, (small.g1, small.s, 1): 100}
    assert ours.code == 0
    assert rows[(small.g1, small.s, 1)]["target"] == "5"
    assert rows[(small.g1, small.s, 1)]["note"] == "clamped to log end (asked 100)"


def test_difference_shift_no_commit(capsys, bootstrap, tool, small):
    ours, rows, theirs = both(capsys, bootstrap, tool, "--group", small.g2, "--topic", small.s,
                              "--shift-by", "1")
    assert theirs.code == 1 and not parse_export(theirs.out, small.g2)
    assert f"Cannot shift offset for partition {small.s}-1 since there is no current" in theirs.err
    assert ours.code == 1
    assert rows[(small.g2, small.s, 0)]["target"] == "4"
    assert rows[(small.g2, small.s, 1)]["note"] == "ERROR: no committed offset to shift from"


def test_difference_file_topic_filter(capsys, bootstrap, tool, small, compacted, tmp_path):
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{small.s},0,1\n{compacted.name},0,0\n")
    ours, rows, theirs = both(capsys, bootstrap, tool, "--group", small.g1, "--topic", small.s,
                              "--from-file", str(plan))
    assert parse_export(theirs.out, small.g1) == {(small.g1, small.s, 0): 1,
                                                 (small.g1, compacted.name, 0): 0}
    assert ours.code == 0 and {k: r["target"] for k, r in rows.items()} == {(small.g1, small.s, 0): "1"}


def test_difference_file_new_group_all_groups(capsys, bootstrap, tool, small, unique, tmp_path):
    new = unique("onew")
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{small.g1},{small.s},0,1\n{new},{small.s},1,2\n")
    ours, rows, theirs = both(capsys, bootstrap, tool, "--all-groups", "--from-file", str(plan))
    assert parse_export(theirs.out) == {(small.g1, small.s, 0): 1}
    assert ours.code == 0
    assert {k: r["target"] for k, r in rows.items()} == {(small.g1, small.s, 0): "1", (new, small.s, 1): "2"}
    assert "new group: created by --execute" in rows[(new, small.s, 1)]["note"]


def test_difference_active_group_refused(capsys, bootstrap, tool, small, active):
    group = active[1]
    ours, rows, theirs = both(capsys, bootstrap, tool, "--group", group, "--group", small.g1,
                              "--topic", small.s, "--to-earliest")
    assert theirs.code == 0
    assert INACTIVE_ONLY.format(group) in theirs.out
    assert parse_export(theirs.out) == {(small.g1, small.s, 0): 0, (small.g1, small.s, 1): 0}
    assert ours.code == 1
    assert rows[(group, "", -1)]["note"].startswith(f"REFUSED: group {group} has 1 active member")
    assert {k: r["target"] for k, r in rows.items() if r["target"]} == {
        (small.g1, small.s, 0): "0", (small.g1, small.s, 1): "0"}


def test_several_groups_one_without_commits_resets_the_others_like_the_tool(
        capsys, bootstrap, tool, small, unique):
    """Invariant (issue 31 item 5): `--group g1 --group nocommit --all-topics` resets g1's
    partitions as kafka-consumer-groups.sh does (it was refused whole, exit 2) and reports the
    group without commits by name; one group with no commits alone is still refused (exit 2:
    nothing to do is not a success)."""
    nocommit = unique("nocommit")
    ours, rows, theirs = both(capsys, bootstrap, tool, "--group", small.g1, "--group", nocommit,
                              "--all-topics", "--to-earliest")
    assert theirs.code == 0
    assert parse_export(theirs.out) == {(small.g1, small.s, 0): 0, (small.g1, small.s, 1): 0}
    assert ours.code == 0, ours.err
    assert {k: r["target"] for k, r in rows.items() if r["target"]} == {
        (small.g1, small.s, 0): "0", (small.g1, small.s, 1): "0"}
    assert f"group '{nocommit}' has no committed offsets" in ours.err.replace("\n", " ")
    alone = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--group", nocommit,
                    "--all-topics", "--to-earliest")
    assert alone.code == 2 and "has no committed offsets" in alone.err


def test_difference_datetime_without_millis(capsys, bootstrap, tool, small):
    when = iso(stamp(8, 0))[:-5]  # 2026-11-24T05:11:06 (no .SSS, no zone)
    ours, rows, theirs = both(capsys, bootstrap, tool, "--group", small.g1, "--topic", small.s,
                              "--to-datetime", when)
    assert theirs.code == 0 and "Unparseable date" in theirs.out and not parse_export(theirs.out, small.g1)
    assert ours.code == 0
    assert {k: r["target"] for k, r in rows.items()} == {(small.g1, small.s, 0): "2",
                                                        (small.g1, small.s, 1): "2"}


def test_difference_signed_duration(capsys, bootstrap, tool, small):
    ours, rows, theirs = both(capsys, bootstrap, tool, "--group", small.g1, "--topic", small.s,
                              "--by-duration", "PT-1H")
    assert theirs.code == 0
    assert parse_export(theirs.out, small.g1) == {(small.g1, small.s, 0): 5, (small.g1, small.s, 1): 5}
    assert ours.code == 2 and "is not a duration" in ours.err and not rows


def test_difference_reset_metadata(capsys, bootstrap, tool, small, unique):
    """The same --execute on three twins committed with metadata: Kafka's tool leaves empty
    metadata, offsetkeeper keeps it, offsetkeeper --clear-metadata leaves it empty; all three
    reach the same offset. Metadata is read back exactly (the Java Admin client)."""
    from offsetkeeper.config import Connection
    from offsetkeeper.kafka.admin import KafkaAdmin
    from offsetkeeper.models import CommittedOffset, TopicPartition

    tp = TopicPartition(small.s, 0)
    twins = [unique("omd") for _ in range(3)]
    with KafkaAdmin(Connection(bootstrap)) as admin:
        for g in twins:
            res = admin.alter_result(g, admin.alter_offsets_async(
                g, {tp: CommittedOffset(4, "app-state:42")}))
            assert not any(res.values()), res
        theirs = tool.run("--group", twins[0], "--reset-offsets", "--topic", f"{small.s}:0",
                          "--to-offset", "1", "--execute")
        assert theirs.code == 0, theirs.text()
        for g, extra in ((twins[1], ()), (twins[2], ("--clear-metadata",))):
            r = run_cli(capsys, "offsets", "reset", "-g", g, "-t", f"{small.s}:0", "--to-offset",
                        "1", "--execute", "--no-snapshot", *extra, "-b", bootstrap)
            assert r.code == 0, r.err
        got = {g: admin.committed_offsets(g) for g in twins}
    assert [got[g][tp] for g in twins] == [CommittedOffset(1, ""), CommittedOffset(1, "app-state:42"),
                                          CommittedOffset(1, "")]


def test_difference_overlapping_topics(capsys, bootstrap, tool, small):
    ours, rows, theirs = both(capsys, bootstrap, tool, "--group", small.g1, "--topic", f"{small.s}:0",
                              "--topic", small.s, "--to-earliest")
    assert "Duplicate key" in theirs.out and not parse_export(theirs.out, small.g1)
    assert ours.code == 0
    assert {k: r["target"] for k, r in rows.items()} == {(small.g1, small.s, 0): "0",
                                                        (small.g1, small.s, 1): "0"}


def test_difference_error_exit_code(capsys, bootstrap, tool, small):
    ours, rows, theirs = both(capsys, bootstrap, tool, "--group", small.g1, "--topic",
                              f"{small.s}:7", "--to-earliest")
    assert theirs.code == 0
    assert "Error: Executing consumer group command failed" in theirs.out
    assert ours.code == 2 and f"topic '{small.s}' has no partition 7" in ours.err and not rows


def test_difference_one_group_file_several_groups(capsys, bootstrap, tool, small, tmp_path):
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{small.s},0,1\n{small.s},1,4\n")
    ours, rows, theirs = both(capsys, bootstrap, tool, "--group", small.g1, "--group", small.g2,
                              "--from-file", str(plan))
    assert theirs.code == 0 and not parse_export(theirs.out)
    assert f"No reset plan for group {small.g1} found" in theirs.out
    assert ours.code == 0
    assert {k: r["target"] for k, r in rows.items()} == {
        (g, small.s, p): o for g in (small.g1, small.g2) for p, o in ((0, "1"), (1, "4"))}


def test_difference_delete_active_group(capsys, bootstrap, tool, small, active):
    """KIP-496 lets a group with members lose the offsets of a topic it does not subscribe to;
    offsetkeeper refuses any group with members (as for resets)."""
    live, group = active
    live.call(lambda c: c.commit(offsets=[CkTP(small.s, 0, 3)], asynchronous=False))
    assert committed_state(bootstrap, group) == {(small.s, 0): 3}
    ours = run_cli(capsys, "offsets", "delete", "-b", bootstrap, "-g", group, "-t", small.s,
                   "--execute", "--no-snapshot", "-o", "csv")
    assert ours.code == 1 and f"group {group} has 1 active member" in ours.err
    assert committed_state(bootstrap, group) == {(small.s, 0): 3}
    theirs = tool.run("--delete-offsets", "--group", group, "--topic", small.s)
    # (Kafka 3.9 words it "Request succeed for deleting offsets")
    assert theirs.code == 0 and "Request succeed" in theirs.out
    assert committed_state(bootstrap, group) == {}


def test_export_names_the_group_unless_one_group_was_given(capsys, bootstrap, tool, small, tmp_path):
    """Regression: --export wrote `topic,partition,offset` whenever the plan held one group, also
    for --all-groups; kafka-consumer-groups (which reads the one-group form only with exactly one
    --group) writes `group,topic,partition,offset` then, and our own --from-file would later
    apply such a file to every group of --all-groups. The form now follows the tool's rule."""
    plan = tmp_path / "plan.csv"
    plan.write_text(f"{small.g2},{small.s},1,4\n")
    export = tmp_path / "export.csv"
    ours = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--all-groups", "--from-file",
                   str(plan), "--dry-run", "--export", str(export))
    theirs = tool.run("--all-groups", "--reset-offsets", "--from-file", str(plan), "--dry-run",
                      "--export")
    assert ours.code == 0, ours.err
    assert parse_export(theirs.out) == {(small.g2, small.s, 1): 4}
    assert export.read_text() == f"{small.g2},{small.s},1,4\n"
    # one --group: the one-group form, as the tool writes it
    ours = run_cli(capsys, "offsets", "reset", "-b", bootstrap, "--group", small.g2, "--from-file",
                   str(plan), "--dry-run", "--export", str(export))
    theirs = tool.run("--group", small.g2, "--reset-offsets", "--from-file", str(plan), "--dry-run",
                      "--export")
    assert ours.code == 0, ours.err
    assert parse_export(theirs.out, small.g2) == {(small.g2, small.s, 1): 4}
    assert export.read_text() == f"{small.s},1,4\n"


def test_difference_describe_lag_readable(capsys, bootstrap, tool, unique):
    """A group that read every committed record of a transactional partition: Kafka's LAG is 1
    (the commit marker), offsetkeeper's LAG is 0 and its LAG-RAW is Kafka's 1."""
    topic, group = unique("otx"), unique("otg")
    create_topic(bootstrap, topic, 1)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique("otxid")})
    p.init_transactions(15)
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, key=b"k", value=f"v{i}".encode(), partition=0)
    p.commit_transaction(15)
    commit_once(bootstrap, group, {(topic, 0): 3})  # after the 3 records, before the marker
    ours = run_cli(capsys, "groups", "describe", group, "-b", bootstrap, "-o", "json")
    assert ours.code == 0, ours.err
    [row] = ours.json()
    theirs = parse_describe(tool.run("--describe", "--group", group).out)[(group, topic, 0)]
    assert (theirs.current, theirs.log_end, theirs.lag) == (3, 4, 1)
    assert (row["current_offset"], row["log_end_offset"], row["lag"], row["lag_raw"]) == (3, 4, 0, 1)


def test_known_differences_are_documented():
    """docs/oracle.md lists every entry of KNOWN_DIFFERENCES (by id), and nothing else."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "oracle.md").read_text()
    ids = set(re.findall(r"^\| `([a-z0-9-]+)` \|", doc, re.M))
    assert ids == set(KNOWN_DIFFERENCES)
    tested = {n.removeprefix("test_difference_").replace("_", "-")
              for n in globals() if n.startswith("test_difference_")}
    assert tested == set(KNOWN_DIFFERENCES)


# -- the property test --------------------------------------------------------------------------

SEEN_DIFFERENCES: set[str] = set()
CASES_RUN = [0]


# No shrinking: an example costs seconds of cluster work; the first failure is reported as is.
@settings(max_examples=int(os.environ.get("OFFSETKEEPER_ORACLE_EXAMPLES", "10")), deadline=None,
          phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(spec=worlds())
def test_reset_describe_delete_match_kafka_consumer_groups(
        capsys, bootstrap, tool, compacted, active, consumer_protocol_group, unique,
        tmp_path_factory, spec):
    """offsetkeeper's plan (and --export), describe and delete agree with kafka-consumer-groups
    on generated clusters, except for the differences in KNOWN_DIFFERENCES."""
    active_group = active[1]
    w = build_world(bootstrap, unique, spec, compacted.wait())
    try:
        tmp = tmp_path_factory.mktemp("oracle")
        problems: list[str] = []
        compared = 0
        for case in cases_for(w, tmp):
            ours = run_ours(capsys, bootstrap, case, tmp / "export.csv")
            theirs = tool.run(*case.group_args, "--reset-offsets", *case.topic_args,
                              *case.target_args, "--dry-run", "--export")
            bad, seen = compare(case, ours, theirs, w, active_group)
            problems += bad
            SEEN_DIFFERENCES.update(seen)
            CASES_RUN[0] += 1
            compared += len(ours.targets)
        problems += compare_describe(capsys, bootstrap, tool, w,
                                     [active_group, consumer_protocol_group])
        problems += compare_delete(capsys, bootstrap, tool, w)
        assert not problems, "\n".join(problems)
        assert compared, "no partition was compared"
    finally:
        w.close()


# -- --script: the real tool, run from our script, reaches what --execute reaches ---------------

SCRIPT_TARGETS = ["--to-earliest", "--to-latest", "--to-current", "--to-offset", "--shift-by",
                  "--to-datetime", "--by-duration", "--from-file"]


@settings(max_examples=int(os.environ.get("OFFSETKEEPER_ORACLE_SCRIPT_EXAMPLES", "3")),
          deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(spec=worlds(), target=st.sampled_from(SCRIPT_TARGETS), all_topics=st.booleans())
def test_script_reaches_the_offsets_of_execute(
        capsys, bootstrap, compacted, unique, tmp_path_factory, spec, target, all_topics):
    """`offsets reset --script` run with Apache Kafka's kafka-consumer-groups.sh on twin groups
    leaves exactly the committed offsets `offsets reset --execute` leaves on the originals."""
    import csv
    import io

    w = build_world(bootstrap, unique, spec, compacted.wait())
    try:
        tmp = tmp_path_factory.mktemp("oracle-script")
        twins = {g: unique("oc") for g in w.groups}
        for g, t in twins.items():
            commit(bootstrap, t, committed_state(bootstrap, g))
        case = next(c for c in cases_for(w, tmp) if c.target_args[0] == target)
        topics = ["--all-topics"] if all_topics else batch_topics(w)
        if target == "--from-file":  # the one-group form: offsetkeeper applies it to each group
            args = ["--from-file", str(write_file(w, tmp, "one"))]
        else:
            args = case.target_args

        def groups(names):
            return [x for g in names for x in ("--group", g)]

        script = tmp / "reset.sh"
        plan = run_cli(capsys, "offsets", "reset", "-b", bootstrap, *groups(twins.values()),
                       *topics, *args, "--script", str(script), "-o", "csv")
        assert plan.code in (0, 1), plan.err
        planned = {(r["group"], r["topic"], int(r["partition"])): int(r["target"])
                   for r in csv.DictReader(io.StringIO(plan.out)) if r["target"]}
        env = {**os.environ, "PATH": f"{tool_bin(tmp / 'bin')}:{os.environ['PATH']}"}
        ran = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                             timeout=300)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        done = run_cli(capsys, "offsets", "reset", "-b", bootstrap, *groups(w.groups), *topics,
                       *args, "--execute", "--no-snapshot", "-o", "csv")
        assert done.code == plan.code, done.err
        for g, t in twins.items():
            mine, theirs = committed_state(bootstrap, g), committed_state(bootstrap, t)
            assert mine == theirs, f"--execute left {g} at {mine}; the script left {t} at {theirs}"
            for (group, topic, partition), offset in planned.items():
                if group == t:
                    assert theirs[(topic, partition)] == offset
        assert planned, "the plan changed nothing"
    finally:
        w.close()
