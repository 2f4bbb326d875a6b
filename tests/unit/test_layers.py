"""Dependencies point one way: cli/web/demo -> ops -> domain -> kafka/spark -> foundations.

The rules (docs/design.md, "Layers"), checked over every module of src/offsetkeeper:

1. every module is in a layer (LAYERS);
2. a module imports only from its own layer or below; the package root `offsetkeeper` (the
   public surface, re-exporting the operations layer) counts as the operations layer;
3. a domain package imports only the domain packages DOMAIN_IMPORTS lists for it;
4. confluent_kafka and pyspark are imported only where THIRD_PARTY allows them, and pyspark
   outside spark/ only inside functions (importing a domain package never loads Spark);
5. no import cycle between modules, lazy imports inside functions included;
6. cli/ and web/ never import each other (but for LAUNCH: `ui` starts the dashboard), and both reach the layers below ops only for the
   modules CLI_ALLOWED lists (types they build requests from, option parsers, the admin facade
   a command or page opens); what is not yet behind ops is listed one import each in
   CLI_PENDING and WEB_PENDING, which only shrink.

Imports are resolved, not guessed by prefix: `from offsetkeeper import ops`,
`from offsetkeeper.restore import state`, relative imports, and `__import__` /
`importlib.import_module` of a literal module name. Imports under `if TYPE_CHECKING:` are exempt
(they never run). Each rule is shown to fail on a synthetic module tree first
(`test_*_rule_fails_on_a_violation`), then checked on the real tree.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

import offsetkeeper

ROOT = Path(offsetkeeper.__file__).parent
PKG = "offsetkeeper"

LAYERS = {
    0: {"errors", "models", "redact", "storage", "progress", "config", "arrowbuf", "times", "netaddr",
        "tables", "class_archives", "procs"},
    # records: Kafka ranges read into Arrow batches and batches produced (no Spark, no domain)
    1: {"kafka", "spark", "devbroker", "records"},
    # spark/kafka is the offsetkeeper-kafka data source, a product feature on top of spark/
    # (its streaming source commits to groups through the reset executor).
    2: {"reset", "snapshots", "backup", "restore", "describe", "history", "consumer", "streaming",
        "offsetlog", "zk", "spark.kafka", "groups", "connect", "mm2"},
    3: {"ops", ""},  # "": the package root, the public surface re-exporting the ops layer
    4: {"cli", "web", "demo"},
}
DOMAIN = LAYERS[2]

# Which domain packages each domain package may import (rule 3). reset/ imports neither
# snapshots/ nor restore/: the executor gets its snapshot function injected; everything that
# changes offsets imports reset/ (the one executor).
DOMAIN_IMPORTS: dict[str, set[str]] = {
    "reset": set(),
    "groups": set(),
    "zk": {"reset"},                                    # ZooKeeper offsets as a reset target
    "history": {"reset"},                               # history as a reset target
    "describe": set(),
    "snapshots": {"reset"},
    "streaming": {"reset"},
    "spark.kafka": {"reset", "streaming"},              # commits go through the executor
    "backup": set(),                                    # reads ranges with records/
    "offsetlog": {"reset", "backup", "spark.kafka"},
    "consumer": {"reset", "snapshots"},                 # a live reset snapshots first
    "restore": {"backup", "reset", "snapshots"},
    "connect": set(),                                   # its own executor (Connect's REST API)
    "mm2": {"reset"},                                   # MM2 checkpoints as a reset target
}

# Who may import confluent_kafka / pyspark (rule 4): a package ("spark") or one module
# ("streaming.lag"). The admin facade (kafka/) is the only code that sends admin requests;
# packages whose product is a Kafka client (moving records) may create clients of their own.
THIRD_PARTY: dict[str, dict[str, str]] = {
    "confluent_kafka": {
        "kafka": "the admin facade and the one translation of Kafka errors",
        "records": "the range reader and the batch producer (data source, backup, restore)",
        "consumer": "the consumer library is a Kafka client",
        "restore": "restore produces records into the target and reads them back",
        "streaming.lag": "reads the timestamps of a streaming query's next records",
        "demo": "the demo (one package, offsetkeeper/demo) seeds its own clusters",
    },
    "pyspark": {
        "spark": "sessions, the data source, the connector",
        "backup": "validation and checksums of backups on Spark",
        "offsetlog": "the __consumer_offsets analytics run on Spark",
        "history.spark_report": "the daily report of exported history on Spark",
    },
}
LAZY_ONLY = {"pyspark": {"spark"}}  # outside these, imported inside functions only

# The upward imports there are, each one module to one module, inside a function (rule 2's
# exceptions): none.
UPWARD: dict[tuple[str, str], str] = {}

# The one import between the front ends (rule 6's exception), inside a function: the `ui`
# command starts the dashboard (a relay in ops that copied its options did it before).
LAUNCH: dict[tuple[str, str], str] = {
    ("offsetkeeper.cli.ui", "offsetkeeper.web.server"): "`offsetkeeper ui` serves the dashboard",
}


# Rule 6. A command parses options, opens the cluster connection, calls ONE operation and
# renders its outcome: what it may import from below ops, by module, and why.
CLI_ALLOWED: dict[str, str] = {
    "kafka.admin": "KafkaAdmin: the connection a command opens and hands to an operation",
    "kafka.connect": "resolve_connection: the connection options every command takes",
    "reset.plan": "TopicSpec in requests; ResetPlan / PlanKind rendered by cli/reset_render",
    "reset.parse": "option parsers shared by every reset command (parse_topic_spec)",
    "reset.apply": "ApplyReport and its statuses, rendered by cli/reset_render",
    # Tools that touch no group's offsets, called as they are (their re-export shims in ops/
    # existed only to satisfy this rule):
    "devbroker": "dev-broker: starts, stops and reports development brokers on this machine",
    "devbroker.connect": "dev-broker connect|mm2: a Connect worker / MirrorMaker 2 beside them",
    "consumer.lab": "lab delivery: LabConfig and run_delivery_lab, the lab's own consumers",
    "consumer.lab_child": "lab delivery: LAB_POLICIES, the commit policies a lab run may use",
}
# Commands that still call domain code themselves: (cli module, imported module), to move
# behind ops. The test fails when one is gone (delete its line) or a new one appears.
CLI_PENDING: set[tuple[str, str]] = set()  # every command goes through ops now
# The same for the dashboard: none (the wizard runs the plan book of ops, history and backups
# are read through ops).
WEB_PENDING: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Import:
    source: str        # importing module, e.g. offsetkeeper.restore.state
    target: str        # resolved module, e.g. offsetkeeper.restore.paths (or a third party)
    line: int
    lazy: bool         # inside a function


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PKG, *parts])


def load_tree(root: Path = ROOT) -> dict[str, tuple[str, bool]]:
    """module name -> (source, is_package) for every module under `root`."""
    return {module_name(p.relative_to(root)): (p.read_text(), p.name == "__init__.py")
            for p in sorted(root.rglob("*.py"))}


def _type_only(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                out.update(id(sub) for sub in ast.walk(stmt))
    return out


def _lazy(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            out.update(id(sub) for sub in ast.walk(node) if sub is not node)
    return out


def imports(tree: Mapping[str, tuple[str, bool]]) -> Iterator[Import]:
    """Every runtime import of every module, resolved to a module of the tree where it names one
    (`from pkg import sub` -> pkg.sub; `from pkg import name` -> pkg)."""
    for mod, (source, is_pkg) in tree.items():
        node_tree = ast.parse(source)
        skip, lazy = _type_only(node_tree), _lazy(node_tree)
        package = mod if is_pkg else mod.rpartition(".")[0]
        for node in ast.walk(node_tree):
            if id(node) in skip:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for a in node.names:
                    sub = f"{base}.{a.name}"
                    targets.append(sub if sub in tree else base)
            elif (isinstance(node, ast.Call) and node.args
                  and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                  and ast.unparse(node.func) in ("__import__", "importlib.import_module",
                                                 "import_module")):
                targets = [node.args[0].value]
            for t in targets:
                if t.split(".")[0] == PKG:
                    while t not in tree and "." in t:  # `import offsetkeeper.x.Name` etc.
                        t = t.rpartition(".")[0]
                yield Import(mod, t, node.lineno, id(node) in lazy)


def area(module: str) -> str:
    """The layer unit of a module: its top package ("reset"), "spark.kafka", or "" (the root)."""
    parts = module.split(".")[1:]
    if parts[:2] == ["spark", "kafka"]:
        return "spark.kafka"
    return parts[0] if parts else ""


def layer_of(module: str) -> int | None:
    a = area(module)
    return next((n for n, names in LAYERS.items() if a in names), None)


def _allowed(rule: Mapping[str, str], module: str) -> bool:
    parts = module.split(".")[1:]
    return any(".".join(parts[:n]) in rule for n in range(1, len(parts) + 1))


def unplaced(tree: Mapping[str, tuple[str, bool]]) -> list[str]:
    return sorted(m for m in tree if m != PKG and layer_of(m) is None)


def layer_violations(imps: list[Import]) -> list[str]:
    out = []
    for imp in imps:
        if imp.target.split(".")[0] != PKG or imp.source == PKG:
            continue
        src, dst = layer_of(imp.source), layer_of(imp.target)
        if area(imp.source) == area(imp.target) or src is None or dst is None:
            continue
        if dst > src and not (imp.lazy and (imp.source, imp.target) in UPWARD):
            out.append(f"{imp.source}:{imp.line} imports {imp.target} (layer {src} -> {dst})")
    return out


def domain_violations(imps: list[Import]) -> list[str]:
    out = []
    for imp in imps:
        a, b = area(imp.source), area(imp.target)
        if imp.target.split(".")[0] != PKG or a == b or a not in DOMAIN or b not in DOMAIN:
            continue
        if b not in DOMAIN_IMPORTS.get(a, set()):
            out.append(f"{imp.source}:{imp.line} imports {imp.target} ({a}/ may import only "
                       f"{sorted(DOMAIN_IMPORTS.get(a, set())) or 'no other domain package'})")
    return out


def third_party_violations(imps: list[Import]) -> list[str]:
    out = []
    for imp in imps:
        lib = imp.target.split(".")[0]
        if lib not in THIRD_PARTY:
            continue
        if not _allowed(THIRD_PARTY[lib], imp.source):
            out.append(f"{imp.source}:{imp.line} imports {lib} (allowed in "
                       f"{sorted(THIRD_PARTY[lib])})")
        elif lib in LAZY_ONLY and not imp.lazy and not _allowed(
                dict.fromkeys(LAZY_ONLY[lib], ""), imp.source):
            out.append(f"{imp.source}:{imp.line} imports {lib} at module level (only inside "
                       "functions outside " + ", ".join(sorted(LAZY_ONLY[lib])) + ")")
    return out


def _rel(module: str) -> str:
    return module[len(PKG) + 1:]


def cli_violations(imps: list[Import], allowed: Mapping[str, str] = CLI_ALLOWED,
                   pending: set[tuple[str, str]] = CLI_PENDING,
                   web_pending: set[tuple[str, str]] = WEB_PENDING) -> list[str]:
    out = []
    for imp in imps:
        a, b = area(imp.source), area(imp.target)
        if imp.target.split(".")[0] != PKG or a == b:
            continue
        if {a, b} == {"cli", "web"}:
            if imp.lazy and (imp.source, imp.target) in LAUNCH:
                continue
            out.append(f"{imp.source}:{imp.line} imports {imp.target} (cli and web never import "
                       "each other: go through ops)")
        elif a in ("cli", "web") and layer_of(imp.target) in (1, 2):
            src, dst = _rel(imp.source).removeprefix(f"{a}."), _rel(imp.target)
            if dst not in allowed and (src, dst) not in (pending if a == "cli" else web_pending):
                out.append(f"{imp.source}:{imp.line} imports {imp.target} ({a} reaches the "
                           "domain through ops; see CLI_ALLOWED)")
    return out


def cycles(graph_of: Mapping[str, object], imps: list[Import]) -> list[list[str]]:
    """The import cycles between the modules of `graph_of` (strongly connected components of
    more than one module)."""
    graph: dict[str, set[str]] = {m: set() for m in graph_of}
    for imp in imps:
        if imp.target in graph and imp.source in graph and imp.target != imp.source:
            graph[imp.source].add(imp.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


# -- the rules fail on deliberate violations --------------------------------------------------
def synthetic(**modules: str) -> dict[str, tuple[str, bool]]:
    """A module tree from keyword arguments: `reset__apply="..."` is offsetkeeper.reset.apply;
    a name ending in `__init` is a package."""
    out = {PKG: ("", True)}
    for name, source in modules.items():
        parts = name.split("__")
        is_pkg = parts[-1] == "init"
        if is_pkg:
            parts.pop()
        out[".".join([PKG, *parts])] = (source, is_pkg)
    return out


def test_package_level_and_relative_imports_are_resolved():
    tree = synthetic(
        ops__init="", ops__reset="",
        restore__init="", restore__paths="", restore__state="",
        reset__init="", reset__apply="from offsetkeeper import ops\n",
        reset__facts="from . import apply\nfrom .apply import X\n",
        restore__run="from offsetkeeper.restore import state\nimport offsetkeeper.restore.paths\n"
                     "def f():\n    __import__('offsetkeeper.ops.reset')\n",
    )
    got = {(i.source, i.target, i.lazy) for i in imports(tree)}
    assert ("offsetkeeper.reset.apply", "offsetkeeper.ops", False) in got
    assert ("offsetkeeper.reset.facts", "offsetkeeper.reset.apply", False) in got
    assert ("offsetkeeper.restore.run", "offsetkeeper.restore.state", False) in got
    assert ("offsetkeeper.restore.run", "offsetkeeper.restore.paths", False) in got
    assert ("offsetkeeper.restore.run", "offsetkeeper.ops.reset", True) in got


@pytest.mark.parametrize("source", [
    "from offsetkeeper import ops\n",
    "from offsetkeeper.ops import reset\n",
    "from offsetkeeper import reset_offsets\n",   # the root re-exports the operations layer
    "def f():\n    from offsetkeeper.cli import main\n",
])
def test_the_layer_rule_fails_on_a_violation(source):
    tree = synthetic(ops__init="", ops__reset="", cli__init="", cli__main="",
                     reset__init="", reset__apply=source)
    assert len(layer_violations(list(imports(tree)))) == 1


def test_type_checking_only_imports_are_exempt():
    tree = synthetic(ops__init="", reset__init="", reset__apply=(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from offsetkeeper import ops\n"))
    assert layer_violations(list(imports(tree))) == []


def test_the_domain_rule_fails_on_a_violation():
    tree = synthetic(reset__init="", snapshots__init="", snapshots__model="",
                     reset__apply="from offsetkeeper.snapshots import model\n",
                     snapshots__capture="from offsetkeeper.reset import apply\n")
    got = domain_violations(list(imports(tree)))
    assert [v.split(":")[0] for v in got] == ["offsetkeeper.reset.apply"]


@pytest.mark.parametrize("module, source, bad", [
    ("cli__groups", "import confluent_kafka\n", True),
    ("history__sample", "from confluent_kafka import Consumer\n", True),
    ("consumer__core", "from confluent_kafka import Consumer\n", False),
    ("demo__history", "def f():\n    from confluent_kafka import Producer\n", False),
    ("history__demo", "def f():\n    from confluent_kafka import Producer\n", True),  # no exemption by name
    ("history__spark_report", "def f():\n    from pyspark.sql import functions\n", False),
    ("history__spark_report", "from pyspark.sql import functions\n", True),   # not lazily
    ("reset__plan", "def f():\n    import pyspark\n", True),
    ("spark__session", "from pyspark.sql import SparkSession\n", False),
])
def test_the_third_party_rule_fails_on_a_violation(module, source, bad):
    tree = synthetic(**{module: source})
    assert bool(third_party_violations(list(imports(tree)))) is bad


def test_the_cycle_rule_fails_on_a_violation():
    tree = synthetic(restore__init="", restore__paths="def f():\n    from . import state\n",
                     restore__state="from offsetkeeper.restore.paths import join\n",
                     restore__run="from offsetkeeper.restore import state\n")
    assert cycles(tree, list(imports(tree))) == [["offsetkeeper.restore.paths",
                                                  "offsetkeeper.restore.state"]]
    no_cycle = synthetic(restore__init="", restore__paths="",
                         restore__state="from offsetkeeper.restore.paths import join\n")
    assert cycles(no_cycle, list(imports(no_cycle))) == []


@pytest.mark.parametrize("module, source, bad", [
    ("cli__groups", "def f():\n    from offsetkeeper.web.server import serve\n", True),
    ("cli__ui", "from offsetkeeper.web.server import serve\n", True),   # LAUNCH is lazy only
    ("cli__ui", "def f():\n    from offsetkeeper.web.server import serve\n", False),  # LAUNCH
    ("web__pages", "from offsetkeeper.cli.output import print_table\n", True),
    ("cli__zk", "from offsetkeeper.zk.offsets import read_zk_offsets\n", True),
    ("cli__streaming", "from offsetkeeper.spark.connector import jars_conf\n", True),
    ("cli__zk", "from offsetkeeper.ops.zk import export_zk_offsets\n", False),
    ("cli__offsets", "from offsetkeeper.reset.plan import TopicSpec\n", False),
    ("cli__main", "from offsetkeeper.errors import UsageError\n", False),
    ("cli__live", "from offsetkeeper.consumer.core import Consumer\n", True),
    ("web__service", "from offsetkeeper.zk.offsets import read_zk_offsets\n", True),
    ("web__service", "def f():\n    from offsetkeeper.consumer.core import Consumer\n", True),
    ("web__service", "from offsetkeeper.ops.zk import export_zk_offsets\n", False),
    ("web__service", "from offsetkeeper.reset.plan import TopicSpec\n", False),
])
def test_the_cli_rule_fails_on_a_violation(module, source, bad):
    tree = synthetic(**{module: source}, web__server="", web__init="", cli__init="",
                     cli__output="", ops__init="", ops__zk="", zk__init="", zk__offsets="",
                     spark__init="", spark__connector="", reset__init="", reset__plan="",
                     consumer__init="", consumer__core="")
    assert bool(cli_violations(list(imports(tree)))) is bad


def test_the_domain_table_has_a_row_per_domain_package_and_no_cycle():
    assert set(DOMAIN_IMPORTS) == DOMAIN
    assert all(deps <= DOMAIN for deps in DOMAIN_IMPORTS.values())
    as_tree = {f"{PKG}.{a}": None for a in DOMAIN}
    edges = [Import(f"{PKG}.{a}", f"{PKG}.{b}", 0, False)
             for a, deps in DOMAIN_IMPORTS.items() for b in deps]
    assert cycles(as_tree, edges) == []


# -- the real tree ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def tree() -> dict[str, tuple[str, bool]]:
    return load_tree()


@pytest.fixture(scope="module")
def imps(tree) -> list[Import]:
    return list(imports(tree))


def test_every_module_is_in_a_layer(tree):
    assert unplaced(tree) == [], f"add these to LAYERS in {__file__}"


def test_imports_point_down_the_layers(imps):
    assert layer_violations(imps) == []


def test_domain_packages_import_only_what_the_table_allows(imps):
    assert domain_violations(imps) == []


def test_every_allowance_of_the_tables_is_used(imps):
    """The tables say what the code does, not more: an allowance nobody uses is removed."""
    used = {(area(i.source), area(i.target)) for i in imps if i.target.split(".")[0] == PKG
            and layer_of(i.source) == 2}
    assert sorted((a, b) for a, deps in DOMAIN_IMPORTS.items() for b in deps
                  if (a, b) not in used) == []
    for lib, rule in THIRD_PARTY.items():
        users = [i.source for i in imps if i.target.split(".")[0] == lib]
        assert sorted(k for k in rule if not any(_allowed({k: ""}, u) for u in users)) == [], lib
    edges = {(i.source, i.target) for i in imps}
    assert sorted(e for e in UPWARD if e not in edges) == []
    assert sorted(e for e in LAUNCH if e not in edges) == []
    cli_edges = {(_rel(i.source).removeprefix("cli."), _rel(i.target)) for i in imps
                 if area(i.source) == "cli" and i.target.split(".")[0] == PKG}
    assert sorted(e for e in CLI_PENDING if e not in cli_edges) == [], "delete these lines"
    web_edges = {(_rel(i.source).removeprefix("web."), _rel(i.target)) for i in imps
                 if area(i.source) == "web" and i.target.split(".")[0] == PKG}
    assert sorted(e for e in WEB_PENDING if e not in web_edges) == [], "delete these lines"
    assert sorted(m for m in CLI_ALLOWED if m not in {d for _, d in cli_edges}) == []


def test_confluent_kafka_and_pyspark_stay_where_they_are_allowed(imps):
    assert third_party_violations(imps) == []


def test_cli_and_web_stay_apart_and_cli_goes_through_ops(imps):
    assert cli_violations(imps) == []


def test_no_import_cycles_between_modules(tree, imps):
    assert cycles(tree, imps) == []
