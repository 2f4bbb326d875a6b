"""The Kafka seam (kafka/ports.py): the admin facade and the in-memory fake play every role,
with the protocols' own signatures, and ops and the domain take `admin` typed by a role."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import offsetkeeper
from offsetkeeper.config import Connection
from offsetkeeper.kafka import ports
from offsetkeeper.kafka.admin import KafkaAdmin
from offsetkeeper.models import GroupType
from tests.fake_admin import FakeAdmin

ROOT = Path(offsetkeeper.__file__).parent
#: every protocol kafka/ports.py declares (a new role is covered without listing it here)
PROTOCOLS = [c for c in vars(ports).values() if inspect.isclass(c)
             and c.__module__ == ports.__name__ and getattr(c, "_is_protocol", False)]
ROLES = [c for c in PROTOCOLS if c not in (ports.AdminPort, ports.KafkaPort)]
ROLE_NAMES = {r.__name__ for r in PROTOCOLS}


def members(role: type) -> dict[str, object]:
    """The role's own members (attributes, properties and methods), not its bases'."""
    names = [n for n in vars(role) if not n.startswith("_")]
    names += list(vars(role).get("__annotations__", {}))
    return {n: vars(role).get(n) for n in names}


def params(fn) -> list[tuple[str, object, object]]:
    sig = inspect.signature(fn)
    return [(p.name, p.kind, p.default) for p in list(sig.parameters.values())[1:]]


def same_call(impl, declared) -> bool:
    """`impl` takes the protocol's parameters, in order, plus only optional keyword-only ones
    (e.g. the facade's `describe_groups_each(..., real_states=True)`)."""
    mine, theirs = params(impl), params(declared)
    extra = [p for p in mine if p not in theirs]
    return [p for p in mine if p in theirs] == theirs and all(
        kind is inspect.Parameter.KEYWORD_ONLY and default is not inspect.Parameter.empty
        for _, kind, default in extra)


IMPLEMENTATIONS = [
    pytest.param(KafkaAdmin, id="KafkaAdmin"),
    pytest.param(FakeAdmin, id="FakeAdmin"),
]


@pytest.mark.parametrize("impl", IMPLEMENTATIONS)
@pytest.mark.parametrize("role", [*ROLES, ports.AdminPort], ids=lambda r: r.__name__)
def test_every_role_method_is_implemented_with_the_protocols_signature(impl, role):
    """Invariant: the facade and the fake answer every call of every role, taking the same
    parameters (names, kinds, defaults) as the protocol, so a test against the fake exercises
    the calls the product makes against Kafka."""
    for name, declared in members(role).items():
        assert hasattr(impl, name) or name in ("conn", "timeout", "last_list_errors"), \
            f"{impl.__name__} lacks {role.__name__}.{name}"
        if inspect.isfunction(declared):
            assert same_call(getattr(impl, name), declared), \
                f"{impl.__name__}.{name}{inspect.signature(getattr(impl, name))}"
        elif isinstance(declared, property):
            assert isinstance(inspect.getattr_static(impl, name), property), name


def test_instances_are_runtime_instances_of_the_roles():
    """Invariant: both implementations (and the share view over each) pass the runtime
    protocol checks the domain relies on (`isinstance(admin, KafkaPort)` before a share
    plan's redelivery count)."""
    admin = KafkaAdmin(Connection("127.0.0.1:1"))
    fake = FakeAdmin()
    for impl in (admin, fake):
        assert isinstance(impl, ports.KafkaPort)
        assert impl.for_group_type(GroupType.CONSUMER) is impl
        view = impl.for_group_type(GroupType.SHARE)
        assert isinstance(view, ports.AdminPort) and view.group_type == GroupType.SHARE
    assert not isinstance(object(), ports.GroupsPort)
    admin.close()


def _admin_params(path: Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs):
                if arg.arg == "admin" or arg.arg.endswith("_admin"):
                    yield node.name, arg


def test_every_admin_parameter_in_ops_and_the_domain_is_typed_by_a_role():
    """Invariant: what a function of ops/ or the domain asks of Kafka is read from its
    signature: each `admin` parameter is typed by a role of kafka/ports.py (or a union with
    None), never left untyped or typed by the concrete facade."""
    layers = {"ops", "reset", "snapshots", "backup", "restore", "describe.py", "history",
              "consumer", "streaming", "offsetlog", "zk", "spark/kafka", "groups", "connect", "mm2"}
    bad = []
    for place in sorted(layers):
        target = ROOT / place
        files = [target] if target.is_file() else sorted(target.rglob("*.py"))
        for f in files:
            for fn, arg in _admin_params(f):
                ann = ast.unparse(arg.annotation) if arg.annotation else ""
                names = {n.strip() for n in ann.split("|")} - {"None"}
                if not names or not names <= ROLE_NAMES:
                    bad.append(f"{f.relative_to(ROOT)}:{arg.lineno} {fn}({arg.arg}: {ann or '?'})")
    assert bad == []


# Where a confluent-kafka client may still be built outside kafka/clients.py, and why.
OWN_CLIENTS = {
    "kafka/connect.py": "builds a throw-away Producer to have librdkafka check properties offline",
}
CLIENT_CLASSES = {"Consumer", "Producer", "AdminClient"}


def test_clients_are_built_in_one_module():
    """Invariant: consumers, producers and admin clients are built by kafka/clients.py only
    (its properties merge and its translation of a refused property), apart from OWN_CLIENTS."""
    found = []
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT).as_posix()
        if rel == "kafka/clients.py":
            continue
        tree = ast.parse(f.read_text(), filename=str(f))
        names = {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
                 and (n.module or "").startswith("confluent_kafka") for a in n.names
                 if a.name in CLIENT_CLASSES}
        for n in ast.walk(tree):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in names:
                found.append(rel)
    assert sorted(set(found)) == sorted(OWN_CLIENTS)


def test_a_refused_property_is_one_config_error_without_the_secret():
    """Invariant: a client librdkafka refuses to build is a one-line ConfigError naming the
    property, never showing a secret value, for every kind of client."""
    from offsetkeeper.errors import ConfigError
    from offsetkeeper.kafka import clients

    conn = Connection("127.0.0.1:1", {"sasl.password": "hunter2-secret", "no.such.prop": "x"})
    for build in (clients.consumer, clients.producer, clients.admin_client):
        with pytest.raises(ConfigError) as exc:
            build(conn, {"group.id": "g"} if build is clients.consumer else None)
        text = str(exc.value)
        assert "no.such.prop" in text and "hunter2-secret" not in text and "\n" not in text
    merged = clients.client_config(conn, {"acks": "all"}, defaults={"acks": "1", "linger.ms": 5})
    assert merged["acks"] == "all" and merged["linger.ms"] == 5
    assert merged["bootstrap.servers"] == "127.0.0.1:1"
